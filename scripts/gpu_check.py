"""The GPU check: one run, under 10 minutes on one modern NVIDIA GPU, that says whether the GPU path works and
how fast it is. `scripts/gpu_check.sh` runs it; docs/performance.md ("GPU check") describes it.

    bash scripts/gpu_check.sh                      # on the GPU machine: results/gpu_check/gpu_check.{json,md}
    bash scripts/gpu_check.sh --dry-run --out DIR  # the same commands on CPU at tiny shapes (CI)

Sections, each a real command of the project run as a subprocess with its own time cap (a section that
fails or runs over is recorded as such and the check goes on; the exit status is 1 if any failed):

  environment  GPU name and count, torch / CUDA versions, the bf16 dense-matmul peak
               (`trainer.measure_peak_flops`), the MFU denominator of every other section.
  speed        benchmarks/bench_train.py at small 128x128 and 1024x128 and base 256x512 (64x512 where memory
               is short), mlm and rtd, bf16 autocast, eager, compiled (inductor) and CUDA graphs (inductor's
               reduce-overhead, what `pretrain --compile` runs on CUDA), ours and HF's same configuration
               alternating in one process (one invocation per shape and mode, so a slow compile loses only its
               own rows): tokens/s, MFU, ours/HF, peak memory. `--append-docs docs/performance.md` appends
               its table with the device, torch and CUDA versions.
  parity       `electra-bench pretrain --preset small` for mlm and rtd, 80 steps in bf16 and the same run in
               fp32 (same seed, same plan, so the same lr schedule): the largest relative difference of the
               per-step loss over the first 20 steps, against a tolerance (2%).
  distributed  with >= 2 GPUs: `torchrun --nproc_per_node 2 -m electra_bench.cli pretrain` (NCCL); it must
               finish with world size 2 and a finite loss. With 1 GPU: "skipped: 1 GPU".
  compare graph  a tiny `electra-bench compare` across every visible GPU (`--devices auto`: one pinned
               worker per GPU, one pre-training seed per GPU, then probe scoring) while nvidia-smi samples
               each GPU's utilisation every 250 ms: the jobs, the devices the run used and the utilisation
               it saw per GPU (mean and max). It fails if a visible GPU was never busy.

--dry-run runs the same code on CPU: preset tiny at batch 8 x length 32, a few steps, bf16 autocast as on the
GPU (emulated, so slow, on a CPU without AVX512-BF16/AMX: affordable only at these shapes and with a 256-wide
peak matmul), bench_train's compile with the aot_eager backend (inductor's code generation takes a minute or
more per objective on a small CPU), and the distributed section as 2 CPU processes over gloo. Its numbers say
nothing about any GPU.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "bench_train.py"
TOTAL_BUDGET_S = 720.0  # 12 minutes: the inductor compiles alone took over 170 s on the first H200 run, and
# the compare graph (issue 24) takes up to 2


@dataclass(frozen=True)
class Config:
    """What differs between the GPU check and its CPU dry run; everything else is one code path."""

    dry_run: bool
    device: str
    precision: str  # the low-precision side (bf16; fp32 on a CPU without native bf16)
    speed_shapes: tuple[tuple[str, int | None, int | None], ...]  # (preset, batch, seq_len); None: the preset's
    bench_steps: int | None  # timed steps per window (None: bench_train's auto)
    bench_repeats: int
    bench_warmup: int
    peak_n: int
    compile_backend: str
    parity_preset: str
    parity_shape: tuple[int | None, int | None]
    parity_steps: int  # steps of each parity run
    parity_compare: int  # the first steps whose losses are compared
    tolerance: float  # max relative loss difference, low precision vs fp32
    ddp_steps: int
    graph_shape: tuple[int | None, int | None]  # the compare graph's pre-training shape
    graph_steps: int  # steps of each of its pre-training runs
    caps: dict[str, float]  # section -> seconds
    budget_s: float = TOTAL_BUDGET_S  # the whole check


def gpu_config() -> Config:
    return Config(
        dry_run=False, device="cuda", precision="bf16",
        # small at its paper batch (launch-bound), at 1024 (what it reaches when the launches are amortised),
        # base at its paper shape (256 x 512; `speed_shape` falls back to 64 x 512 where memory is short)
        speed_shapes=(("small", 128, 128), ("small", 1024, 128), ("base", 256, 512)),
        bench_steps=None, bench_repeats=3, bench_warmup=3, peak_n=8192, compile_backend="inductor",
        # 80 steps: the first 20 are compared; the first H200 run (2026-12-04) spent 83 s on two 200-step runs
        parity_preset="small", parity_shape=(None, None), parity_steps=80, parity_compare=20, tolerance=0.02,
        ddp_steps=50, graph_shape=(None, None), graph_steps=400,
        # ordered as run; compile last, so that a compile running over its cap costs only its own rows. On the
        # first H200 run the inductor compiles of small and base each ran past 80-90 s caps: 150 s each now
        caps={"environment": 30, "parity": 120, "distributed": 45, "compare graph": 120},
        budget_s=720,
    )


def dry_config() -> Config:
    return Config(
        dry_run=True, device="cpu", precision="bf16", speed_shapes=(("tiny", 8, 32),), bench_steps=2, bench_repeats=1, bench_warmup=1, peak_n=256,
        compile_backend="aot_eager", parity_preset="tiny", parity_shape=(8, 32), parity_steps=8, parity_compare=4,
        tolerance=0.02, ddp_steps=4, graph_shape=(8, 32), graph_steps=8,
        caps={"environment": 60, "parity": 240, "distributed": 120, "compare graph": 240},
        budget_s=840,  # a shared 2-core CI machine; about two minutes when idle
    )


# --------------------------------------------------------------------------------------------- running


@dataclass
class Step:
    """One command's outcome: status is "ok", "failed: ...", "timeout after N s" or "skipped: ..."."""

    name: str
    cap_s: float
    wall_s: float = 0.0
    status: str = "ok"
    commands: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok" or self.status.startswith("skipped")


class Clock:
    """The whole check's deadline: a section gets its cap or what is left, whichever is less."""

    def __init__(self, budget_s: float):
        self.start, self.budget = time.monotonic(), budget_s

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)


def run_cmd(cmd: list[str], step: Step, cap_s: float, env: dict | None = None, log=None) -> subprocess.CompletedProcess | None:
    """Run `cmd` in its own process group with a time cap; on a failure or timeout set step.status and
    return None. The group is killed on timeout (torchrun's workers too)."""
    step.commands.append(" ".join(cmd))
    if cap_s <= 1:
        step.status = "timeout: no time left of the check's budget"
        return None
    print(f"[gpu_check] {step.name}: {' '.join(cmd)}", file=log or sys.stderr, flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=cap_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        step.status = f"timeout after {cap_s:.0f} s"
        return None
    if proc.returncode != 0:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()] or ["(no output)"]
        step.status = f"failed (exit {proc.returncode}): {lines[-1][:300]}"
        sys.stderr.write(err[-4000:])
        return None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def timed(step: Step, fn, *args):
    t = time.monotonic()
    try:
        return fn(*args)
    except Exception as e:  # a bug in the check itself must not hide the other sections
        step.status = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        return None
    finally:
        step.wall_s = time.monotonic() - t


# sections added after the Config caps were laid out: their caps (seconds)
EXTRA_CAPS = {"interop": 90, "calibration": 300}
# the speed section's caps per invocation (one shape, one mode, both objectives, ours and HF): eager steps
# are seconds; an inductor compile of small or base took 80-170 s on the first H200 run
SPEED_CAPS = {"eager": 90, "compiled": 240, "cudagraphs": 240}
SPEED_CAPS_DRY = {"eager": 120, "compiled": 180, "cudagraphs": 60}


def interop_section(cfg: Config, python: str, out_dir: Path, step: Step, cap: float) -> dict:
    """Parity's RTD checkpoint exported and loaded by transformers on the device (scripts/gpu_interop.py):
    the largest output differences in fp32 and under bf16 autocast."""
    ckpt = out_dir / "runs" / "parity-rtd-fp32" / "checkpoints" / "frac-1.0000"
    if not ckpt.is_dir():
        step.status = "skipped: no RTD parity checkpoint"
        return {"status": step.status}
    out = out_dir / "raw" / "interop.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    proc = run_cmd([python, str(ROOT / "scripts" / "gpu_interop.py"), str(ckpt), "--device", cfg.device,
                    "--json", str(out)], step, cap)
    return json.loads(out.read_text()) if proc is not None and out.is_file() else {"status": step.status}


def calibration_section(python: str, out_dir: Path, glue: str, device: str, step: Step, cap: float) -> dict:
    """scripts/calibrate.py on a quick subset (RTE, MRPC, STS-B, CoLA; 1 seed): public checkpoints from the
    local HF cache fine-tuned by the tool on real GLUE dev; the full recipe is in docs/interop.md."""
    cal = out_dir / "calibration"
    proc = run_cmd([python, str(ROOT / "scripts" / "calibrate.py"), "--data", glue, "--tasks", "rte,mrpc,stsb,cola",
                    "--seeds", "1", "--device", device, "--out", str(cal), "--python", python], step, cap)
    return json.loads((cal / "calibration.json").read_text()) if proc is not None else {"status": step.status}


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ------------------------------------------------------------------------------------------ environment


def environment(cfg: Config) -> dict:
    import torch

    from electra_bench.pretrain.trainer import measure_peak_flops

    info = {"mode": "dry-run (CPU)" if cfg.dry_run else "gpu", "python": platform.python_version(),
            "torch": torch.__version__, "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
            "gpu_count": torch.cuda.device_count() if torch.cuda.is_available() else 0, "host": platform.node(),
            "cpu_count": os.cpu_count()}
    if cfg.device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device is visible to torch (use --dry-run for the CPU dry run)")
        dev = torch.device("cuda")
        info["gpu"] = torch.cuda.get_device_name(dev)
        info["gpu_memory_bytes"] = torch.cuda.get_device_properties(dev).total_memory
        info["bf16_supported"] = torch.cuda.is_bf16_supported()
    else:
        from electra_bench.model import cpu_bf16_features

        dev = torch.device("cpu")
        info["gpu"] = None
        info["cpu_native_bf16"] = list(cpu_bf16_features())
    dtype = torch.bfloat16 if cfg.precision == "bf16" else torch.float32
    info["peak_dtype"] = str(dtype).replace("torch.", "")
    info["peak_n"] = cfg.peak_n
    info["peak_flops"] = measure_peak_flops(dev, dtype, n=cfg.peak_n)
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return info


# ---------------------------------------------------------------------------------------------- bench


def speed_shape(cfg: Config, preset: str, batch: int | None, seq: int | None) -> tuple[int | None, int | None, str]:
    """The shape the speed section runs (batch, seq_len) and a note: the asked one, or on a GPU whose memory
    the step would not fit (pretrain/memory's estimate), a quarter of the batch until it does."""
    if cfg.device != "cuda" or batch is None:
        return batch, seq, ""
    import torch

    from electra_bench.errors import BenchError
    from electra_bench.presets import Overrides, resolve
    from electra_bench.pretrain import memory

    asked = batch
    while batch >= 8:
        p = resolve(preset, Overrides(batch_size=batch, seq_len=seq))
        try:
            for o in ("mlm", "rtd"):
                memory.check_fits(p.for_objective(o), o, torch.device("cuda"), True, 1)
            return batch, seq, "" if batch == asked else f"batch {asked} does not fit; ran {batch}"
        except BenchError:
            batch //= 4
    return batch, seq, f"batch {asked} does not fit"


def speed(cfg: Config, python: str, out_dir: Path, preset: str, shape: tuple, mode: str, step: Step, cap: float,
          peak_flops: float | None) -> list[dict]:
    """benchmarks/bench_train.py at one shape in one mode (eager, compiled: inductor's default mode,
    cudagraphs: inductor's reduce-overhead, which `pretrain --compile` uses on CUDA), MLM and RTD, ours and
    HF's same configuration alternating in one process: tokens/s, MFU against the environment's peak, ours/HF."""
    if mode == "cudagraphs" and cfg.device != "cuda":
        step.status = "skipped: CUDA graphs need a CUDA device"
        return []
    batch, seq, note = speed_shape(cfg, preset, *shape)
    path = out_dir / "raw" / f"speed_{preset}_{batch}x{seq}_{mode}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [python, str(BENCH), "--device", cfg.device, "--presets", preset, "--objectives", "mlm", "rtd",
           "--precision", cfg.precision, "--no-memory", "--repeats", str(cfg.bench_repeats),
           "--warmup", str(cfg.bench_warmup), "--peak-n", str(cfg.peak_n), "--target-seconds", "1",
           "--json", str(path)]
    cmd += [f"--batch-size={preset}={batch}"] if batch else []
    cmd += _emulation_opt_in(cfg)
    cmd += [f"--seq-len={preset}={seq}"] if seq else []
    cmd += ["--steps", str(cfg.bench_steps)] if cfg.bench_steps else []
    if mode != "eager":
        cmd += ["--compile", "--compile-backend", cfg.compile_backend]
        cmd += ["--compile-mode", "reduce-overhead" if mode == "cudagraphs" else "default"] \
            if cfg.compile_backend == "inductor" else []
    cmd += ["--threads", "1"] if cfg.dry_run else []
    if run_cmd(cmd, step, cap) is None:
        return []
    return speed_rows(json.loads(path.read_text()), mode, peak_flops, note)


def speed_rows(result: dict, mode: str, peak_flops: float | None, note: str = "") -> list[dict]:
    """bench_train's JSON to the check's rows. MFU is against the environment section's peak (the device's
    bf16 peak), so every row of the check shares one denominator; bench_train's own (its run's peak) is kept."""
    header = result["header"]
    rows = []
    for r in result["results"]:
        o, hf = r["ours"], r.get("hf")
        peak_mem = r.get("cuda_peak_bytes")
        backend = header.get("compile_backend")
        rows.append({
            "preset": r["preset"], "objective": r["objective"],
            "mode": mode if mode == "eager" or backend == "inductor" else f"{mode} ({backend})",
            "batch_size": r["batch_size"], "seq_len": r["seq_len"], "precision": header["precision"],
            "tokens_per_s": o["tokens_per_s"], "step_s": o["step_s"], "flops_per_step": r["flops_per_step"],
            "mfu": r["flops_per_step"] / o["step_s"] / peak_flops if peak_flops else o["mfu"],
            "mfu_bench_peak": o["mfu"], "bench_peak_flops": header["peak_flops"],
            "hf_model": hf["model"] if hf else None, "hf_tokens_per_s": hf["tokens_per_s"] if hf else None,
            "ours_over_hf": o["tokens_per_s"] / hf["tokens_per_s"] if hf else None,
            "peak_memory_bytes": peak_mem,
            "peak_memory_how": "torch.cuda.max_memory_allocated (ours and HF resident)" if peak_mem is not None else
                               "not measured on CPU (bench_train --no-memory; its RSS subprocesses are too slow "
                               "for the dry run)",
            "first_step_s": o.get("first_step_s"), "first_loss": o["first_loss"], "note": note,
        })
    return rows


# --------------------------------------------------------------------------------------------- parity


def plan_budget(preset_name: str, objective: str, shape: tuple[int | None, int | None], steps: int) -> str:
    """A FLOP budget of exactly `steps` steps of `objective`: the CLI's own planning (data -> vocabulary ->
    FLOPs per step), so the run's floor(budget / flops_per_step) is `steps` (half a step of margin against
    rounding). The data preparation is cached, so the pretrain subprocess reuses it."""
    from electra_bench.flops import step_flops
    from electra_bench.presets import Overrides, resolve
    from electra_bench.pretrain import run as runner

    p = resolve(preset_name, Overrides(batch_size=shape[0], seq_len=shape[1]))
    _, p = runner.prepare_data(p, None, None, 0, True)
    fps = step_flops(p.for_objective(objective), objective, "measured").flops_per_step
    return repr((steps + 0.5) * fps)


def _emulation_opt_in(cfg: Config) -> list[str]:
    """The dry run checks the bf16 code path on any CPU, so it opts in to emulated bf16 where the CPU has
    none (a plain run refuses it: model.resolve_precision)."""
    return ["--allow-emulated-bf16"] if cfg.device == "cpu" and cfg.precision == "bf16" else []


def pretrain_cmd(python: str, cfg: Config, preset: str, shape, objective: str, budget: str, precision: str,
                 out: Path, peak_flops: float | None, launcher: list[str] | None = None) -> list[str]:
    """The pretrain command line, into a fresh `out` (a previous check's run there is removed: the trainer
    would otherwise report that finished run instead of training)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = (launcher or [python]) + ["-m", "electra_bench.cli", "pretrain", "--preset", preset, "--objective",
                                    objective, "--budget", budget, "--device", cfg.device, "--precision", precision,
                                    "--seed", "0", "--log-every", "1", "--quiet", "--no-resume", "--out", str(out),
                                    "--json"]
    cmd += ["--batch-size", str(shape[0])] if shape[0] else []
    cmd += _emulation_opt_in(cfg)
    cmd += ["--seq-len", str(shape[1])] if shape[1] else []
    cmd += ["--peak-flops", repr(peak_flops)] if peak_flops else []  # one MFU denominator; no re-measuring
    return cmd


def loss_rows(log_path: Path) -> dict[int, float]:
    """step -> training loss from a pretrain log.jsonl (diagnostics-only rows, e.g. step 0, have no loss)."""
    out = {}
    for line in log_path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if "loss" in row:
                out[int(row["step"])] = float(row["loss"])
    return out


def compare_losses(low: dict[int, float], ref: dict[int, float], first: int, tolerance: float) -> dict:
    """Loss parity of a low-precision run against its fp32 reference over steps 1..first: the largest
    |low - ref| / |ref|. Fails when a step is missing from either run, a loss is not finite, or the
    difference exceeds `tolerance`."""
    steps = list(range(1, first + 1))
    missing = [s for s in steps if s not in low or s not in ref]
    diffs = {s: abs(low[s] - ref[s]) / max(abs(ref[s]), 1e-12) for s in steps if s in low and s in ref}
    nonfinite = [s for s in steps if s in low and s in ref and not (math.isfinite(low[s]) and math.isfinite(ref[s]))]
    worst = max(diffs, key=lambda s: (not math.isfinite(diffs[s]), diffs[s])) if diffs else None
    max_rel = diffs[worst] if worst is not None else math.nan
    ok = not missing and not nonfinite and worst is not None and max_rel <= tolerance
    why = ("ok" if ok else f"missing steps {missing[:5]}" if missing else f"non-finite loss at steps {nonfinite[:5]}"
           if nonfinite else f"step {worst}: {max_rel:.2%} > {tolerance:.2%}")
    return {"compared_steps": len(diffs), "max_rel_diff": max_rel, "worst_step": worst, "tolerance": tolerance,
            "ok": ok, "verdict": why, "first_loss_low": low.get(1), "first_loss_fp32": ref.get(1)}


def parity(cfg: Config, python: str, out_dir: Path, step: Step, clock: Clock, cap: float,
           peak_flops: float | None) -> list[dict]:
    rows, deadline = [], time.monotonic() + cap
    for objective in ("mlm", "rtd"):
        budget = plan_budget(cfg.parity_preset, objective, cfg.parity_shape, cfg.parity_steps)
        runs = {}
        for precision in dict.fromkeys((cfg.precision, "fp32")):  # one run when the low precision is fp32
            run_dir = out_dir / "runs" / f"parity-{objective}-{precision}"
            cmd = pretrain_cmd(python, cfg, cfg.parity_preset, cfg.parity_shape, objective, budget, precision,
                               run_dir, peak_flops)
            t = time.monotonic()
            proc = run_cmd(cmd, step, min(deadline - time.monotonic(), clock.left()))
            if proc is None:
                return rows
            summary = json.loads(proc.stdout)
            log = loss_rows(run_dir / "log.jsonl")
            runs[precision] = {"summary": summary, "losses": log, "wall_s": time.monotonic() - t}
        low, ref = runs[cfg.precision], runs["fp32"]
        cmp = compare_losses(low["losses"], ref["losses"], cfg.parity_compare, cfg.tolerance)
        s = low["summary"]
        last = max(low["losses"])
        rows.append({
            "objective": objective, "preset": cfg.parity_preset, "steps": s["steps"],
            "batch_size": cfg.parity_shape[0], "seq_len": cfg.parity_shape[1], "precision": cfg.precision,
            "reference": "fp32", "same_run": cfg.precision == "fp32", **cmp,
            "final_loss_low": low["losses"][last], "final_loss_fp32": ref["losses"].get(max(ref["losses"])),
            "tokens_per_s": _tokens_per_s(out_dir / "runs" / f"parity-{objective}-{cfg.precision}"),
            "wall_s_low": low["wall_s"], "wall_s_fp32": ref["wall_s"],
        })
        if not cmp["ok"]:
            step.status = f"failed: {objective} loss parity: {cmp['verdict']}"
    return rows


def _tokens_per_s(run_dir: Path) -> float | None:
    """The median tokens/s of a pretrain run's log rows after the first (the first holds start-up)."""
    rates = [json.loads(ln).get("tokens_per_s") for ln in (run_dir / "log.jsonl").read_text().splitlines() if ln.strip()]
    rates = sorted(r for r in rates[2:] if finite(r)) or sorted(r for r in rates if finite(r))
    return rates[len(rates) // 2] if rates else None


# ----------------------------------------------------------------------------------------- distributed


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def distributed(cfg: Config, python: str, out_dir: Path, step: Step, cap: float, gpu_count: int,
                peak_flops: float | None) -> dict:
    if cfg.device == "cuda" and gpu_count < 2:
        step.status = f"skipped: {gpu_count} GPU"
        return {"status": step.status, "world_size": None}
    objective = "rtd"
    budget = plan_budget(cfg.parity_preset, objective, cfg.parity_shape, cfg.ddp_steps)
    run_dir = out_dir / "runs" / "ddp-rtd"
    launcher = [python, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
                "--master_port", str(free_port())]
    cmd = pretrain_cmd(python, cfg, cfg.parity_preset, cfg.parity_shape, objective, budget, cfg.precision, run_dir,
                       peak_flops, launcher)
    proc = run_cmd(cmd, step, cap, env={"OMP_NUM_THREADS": "1"} if cfg.dry_run else None)
    if proc is None:
        return {"status": step.status, "world_size": None}
    done = json.loads((run_dir / "done.json").read_text())
    losses = loss_rows(run_dir / "log.jsonl")
    last = max(losses)
    res = {"status": "ok", "backend": "nccl" if cfg.device == "cuda" else "gloo (CPU dry run)",
           "world_size": done["world_size"], "steps": done["steps"], "final_step": last,
           "final_loss": losses[last], "tokens_per_s": _tokens_per_s(run_dir)}
    if done["world_size"] != 2 or not finite(losses[last]) or last != done["steps"]:
        step.status = res["status"] = (f"failed: world size {done['world_size']}, last logged step {last} of "
                                       f"{done['steps']}, final loss {losses[last]}")
    return res


# ------------------------------------------------------------------------------------------- compare graph


class UtilisationSampler:
    """nvidia-smi's utilisation of every GPU, sampled in the background while a command runs."""

    def __init__(self, period_ms: int = 250):
        self.samples: dict[str, list[float]] = {}
        self.proc = None
        if shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=index,utilization.gpu",
                                          "--format=csv,noheader,nounits", f"-lms={period_ms}"],
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.thread = threading.Thread(target=self._read, daemon=True)
            self.thread.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[1].replace(".", "", 1).isdigit():
                self.samples.setdefault(parts[0], []).append(float(parts[1]))

    def stop(self) -> dict[str, dict[str, float]]:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.thread.join(timeout=5)
        return {gpu: {"mean": sum(v) / len(v), "max": max(v), "samples": len(v)} for gpu, v in self.samples.items()}


def compare_graph(cfg: Config, python: str, out_dir: Path, step: Step, cap: float, gpu_count: int) -> dict:
    """A tiny compare through the job graph on every visible GPU (on CPU: 2 single-thread workers)."""
    runs = max(1, gpu_count) if cfg.device == "cuda" else 1  # pre-training seeds: a run per GPU and objective
    root = out_dir / "runs" / "graph"
    shutil.rmtree(root, ignore_errors=True)  # a previous check's run would be reused, not measured
    budget = plan_budget("tiny", "rtd", cfg.graph_shape, cfg.graph_steps)
    cmd = [python, "-m", "electra_bench", "compare", "--preset", "tiny", "--budget", budget, "--tasks", "rt-polarity",
           "--seeds", "1", "--pretrain-seeds", str(runs), "--protocol", "probe", "--results", str(root), "--quiet",
           "--json"]
    cmd += ["--batch-size", str(cfg.graph_shape[0])] if cfg.graph_shape[0] else []
    cmd += ["--seq-len", str(cfg.graph_shape[1])] if cfg.graph_shape[1] else []
    cmd += ["--device", "cpu", "--jobs", "2"] if cfg.dry_run else ["--devices", "auto"]
    sampler = UtilisationSampler() if cfg.device == "cuda" else None
    t = time.monotonic()
    proc = run_cmd(cmd, step, cap)
    wall = time.monotonic() - t
    util = sampler.stop() if sampler is not None else {}
    if proc is None:
        return {"status": step.status, "utilisation": util}
    summary = json.loads(proc.stdout)
    run = next(p for p in root.iterdir() if p.is_dir())
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    scores = (run / "scores.jsonl").read_text().splitlines()
    busy = sorted(g for g, u in util.items() if u["max"] > 0)
    res = {"status": "ok", "wall_s": wall, "pretrain_runs": 2 * runs, "scores": len(scores),
           "parallelism": history[-1].get("parallelism"), "gpus_visible": gpu_count, "gpus_busy": busy,
           "utilisation": util, "timings": summary.get("timings", {})}
    if cfg.device == "cuda" and len(busy) < gpu_count:
        step.status = res["status"] = f"failed: {len(busy)} of {gpu_count} GPUs were ever busy ({', '.join(busy)})"
    return res


# --------------------------------------------------------------------------------------------- report


def _f(x, spec: str = ",.0f", scale: float = 1.0, suffix: str = "") -> str:
    return "-" if not finite(x) else f"{x * scale:{spec}}{suffix}"


def _rate(x) -> str:
    if not finite(x):
        return "-"
    return f"{x / 1e12:,.1f} TFLOP/s" if x >= 1e12 else f"{x / 1e9:,.2f} GFLOP/s"


def _utilisation(util: dict) -> str:
    if not util:
        return "n/a (CPU)"
    return "; ".join(f"GPU {gpu}: {u['mean']:.0f}% / {u['max']:.0f}%" for gpu, u in sorted(util.items()))


def markdown(result: dict) -> str:
    env, cfg = result["environment"], result["config"]
    title = "GPU check" + (" (CPU DRY RUN: tiny shapes, the numbers say nothing about a GPU)" if cfg["dry_run"] else "")
    lines = [f"# {title}", "", f"{result['date']}; overall: **{'PASS' if result['ok'] else 'FAIL'}**; "
             f"total {result['total_wall_s']:.0f} s of a {cfg['budget_s']:.0f} s budget", "", "## Environment", "",
             "| device | count | torch | CUDA | peak (dense matmul) |", "|---|---|---|---|---|",
             f"| {env.get('gpu') or 'CPU (' + str(env.get('cpu_count')) + ' cores)'} | {env.get('gpu_count', '-')} "
             f"| {env.get('torch', '-')} | {env.get('cuda') or '-'} "
             f"| {_rate(env.get('peak_flops'))} {env.get('peak_dtype', '')} (n={env.get('peak_n')}) |", "",
             "## Speed (benchmarks/bench_train.py: ours and HF's same configuration alternating; MFU against "
             "the peak above)", "",
             "| preset | objective | mode | batch x seq | precision | tokens/s | MFU | HF tokens/s | ours / HF "
             "| peak memory | first step |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["speed"]:
        lines.append(f"| {r['preset']} | {r['objective']} | {r['mode']} | {r['batch_size']}x{r['seq_len']} "
                     f"| {r['precision']} | {_f(r['tokens_per_s'])} | {_f(r['mfu'], '.1f', 100, '%')} "
                     f"| {_f(r['hf_tokens_per_s'])} | {_f(r['ours_over_hf'], '.2f', 1, 'x')} "
                     f"| {_f(r['peak_memory_bytes'], ',.0f', 2**-20, ' MiB')} | {_f(r['first_step_s'], '.1f', 1, ' s')} |")
    lines += ["", f"## Loss parity ({cfg['precision']} vs fp32, same seed and plan, first {cfg['parity_compare']} steps)",
              "", "| objective | preset | steps | max rel. diff | worst step | tolerance | verdict | final loss "
              f"{cfg['precision']} / fp32 | tokens/s ({cfg['precision']}) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in result["parity"]:
        lines.append(f"| {r['objective']} | {r['preset']} | {r['steps']} | {_f(r['max_rel_diff'], '.3%')} "
                     f"| {r['worst_step']} | {r['tolerance']:.0%} | {'PASS' if r['ok'] else 'FAIL: ' + r['verdict']} "
                     f"| {_f(r['final_loss_low'], '.3f')} / {_f(r['final_loss_fp32'], '.3f')} "
                     f"| {_f(r['tokens_per_s'])} |")
    d = result["distributed"]
    lines += ["", "## Distributed (torchrun, 2 processes)", "", "| status | backend | world size | steps | final loss "
              "| tokens/s |", "|---|---|---|---|---|---|",
              f"| {d.get('status')} | {d.get('backend', '-')} | {d.get('world_size') or '-'} | {d.get('steps', '-')} "
              f"| {_f(d.get('final_loss'), '.3f')} | {_f(d.get('tokens_per_s'))} |",
              ""]
    g = result.get("compare_graph", {})
    util = g.get("utilisation") or {}
    lines += ["## Compare graph (one pinned worker per device)", "",
              "| status | wall | pre-training runs | scores | parallelism | GPU utilisation (mean / max) |",
              "|---|---|---|---|---|---|",
              f"| {g.get('status')} | {_f(g.get('wall_s'), '.0f', 1, ' s')} | {g.get('pretrain_runs', '-')} "
              f"| {g.get('scores', '-')} | {json.dumps(g.get('parallelism')) if g.get('parallelism') else '-'} "
              f"| {_utilisation(util)} |", ""]
    io = result.get("interop") or {}
    if io.get("fp32"):
        lines += ["## Interop (parity's RTD checkpoint exported, loaded by transformers; largest difference / "
                  "activation scale, real tokens)", "", "| precision | discriminator hidden | discriminator logits | "
                  "generator logits |", "|---|---|---|---|"]
        lines += [f"| {p} | {io[p]['disc_hidden']:.1e} | {io[p]['disc_logits']:.1e} | {io[p]['gen_logits']:.1e} |"
                  for p in ("fp32", "bf16")] + [""]
    cal = result.get("calibration") or {}
    if cal.get("models"):
        lines += ["## Calibration (scripts/calibrate.py: RTE, MRPC, STS-B, CoLA, 1 seed)", ""]
        lines += [f"- {m.get('label', m['model'])}: {m['status']}" + (
            f"; per task {', '.join(f'{t} {v:.1f}' for t, v in sorted(m['per_task'].items()))}"
            if m.get("per_task") else "") for m in cal["models"]] + [""]
    lines += ["## Steps (wall time against each step's cap)", "", "| step | status | wall | cap |", "|---|---|---|---|"]
    for s in result["steps"]:
        lines.append(f"| {s['name']} | {s['status']} | {s['wall_s']:.1f} s | {s['cap_s']:.0f} s |")
    if cfg["dry_run"] and env.get("cpu_native_bf16") == []:
        lines += ["", "This CPU has no native bf16: its bf16 is emulated (slow), so the dry run's tokens/s and MFU "
                      "mean nothing; it checks that every command runs and reports."]
    return "\n".join(lines) + "\n"


def append_docs(path: Path, env: dict, rows: list[dict], cfg: Config) -> None:
    """The speed section's table appended to a Markdown file (docs/performance.md on the GPU machine), under
    a heading that names the date, the device and the versions."""
    device = env.get("gpu") or f"CPU ({env.get('cpu_count')} cores, dry run: says nothing about a GPU)"
    lines = ["", f"### GPU check speed section, {_dt.date.today().isoformat()}: {device}", "",
             f"torch {env.get('torch')}, CUDA {env.get('cuda') or '-'}, {cfg.precision}; MFU against the measured "
             f"dense-matmul peak {_rate(env.get('peak_flops'))}; `bash scripts/gpu_check.sh --only speed,compiled,"
             f"cudagraphs --append-docs docs/performance.md`", "",
             "| preset | objective | mode | batch x seq | tokens/s | MFU | HF tokens/s | ours / HF |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['preset']} | {r['objective']} | {r['mode']} | {r['batch_size']}x{r['seq_len']} "
              f"| {_f(r['tokens_per_s'])} | {_f(r['mfu'], '.1f', 100, '%')} | {_f(r['hf_tokens_per_s'])} "
              f"| {_f(r['ours_over_hf'], '.2f', 1, 'x')} |" for r in rows]
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------------ main


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes: the same commands, for CI")
    ap.add_argument("--out", default="results/gpu_check", help="where gpu_check.json and gpu_check.md go")
    ap.add_argument("--python", default=sys.executable, help="interpreter for the subprocesses")
    ap.add_argument("--only", default=None,
                    help="comma-separated sections to run (environment always runs): speed (eager), parity, "
                         "interop, distributed, graph, compiled, cudagraphs, calibration; e.g. to rerun one that "
                         "failed")
    ap.add_argument("--append-docs", default=None, metavar="FILE",
                    help="append the speed table, with the device, torch and CUDA versions, to FILE (on the GPU "
                         "machine: docs/performance.md)")
    ap.add_argument("--glue", default=None,
                    help="a GLUE directory: adds the calibration section (scripts/calibrate.py on RTE, MRPC, STS-B "
                         "and CoLA, 1 seed, for the models already in the local HF cache; docs/interop.md)")
    return ap


class _Run:
    """One check: its config and arguments, where it writes, its clock and the steps so far."""

    def __init__(self, args, cfg):
        self.args, self.cfg = args, cfg
        self.out_dir = Path(args.out).resolve()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.clock = Clock(cfg.budget_s)
        self.steps: list[Step] = []
        self.only = None if args.only is None else {x.strip() for x in args.only.split(",") if x.strip()}

    def new_step(self, name: str) -> tuple[Step, float]:
        s = Step(name, self.cfg.caps.get(name, EXTRA_CAPS.get(name, 60)))
        self.steps.append(s)
        return s, min(s.cap_s, self.clock.left())

    def want(self, section: str) -> bool:
        return self.only is None or section in self.only

    def speed_steps(self, mode: str, peak) -> list[dict]:
        caps = SPEED_CAPS_DRY if self.cfg.dry_run else SPEED_CAPS
        out = []
        for preset, batch, seq in self.cfg.speed_shapes:
            s = Step(f"speed {mode} {preset} {batch}x{seq}", caps[mode])
            self.steps.append(s)
            out += timed(s, speed, self.cfg, self.args.python, self.out_dir, preset, (batch, seq), mode, s,
                         min(s.cap_s, self.clock.left()), peak) or []
        return out


def _sections(run: _Run, env: dict) -> dict:
    """Every asked section after the environment, in the order that keeps a slow compile from costing the
    others: eager speed, parity, interop, distributed, graph, calibration, then compiled and cudagraphs."""
    cfg, args, out_dir, want, new_step = run.cfg, run.args, run.out_dir, run.want, run.new_step
    peak = env.get("peak_flops")
    rows: list[dict] = []
    par, dist, graph, interop, calibration = [], {"status": "not asked"}, {"status": "not asked"}, {}, {}
    if want("speed"):
        rows += run.speed_steps("eager", peak)
    if want("parity") or want("interop"):  # interop reads parity's RTD checkpoint
        s, cap = new_step("parity")
        par = timed(s, parity, cfg, args.python, out_dir, s, run.clock, cap, peak) or []
    if want("interop"):
        s, cap = new_step("interop")
        interop = timed(s, interop_section, cfg, args.python, out_dir, s, cap) or {"status": s.status}
    if want("distributed"):
        s, cap = new_step("distributed")
        dist = timed(s, distributed, cfg, args.python, out_dir, s, cap, env.get("gpu_count", 0), peak) or {
            "status": s.status}
    if want("graph"):
        s, cap = new_step("compare graph")
        graph = timed(s, compare_graph, cfg, args.python, out_dir, s, cap, env.get("gpu_count", 0)) or {
            "status": s.status}
    if args.glue and want("calibration"):
        s, cap = new_step("calibration")
        calibration = timed(s, calibration_section, args.python, out_dir, args.glue, cfg.device, s, cap) or {
            "status": s.status}
    for mode in ("compiled", "cudagraphs"):  # last: a compile that runs over its cap costs only its rows
        if want(mode):
            rows += run.speed_steps(mode, peak)
    if args.append_docs and rows:
        append_docs(Path(args.append_docs), env, rows, cfg)
    return {"environment": env, "speed": rows, "parity": par, "distributed": dist, "compare_graph": graph,
            "interop": interop, "calibration": calibration}


def _report(run: _Run, result: dict) -> dict:
    """gpu_check.json's content: the date, whether every step passed, the config, the sections, the steps."""
    cfg, steps = run.cfg, run.steps
    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "ok": all(s.ok for s in steps) and bool(steps),
        "total_wall_s": time.monotonic() - run.clock.start,
        "config": {"dry_run": cfg.dry_run, "device": cfg.device, "precision": cfg.precision,
                   "speed_shapes": [list(x) for x in cfg.speed_shapes],
                   "compile_backend": cfg.compile_backend, "parity_preset": cfg.parity_preset,
                   "parity_steps": cfg.parity_steps, "parity_compare": cfg.parity_compare,
                   "tolerance": cfg.tolerance, "ddp_steps": cfg.ddp_steps, "budget_s": cfg.budget_s},
        **result,
        "steps": [{"name": s.name, "status": s.status, "wall_s": s.wall_s, "cap_s": s.cap_s, "commands": s.commands}
                  for s in steps],
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    from electra_bench.store import atomic_io

    cfg = dry_config() if args.dry_run else gpu_config()
    run = _Run(args, cfg)
    s, _ = run.new_step("environment")
    env = timed(s, environment, cfg) or {}
    if cfg.device == "cuda" and not env:  # no GPU: nothing else can run; say so and stop
        result = {"environment": {}, "speed": [], "parity": [], "distributed": {"status": "not run"},
                  "compare_graph": {"status": "not run"}}
    else:
        result = _sections(run, env)
    result = _report(run, result)
    out_dir = run.out_dir
    atomic_io.write_json(out_dir / "gpu_check.json", result)
    text = markdown(result)
    atomic_io.write_text(out_dir / "gpu_check.md", text)
    print(text)
    print(f"[gpu_check] wrote {out_dir / 'gpu_check.json'} and {out_dir / 'gpu_check.md'}", file=sys.stderr)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
