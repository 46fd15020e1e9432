"""A protocol's statistics: the Multi-Bootstrap (summarise/bootstrap.py) over a run's stored scores and
per-example predictions (what is resampled: bootstrap_inputs.py), turned into what the verdict, the crossover
(crossover.py), the headline, the tables and the plots state (each statement's interval: summarise/interval.py). The method, in a page a user can follow,
is in docs/results.md ("Statistics").

Per arm (the untrained encoder, every checkpoint of every objective): the suite score with a 95% CI, and
each task's. Per budget fraction where both objectives have a checkpoint: RTD - MLM with a 95% CI, a
one-sided p-value, and P(RTD > MLM) over every pair of pre-training seeds on the suite score (beside it,
under its own name, rliable's average over tasks of the same probability per task, which ignores by how
much a task is won); the same per task, and the suite mean leaving each task out, so that a difference
carried by one task shows; and the design's plan (summarise/plan.py). Per checkpoint: each objective
against the untrained encoder of the same pre-training seeds.

Without stored predictions (runs made before they were stored, and external rows) the same resampling runs
over pre-training seeds only, the dev sets taken as exact: `method` says "seeds-only" and `note` says what
that leaves out. With one pre-training seed: over dev examples only (with predictions), or over evaluation
seeds only (without: "eval-seeds-only", the old band's unit); with one of each and no predictions nothing is
resampled ("none": no intervals). Each fallback's `note` says what its intervals leave out.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping

import numpy as np
import pandas as pd

from . import bootstrap, interval, sequential
from . import plan as plan_mod
from .bootstrap_inputs import arm_key, eval_seeds_as_units, inputs, metric_weights
from ..choices import OBJECTIVES, listing_order

N_BOOT = 1000
BOOT_SEED = 0
LEVEL = 0.95
INTERVAL = ("the wider of the paired t over pre-training seeds and the Welch-Satterthwaite t over seeds and the "
            "example noise the seeds share (summarise/interval.py)")
TRAINED = OBJECTIVES
LABELS = {"mlm": "MLM", "rtd": "RTD", "init": "untrained"}
METHODS = ("multi-bootstrap", "seeds-only", "eval-seeds-only", "none")


# ---- statements ---------------------------------------------------------------------------------------


def _statement(reps, task, coef, tasks_w=None) -> dict:
    out = interval.statement(interval.split(reps, task, coef, tasks_w), LEVEL)
    out["resolved"] = out["ci"][0] > 0 or out["ci"][1] < 0
    return out


def _reweighted(reps, coef, tasks: list[str]) -> dict | None:
    """The statement of `coef` on the suite score re-weighted onto `tasks` (their suite weights, renormalised)."""
    w = {t: reps.weights.get(t, 0.0) for t in tasks}
    total = sum(w.values())
    return _statement(reps, None, coef, {k: v / total for k, v in w.items()}) if total > 0 else None


def _by_kind(reps, coef, tasks: list[str], kinds: Mapping[str, str]) -> dict:
    """Per kind (a suite whose tasks name kinds, e.g. ebs-3): the statement on that kind's tasks, and on the
    suite without that kind, so a difference carried by one kind shows as a task's does."""
    names = sorted({kinds[t] for t in tasks if t in kinds})
    out = {"per_kind": {}, "leave_one_kind_out": {}}
    if len(names) < 2:
        return out
    for k in names:
        inside = [t for t in tasks if kinds.get(t) == k]
        out["per_kind"][k] = _reweighted(reps, coef, inside)
        out["leave_one_kind_out"][k] = _reweighted(reps, coef, [t for t in tasks if t not in inside])
    return {key: {k: v for k, v in d.items() if v is not None} for key, d in out.items()}


def _difference(reps, a: str, b: str, tasks: list[str], kinds: Mapping[str, str] | None = None) -> dict:
    coef = {a: 1.0, b: -1.0}
    out = _statement(reps, None, coef)
    # over pairs of pre-training seeds: with one seed of either, one pair is no probability
    pairs = min(len(reps.seeds[a]), len(reps.seeds[b])) > 1
    pi = lambda t: bootstrap.probability_of_improvement(  # noqa: E731
        [reps.per_seed[t][a][k] for k in reps.seeds[a]], [reps.per_seed[t][b][k] for k in reps.seeds[b]]) if pairs else None
    out["prob_improvement"] = pi(None)
    out["per_task"] = {}
    for t in tasks:
        s = _statement(reps, t, coef)
        s["prob_improvement"] = pi(t)
        out["per_task"][t] = s
    pis = [v["prob_improvement"] for v in out["per_task"].values() if v["prob_improvement"] is not None]
    out["rliable_prob_improvement"] = float(np.mean(pis)) if pis else None
    out["leave_one_out"] = {}
    if len(tasks) > 2:
        w = {t: reps.weights.get(t, 0.0) for t in tasks}
        for t in tasks:
            rest = {k: v for k, v in w.items() if k != t}
            total = sum(rest.values())
            if total > 0:
                out["leave_one_out"][t] = _statement(reps, None, coef, {k: v / total for k, v in rest.items()})
    if kinds:
        out.update(_by_kind(reps, coef, tasks, kinds))
    out["plan"] = plan_mod.plan(out["estimate"], interval.split(reps, None, coef))
    return out


def compute(run, rows: pd.DataFrame, scorer, points: list[dict], *, n_boot: int = N_BOOT,
            seed: int = BOOT_SEED, sequential_design: Mapping[str, Any] | None = None) -> dict:
    """The protocol's statistics block (module docstring). `rows`: its score rows (one protocol, one FLOP
    convention); `points`: the summary's points (for FLOPs); `sequential_design`: a run made with
    --until-resolved has its looks (summarise/sequential.py) at the final checkpoint under `sequential`."""
    t0 = time.perf_counter()
    tasks = sorted(rows["task"].unique())
    task_metrics = {t: sorted(rows.loc[rows["task"] == t, "metric"].unique()) for t in tasks}
    weights = metric_weights(scorer, task_metrics)
    arms, seeds = _arms_and_seeds(rows, weights)
    flops = {arm_key(p["objective"], p["fraction"]): p["train_flops"] for p in points}
    n_eval = int(rows["seed"].nunique())
    base = {"level": LEVEL, "n_boot": n_boot, "seed": seed, "interval": INTERVAL,
            "n_eval_seeds": n_eval, "weights": weights}
    if not arms or not weights:
        return {**base, "method": "none", "note": "nothing to resample", "points": [], "differences": [],
                "vs_untrained": [], "cost_s": 0.0}
    task_data, method, note = inputs(run, rows, weights, arms, seeds)
    n_seeds = max(len(s) for s in seeds.values())
    if method == "seeds-only" and n_seeds < 2:
        if n_eval < 2:
            return {**base, "method": "none", "note": "one pre-training seed, one evaluation seed and no stored "
                    "predictions: nothing to resample, no intervals", "points": [], "differences": [],
                    "vs_untrained": [], "cost_s": time.perf_counter() - t0}
        task_data = eval_seeds_as_units(task_data)
        method = "eval-seeds-only"
        note = ("one pre-training seed and no stored predictions: resampled over evaluation seeds only, so the "
                "intervals leave out pre-training-seed and example noise and are too narrow")
    elif method == "multi-bootstrap" and n_seeds < 2:
        note = ("one pre-training seed: resampled over dev examples only, so the intervals leave out "
                "pre-training-seed noise (more seeds: --pretrain-seeds)")
    reps = bootstrap.multibootstrap(task_data, n_boot, seed)
    out = {**base, "method": method, "note": note, "paired": reps.paired,
           "unit": "evaluation seeds" if method == "eval-seeds-only" else "pre-training seeds",
           "n_pretrain_seeds": {a: len(s) for a, s in reps.seeds.items()},
           "examples": {t.name: int(len(t.labels)) for t in task_data if t.labels is not None} or None,
           "points": [], "differences": [], "vs_untrained": []}
    kinds = getattr(scorer, "kinds", None) if getattr(scorer, "kind", None) == "suite-kind-mean" else None
    _statements(out, reps, arms, tasks, flops, kinds)
    out["headline"] = _headline_ci(reps, arms, flops)
    if sequential_design and out["differences"] and out["unit"] == "pre-training seeds":
        f = out["differences"][-1]["fraction"]
        out["sequential"] = {"fraction": f, **sequential.looks(reps, {arm_key("rtd", f): 1.0, arm_key("mlm", f): -1.0},
                                                              sequential_design)}
    out["cost_s"] = time.perf_counter() - t0
    return out


def _arms_and_seeds(rows: pd.DataFrame, weights) -> tuple[list[tuple[str, float]], dict[str, list[int]]]:
    """The (objective, fraction) arms in listing order, each with its complete pre-training seeds; an arm
    with none yet is left out."""
    arms = sorted({(o, float(f)) for o, f in zip(rows["objective"], rows["fraction"])},
                  key=lambda x: (listing_order(x[0]), x[1]))
    seeds = {arm_key(o, f): sorted(int(s) for s in rows.loc[(rows["objective"] == o)
                                                             & ((rows["fraction"] - f).abs() < 1e-9),
                                                             "pretrain_seed"].unique()) for o, f in arms}
    seeds = _complete_seeds(rows, arms, seeds, weights)
    return [(o, f) for o, f in arms if seeds[arm_key(o, f)]], seeds


def _statements(out: dict, reps, arms, tasks, flops, kinds: Mapping[str, str] | None = None) -> None:
    """Fill `out`'s points (each arm), differences (RTD - MLM at each shared fraction) and vs_untrained."""
    for o, f in arms:
        a = arm_key(o, f)
        s = _statement(reps, None, {a: 1.0})
        del s["resolved"]
        s["per_task"] = {t: {k: v for k, v in _statement(reps, t, {a: 1.0}).items() if k in ("estimate", "ci")}
                         for t in tasks}
        out["points"].append({"objective": o, "fraction": f, "train_flops": flops.get(a), "arm": a, **s})
    fractions = sorted({f for o, f in arms if o == "mlm"} & {f for o, f in arms if o == "rtd"})
    for f in fractions:
        a, b = arm_key("rtd", f), arm_key("mlm", f)
        d = _difference(reps, a, b, tasks, kinds)
        ff = [flops.get(a), flops.get(b)]
        out["differences"].append({"a": "rtd", "b": "mlm", "fraction": f,
                                   "train_flops": math.sqrt(ff[0] * ff[1]) if all(ff) else (ff[0] or ff[1]),
                                   **d})
    init = next((arm_key(o, f) for o, f in arms if o == "init"), None)
    if init is not None:
        for o, f in arms:
            if o in TRAINED:
                a = arm_key(o, f)
                s = _statement(reps, None, {a: 1.0, init: -1.0})
                # each task's own trained - untrained: the sensitivity docs/suite.md admits tasks by
                s["per_task"] = {t: {k: v for k, v in _statement(reps, t, {a: 1.0, init: -1.0}).items()
                                     if k in ("estimate", "ci", "se", "resolved")} for t in tasks}
                out["vs_untrained"].append({"objective": o, "fraction": f, "train_flops": flops.get(a), **s})


def _complete_seeds(rows, arms, seeds, weights) -> dict[str, list[int]]:
    """Per arm, the pre-training seeds with every (task, metric) of the suite scored: a seed still being
    scored is left out until it is complete."""
    out = {}
    for o, f in arms:
        a = arm_key(o, f)
        sel = rows[(rows["objective"] == o) & ((rows["fraction"] - f).abs() < 1e-9)]
        ok = []
        for s in seeds[a]:
            ps = sel[sel["pretrain_seed"] == s]
            have = set(zip(ps["task"], ps["metric"]))
            if all((t, m) in have for t, ms in weights.items() for m in ms):
                ok.append(s)
        out[a] = ok
    return out


def _headline_ci(reps, arms, flops) -> dict:
    """The headline's share ('RTD reaches MLM's final score with X% of its compute') in every replicate:
    its 95% interval, and in how many replicates it is reached at all (percentile of the shares, a replicate
    that does not reach counting as more than any share)."""
    out = {}
    for who, ref in (("rtd", "mlm"), ("mlm", "rtd")):
        own = [arm_key(o, f) for o, f in arms if o in ("init", who)]
        ref_final = max((f for o, f in arms if o == ref), default=None)
        if ref_final is None or not any(a.startswith(who) for a in own):
            continue
        rf = arm_key(ref, ref_final)
        ref_flops = flops.get(rf)
        sample = {a: interval.replicates(reps, a, LEVEL) for a in own + [rf]}
        xs = [0.0 if a.startswith("init") else flops.get(a) for a in own]
        if ref_flops is None or any(x is None for x in xs):
            continue
        shares = np.full(reps.n_boot, np.inf)
        for b in range(reps.n_boot):
            target = sample[rf][b]
            prev = None
            for x, a in zip(xs, own):
                y = sample[a][b]
                if y >= target:
                    if prev is None:
                        shares[b] = x / ref_flops
                    else:
                        (xa, ya) = prev
                        t = (target - ya) / (y - ya) if y != ya else 1.0
                        f = xa + t * (x - xa) if xa <= 0 else math.exp(math.log(xa) + t * (math.log(x) - math.log(xa)))
                        shares[b] = f / ref_flops
                    break
                prev = (x, y)
        reached = float(np.mean(np.isfinite(shares)))
        ordered = np.sort(shares)  # the percentiles by rank: a replicate that does not reach sorts last
        lo, hi = (ordered[min(len(ordered) - 1, int(math.floor(q * (len(ordered) - 1))))]
                  for q in ((1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2))
        out[f"{who}_reaches_{ref}"] = {
            "percent_ci": [100 * float(lo) if np.isfinite(lo) else None, 100 * float(hi) if np.isfinite(hi) else None],
            "reached_share": reached}
    return out


# ---- sentences ----------------------------------------------------------------------------------------


def fmt_ci(ci: list[float], digits: int = 1) -> str:
    return f"[{ci[0]:+.{digits}f}, {ci[1]:+.{digits}f}]"


def fmt_p(p: float) -> str:
    """'p = 0.054' or 'p < 0.001'."""
    return f"p = {p:.3f}" if p >= 0.001 else "p < 0.001"


def difference_text(d: Mapping[str, Any], what: str = "RTD - MLM", unit: str = "pre-training seeds") -> str:
    """The difference with its CI and p-value, and the probability of improvement on the same (suite)
    score; rliable's per-task average, which ignores by how much a task is won, only under its own name."""
    text = f"{what} = {d['estimate']:+.1f}, 95% CI {fmt_ci(d['ci'])}, {fmt_p(d['p_value'])}"
    if d.get("prob_improvement") is not None:
        text += f", P(RTD > MLM) = {d['prob_improvement']:.2f} over pairs of {unit}"
        if d.get("rliable_prob_improvement") is not None:
            text += f" (rliable's per-task average: {d['rliable_prob_improvement']:.2f})"
    return text


def plan_text(d: Mapping[str, Any], unit: str = "pre-training seeds") -> str:
    """What the design can detect and the seeds that would resolve the measured difference."""
    p = d["plan"]
    if p.get("detectable_difference") is None:
        return f"one {unit[:-1]}: the seeds' noise is unknown, so no plan"
    text = (f"this design ({p['n_pretrain_seeds']} {unit}) detects differences of "
            f"{p['detectable_difference']:.1f} or more (80% power)")
    if d["resolved"]:
        return text
    if p["resolvable"]:
        return text + f"; about {p['seeds_needed']} {unit} would resolve {d['estimate']:+.1f}"
    return (text + f"; no number of {unit} resolves {d['estimate']:+.1f} on these dev sets "
            f"(their example noise alone is too wide: more or larger tasks would)")


