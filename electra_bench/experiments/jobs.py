"""One job graph for every experiment, and the scheduler that runs it on any engine.

compare, ablate and sweep describe their work as `Job`s (pre-train objective x seed, score one run's
checkpoints on the tasks still missing, ...) with their dependencies; `run_graph` runs any such list on an
engine: inline in this process, a pool of device-pinned worker processes (`PoolEngine`), or cluster jobs
(experiments/cluster.py). What the scheduler guarantees:

- **Resumable at job granularity.** A job whose `done()` says so (read from the run directory, the only
  source of truth: a verified finished pre-training run, stored score rows) is never run again; a job's
  id is derived from what it does, so the same command again builds the same graph.
- **A failure stays local.** A job whose worker died (killed, out of memory, a lost node) is run again,
  up to `retries` times: pre-training resumes from its last saved state. A job that raises is not retried
  (the same inputs would raise again); the jobs that do not depend on it still run and keep their
  results, and the run then ends with one line naming it.
- **Every device busy.** A job starts as soon as its dependencies are finished and enough slots are free,
  in the order the graph lists jobs (builders list the long pre-training runs first, so scoring fills the
  gaps around them); a job may take several slots (a DDP pre-training run over `--gpus-per-run` GPUs).

Results reach the parent: `Job.on_result` runs here, in the one process that writes the run directory.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..errors import BenchError
from .devices import pin_worker, slot_env


@dataclass
class Job:
    """One unit of work. `call` = (fn, *args) must be picklable (it runs in a worker); the rest stays here."""

    id: str  # deterministic: "pretrain/mlm/seed-0", "score/rtd/seed-1"
    kind: str  # pretrain | score (what --dry-run and progress group by)
    call: tuple
    deps: tuple[str, ...] = ()
    devices: int = 1  # slots it holds while it runs
    flops: float = 0.0  # the work it does, for sizing (--dry-run)
    done: Callable[[], bool] | None = None  # finished already, by the run directory
    on_result: Callable[[Any], None] | None = None  # in the parent, as it finishes
    watch: tuple | None = None  # (log path, total steps, budget): a pre-training run's progress


@dataclass
class Outcome:
    status: str  # ok | error | lost (the worker died before answering)
    value: Any = None


class Engine(Protocol):
    """Where jobs run. `slots` are what the scheduler hands out (devices or CPU workers)."""

    slots: list[str]

    def start(self, job: Job, slots: list[str]) -> None: ...
    def wait(self, timeout: float) -> list[tuple[Job, Outcome]]: ...
    def stop(self) -> None: ...  # now: kill what runs (a Ctrl-C, a failure in the parent)
    def close(self) -> None: ...  # orderly, after the last job


class InlineEngine:
    """One slot, in this process (`--jobs 1` on a CPU): what a debugger or a profiler wants."""

    def __init__(self):
        self.slots = ["inline"]
        self._finished: list[tuple[Job, Outcome]] = []

    def start(self, job: Job, slots: list[str]) -> None:
        fn, *args = job.call
        try:
            self._finished.append((job, Outcome("ok", fn(*args))))
        except (BenchError, OSError, MemoryError, RuntimeError) as e:  # a bug's traceback still surfaces
            self._finished.append((job, Outcome("error", e)))

    def wait(self, timeout: float) -> list[tuple[Job, Outcome]]:
        out, self._finished = self._finished, []
        return out

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


def _call_pinned(env: dict[str, str], fn, *args):
    """Run a multi-slot job in the first slot's worker with every slot it holds visible (a DDP launcher
    hands them to its ranks); the worker's own pin is restored afterwards."""
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn(*args)
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class PoolEngine:
    """One worker process per slot, each spawned fresh and pinned to its slot before it imports torch
    (devices.pin_worker); a worker is reused for the next job on its slot (its imports stay warm)."""

    def __init__(self, kind: str, slots: list[str]):
        self.kind, self.slots = kind, list(slots)
        self._pools: dict[str, ProcessPoolExecutor] = {}
        self._running: dict[Future, tuple[Job, list[str]]] = {}

    def _pool(self, slot: str) -> ProcessPoolExecutor:
        if slot not in self._pools:
            self._pools[slot] = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=pin_worker,
                initargs=(slot_env(self.kind, [slot]),))
        return self._pools[slot]

    def start(self, job: Job, slots: list[str]) -> None:
        fn, *args = job.call
        if len(slots) > 1:
            fut = self._pool(slots[0]).submit(_call_pinned, slot_env(self.kind, slots), fn, *args)
        else:
            fut = self._pool(slots[0]).submit(fn, *args)
        self._running[fut] = (job, slots)

    def wait(self, timeout: float) -> list[tuple[Job, Outcome]]:
        if not self._running:
            return []
        finished, _ = wait(list(self._running), timeout=timeout, return_when=FIRST_COMPLETED)
        out = []
        for fut in finished:
            job, slots = self._running.pop(fut)
            try:
                out.append((job, Outcome("ok", fut.result())))
            except BrokenProcessPool:
                self._discard(slots[0])  # its next job gets a fresh worker
                out.append((job, Outcome("lost", "its worker process died (killed, or out of memory)")))
            except (BenchError, OSError, MemoryError, RuntimeError) as e:
                out.append((job, Outcome("error", e)))
        return out

    def _discard(self, slot: str) -> None:
        pool = self._pools.pop(slot, None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def stop(self) -> None:
        """Kill every worker now. `shutdown` alone waits for running calls (minutes of pre-training), so
        a Ctrl-C would go unanswered; killing is safe: every checkpoint and log row is written atomically
        or repaired on resume, and a rerun resumes from the last saved state."""
        workers = [w for pool in self._pools.values() for w in (pool._processes or {}).values()]  # no public handle before 3.14
        for pool in self._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
        for w in workers:
            w.terminate()
        for w in workers:
            w.join(timeout=10)
        self._pools.clear()
        self._running.clear()

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown()
        self._pools.clear()


# --------------------------------------------------------------------------------------------- the graph


def check_graph(jobs: list[Job], capacity: int) -> None:
    """Unique ids, known dependencies, no cycle, and no job wider than the engine."""
    ids = [j.id for j in jobs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise BenchError(f"job graph: {', '.join(dup)} listed twice")
    known = set(ids)
    for j in jobs:
        missing = [d for d in j.deps if d not in known]
        if missing:
            raise BenchError(f"job graph: {j.id} depends on unknown {', '.join(missing)}")
        if j.devices > capacity:
            raise BenchError(f"{j.id} needs {j.devices} devices; only {capacity} available (see --devices, "
                             f"--gpus-per-run)")
    order = topological(jobs)
    if len(order) != len(jobs):
        stuck = sorted(known - {j.id for j in order})
        raise BenchError(f"job graph: a dependency cycle among {', '.join(stuck)}")


def topological(jobs: list[Job]) -> list[Job]:
    """Jobs in an order where every dependency comes first (stable: the listed order otherwise)."""
    placed: set[str] = set()
    out: list[Job] = []
    pending = list(jobs)
    while pending:
        ready = [j for j in pending if set(j.deps) <= placed]
        if not ready:
            break
        for j in ready:
            placed.add(j.id)
            out.append(j)
        pending = [j for j in pending if j.id not in placed]
    return out


@dataclass
class GraphResult:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # done already (by the run directory)
    failed: dict[str, BaseException | str] = field(default_factory=dict)
    blocked: list[str] = field(default_factory=list)  # not run: a dependency failed
    seconds: dict[str, float] = field(default_factory=dict)  # wall time of each job that ran
    finished_at: dict[str, float] = field(default_factory=dict)  # since the start of run_graph


class Progress(Protocol):
    def started(self, job: Job, slots: list[str]) -> None: ...
    def finished(self, job: Job, outcome: Outcome) -> None: ...
    def poll(self) -> None: ...


def run_graph(jobs: list[Job], engine: Engine, progress: Progress | None = None, retries: int = 1,
              poll_s: float = 1.0) -> GraphResult:
    """Run every job not done yet on `engine`; raise on failure only after the others have finished
    (see the module docstring). An exception or Ctrl-C here stops the engine's workers at once."""
    check_graph(jobs, len(engine.slots))
    result = GraphResult()
    finished = _skip_done(jobs, result)
    pending = [j for j in jobs if j.id not in finished]
    free = list(engine.slots)
    attempts: dict[str, int] = {}
    started_at: dict[str, float] = {}
    running: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    try:
        while pending or running:
            _block_dependents(pending, result)
            for j in list(pending):
                if set(j.deps) <= finished and j.devices <= len(free):
                    slots, free = free[:j.devices], free[j.devices:]
                    pending.remove(j)
                    running[j.id] = slots
                    attempts[j.id] = attempts.get(j.id, 0) + 1
                    started_at[j.id] = time.perf_counter()
                    if progress is not None:
                        progress.started(j, slots)
                    engine.start(j, slots)
            if not running:
                break  # what is left waits on a failed job
            for job, outcome in engine.wait(poll_s):
                free = sorted(free + running.pop(job.id), key=engine.slots.index)
                if outcome.status == "lost":
                    again = attempts[job.id] <= retries
                    # said as it happens: a lost attempt costs time even when the retry succeeds
                    print(f"warning: job {job.id} lost attempt {attempts[job.id]} of {retries + 1}: {outcome.value}; "
                          f"{'running it again' if again else 'no attempt left'}", file=sys.stderr, flush=True)
                    if again:
                        pending.insert(0, job)  # again, first: its slot is free now
                        continue
                if outcome.status == "ok":
                    if job.on_result is not None:
                        job.on_result(outcome.value)
                    finished.add(job.id)
                    result.ran.append(job.id)
                    result.seconds[job.id] = time.perf_counter() - started_at[job.id]
                    result.finished_at[job.id] = time.perf_counter() - t0
                else:
                    result.failed[job.id] = outcome.value
                if progress is not None:
                    progress.finished(job, outcome)
            if progress is not None:
                progress.poll()
    except BaseException:
        engine.stop()
        raise
    engine.close()
    if result.failed:
        raise_failure(result, len(jobs))
    return result


def _skip_done(jobs: list[Job], result: GraphResult) -> set[str]:
    """The ids of jobs already done (a rerun resumes), recorded as skipped."""
    finished: set[str] = set()
    for j in jobs:
        if j.done is not None and j.done():
            finished.add(j.id)
            result.skipped.append(j.id)
    return finished


def _block_dependents(pending: list[Job], result: GraphResult) -> None:
    """Jobs waiting on a failed (or blocked) job leave `pending` as blocked: they will not run."""
    dead = set(result.failed) | set(result.blocked)
    for j in [j for j in pending if set(j.deps) & dead]:
        pending.remove(j)
        result.blocked.append(j.id)


def raise_failure(result: GraphResult, total: int) -> None:
    """One line for the first failure (the others are counted). An error that is not the user's or the
    machine's (a bug) is raised as it is, so its traceback shows; out of memory keeps its own exit."""
    first, err = next(iter(result.failed.items()))
    others = len(result.failed) - 1
    tail = (f"{f'; {others} other job(s) failed too' if others else ''}"
            f"{f'; {len(result.blocked)} job(s) waiting on them were not run' if result.blocked else ''}; "
            f"the {len(result.ran) + len(result.skipped)} finished of {total} jobs are kept: run the same command "
            f"again to retry")
    if isinstance(err, str):  # its worker died on every attempt
        raise BenchError(f"job {first} failed: {err}, on every attempt{tail}")
    if isinstance(err, BenchError):
        wrapped = BenchError(f"job {first} failed: {err}{tail}")
        wrapped.exit_code = err.exit_code
        raise wrapped from None
    raise err
