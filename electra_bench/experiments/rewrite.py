"""`electra-bench report RUN --write`: a finished compare run's summary.json, plots and report.txt/.md
rebuilt from what it stores (scores, per-example predictions, pre-training logs), as this version computes
them: how committed runs are re-reported after the statistics or the report change. Nothing is trained
or scored; the run's config decides its suite and FLOP convention, as compare would."""

from __future__ import annotations

from pathlib import Path

from ..data.task_sources import load_tasks
from ..store import atomic_io
from ..store.runs import load_compare_run, open_run
from .compare import work_done, write_outputs
from .references import spec_of_run


def rewrite_outputs(run_path: str | Path) -> dict:
    """Rewrite the run's outputs (module docstring); returns the new summary."""
    root = Path(run_path)
    config = load_compare_run(root).config
    spec = spec_of_run(config)
    with open_run(root.parent, root.name, config, create=False) as run:
        tasks = load_tasks(spec.source, list(spec.tasks) if spec.tasks else None)
        history = atomic_io.read_jsonl(run.layout.history) if run.layout.history.is_file() else []
        return write_outputs(run, {t.spec.name: t.spec for t in tasks}, spec.convention, work_done(history))
