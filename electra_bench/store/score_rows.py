"""A score row of scores.jsonl (docs/results.md, "scores.jsonl"): its fields, and the check every row read or
written passes, each problem one BenchError naming the file and line."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from ..choices import FLOP_CONVENTIONS, PROTOCOLS, SCORED_OBJECTIVES
from ..errors import BenchError


@dataclass(frozen=True)
class ScoreRow:
    """One score: an encoder (objective at a checkpoint, or the untrained one) on one task, one metric,
    one evaluation seed (docs/results.md, "scores.jsonl")."""

    objective: str
    fraction: float
    step: int
    train_flops: float
    convention: str
    task: str
    seed: int
    metric: str
    value: float
    protocol: str
    pretrain_seed: int = 0  # rows written before pre-training seeds existed are seed 0

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, row: Mapping[str, Any], where: str) -> "ScoreRow":
        """A validated row; every problem is a BenchError naming `where` (file:line)."""
        if not isinstance(row, Mapping):
            raise BenchError(f"{where}: a score row must be a dict, got {type(row).__name__}")
        keys = set(row)
        missing = [k for k in SCORE_FIELDS if k not in keys and k not in _OPTIONAL]
        extra = sorted(keys - set(SCORE_FIELDS))
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"unknown {', '.join(extra)}")
            raise BenchError(f"{where}: score row has {'; '.join(parts)} (fields: {', '.join(SCORE_FIELDS)})")

        def number(key: str, *, integer: bool = False) -> float | int:
            v = row[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "item"):
                raise BenchError(f"{where}: '{key}' must be a number, got {v!r}")
            v = v.item() if hasattr(v, "item") else v
            if integer:
                if isinstance(v, float) and not v.is_integer():
                    raise BenchError(f"{where}: '{key}' must be an integer, got {v!r}")
                return int(v)
            v = float(v)
            if not math.isfinite(v):
                raise BenchError(f"{where}: '{key}' must be finite, got {v!r}")
            return v

        out = {
            "objective": row["objective"],
            "fraction": number("fraction"),
            "step": number("step", integer=True),
            "train_flops": number("train_flops"),
            "convention": row["convention"],
            "task": row["task"],
            "seed": number("seed", integer=True),
            "metric": row["metric"],
            "value": number("value"),
            "protocol": row["protocol"],
            "pretrain_seed": number("pretrain_seed", integer=True) if "pretrain_seed" in row else 0,
        }
        if out["objective"] not in SCORED_OBJECTIVES:
            raise BenchError(f"{where}: objective must be one of {', '.join(SCORED_OBJECTIVES)}, got {out['objective']!r}")
        if out["convention"] not in FLOP_CONVENTIONS:
            raise BenchError(f"{where}: convention must be one of {', '.join(FLOP_CONVENTIONS)}, got {out['convention']!r}")
        if out["protocol"] not in PROTOCOLS:
            raise BenchError(f"{where}: protocol must be one of {', '.join(PROTOCOLS)}, got {out['protocol']!r}")
        for key in ("task", "metric"):
            if not isinstance(out[key], str) or not out[key]:
                raise BenchError(f"{where}: '{key}' must be a non-empty string, got {out[key]!r}")
        if out["step"] < 0 or out["train_flops"] < 0 or out["fraction"] < 0:
            raise BenchError(f"{where}: step, train_flops and fraction must be >= 0")
        if out["objective"] == "init":
            if out["fraction"] != 0 or out["train_flops"] != 0 or out["step"] != 0:
                raise BenchError(f"{where}: the 'init' (untrained) point has fraction 0, step 0 and train_flops 0")
        elif out["fraction"] <= 0:
            raise BenchError(f"{where}: a trained checkpoint needs fraction > 0 (use objective 'init' for the untrained encoder)")
        return cls(**out)


# the columns of RunDir.scores, in order
SCORE_FIELDS = tuple(f.name for f in dataclasses.fields(ScoreRow))
_OPTIONAL = {f.name for f in dataclasses.fields(ScoreRow) if f.default is not dataclasses.MISSING}
