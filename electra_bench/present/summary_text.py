"""The lines a report and the plots print from one summary (summarise/summary.py): the headline sentences
with their CIs, the crossover, the verdict with its plan and per-task breakdown, the learning diagnostics,
and how a point's score is made. Text only: every number comes from summary.json."""

from __future__ import annotations

from typing import Any, Mapping

from ..summarise import confidence, learning, sequential
from ..summarise.headline import fmt_percent
from ..summarise.points import LABELS, TRAINED


def seeds_phrase(block: Mapping[str, Any]) -> str:
    """How a point's score is made (summarise/points.SCORE_DEFINITION), with this protocol block's seed counts: what the
    report's Score note, the score plot's axis and the tasks plot say."""
    n = max((p["score"]["n_seeds"] for p in block["points"]), default=0)
    n_pre = max((p["score"].get("n_pretrain_seeds", 1) for p in block["points"]), default=1)
    if n_pre > 1:
        return f"mean over {n} evaluation seeds, then over {n_pre} pre-training seeds"
    return f"mean over {n} evaluation seed{'s' if n != 1 else ''}"


def untrained_lines(verdict: Mapping) -> list[str]:
    """Each objective against the untrained encoder, both ways: a first run that separates one objective from
    no pre-training says so, not only the one that fails to (issue 48)."""
    lines = []
    for o, b in verdict.get("beats_untrained", {}).items():
        if b.get("beats") in (True, False):
            says = "beats" if b["beats"] else "does not beat"
            lines.append(f"{LABELS[o]} {says} the untrained encoder (95% CI of {LABELS[o]} - untrained: "
                         f"{confidence.fmt_ci(b['ci'])}, estimate {b['difference']:+.1f})")
    return lines


def headline_lines(summary: Mapping[str, Any], protocol: str | None = None) -> list[str]:
    """The headline sentences and the noise verdict, for reports."""
    block = summary["protocols"][protocol or summary["main_protocol"]]
    stats = block.get("statistics") or {}
    lines = []
    for key in ("rtd_reaches_mlm", "mlm_reaches_rtd"):
        h = block["headline"].get(key)
        if not h:
            continue
        ci = (stats.get("headline") or {}).get(key)
        text = h["text"]
        if ci and h.get("percent") is not None:
            lo, hi = ci["percent_ci"]
            text += (f" [95% CI {fmt_percent(lo) if lo is not None else 'not reached'} to "
                     f"{fmt_percent(hi) if hi is not None else 'not reached'}]")
        lines.append(text)
    cross = block.get("crossover") or {}
    lines += [cross[k]["text"] for k in ("rtd_over_mlm", "rtd_over_untrained") if isinstance(cross.get(k), Mapping)
              and "text" in cross[k]]
    verdict = block["verdict"]
    lines += untrained_lines(verdict)
    lines += verdict.get("not_learned", [])
    seq = verdict.get("sequential")
    if verdict.get("verdict") and seq:
        line = f"Verdict: {verdict['verdict']}"
        if verdict.get("difference") is not None and seq["looks"]:
            level = seq["looks"][seq["deciding"] if seq["stopped"] else -1]["level"]
            line += (f" (RTD - MLM = {verdict['difference']:+.1f}, {sequential.fmt_level(level)} CI "
                     f"{confidence.fmt_ci(verdict['ci'])}, {confidence.fmt_p(verdict['p_value'])})")
        lines += [line, sequential.text(seq)]
    elif verdict.get("verdict"):
        line = f"Verdict: {verdict['verdict']}"
        diff = next((d for d in stats.get("differences", []) if verdict.get("difference") is not None
                     and d["estimate"] == verdict["difference"]), None)
        if diff is not None:
            line += f" ({confidence.difference_text(diff, unit=stats.get('unit', 'pre-training seeds'))})"
            if verdict["kind"] == "ranked":
                n, unit = verdict["n_pretrain_seeds"], stats.get("unit", "pre-training seeds")
                line += f"; {n} {unit[:-1] if n == 1 else unit}"
        lines.append(line)
        if diff is not None and verdict["kind"] in ("ranked", "not_resolved"):
            lines.append(f"Plan: {confidence.plan_text(diff, stats.get('unit', 'pre-training seeds'))}")
        if diff is not None and diff.get("per_task"):
            lines.append("Per task (RTD - MLM, 95% CI): " + "; ".join(
                f"{t} {d['estimate']:+.1f} {confidence.fmt_ci(d['ci'])}" for t, d in diff["per_task"].items()))
        for t, d in (diff or {}).get("leave_one_out", {}).items():
            side = "RTD ahead" if d["ci"][0] > 0 else "MLM ahead" if d["ci"][1] < 0 else "not resolved"
            if d["resolved"] != diff["resolved"] or (d["resolved"] and (d["estimate"] > 0) != (diff["estimate"] > 0)):
                lines.append(f"Without {t}: RTD - MLM = {d['estimate']:+.1f}, 95% CI {confidence.fmt_ci(d['ci'])} ({side})")
        if diff is not None and diff.get("per_kind"):  # a suite of kinds (ebs-3): the score is their mean
            lines.append("Per kind (RTD - MLM, 95% CI): " + "; ".join(
                f"{k} {d['estimate']:+.1f} {confidence.fmt_ci(d['ci'])}" for k, d in diff["per_kind"].items()))
            lines.append("Leaving each kind out (RTD - MLM, 95% CI): " + "; ".join(
                f"without {k} {d['estimate']:+.1f} {confidence.fmt_ci(d['ci'])}"
                for k, d in diff["leave_one_kind_out"].items()))
    if stats.get("method") == "seeds-only" or stats.get("note"):
        lines.append(f"Statistics: {stats.get('method')}: {stats.get('note')}")
    return lines


def learning_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per objective: whether every pre-training seed learned, with the final diagnostics
    (mean over seeds)."""
    block = summary.get("learning") or {}
    lines = []
    for o in TRAINED:
        if o not in block:
            continue
        m = block[o]["final_mean"]
        parts = []
        if m.get("mlm_gain_nats") is not None:
            parts.append(f"{'generator ' if o == 'rtd' else ''}gain over unigram {m['mlm_gain_nats']:.2f} nats")
        auc, over = learning.disc_auc(m)
        if auc is not None:
            also = f" (all tokens: {m['disc_auc']:.2f})" if m.get("disc_auc_replaceable") is not None else ""
            parts.append(f"discriminator AUC {auc:.2f} {over}{also}, {m['disc_gap_nats']:.3f} nats below base rate")
        if m.get("token_cosine") is not None:
            parts.append(f"token cosine {m['token_cosine']:.2f}")
        n = len(block[o]["runs"])
        status = "learned" if block[o]["learned"] else "DID NOT LEARN"
        # "held-out": these say whether pre-training learned its own task, not what it does downstream,
        # which the headline and verdict lines judge (the two can differ)
        lines.append(f"Learning (held-out pre-training diagnostics): {LABELS[o]} {status} "
                     f"({n} pre-training seed{'s' if n != 1 else ''}; "
                     f"mean at the end: {', '.join(parts)})")
    return lines
