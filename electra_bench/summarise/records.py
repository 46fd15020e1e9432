"""The typed records of summary.json, with their versioned JSON (de)serialisation: the summary and its
verdict (a score row's, `ScoreRow`, is the run store's: store/score_rows.py). docs/results.md documents each field;
tests/test_summarise_records.py holds those tables against these dataclasses, so the two cannot drift apart.

`from_json` validates what it reads (a malformed record is one BenchError naming where); `to_json` gives
what is written. Summaries carry `schema_version` (SUMMARY_SCHEMA).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import BenchError

# 4: each noise source counted once in the intervals, the score one mean, the suite-level probability of
# improvement; 3: statistics (Multi-Bootstrap), the CI verdict and crossover; 2: pre-training seeds
SUMMARY_SCHEMA = 4


VERDICT_KINDS = ("not_learned", "incomplete", "too_small", "no_noise", "ranked", "not_resolved")


@dataclass
class Verdict:
    """Whether RTD is ahead of MLM at the final checkpoint (docs/results.md, "Verdict"): built by
    verdict.noise_verdict from the statistics (confidence.py), stored in every protocol block."""

    rule: str
    method: str | None = None
    kind: str | None = None
    difference: float | None = None  # RTD - MLM at the final checkpoint
    ci: list[float] | None = None
    p_value: float | None = None
    prob_improvement: float | None = None  # P(RTD > MLM) over pairs of pre-training seeds, suite score
    rliable_prob_improvement: float | None = None  # rliable's: the same per task, averaged over tasks
    band: float | None = None  # descriptive: the larger range over seeds of the two final points
    separated: bool = False  # exactly when kind == "ranked"
    better: str | None = None
    beats_untrained: dict[str, dict] = field(default_factory=dict)
    not_learned: list[str] = field(default_factory=list)
    n_pretrain_seeds: int | None = None
    plan: dict | None = None
    carried_by: list[str] = field(default_factory=list)
    reversed_by: list[str] = field(default_factory=list)  # of carried_by: without these the other one is ahead
    verdict: str | None = None  # the sentence reports print
    sequential: dict | None = None  # compare --until-resolved: the looks taken and the boundary (summarise/sequential.py)

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
    readings: dict | None = None  # a run read more than one way (summarise/readings.py)

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


_SUMMARY_WORK = {"timings", "wall_s", "invocations", "readings"}


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
