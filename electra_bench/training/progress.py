"""What a person watches during pre-training: a rich progress line, or nothing with --quiet."""

from __future__ import annotations


from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


def _fmt_flops(x: float) -> str:
    return f"{x:.2e}"


class TrainingProgress:
    def __init__(self, objective: str, budget_flops: float, total_steps: int, quiet: bool, console: Console | None = None):
        self.quiet = quiet
        self.budget = budget_flops
        self.total_steps = total_steps
        self._progress = None
        if not quiet:
            self._progress = Progress(
                TextColumn(f"[bold]{objective}[/]"),
                BarColumn(),
                TextColumn("{task.percentage:>5.1f}%"),
                TextColumn("{task.fields[flops]}"),
                TextColumn("step {task.completed}/{task.total}"),
                TextColumn("{task.fields[speed]}"),
                TextColumn("{task.fields[losses]}"),
                TimeRemainingColumn(),
                console=console or Console(stderr=True),
                transient=False,
            )
            self._task = self._progress.add_task(objective, total=total_steps, flops="", speed="", losses="")

    def __enter__(self):
        if self._progress:
            self._progress.start()
        return self

    def __exit__(self, *exc):
        if self._progress:
            self._progress.stop()

    def update(self, step: int, flops: float, tokens_per_s: float, mfu: float | None, metrics: dict[str, float]):
        if not self._progress:
            return
        losses = " ".join(f"{k}={v:.3f}" for k, v in metrics.items() if k.endswith("loss") or k.endswith("acc"))
        speed = f"{tokens_per_s/1e3:.1f}k tok/s" + (f" MFU {100*mfu:.0f}%" if mfu is not None else "")
        self._progress.update(
            self._task,
            completed=step,
            flops=f"{_fmt_flops(flops)}/{_fmt_flops(self.budget)} FLOPs",
            speed=speed,
            losses=losses,
        )
