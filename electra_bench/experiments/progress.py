"""Progress over a whole job graph: one line for the graph (jobs done, what runs where), one per
pre-training run while it trains (read from its log: workers are quiet), and the scoring units
(encoder x task x evaluation seed) stored so far."""

from __future__ import annotations

from pathlib import Path

from ..store import atomic_io
from ..errors import BenchError
from ..pretrain.progress import PhaseProgress, training_detail
from .jobs import Job, Outcome


def last_log_row(log: Path) -> dict:
    """The newest training row of a pre-training log ({} while there is none)."""
    try:
        rows = atomic_io.read_jsonl(log) if log.is_file() else []
    except (OSError, BenchError):  # mid-rewrite by a resuming worker: next poll
        return {}
    return next((r for r in reversed(rows) if "loss" in r), rows[-1] if rows else {})


class GraphProgress:
    """`run_graph`'s progress. `runs_quiet`: no per-run lines (inline, the trainer shows its own bar)."""

    def __init__(self, jobs: list[Job], quiet: bool, runs_quiet: bool, score_units: dict[str, int] | None = None):
        self.phase = PhaseProgress(quiet)
        self.runs_quiet = runs_quiet
        self.todo = [j for j in jobs if j.done is None or not j.done()]
        self.score_units = score_units or {}
        self.done_jobs = 0
        self.running: dict[str, tuple[Job, list[str]]] = {}
        self.phase.add("jobs", len(self.todo))
        self.scored = 0
        if self.score_units:
            self.phase.add("scoring", sum(self.score_units.get(j.id, 0) for j in self.todo))
        self._watched: set[str] = set()

    def __enter__(self) -> "GraphProgress":
        self.phase.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.poll()
        self.phase.__exit__(*exc)

    def _detail(self) -> str:
        where = ", ".join(f"{job.id}@{'+'.join(slots)}" for job, slots in self.running.values())
        return f"{self.done_jobs}/{len(self.todo)} jobs" + (f"; running {where}" if where else "")

    def started(self, job: Job, slots: list[str]) -> None:
        self.running[job.id] = (job, slots)
        if job.watch is not None and not self.runs_quiet and job.id not in self._watched:
            log, total, _ = job.watch
            self._watched.add(job.id)
            self.phase.add(job.id, total, last_log_row(log).get("step", 0))
        self.phase.update("jobs", self.done_jobs, self._detail())

    def finished(self, job: Job, outcome: Outcome) -> None:
        self.running.pop(job.id, None)
        if outcome.status == "ok":
            self.done_jobs += 1
            if job.id in self.score_units:
                self.scored += self.score_units[job.id]
                self.phase.update("scoring", self.scored)
        self.phase.update("jobs", self.done_jobs, self._detail())

    def poll(self) -> None:
        for job_id in self._watched:
            job = next((j for j in self.todo if j.id == job_id), None)
            if job is None:
                continue
            log, _, budget = job.watch
            row = last_log_row(log)
            if row:
                self.phase.update(job_id, row.get("step", 0), training_detail(
                    row.get("flops", 0.0), budget, row.get("tokens_per_s", 0.0), row.get("mfu"), row))
