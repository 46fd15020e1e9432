"""What a person watches while a phase runs: a progress bar with ETA on a terminal, or a plain line
every `every_s` seconds when output goes to a file or a CI log. Layouts fit 80 columns. --quiet: nothing.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


def fmt_flops(x: float) -> str:
    """`5.0e12`: two significant digits, no '+' (columns are scarce at 80)."""
    return f"{x:.1e}".replace("e+", "e")


def fmt_duration(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class PhaseProgress:
    """Several tasks (e.g. one per pre-training run) advancing towards their totals."""

    def __init__(self, quiet: bool, console: Console | None = None, every_s: float = 30.0):
        self.console = console or Console(stderr=True)
        self.quiet = quiet
        self.live = not quiet and self.console.is_terminal
        self.every_s = every_s
        self._tasks: dict[str, dict] = {}
        self._last_line = 0.0
        self._progress = None
        if self.live:
            self._progress = Progress(
                TextColumn("{task.description:<8.8}"), BarColumn(bar_width=12),
                TextColumn("{task.percentage:>3.0f}%"), TextColumn("{task.fields[detail]}"),
                TimeRemainingColumn(compact=True), console=self.console, transient=False,
            )

    def add(self, name: str, total: float, completed: float = 0.0) -> None:
        # the ETA's clock starts at the task's first update, not here: a run queued behind others in a
        # worker pool would otherwise count its waiting time as slowness (ETAs of an hour for a 4-minute run)
        self._tasks[name] = {"total": max(total, 1e-12), "completed": completed, "detail": "",
                             "start": None, "start_done": completed}
        if self._progress is not None:
            self._tasks[name]["id"] = self._progress.add_task(name, total=total, completed=completed, detail="")

    def update(self, name: str, completed: float, detail: str = "") -> None:
        t = self._tasks[name]
        if t["start"] is None:
            t["start"], t["start_done"] = time.perf_counter(), completed
        t["completed"], t["detail"] = completed, detail
        if self._progress is not None:
            self._progress.update(t["id"], completed=completed, detail=detail)
        elif not self.quiet and time.perf_counter() - self._last_line >= self.every_s:
            self.print_lines()

    def print_lines(self) -> None:
        """The plain form: one line per task with percentage, detail and ETA."""
        self._last_line = time.perf_counter()
        for name, t in self._tasks.items():
            done = t["completed"] - t["start_done"]
            elapsed = 0.0 if t["start"] is None else time.perf_counter() - t["start"]
            left = t["total"] - t["completed"]
            eta = f", ETA {fmt_duration(elapsed * left / done)}" if done > 0 and left > 0 else ""
            pct = 100 * t["completed"] / t["total"]
            print(f"{name}: {pct:3.0f}%{', ' + t['detail'] if t['detail'] else ''}{eta}", file=sys.stderr,
                  flush=True)

    def __enter__(self) -> "PhaseProgress":
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.stop()
        elif not self.quiet and self._tasks and exc[0] is None:
            self.print_lines()  # the final state, once


# The terms of a loss that is a weighted sum (RTD: generator + 50 x discriminator), as the line names them.
LOSS_PARTS = {"gen_loss": "gen", "disc_loss": "disc", "mlm_loss": "mlm"}


def training_detail(flops: float, budget: float, tokens_per_s: float, mfu: float | None,
                    metrics: dict[str, float]) -> str:
    """`5.0e12/1.2e13 FLOPs 2.6k tok/s MFU 9% loss 6.21`: what a pre-training line shows. An objective whose
    loss sums weighted terms shows the terms instead (`gen loss 3.45 disc loss 0.412`): RTD's total, 24.15,
    is mostly 50 x a discriminator loss near 0.4 and says nothing by itself."""
    speed = f" {tokens_per_s / 1e3:.1f}k tok/s" if tokens_per_s else ""
    if mfu is not None and tokens_per_s:
        speed += f" MFU {100 * mfu:.0f}%"
    parts = [(name, metrics[key]) for key, name in LOSS_PARTS.items() if key in metrics]
    if len(parts) > 1:
        loss = "".join(f" {name} loss {value:.{3 if value < 1 else 2}f}" for name, value in parts)
    else:
        loss = f" loss {metrics['loss']:.2f}" if "loss" in metrics else ""
    return f"{fmt_flops(flops)}/{fmt_flops(budget)} FLOPs{speed}{loss}"


class TrainingProgress:
    """One pre-training run's line: FLOPs of the budget, tokens/s, MFU, loss, ETA."""

    def __init__(self, objective: str, budget_flops: float, total_steps: int, quiet: bool, console: Console | None = None):
        self.objective, self.budget = objective, budget_flops
        self.phase = PhaseProgress(quiet, console)
        self.phase.add(objective, total_steps)

    def __enter__(self):
        self.phase.__enter__()
        return self

    def __exit__(self, *exc):
        self.phase.__exit__(*exc)

    def update(self, step: int, flops: float, tokens_per_s: float, mfu: float | None, metrics: dict[str, float]):
        self.phase.update(self.objective, step, training_detail(flops, self.budget, tokens_per_s, mfu, metrics))
