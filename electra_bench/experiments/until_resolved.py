"""`compare --until-resolved --max-pretrain-seeds N`: run a compare, and while RTD - MLM at the final
checkpoint has not crossed the group-sequential boundary (summarise/sequential.py), add a batch of
pre-training seeds (as many as the first look had) and look again, up to N per objective.

Each look is an ordinary compare invocation on the same run directory with more seeds (store/runs.py
extends a run whose config asks only for more seeds), so everything a look stored is kept, and running
the same command again resumes: it reads how many seeds the run holds, finishes that look, and goes on
from there. The looks and the decision are recomputed from the stored scores by the summary, never kept
as state of their own.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..store import atomic_io
from ..store.layout import RunLayout
from ..summarise import sequential
from .compare import run_compare
from .spec import CompareSpec


def design(spec: CompareSpec, max_seeds: int) -> CompareSpec:
    """The spec of a sequential run: its first look at spec.pretrain_seeds, batches of that size."""
    first = spec.pretrain_seeds
    sequential.check_design(first, max_seeds)
    return dataclasses.replace(spec, until_resolved=(first, first, max_seeds))


def every_look(spec: CompareSpec) -> CompareSpec:
    """The spec with the most seeds its looks can reach: what --dry-run sizes."""
    return dataclasses.replace(spec, pretrain_seeds=spec.until_resolved[2])


def stored_seeds(root: str | Path, run_id: str) -> int | None:
    """The pre-training seeds the run directory already asks for (its config.json), if it exists."""
    config = RunLayout(Path(root) / run_id).config
    if not config.is_file():
        return None
    seeds = atomic_io.read_json(config, "run config").get("pretrain_seeds")
    return seeds if isinstance(seeds, int) else None


def run_until_resolved(spec: CompareSpec, root: str | Path, run_id: str | None, max_seeds: int, *,
                       quiet: bool = False, width: int = 160, score_more=None):
    """Run the looks (module docstring); return the last look's summary and report, as run_compare does."""
    spec = design(spec, max_seeds)
    first, batch, maximum = spec.until_resolved
    plan = sequential.schedule(first, maximum, batch)
    run_id = run_id or spec.run_id()  # hashed at the first look's seed count: the same command, the same run
    have = stored_seeds(root, run_id) or plan[0]
    n = next((k for k in plan if k >= have), plan[-1])
    while True:
        summary, rendered = run_compare(dataclasses.replace(spec, pretrain_seeds=n), root, run_id, quiet=quiet,
                                        width=width, score_more=score_more)
        seq = (summary["protocols"][summary["main_protocol"]].get("statistics") or {}).get("sequential")
        if seq is None or seq["finished"] or n == plan[-1]:
            return summary, rendered
        n = plan[plan.index(n) + 1]
        if not quiet:
            print(f"not resolved at look {seq['taken']} of at most {seq['planned']}: adding pre-training seeds up "
                  f"to {n} per objective", file=sys.stderr)
