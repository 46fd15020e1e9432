"""A compare run's score-vs-FLOPs curves as TensorBoard scalars (event_files.py; only with the optional
tensorboard package): one event directory per objective, `tensorboard/<objective>/`, so that TensorBoard
draws MLM and RTD on the same charts, as plots/score_vs_flops does.

Tags: `score/suite` (the suite's aggregate: the mean over tasks, or the GLUE score) and `score/<task>` (its
primary metric), each the value summary.json's curve holds at a point: the untrained encoder at 0 FLOPs,
then every checkpoint; median over evaluation seeds, mean over pre-training seeds. The step is the point's
training FLOPs / 1e6 (MFLOPs, rounded), the run's FLOP convention. Written anew with the summary, so a
resumed or extended run never shows a point twice.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..store import event_files
from ..store.layout import RunLayout


def curve_points(summary: Mapping[str, Any], objective: str) -> list[tuple[str, int, float]]:
    """(tag, step, value) of one objective's curve in the main protocol's block of `summary`."""
    block = summary["protocols"][summary["main_protocol"]]
    per_task = {(p["objective"], round(p["fraction"], 6)): p["score"].get("per_task", {}) for p in block["points"]}
    out = []
    for c in block["curves"].get(objective, []):
        step = event_files.flops_step(c["train_flops"])
        if step is None:
            continue
        out.append(("score/suite", step, float(c["score"])))
        for task, value in per_task.get((c["objective"], round(c["fraction"], 6)), {}).items():
            if value is not None:
                out.append((f"score/{task}", step, float(value)))
    return out


def write(layout: RunLayout, summary: Mapping[str, Any]) -> bool:
    """Write every objective's curve; False (nothing written) without the tensorboard package."""
    if not event_files.available():
        return False
    block = summary["protocols"][summary["main_protocol"]]
    for objective in block["curves"]:
        event_files.replace(layout.tensorboard / objective, curve_points(summary, objective))
    return True
