"""Reference points: external checkpoints (a transformers folder, hf:NAME, or another electra-bench
checkpoint) scored with a run's suite, protocol and evaluation seeds and shown beside its curves at the
FLOPs the user states (`compare --reference "ELECTRA-Small=hf:google/electra-small-discriminator@1.4e18"`).

They are stored in the run directory as `references.jsonl`, one row per (label, task, evaluation seed,
metric, protocol), appended as they are scored, so a rerun scores only what is missing, like scores.jsonl.
They never enter the curves, the headline or the verdict: a reference is a point of comparison, trained
elsewhere on other data with compute the user states, not measured here.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from ..store import atomic_io
from ..errors import BenchError, at
from .reference_spec import Reference, parse, parse_all  # noqa: F401  (the syntax, importable without pandas
from ..store.runs import RunDir

FIELDS = ("label", "source", "train_flops", "task", "seed", "metric", "value", "protocol", "params")
def stored(run: RunDir) -> pd.DataFrame:
    """Every stored reference row (a torn last line, from a crash mid-append, is skipped)."""
    path = run.layout.references
    if not path.is_file():
        return pd.DataFrame(columns=list(FIELDS))
    rows = []
    for i, row in enumerate(atomic_io.read_jsonl(path), start=1):
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise BenchError(f"{at(path, i)}: reference row lacks {', '.join(missing)}")
        rows.append(row)
    return pd.DataFrame(rows, columns=list(FIELDS))


def missing_tasks(run: RunDir, ref: Reference, tasks: list[str], seeds: list[int], protocol: str) -> list[str]:
    """The tasks of `ref` not yet scored for every evaluation seed under `protocol`. A label already stored
    with another source or stated FLOPs is refused: the run's references are what it says they are."""
    df = stored(run)
    mine = df[df["label"] == ref.label]
    if not mine.empty:
        old = mine.iloc[0]
        old_flops = None if pd.isna(old["train_flops"]) else float(old["train_flops"])
        if old["source"] != ref.source or old_flops != ref.train_flops:
            raise BenchError(f"{run.layout.references}: reference {ref.label!r} is stored as {old['source']}@"
                             f"{old_flops}; give this one another label")
    mine = mine[mine["protocol"] == protocol]
    done = set(zip(mine["task"], mine["seed"].astype(int)))
    return [t for t in tasks if not all((t, s) in done for s in seeds)]


def append(run: RunDir, rows: Iterable[Mapping[str, Any]]) -> None:
    for row in rows:
        atomic_io.append_jsonl(run.layout.references, {k: row[k] for k in FIELDS})


def as_score_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Reference rows in the shape the summary's points are computed from (one pseudo pre-training seed,
    no fraction or step: the reference was trained elsewhere)."""
    out = df.copy()
    out["pretrain_seed"], out["fraction"], out["step"] = 0, 0.0, 0
    out["train_flops"] = out["train_flops"].astype(float)
    return out
