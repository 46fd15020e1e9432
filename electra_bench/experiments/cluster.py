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
last saved state; one whose node dies, or that is cancelled, is retried by the scheduler, with the same
effect.

On SLURM the driver learns a job's state from squeue (and sacct, with accounting: slurm.states), not
from submitit, which reads sacct alone: without accounting it never learns that a job ended without a
result, and the driver would wait on it forever. So every job ends one of three ways, each within a
stated time: its result file appears; SLURM says it ended (or no longer knows it) and no result follows
within RESULT_GRACE_S (the attempt is lost, and said so); or its state cannot be read for
`unknown_limit_s` (the driver gives up on it in one line).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..errors import BenchError
from . import slurm
from .devices import SLOT_ENV
from .jobs import Job, Outcome
from .work import PretrainWork

SLURM_ENV = slurm.SLURM_ENV
LOCAL_TIMEOUT_MIN = 7 * 24 * 60  # submitit's local default is 2 minutes, after which it requeues
QUERY_EVERY_S = 2.0  # squeue at most this often: one call for every job in flight
# a job SLURM says has ended gets this long for its result file to appear (a shared file system's delay;
# submitit waits as long)
RESULT_GRACE_S = 15.0
UNKNOWN_LIMIT_S = 300.0  # a job whose state cannot be read this long is given up


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


class RankCall(ClusterCall):
    """One rank of a DDP pre-training run spread over a SLURM job's tasks (one process each, on one node),
    where one machine's pool runs torchrun instead: torch.distributed's rendezvous from SLURM's variables
    (submitit's TorchDistributedEnvironment: the first node, a port from the job id), then the
    single-process work, whose trainer joins the group. Every task sees all the job's GPUs: the trainer
    picks its own by LOCAL_RANK."""

    def __call__(self):
        from submitit.helpers import TorchDistributedEnvironment

        TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
        return super().__call__()


def slurm_parameters() -> dict:
    return slurm.parameters()


def check_cluster(spec) -> str:
    """`--engine slurm`: what the run's jobs will ask for (a scoring job: 1 GPU, or none with --device cpu;
    a pre-training job over --gpus-per-run processes: that many tasks and GPUs; --threads CPUs each; the
    time and memory of ELECTRA_BENCH_SLURM) against the partition's nodes as sinfo lists them. Refused in
    one line naming the option to change; the partition's description when it fits, or why it was not
    checked (no sinfo here: planning on a machine outside the cluster)."""
    params = {"timeout_min": slurm.DEFAULT_TIMEOUT_MIN, **slurm_parameters()}
    try:
        parts = slurm.partitions()
    except slurm.Unreachable as e:
        return f"not checked against a cluster ({e})"
    gpus = spec.device != "cpu"  # as engine_for decides: GPU jobs unless --device cpu
    described = ""
    for width in sorted({1, max(1, spec.gpus_per_run)}):
        who = "a scoring job" if width == 1 else f"a pre-training job over {width} processes (--gpus-per-run)"
        described = slurm.check(slurm.Request.of(params, width if gpus else 0, width, spec.threads, who), parts)
    return f"{described} (checked with sinfo)"


def _tasks(submitted) -> list:
    """A submitit job's tasks (itself when it has one): each writes its own result and log files."""
    return [submitted.task(i) for i in range(submitted.num_tasks)]


@dataclass
class _InFlight:
    job: Job
    submitted: object  # submitit's Job
    request: slurm.Request | None
    seen: float  # when SLURM last said it was alive (or it was submitted)
    state: str = "PENDING"
    ended: float | None = None  # when SLURM first said it ended (or forgot it) with no result yet


class ClusterEngine:
    """Jobs as submitit jobs; `slots` bound how many run at once (GPUs on this machine for the local
    executor; cluster GPUs in flight for slurm)."""

    def __init__(self, name: str, slots: list[str], folder: Path, gpus: bool, threads: int,
                 unknown_limit_s: float = UNKNOWN_LIMIT_S):
        try:
            import submitit
        except ImportError:
            raise BenchError(f"--engine {name} needs submitit: pip install 'electra-bench[cluster]'") from None
        self.name, self.slots, self.gpus, self.threads = name, list(slots), gpus, threads
        self.unknown_limit_s = unknown_limit_s
        self.folder = Path(folder)
        if name == "slurm":
            self.executor = submitit.AutoExecutor(folder=self.folder / "%j", cluster="slurm")
            self.params = {"timeout_min": slurm.DEFAULT_TIMEOUT_MIN, **slurm_parameters()}
        else:
            self.executor = submitit.LocalExecutor(folder=self.folder / "%j")
            self.params = {"timeout_min": LOCAL_TIMEOUT_MIN}
        self._running: dict[int, _InFlight] = {}
        self._queried = float("-inf")

    def start(self, job: Job, slots: list[str]) -> None:
        params, request = dict(self.params), None
        call: ClusterCall = ClusterCall(job.call, ",".join(slots))
        if self.name == "slurm":
            tasks = 1
            work = job.call[0]
            if isinstance(work, PretrainWork) and work.nproc > 1:
                tasks = work.nproc
                call = RankCall((dataclasses.replace(work, nproc=1),), ",".join(slots))
            gpus = job.devices if self.gpus else 0
            params.update(cpus_per_task=self.threads, tasks_per_node=tasks, nodes=1, gpus_per_node=gpus, name=job.id)
            request = slurm.Request.of(params, gpus, tasks, self.threads, f"job {job.id}")
        elif self.gpus:
            params.update(gpus_per_node=len(slots), visible_gpus=[int(s) for s in slots])
        else:
            params.update(gpus_per_node=0)
        try:
            self.executor.update_parameters(**params)
        except (AssertionError, NameError, ValueError, TypeError) as e:  # submitit's checks of its parameters
            raise BenchError(f"{SLURM_ENV}: {slurm.one_line(e)}") from None
        from submitit.core.utils import FailedJobError

        try:
            # submitit prints sbatch's stderr itself before raising it: the one line below says it instead
            with contextlib.redirect_stderr(io.StringIO()):
                submitted = self.executor.submit(call)
        except FailedJobError as e:
            if request is None:
                raise
            raise slurm.refusal(str(e), request) from None
        self._running[id(submitted)] = _InFlight(job, submitted, request, time.monotonic())

    def wait(self, timeout: float) -> list[tuple[Job, Outcome]]:
        deadline = time.monotonic() + timeout
        while True:
            out = self._collect()
            if out or time.monotonic() >= deadline:
                return out
            time.sleep(min(0.2, timeout))

    def _collect(self) -> list[tuple[Job, Outcome]]:
        out = []
        for key, f in list(self._running.items()):
            if self._has_result(f):
                del self._running[key]
                out.append((f.job, self._outcome(f)))
        if self.name == "slurm":
            out += self._watch_queue()
        return out

    def _has_result(self, f: _InFlight, refresh: bool = False) -> bool:
        if self.name != "slurm":
            return f.submitted.done()  # the local executor knows its processes
        if refresh:  # as submitit does: an NFS client caches a directory's attributes, a chmod refreshes them
            with contextlib.suppress(OSError):
                f.submitted.paths.folder.chmod(f.submitted.paths.folder.stat().st_mode)
        return all(t.paths.result_pickle.exists() for t in _tasks(f.submitted))

    def _outcome(self, f: _InFlight) -> Outcome:
        sub = f.submitted
        try:
            status, value = sub.results()[0] if sub.num_tasks > 1 else sub.result()  # rank 0's answer
        except Exception as e:  # noqa: BLE001 -- killed, node lost, out of memory: the scheduler retries
            return Outcome("lost", f"cluster job {sub.job_id} ended without a result: {slurm.one_line(e) or type(e).__name__}")
        if status == "ok":
            return Outcome("ok", value)
        if status == "error":
            return Outcome("error", BenchError(value))
        return Outcome("error", JobBug(f"cluster job {sub.job_id}:\n{value}"))

    def _watch_queue(self) -> list[tuple[Job, Outcome]]:
        """What squeue (and sacct) say of the jobs in flight: ended without a result, never going to start,
        requeued, or unknown for too long."""
        now = time.monotonic()
        if not self._running or now - self._queried < QUERY_EVERY_S:
            return []
        self._queried = now
        try:
            states = slurm.states([f.submitted.job_id for f in self._running.values()])
        except slurm.Unreachable as e:
            return self._unknown(str(e), now)
        out = []
        for key, f in list(self._running.items()):
            jid = f.submitted.job_id
            state = states[jid]
            if state.ended:
                f.ended = f.ended if f.ended is not None else now
            else:
                f.seen = now
                if f.state == "RUNNING" and state.name in ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"):
                    print(f"note: cluster job {jid} ({f.job.id}) was requeued by SLURM (preempted or at its time "
                          f"limit); it runs again from its last saved state", file=sys.stderr, flush=True)
                why = slurm.hopeless(state, f.request)
                if why is not None:
                    raise BenchError(f"cluster job {jid} ({f.job.id}) is pending and {why}; the run's cluster "
                                     f"jobs were cancelled, its finished jobs are kept")
            f.state = state.name
            if f.ended is not None and now - f.ended >= RESULT_GRACE_S and not self._has_result(f, refresh=True):
                del self._running[key]
                out.append((f.job, Outcome("lost", self._lost_reason(f))))
        return out

    def _lost_reason(self, f: _InFlight) -> str:
        """Why a job ended without a result: SLURM's state and what its stderr says last."""
        sub = f.submitted
        state = "SLURM no longer lists it, and there is no accounting to ask" if f.state == "GONE" else f.state
        tail = ""
        for part in _tasks(sub):
            try:
                lines = [ln.strip() for ln in part.paths.stderr.read_text(errors="replace").splitlines() if ln.strip()]
            except OSError:
                continue
            said = [ln for ln in lines if "error" in ln.lower() or "***" in ln] or lines[-1:]
            if said:
                tail = f"; its stderr ({part.paths.stderr}) says: {' | '.join(said[-3:])}"
                break
        return f"cluster job {sub.job_id} ended ({state}) and left no result (waited {RESULT_GRACE_S:.0f} s){tail}"

    def _unknown(self, why: str, now: float) -> list[tuple[Job, Outcome]]:
        out = []
        for key, f in list(self._running.items()):
            if now - f.seen >= self.unknown_limit_s and not self._has_result(f):
                del self._running[key]
                slurm.cancel([f.submitted.job_id])
                out.append((f.job, Outcome("error", BenchError(
                    f"the state of cluster job {f.submitted.job_id} could not be read for {self.unknown_limit_s:.0f} s "
                    f"({why}); it may still be running: look with squeue or sacct, then run the same command "
                    f"again"))))
        return out

    def stop(self) -> None:
        if self.name == "slurm":
            slurm.cancel([f.submitted.job_id for f in self._running.values()])
        else:
            for f in self._running.values():
                try:
                    f.submitted.cancel(check=False)
                except Exception:  # noqa: BLE001 -- best effort: a job that already ended cannot be cancelled
                    pass
        self._running.clear()

    def close(self) -> None:
        pass
