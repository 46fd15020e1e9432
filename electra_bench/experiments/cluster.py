"""The job graph beyond one machine: every job a cluster job, through submitit (an optional extra,
`pip install 'electra-bench[cluster]'`, imported only here and only when a cluster engine is chosen).

Engines: `slurm` (sbatch through submitit's AutoExecutor; parameters such as the partition from the
environment variable ELECTRA_BENCH_SLURM, a JSON object of submitit's slurm_* parameters) and
`submitit-local` (submitit's LocalExecutor: each job its own process on this machine, exactly as on a
cluster node but without one; CI runs the graph through it). Why submitit and not Ray, and what the
shared file system must guarantee: docs/scheduling.md.

This process stays the one writer of the run directory (it holds the run's lock, takes each job's
result back through submitit's pickles in `<run>/cluster/` and appends the score rows); a pre-training
job writes its own directory under its own lock, as in one machine. A job the cluster stops (timeout,
preemption) is requeued by submitit with the same call (`ClusterCall.checkpoint`) and resumes from its
last saved state; one whose node dies is retried by the scheduler, with the same effect.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path

from ..errors import BenchError
from .devices import SLOT_ENV
from .jobs import Job, Outcome

SLURM_ENV = "ELECTRA_BENCH_SLURM"
LOCAL_TIMEOUT_MIN = 7 * 24 * 60  # submitit's local default is 2 minutes, after which it requeues


class JobBug(Exception):
    """A cluster job raised something that is not the user's or the machine's problem: a bug, shown with
    the job's own traceback."""


class ClusterCall:
    """A job's call as a cluster job. It answers ("ok", value), ("error", message) for a BenchError (the
    user's: not retried), or ("bug", traceback); an exception that escapes means the job itself was lost."""

    def __init__(self, call: tuple, slot: str):
        self.call, self.slot = call, slot

    def __call__(self):
        os.environ[SLOT_ENV] = self.slot  # a label: the device itself is pinned by the cluster's CUDA_VISIBLE_DEVICES
        fn, *args = self.call
        try:
            return "ok", fn(*args)
        except BenchError as e:
            return "error", str(e)
        except Exception:  # noqa: BLE001 -- sent back whole, raised in the parent as JobBug
            return "bug", traceback.format_exc()

    def checkpoint(self, *args, **kwargs):
        """Called by submitit when the cluster stops the job: requeue the same call (it resumes)."""
        from submitit.helpers import DelayedSubmission

        return DelayedSubmission(self)


def slurm_parameters() -> dict:
    text = os.environ.get(SLURM_ENV, "").strip()
    if not text:
        return {}
    try:
        params = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchError(f"{SLURM_ENV} is not valid JSON ({e.msg}): e.g. '{{\"slurm_partition\": \"gpu\"}}'") from None
    if not isinstance(params, dict):
        raise BenchError(f"{SLURM_ENV} must be a JSON object of submitit parameters, got {type(params).__name__}")
    return params


class ClusterEngine:
    """Jobs as submitit jobs; `slots` bound how many run at once (GPUs on this machine for the local
    executor; cluster GPUs in flight for slurm)."""

    def __init__(self, name: str, slots: list[str], folder: Path, gpus: bool, threads: int):
        try:
            import submitit
        except ImportError:
            raise BenchError(f"--engine {name} needs submitit: pip install 'electra-bench[cluster]'") from None
        self.name, self.slots, self.gpus, self.threads = name, list(slots), gpus, threads
        self.folder = Path(folder)
        if name == "slurm":
            self.executor = submitit.AutoExecutor(folder=self.folder / "%j", cluster="slurm")
            self.params = {"timeout_min": 24 * 60, **slurm_parameters()}
        else:
            self.executor = submitit.LocalExecutor(folder=self.folder / "%j")
            self.params = {"timeout_min": LOCAL_TIMEOUT_MIN}
        self._running: dict = {}

    def start(self, job: Job, slots: list[str]) -> None:
        params = dict(self.params)
        if self.name == "slurm":
            params.update(cpus_per_task=self.threads, tasks_per_node=1, nodes=1,
                          gpus_per_node=job.devices if self.gpus else 0)
        elif self.gpus:
            params.update(gpus_per_node=len(slots), visible_gpus=[int(s) for s in slots])
        else:
            params.update(gpus_per_node=0)
        self.executor.update_parameters(**params)
        submitted = self.executor.submit(ClusterCall(job.call, ",".join(slots)))
        self._running[submitted] = job

    def wait(self, timeout: float) -> list[tuple[Job, Outcome]]:
        deadline = time.monotonic() + timeout
        while True:
            finished = [s for s in self._running if s.done()]
            if finished or time.monotonic() >= deadline:
                break
            time.sleep(min(0.2, timeout))
        out = []
        for submitted in finished:
            job = self._running.pop(submitted)
            try:
                status, value = submitted.result()
            except Exception as e:  # noqa: BLE001 -- killed, node lost, out of memory: the scheduler retries
                first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
                out.append((job, Outcome("lost", f"cluster job {submitted.job_id} ended without a result ({first})")))
                continue
            if status == "ok":
                out.append((job, Outcome("ok", value)))
            elif status == "error":
                out.append((job, Outcome("error", BenchError(value))))
            else:
                out.append((job, Outcome("error", JobBug(f"cluster job {submitted.job_id}:\n{value}"))))
        return out

    def stop(self) -> None:
        for submitted in list(self._running):
            try:
                submitted.cancel(check=False)
            except Exception:  # noqa: BLE001 -- best effort: a job that already ended cannot be cancelled
                pass
        self._running.clear()

    def close(self) -> None:
        pass
