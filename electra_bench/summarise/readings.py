"""The verdict per reading: a run that scores its encoders under more than one protocol (`compare --protocol
probe,zeroshot,finetune-tuned`) gets, for each reading, RTD - MLM at the final checkpoint with its 95% CI,
per kind, and each objective against the untrained encoder, and a list of where readings disagree in
direction by their CIs (one reading's CI above 0, another's below: "acceptability: RTD ahead under the
probe, MLM ahead zero-shot"). Each reading keeps its own statistics in its protocol block; this reads them.

The zero-shot reading also names what RTD's generator and the untrained encoder's random heads score
(`heads`): the mean over pre-training seeds of each reading's accuracy on the minimal pairs, with a
Student-t interval over the seeds.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from scipy.special import stdtrit

# the zero-shot metrics by head: (scored label, metric) -> what it is called in the report
ZEROSHOT_HEADS = {
    ("init", "pll_accuracy"): "untrained, MLM head",
    ("init", "discriminator_accuracy"): "untrained, discriminator head",
    ("init", "generator_accuracy"): "untrained, generator",
    ("mlm", "pll_accuracy"): "MLM (PLL)",
    ("rtd", "discriminator_accuracy"): "RTD discriminator",
    ("rtd", "generator_accuracy"): "RTD generator (PLL)",
}


def direction(ci) -> str | None:
    """'rtd' when the CI of RTD - MLM lies above 0, 'mlm' when below, None when it holds 0."""
    if not ci:
        return None
    return "rtd" if ci[0] > 0 else "mlm" if ci[1] < 0 else None


def _final_difference(block: Mapping[str, Any]) -> Mapping[str, Any] | None:
    diffs = [d for d in (block.get("statistics") or {}).get("differences", []) if d.get("a") == "rtd"
             and d.get("b") == "mlm"]
    return max(diffs, key=lambda d: d["fraction"]) if diffs else None


def _brief(d: Mapping[str, Any]) -> dict:
    return {"estimate": d["estimate"], "ci": list(d["ci"]), "resolved": bool(d.get("resolved"))}


def reading_record(block: Mapping[str, Any], kinds: Mapping[str, str] | None = None) -> dict:
    """One reading's statement: RTD - MLM at the final checkpoint (overall and per kind: a reading whose
    tasks are all of one kind, as the zero-shot reading's minimal pairs, states it for that kind), each
    objective against the untrained encoder."""
    d = _final_difference(block)
    beats = (block.get("verdict") or {}).get("beats_untrained") or {}
    per_kind = {k: _brief(v) for k, v in (d or {}).get("per_kind", {}).items()}
    own = {(kinds or {}).get(t) for t in block.get("tasks", [])}
    if d and not per_kind and len(own) == 1 and None not in own:
        per_kind = {own.pop(): _brief(d)}
    return {
        "difference": _brief(d) if d else None,
        "per_kind": per_kind,
        "beats_untrained": {o: {"difference": b.get("difference"), "ci": b.get("ci"), "beats": b.get("beats")}
                            for o, b in beats.items()},
        "tasks": list(block.get("tasks", [])),
    }


def disagreements(per_reading: Mapping[str, Mapping[str, Any]]) -> list[dict]:
    """Where readings disagree in direction by their CIs: per kind, and on the suite score (`kind` None)."""
    out = []
    kinds = sorted({k for r in per_reading.values() for k in r["per_kind"]})
    for kind in [None] + kinds:
        side: dict[str, list[str]] = {"rtd": [], "mlm": []}
        for name, r in per_reading.items():
            d = r["difference"] if kind is None else r["per_kind"].get(kind)
            ahead = direction(d["ci"]) if d else None
            if ahead:
                side[ahead].append(name)
        if side["rtd"] and side["mlm"]:
            out.append({"kind": kind, "rtd_ahead": side["rtd"], "mlm_ahead": side["mlm"]})
    return out


def heads(scores, level: float = 0.95) -> dict[str, dict]:
    """The zero-shot reading's every head at the final checkpoint (and the untrained encoder): the mean
    over pre-training seeds of each seed's accuracy (mean over minimal-pair tasks and evaluation seeds,
    0-100 as stored), with a Student-t interval over the seeds (None with one seed). `scores`: the run's score rows
    (a DataFrame) of the zeroshot protocol."""
    out = {}
    if scores is None or scores.empty:
        return out
    finals = {o: scores.loc[scores["objective"] == o, "fraction"].max() for o in scores["objective"].unique()}
    for (label, metric), name in ZEROSHOT_HEADS.items():
        rows = scores[(scores["objective"] == label) & (scores["metric"] == metric)
                      & (scores["fraction"] == finals.get(label, -1))]
        if rows.empty:
            continue
        per_seed = rows.groupby("pretrain_seed")["value"].mean().to_numpy(dtype=float)
        mean = float(per_seed.mean())
        ci = None
        if len(per_seed) > 1:
            half = float(stdtrit(len(per_seed) - 1, 1 - (1 - level) / 2)) * float(per_seed.std(ddof=1)) / math.sqrt(len(per_seed))
            ci = [mean - half, mean + half]
        out[name] = {"objective": label, "metric": metric, "mean": mean, "ci": ci, "n_pretrain_seeds": len(per_seed),
                     "tasks": sorted(rows["task"].unique())}
    return out


def compare_readings(protocols: Mapping[str, Mapping[str, Any]], main: str, zeroshot_scores=None,
                     kinds: Mapping[str, str] | None = None) -> dict | None:
    """summary.json's `readings` (docs/results.md), for a run scored under more than one protocol or
    zero-shot (None otherwise): the headline's reading, each reading's statement, the disagreements, the
    zero-shot heads. `kinds`: each task's kind (a suite of kinds)."""
    if len(protocols) < 2 and "zeroshot" not in protocols:
        return None
    per = {name: reading_record(block, kinds) for name, block in protocols.items()}
    out = {"main": main, "per_reading": per, "disagreements": disagreements(per)}
    if zeroshot_scores is not None:
        out["zeroshot_heads"] = heads(zeroshot_scores)
    return out


