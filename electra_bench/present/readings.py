"""The report's lines for a run read more than one way (summary.json's `readings`, summarise/readings.py):
which reading the headline is, RTD - MLM per reading and per kind with its CI, each objective against the
untrained encoder per reading, one line per disagreement in direction, and the zero-shot reading's heads."""

from __future__ import annotations

from typing import Any, Mapping

from ..summarise.confidence import fmt_ci

# what each protocol reads, in a few words (the report names readings by these)
READING_NAMES = {
    "probe": "probe (linear, frozen mean of the last layer)",
    "finetune": "fine-tuning (the paper's recipe)",
    "finetune-tuned": "fine-tuning (lr and epochs chosen per task on held-out training data)",
    "fewshot": "few-shot fine-tuning",
    "zeroshot": "zero-shot (minimal pairs, each objective's own head)",
}
SHORT = {"probe": "under the probe", "finetune": "fine-tuned", "finetune-tuned": "fine-tuned (tuned recipe)",
         "fewshot": "few-shot", "zeroshot": "zero-shot"}
LABELS = {"mlm": "MLM", "rtd": "RTD"}


def _side(d: Mapping[str, Any] | None) -> str:
    if not d:
        return "n/a"
    ci = d["ci"]
    where = "RTD ahead" if ci[0] > 0 else "MLM ahead" if ci[1] < 0 else "not resolved"
    return f"{d['estimate']:+.1f} {fmt_ci(ci)} ({where})"


def readings_lines(summary: Mapping[str, Any]) -> list[str]:
    block = summary.get("readings")
    if not block:
        return []
    per = block["per_reading"]
    lines = []
    if len(per) > 1:
        lines.append(f"Readings: the headline, crossover and verdict above are the {READING_NAMES.get(block['main'], block['main'])}'s; "
                     f"each reading's own below (RTD - MLM at the final checkpoint, 95% CI)")
    for name, r in per.items():
        kinds = "; ".join(f"{k} {_side(d)}" for k, d in r["per_kind"].items())
        beats = ", ".join(
            f"{LABELS.get(o, o)} - untrained {b['difference']:+.1f} {fmt_ci(b['ci'])}" + ("" if b.get("beats") else " (not above)")
            for o, b in r["beats_untrained"].items() if b.get("ci"))
        lines.append(f"Reading {name}: RTD - MLM {_side(r['difference'])}" + (f"; per kind: {kinds}" if kinds else "")
                     + (f"; {beats}" if beats else ""))
    for d in block.get("disagreements", []):
        what = d["kind"] or "the suite score"
        lines.append(f"Readings disagree on {what}: RTD ahead {' and '.join(SHORT.get(x, x) for x in d['rtd_ahead'])}, "
                     f"MLM ahead {' and '.join(SHORT.get(x, x) for x in d['mlm_ahead'])}")
    if len(per) > 1 and not block.get("disagreements"):
        lines.append("Readings disagree nowhere in direction by their CIs (a reading that resolves nothing disagrees "
                     "with none)")
    heads = block.get("zeroshot_heads") or {}
    if heads:
        lines.append("Zero-shot heads (minimal pairs, % of pairs whose good sentence scores higher, final checkpoint, "
                     "95% CI over pre-training seeds): " + "; ".join(
                         f"{name} {h['mean']:.1f}" + (f" [{h['ci'][0]:.1f}, {h['ci'][1]:.1f}]" if h["ci"] else "")
                         for name, h in heads.items()))
    return lines
