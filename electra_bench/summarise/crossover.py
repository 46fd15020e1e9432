"""The crossover: from which checkpoint on one objective is ahead of the other (or of the untrained encoder) at
every later checkpoint, read from the 95% CIs of the differences in a protocol's statistics (confidence.py)."""

from __future__ import annotations

from typing import Any, Mapping

from ..units import fmt_flops
from .points import LABELS, TRAINED

def crossover_from_ci(stats: Mapping[str, Any], convention: str) -> dict:
    """Where RTD's lead over MLM (and each objective's over the untrained encoder) is resolved at every
    checkpoint from there on: the first such checkpoint and the one before it (the crossover lies
    between), from the 95% CIs of the differences."""
    out = {"rule": "ahead where the 95% CI of the difference excludes 0 (Multi-Bootstrap, docs/results.md); "
                   "crossover: the first checkpoint from which that holds at every later one",
           "method": stats.get("method")}
    series = {"rtd_over_mlm": [(d["fraction"], d["train_flops"], d["ci"][0]) for d in stats.get("differences", [])]}
    for o in TRAINED:
        series[f"{o}_over_untrained"] = [(d["fraction"], d["train_flops"], d["ci"][0])
                                         for d in stats.get("vs_untrained", []) if d["objective"] == o]
    for key, pts in series.items():
        pts = sorted(pts)
        who, ref = key.split("_over_")
        ref = "init" if ref == "untrained" else ref
        entry: dict[str, Any] = {"objective": who, "reference": ref, "status": "incomplete", "from_fraction": None,
                                 "from_flops": None, "after_flops": None}
        if pts:
            ahead = [lo > 0 for _, _, lo in pts]
            k = len(ahead)
            while k > 0 and ahead[k - 1]:
                k -= 1
            if k == len(ahead):
                entry["status"] = "crossed_back" if any(ahead) else "never"
            else:
                entry.update(status="crossed", from_fraction=pts[k][0], from_flops=pts[k][1],
                             after_flops=pts[k - 1][1] if k > 0 else None)
        entry["text"] = _crossover_text(entry, pts, convention)
        out[key] = entry
    return out


def _crossover_text(c: Mapping[str, Any], pts, convention: str) -> str:
    who = LABELS[c["objective"]]
    ref = "MLM" if c["reference"] == "mlm" else "the untrained encoder"
    last = fmt_flops(pts[-1][1]) if pts else "?"
    if c["status"] == "incomplete":
        return f"Crossover: {who} over {ref}: no checkpoints to compare"
    if c["status"] == "crossed":
        where = (f"between {fmt_flops(c['after_flops'])} and {fmt_flops(c['from_flops'])} FLOPs"
                 if c["after_flops"] is not None else f"by the first checkpoint ({fmt_flops(c['from_flops'])} FLOPs)")
        return (f"Crossover: {who} is ahead of {ref} (95% CI above 0) {where} ({convention} convention) and "
                f"stays ahead (up to {last} FLOPs)")
    if c["status"] == "crossed_back":
        return f"Crossover: {who} is ahead of {ref} at some checkpoints but not at the last ({last} FLOPs)"
    return f"Crossover: {who} is not resolved ahead of {ref} at any checkpoint (up to {last} FLOPs)"
