"""Which devices an experiment's workers run on, and how each worker is pinned to its own.

A *slot* is what one worker owns: one GPU (its id as CUDA_VISIBLE_DEVICES names it) or, on a CPU, one
single-threaded worker (`cpu0`, `cpu1`, ...; the thread count stays the run's `--threads`, which is part of
its config because it changes the last bits of float sums). A worker is pinned by its environment, set by
the pool's initializer in a freshly spawned process *before* anything imports torch: CUDA reads
CUDA_VISIBLE_DEVICES once, when it initialises, so setting it later would not move a worker.

No torch at module level here: the worker imports this module to pin itself, and torch must come after.
"""

from __future__ import annotations

import os
import signal
import sys

from ..errors import BenchError

# The environment variable a worker reads to learn which slot it was given (CUDA_VISIBLE_DEVICES holds the
# GPU itself; this also names CPU slots, which have no such variable).
SLOT_ENV = "ELECTRA_BENCH_SLOT"
_TORCH_BEFORE_PIN = "ELECTRA_BENCH_TORCH_BEFORE_PIN"


def visible_gpus() -> list[str]:
    """The GPUs this process may use, by the ids a child's CUDA_VISIBLE_DEVICES must name: the parent's
    own CUDA_VISIBLE_DEVICES entries when it is set (a SLURM allocation, a user's choice), else 0..n-1."""
    import torch  # only the parent asks; a worker is told

    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None and given.strip():
        return [d.strip() for d in given.split(",") if d.strip()][:n]
    return [str(i) for i in range(n)]


def parse_devices(text: str | None, device: str, jobs: int) -> tuple[str, list[str]]:
    """(kind, slots) for `--devices` (None/"auto": every visible GPU when the run is on CUDA, else `jobs`
    CPU workers; "cpu": CPU workers; "N": the first N GPUs; "0,2": those GPU ids).

    `device` is the run's --device: "cpu" keeps everything on CPU workers, "cuda:N" alone means GPU N."""
    text = (text or "auto").strip()
    if device == "cpu" or text == "cpu":
        return "cpu", [f"cpu{i}" for i in range(jobs)]
    if text == "auto" and device.startswith("cuda:"):
        text = device.split(":", 1)[1]
        return "cuda", [text]
    gpus = visible_gpus()
    if text == "auto":
        if not gpus:
            if device.startswith("cuda"):
                raise BenchError(f"--device {device}: no CUDA device is available on this machine")
            return "cpu", [f"cpu{i}" for i in range(jobs)]
        return "cuda", gpus
    if text.isdigit() and "," not in text:
        n = int(text)
        if n < 1:
            raise BenchError(f"--devices must name at least one device, got {text}")
        if n > len(gpus):
            raise BenchError(f"--devices {n}: only {len(gpus)} GPU(s) visible on this machine")
        return "cuda", gpus[:n]
    ids = [d.strip() for d in text.split(",")]
    if any(not d for d in ids) or len(set(ids)) != len(ids):
        raise BenchError(f"--devices: '{text}' is not a list of distinct GPU ids like 0,1,3 (or auto, cpu, N)")
    missing = [d for d in ids if d not in gpus]
    if missing:
        raise BenchError(f"--devices: GPU {', '.join(missing)} not visible here (visible: {', '.join(gpus) or 'none'})")
    return "cuda", ids


def slot_env(kind: str, slots: list[str]) -> dict[str, str]:
    """The environment a worker owning `slots` runs in (several slots: one DDP pre-training run)."""
    env = {SLOT_ENV: ",".join(slots)}
    if kind == "cuda":
        env["CUDA_VISIBLE_DEVICES"] = ",".join(slots)
    return env


def pin_worker(env: dict[str, str]) -> None:
    """Pool initializer, first thing in a spawned worker: pin it, then ignore the terminal's SIGINT (the
    parent answers a Ctrl-C: it stops the workers and says one line; a worker must not print its own)."""
    os.environ[_TORCH_BEFORE_PIN] = "1" if "torch" in sys.modules else "0"
    os.environ.update(env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def worker_slot() -> dict[str, str | bool | None]:
    """What this worker was pinned to, read inside it: its slot, its CUDA_VISIBLE_DEVICES, and whether
    torch had been imported before the pin (it must not have been)."""
    return {"slot": os.environ.get(SLOT_ENV), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "torch_before_pin": os.environ.get(_TORCH_BEFORE_PIN) == "1", "pid": os.getpid()}
