"""The typed records a run's files hold, with their versioned JSON (de)serialisation: a score row
(`scores.jsonl`), the verdict and the summary (`summary.json`). docs/results.md documents each field;
tests/test_records.py holds those tables against these dataclasses, so the two cannot drift apart.

`from_json` validates what it reads (a malformed record is one BenchError naming where); `to_json` gives
what is written. Summaries carry `schema_version` (SUMMARY_SCHEMA); score rows have had one schema since
`pretrain_seed` was added (rows without it read as pre-training seed 0).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..choices import FLOP_CONVENTIONS, PROTOCOLS, SCORED_OBJECTIVES
from ..errors import BenchError

SUMMARY_SCHEMA = 3  # 3: statistics (Multi-Bootstrap), the CI verdict and crossover; 2: pre-training seeds


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


SCORE_FIELDS = tuple(f.name for f in dataclasses.fields(ScoreRow))
_OPTIONAL = {f.name for f in dataclasses.fields(ScoreRow) if f.default is not dataclasses.MISSING}


VERDICT_KINDS = ("not_learned", "incomplete", "too_small", "no_noise", "ranked", "not_resolved")


@dataclass
class Verdict:
    """Whether RTD is ahead of MLM at the final checkpoint (docs/results.md, "Verdict"): built by
    summary.noise_verdict from the statistics (confidence.py), stored in every protocol block."""

    rule: str
    method: str | None = None
    kind: str | None = None
    difference: float | None = None  # RTD - MLM at the final checkpoint
    ci: list[float] | None = None
    p_value: float | None = None
    prob_improvement: float | None = None
    band: float | None = None  # descriptive: the larger range over seeds of the two final points
    separated: bool = False  # exactly when kind == "ranked"
    better: str | None = None
    beats_untrained: dict[str, dict] = field(default_factory=dict)
    not_learned: list[str] = field(default_factory=list)
    n_pretrain_seeds: int | None = None
    plan: dict | None = None
    carried_by: list[str] = field(default_factory=list)
    verdict: str | None = None  # the sentence reports print

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = "verdict") -> "Verdict":
        _exact_keys(d, cls, where)
        if d["kind"] not in VERDICT_KINDS:
            raise BenchError(f"{where}: unknown verdict kind {d['kind']!r}")
        return cls(**d)


@dataclass
class Summary:
    """summary.json (docs/results.md, "summary.json"): what a run's scores say, per protocol, with the main
    protocol's headline, verdict and crossover repeated at the top; `compare` adds its work (timings, wall
    time, invocations)."""

    run_id: str
    created_utc: str
    flop_convention: str
    score_convention: str
    score_scale: str
    suite: dict
    models: dict
    config: dict
    learning: dict
    main_protocol: str
    protocols: dict
    headline: dict
    verdict: dict
    crossover: dict
    schema_version: int = SUMMARY_SCHEMA
    timings: dict | None = None
    wall_s: float | None = None
    invocations: int | None = None

    def to_json(self) -> dict:
        """The JSON object, schema_version first; compare's fields only when set."""
        d = dataclasses.asdict(self)
        out = {"schema_version": d.pop("schema_version")}
        out.update({k: v for k, v in d.items() if v is not None or k not in _SUMMARY_WORK})
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = "summary") -> "Summary":
        """A summary of this schema version; an older one is a BenchError (load_or_build rebuilds it)."""
        if not isinstance(d, Mapping) or d.get("schema_version") != SUMMARY_SCHEMA:
            got = d.get("schema_version") if isinstance(d, Mapping) else type(d).__name__
            raise BenchError(f"{where}: summary schema_version {got!r}, expected {SUMMARY_SCHEMA}")
        _exact_keys(d, cls, where, optional=_SUMMARY_WORK | {"schema_version"})
        return cls(**d)


_SUMMARY_WORK = {"timings", "wall_s", "invocations"}


def _exact_keys(d: Mapping[str, Any], cls, where: str, optional: set[str] = frozenset()) -> None:
    if not isinstance(d, Mapping):
        raise BenchError(f"{where}: expected an object, got {type(d).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING} - set(optional)
    missing, extra = sorted(required - set(d)), sorted(set(d) - names)
    if missing or extra:
        raise BenchError(f"{where}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(extra)}"] if extra else [])))
