"""Did each pre-training run learn? Thresholds on the trainer's held-out diagnostics (pretrain/diagnostics.py)
and the per-run report the summary, the verdict, the plots and the CI baseline read.

A run is flagged "did not learn" when, at its final diagnostics point:
- its MLM (for RTD: its generator) gains less than MIN_MLM_GAIN_NATS over the unigram baseline, or
- (RTD) its discriminator's AUC (over the tokens that can be replaced; a log written before that figure
  existed has only the AUC over all tokens, [CLS]/[SEP] included, and is judged on it, named so) is below
  MIN_DISC_AUC or its loss is less than MIN_DISC_GAP_NATS below the base rate, or
- its kept encoder's representations collapsed: mean token cosine above MAX_TOKEN_COSINE.

The thresholds sit between the two populations measured (docs/tuning.md): RTD runs that learned nothing
show AUC 0.50-0.55, gap <= 0.001 nats, token cosine 0.84-0.99; runs that learned (2e12 to 6e13 FLOPs) show
gain 0.44-2.7 nats, AUC 0.73-0.86, gap 0.037-0.107 nats, cosine 0.12-0.57 (untrained: about 0.15). Those AUCs
are over all tokens; over the replaceable ones they are 0.02-0.03 lower, which leaves MIN_DISC_AUC between
the two populations.
This module imports no torch: reports read logs only.
"""

from __future__ import annotations

import math
from typing import Any

MIN_MLM_GAIN_NATS = 0.05
MIN_DISC_AUC = 0.6
MIN_DISC_GAP_NATS = 0.005
MAX_TOKEN_COSINE = 0.7

# diagnostics shown in reports and kept in baselines: (log key, label)
DIAGNOSTICS = {
    "mlm_gain_nats": "MLM/generator gain over unigram (nats)",
    "mlm_acc": "MLM/generator masked accuracy",
    "disc_auc_replaceable": "discriminator AUC over replaceable tokens",
    "disc_auc": "discriminator AUC over all tokens ([CLS]/[SEP] included)",
    "disc_gap_nats": "discriminator gain over base rate (nats)",
    "token_cosine": "mean token cosine of the kept encoder",
    "top_pc_share": "top principal component share",
}


def _value(diag: dict, key: str) -> float | None:
    v = diag.get(key)
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def disc_auc(diag: dict) -> tuple[float | None, str]:
    """The discriminator AUC a report shows, and over what: the replaceable tokens' where the log has it,
    else (a log written before it existed) the all-token figure."""
    replaceable = _value(diag, "disc_auc_replaceable")
    if replaceable is not None:
        return replaceable, "over replaceable tokens"
    return _value(diag, "disc_auc"), "over all tokens"


def flags(objective: str, diag: dict) -> list[str]:
    """Why a run with these final diagnostics did not learn (empty: it learned)."""
    out = []
    gain = _value(diag, "mlm_gain_nats")
    who = "generator" if objective == "rtd" else "MLM"
    if gain is not None and gain < MIN_MLM_GAIN_NATS:
        out.append(f"{who} gains {gain:.3f} nats over unigram (< {MIN_MLM_GAIN_NATS})")
    if objective == "rtd":
        auc, over = disc_auc(diag)
        gap = _value(diag, "disc_gap_nats")
        if auc is not None and auc < MIN_DISC_AUC:
            out.append(f"discriminator AUC {auc:.3f} {over} (< {MIN_DISC_AUC})")
        if gap is not None and gap < MIN_DISC_GAP_NATS:
            out.append(f"discriminator loss {gap:.4f} nats below base rate (< {MIN_DISC_GAP_NATS})")
    cos = _value(diag, "token_cosine")
    if cos is not None and cos > MAX_TOKEN_COSINE:
        out.append(f"representations collapsed (token cosine {cos:.2f} > {MAX_TOKEN_COSINE})")
    return out


def diagnostics_rows(log_rows: list[dict]) -> list[dict]:
    """The log rows that carry diagnostics, as {"step", "flops", "fraction", <diag name>: value}."""
    out = []
    for r in log_rows:
        d = {k[5:]: v for k, v in r.items() if k.startswith("diag/")}
        if d:
            out.append({"step": r.get("step"), "flops": r.get("flops"), "fraction": r.get("fraction"), **d})
    return out


def run_report(objective: str, log_rows: list[dict]) -> dict[str, Any]:
    """One pre-training run: its diagnostics trajectory, its final values, and its flags."""
    traj = diagnostics_rows(log_rows)
    if not traj:
        return {"objective": objective, "trajectory": [], "final": None, "flags": [], "learned": None}
    final = traj[-1]
    f = flags(objective, final)
    return {"objective": objective, "trajectory": traj, "final": final, "flags": f, "learned": not f}


def mean_final(reports: list[dict], key: str) -> float | None:
    vals = [r["final"][key] for r in reports if r.get("final") and _value(r["final"], key) is not None]
    return sum(vals) / len(vals) if vals else None


def not_learned_line(objective_label: str, seed: int, report: dict) -> str:
    return f"{objective_label} (pre-training seed {seed}) did not learn: " + "; ".join(report["flags"])
