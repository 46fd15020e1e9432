"""`report --plan`: per compare run and checkpoint, RTD - MLM with its CI and the seeds the design needs
(summarise/plan.py, docs/results.md), as records and as text."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..store.runs import load_compare_run
from ..summarise import confidence
from ..summarise import summary as summary_mod
from ..units import fmt_flops


def plan_report(paths: Sequence[str]) -> list[dict]:
    """`report --plan`: per compare run and checkpoint, RTD - MLM with its CI and the design's plan
    (confidence.plan_text), as records with a `text` line each."""
    out = []
    for path in paths:
        s = summary_mod.load_or_build(load_compare_run(path))
        stats = s["protocols"][s["main_protocol"]].get("statistics") or {}
        if not stats.get("differences"):
            out.append({"run_id": s["run_id"], "fraction": None, "text": f"[{s['run_id']}] no interval to plan "
                        f"from: {stats.get('note') or 'no checkpoint of both objectives'}"})
        for d in stats.get("differences", []):
            at = f"{100 * d['fraction']:.3g}% ({fmt_flops(d['train_flops'])} FLOPs)"
            unit = stats.get("unit", "pre-training seeds")
            difference, plan = confidence.difference_text(d, unit=unit), confidence.plan_text(d, unit)
            out.append({"run_id": s["run_id"], "fraction": d["fraction"], "train_flops": d["train_flops"],
                        "difference": d["estimate"], "ci": d["ci"], "p_value": d["p_value"],
                        "resolved": d["resolved"], "plan": d["plan"], "method": stats["method"],
                        "text": f"[{s['run_id']}] {at}: {difference}; {plan}",
                        "difference_text": f"{at}: {difference}", "plan_text": plan})
    return out


PLAN_WIDTH = 100


def render_plan(records: Sequence[Mapping[str, Any]], width: int = PLAN_WIDTH) -> str:
    """`report --plan` as text: a heading per run, then per checkpoint the difference on one line and the
    design's plan under it, wrapped to `width` columns (one record's text runs to 300 characters)."""
    import textwrap

    def wrap(text: str, indent: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent="    ", break_on_hyphens=False)

    lines: list[str] = []
    for run_id in dict.fromkeys(r["run_id"] for r in records):
        lines.append(f"{run_id}:")
        for r in (r for r in records if r["run_id"] == run_id):
            if "plan_text" not in r:  # nothing to plan from: its one line says why
                lines += wrap(r["text"].split("] ", 1)[-1], "  ")
                continue
            lines += wrap(r["difference_text"], "  ") + wrap(r["plan_text"], "    ")
    return "\n".join(lines)
