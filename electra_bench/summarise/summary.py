"""From scores.jsonl to summary.json: per-checkpoint scores, the compute headline, the statistics
(summarise/confidence.py) and the verdict they give. The schema is in docs/results.md.

Points. A point is one (objective, fraction) -- a pre-training checkpoint -- plus the untrained encoder
("init", 0 FLOPs), which starts both curves.

The score (one definition, SCORE_DEFINITION, used by the table, the plots and the text alike, and what the
statistics estimate): each run's metric on the dev set, averaged over the evaluation seeds of a
pre-training seed, then over pre-training seeds; the suite score is the suite's aggregate of those per-task
means. The aggregate is the GLUE score in the chosen convention (default "electra") when the suite's tasks
are GLUE tasks covering it, otherwise the suite mean (mean over tasks of each task's primary metric, see
glue_score.primary_metric); either is linear in the task metrics, so it is also the mean of each run's
aggregate. A point's band (its descriptive spread) is the range of its pre-training seeds' scores, or of
its evaluation seeds' with one pre-training seed: the variation a rerun would show. Per task the median,
min and max over every run are kept beside the mean, as description.

Headline. "RTD reaches MLM's final score with X% of its compute": walk RTD's curve (init, then its
checkpoints by FLOPs) to the first segment that reaches MLM's final (largest-fraction) score and
interpolate inside it -- linearly in FLOPs on the segment from init (0 FLOPs, where log is undefined),
linearly in log FLOPs between checkpoints. X = those FLOPs / MLM's final FLOPs. If RTD's first point
already reaches it and that point is a checkpoint, X is an upper bound ("at_most"); if it is the
untrained encoder (0 FLOPs), there is no share to report ("untrained", percent null: on the downstream
tasks MLM's pre-training has not improved on its starting point, whatever its held-out diagnostics say);
if no point reaches it, "not reached". The same with MLM and RTD swapped.

Verdict and crossover. RTD - MLM at the final checkpoint is ranked when its 95% CI (confidence.py)
excludes 0 (with compare --until-resolved, when the sequential boundary of the look is crossed:
sequential.py); an objective beats the untrained encoder when its CI against it is above 0; the crossover
is where the CI of the difference is above 0 from one checkpoint on (confidence.crossover_from_ci).

Learning. Before ranking, the verdict reads each pre-training run's learning diagnostics
(summarise/learning.py): if any run of an objective did not learn, the verdict says so and does not
rank. If neither objective beats the untrained encoder: "budget too small to separate the objectives".
The invariants every summary keeps (verdict kind vs separated/better, reached vs percent, bands >= 0)
are listed in docs/results.md and tested in tests/test_summarise_invariants.py.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..store import atomic_io
from ..errors import BenchError, at
from ..score import glue_score
from . import confidence, learning, references, sequential
from ..choices import FLOP_CONVENTIONS, OBJECTIVES, PROTOCOLS, listing_order
from ..score.readings import reads_spec
from . import readings
from .records import SUMMARY_SCHEMA, VERDICT_KINDS, Summary, Verdict
from ..store.runs import RunDir
from ..units import fmt_flops

SCHEMA_VERSION = SUMMARY_SCHEMA
SCORE_DEFINITION = "each run's score averaged over evaluation seeds, then over pre-training seeds"
TRAINED = OBJECTIVES
LABELS = {"mlm": "MLM", "rtd": "RTD", "init": "untrained"}

VERDICT_TOO_SMALL = "budget too small to separate the objectives"
VERDICT_NO_SEEDS = ("no interval: one pre-training seed and no stored predictions, nothing to resample "
                    "(more pre-training seeds, or a rerun that stores predictions)")


def fmt_percent(p: float) -> str:
    return f"{p:.3g}%" if p < 10 else f"{p:.0f}%"


def _stats(values: list[float]) -> dict:
    arr = np.asarray(values, dtype=float)
    return {
        "median": float(np.median(arr)),
        "mean": float(arr.mean()),
        "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0,
        "min": float(arr.min()),
        "max": float(arr.max()),
        "n": int(len(arr)),
    }


class _Scorer:
    """How a set of task metrics becomes one number for this suite."""

    def __init__(self, tasks: list[str], task_specs: Mapping[str, Any] | None, score_convention: str):
        glue_score._check_convention(score_convention)
        self.tasks = tasks
        self.task_specs = task_specs
        if glue_score.is_glue(tasks) and glue_score.covers(tasks, score_convention):
            self.kind = f"glue-{score_convention}"
            self.convention = score_convention
            self.description = glue_score.DESCRIPTIONS[score_convention]
        else:
            self.convention = None
            self.kinds = {t: glue_score.task_kind(t, (task_specs or {}).get(t)) for t in tasks}
            if glue_score.has_kinds(task_specs):
                self.kind = "suite-kind-mean"
                self.description = "mean over kinds of the mean over each kind's tasks of their primary metric"
            else:
                self.kind = "suite-mean"
                self.description = "mean over tasks of each task's primary metric"

    def primary(self, task: str, available: Mapping[str, float] | None) -> str:
        spec = self.task_specs.get(task) if self.task_specs else None
        if self.convention == "glue" and spec is None and task in glue_score.CONVENTIONS["glue"]:
            return glue_score.CONVENTIONS["glue"][task][0]
        return glue_score.primary_metric(task, spec, available)

    def __call__(self, task_metrics: Mapping[str, Mapping[str, float]], *, partial: bool) -> glue_score.GlueScore:
        if self.convention is not None:
            return glue_score.score_detail(task_metrics, self.convention, partial=partial)
        primaries = {t: {"primary_metric": self.primary(t, task_metrics.get(t)), "kind": self.kinds[t]}
                     for t in self.tasks}
        return glue_score.suite_score_detail(task_metrics, primaries, partial=partial)


def _means(rows: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per (task, metric): the mean over evaluation seeds inside each pre-training seed, then over
    pre-training seeds (SCORE_DEFINITION; what the statistics estimate)."""
    if "pretrain_seed" in rows:
        m = rows.groupby(["task", "metric", "pretrain_seed"])["value"].mean().groupby(level=[0, 1]).mean()
    else:
        m = rows.groupby(["task", "metric"])["value"].mean()
    out: dict[str, dict[str, float]] = {}
    for (task, metric), v in m.items():
        out.setdefault(task, {})[metric] = float(v)
    return out


def _complete_aggregate(rows: pd.DataFrame, scorer: _Scorer) -> float | None:
    """The aggregate of these rows' per-(task, metric) means; None when a task is missing."""
    detail = scorer(_means(rows), partial=True)
    return None if detail.missing or not detail.per_task else detail.value


def _point(objective: str, fraction: float, rows: pd.DataFrame, scorer: _Scorer) -> dict:
    seeds = sorted(int(s) for s in rows["seed"].unique())
    tasks, means = _task_entries(rows, scorer)
    aggregate = scorer(means, partial=True)
    per_seed: dict[str, float] = {}
    incomplete: list[int] = []
    for seed in seeds:
        seed_value = _complete_aggregate(rows[rows["seed"] == seed], scorer)
        if seed_value is None:
            incomplete.append(seed)
        else:
            per_seed[str(seed)] = seed_value
    seed_values = list(per_seed.values())
    value = None if math.isnan(aggregate.value) else aggregate.value
    band = "eval_seeds"
    per_pretrain: dict[str, float] = {}
    pretrain_seeds = sorted(int(s) for s in rows["pretrain_seed"].unique()) if "pretrain_seed" in rows else [0]
    if len(pretrain_seeds) > 1:
        for ps in pretrain_seeds:
            ps_value = _complete_aggregate(rows[rows["pretrain_seed"] == ps], scorer)
            if ps_value is not None:
                per_pretrain[str(ps)] = ps_value
        if len(per_pretrain) > 1:
            band = "pretrain_seeds"
            seed_values = list(per_pretrain.values())
            value = float(np.mean(seed_values))
    score = {
        "value": value,
        "band": band,
        "per_pretrain_seed": per_pretrain,
        "n_pretrain_seeds": len(pretrain_seeds),
        "per_task": aggregate.per_task,
        "missing_tasks": list(aggregate.missing),
        "per_seed": per_seed,
        "n_seeds": len(per_seed),
        "incomplete_seeds": incomplete,
        "min": min(seed_values) if seed_values else None,
        "max": max(seed_values) if seed_values else None,
        "range": (max(seed_values) - min(seed_values)) if len(seed_values) >= 2 else None,
        "std": float(np.std(seed_values, ddof=1)) if len(seed_values) >= 2 else None,
    }
    return {
        "objective": objective,
        "fraction": float(fraction),
        "step": int(round(float(rows["step"].median()))),
        "train_flops": float(rows["train_flops"].median()),
        "seeds": seeds,
        "n_seeds": len(seeds),
        "tasks": tasks,
        "score": score,
    }


def _task_entries(rows: pd.DataFrame, scorer: _Scorer) -> tuple[dict[str, dict], dict[str, dict[str, float]]]:
    """Per task: its metrics' statistics over the rows with the primary metric's on top (`mean` is the
    score's definition; median, min, max and std are over every run, descriptive), and the metrics' means
    (what the suite score is taken over)."""
    tasks: dict[str, dict] = {}
    means = _means(rows)
    for task, trows in rows.groupby("task", sort=True):
        metrics = {}
        for metric, mrows in trows.groupby("metric", sort=True):
            metrics[metric] = {**_stats(mrows["value"].tolist()), "mean": means[task][metric]}
        primary = scorer.primary(task, means[task])
        entry = {"primary_metric": primary, "metrics": metrics}
        if primary in metrics:
            entry.update({k: metrics[primary][k] for k in ("mean", "median", "min", "max", "std", "n")})
        else:
            entry.update({"mean": None, "median": None, "min": None, "max": None, "std": None, "n": 0})
        tasks[task] = entry
    return tasks, means


def reference_points(rows: pd.DataFrame, scorer: _Scorer) -> list[dict]:
    """One point per reference label (summarise/references.py), scored as a checkpoint is, with its
    stated FLOPs and no pre-training band (it was trained elsewhere, once)."""
    out = []
    for label, lrows in references.as_score_rows(rows).groupby("label", sort=False):
        p = _point("reference", 0.0, lrows, scorer)
        flops, params = lrows["train_flops"].iloc[0], lrows["params"].iloc[0]
        p.update({"label": str(label), "source": str(lrows["source"].iloc[0]),
                  "train_flops": None if pd.isna(flops) else float(flops), "flops_stated": True,
                  "params": None if pd.isna(params) else int(params)})
        out.append(p)
    return out


def curve(points: list[dict], objective: str) -> list[dict]:
    """The objective's curve: the untrained point (if any), then its checkpoints by FLOPs."""
    init = [p for p in points if p["objective"] == "init"]
    own = sorted((p for p in points if p["objective"] == objective), key=lambda p: (p["train_flops"], p["fraction"]))
    return init[:1] + own


def final_point(points: list[dict], objective: str) -> dict | None:
    own = [p for p in points if p["objective"] == objective]
    return max(own, key=lambda p: (p["fraction"], p["train_flops"])) if own else None


def flops_to_reach(curve_points: list[tuple[float, float]], target: float) -> tuple[float | None, str]:
    """FLOPs at which a curve of (flops, score) first reaches `target`, and how that number was got:
    "exact" (a point hits it and nothing earlier could; 0 FLOPs when the first point is the untrained
    encoder, which _reach reports as "untrained"), "interpolated", "at_most" (the first point is a
    checkpoint already above target), or "not_reached" (None)."""
    pts = sorted(curve_points, key=lambda p: p[0])
    if not pts:
        return None, "not_reached"
    f0, s0 = pts[0]
    if s0 >= target:
        return f0, ("exact" if f0 <= 0 else "at_most")
    for (fa, sa), (fb, sb) in zip(pts, pts[1:]):
        if sb >= target:
            t = (target - sa) / (sb - sa)
            if fa <= 0:
                f = fa + t * (fb - fa)
            else:
                f = math.exp(math.log(fa) + t * (math.log(fb) - math.log(fa)))
            return f, ("exact" if t >= 1.0 else "interpolated")
    return None, "not_reached"


def _reach(points: list[dict], who: str, reference: str, convention: str) -> dict | None:
    ref_final = final_point(points, reference)
    own = curve(points, who)
    if ref_final is None or not any(p["objective"] == who for p in own) or ref_final["score"]["value"] is None:
        return None
    target = ref_final["score"]["value"]
    ref_flops = ref_final["train_flops"]
    pts = [(p["train_flops"], p["score"]["value"]) for p in own if p["score"]["value"] is not None]
    flops, bound = flops_to_reach(pts, target)
    W, R = LABELS[who], LABELS[reference]
    out = {
        "objective": who,
        "reference": reference,
        "target_score": target,
        "reference_flops": ref_flops,
        "reached": flops is not None,
        "flops": flops,
        "bound": bound,
        "fraction_of_reference_compute": None,
        "percent": None,
    }
    if flops is None:
        best = max(pts, key=lambda p: p[1]) if pts else (None, None)
        if best[1] is None:
            where = ""
        elif best[0] <= 0:  # the best of its curve is where it started
            where = f" (its best is the untrained encoder's {best[1]:.1f})"
        else:
            where = f" (best {best[1]:.1f} at {fmt_flops(best[0])} FLOPs)"
        out["text"] = f"{W} does not reach {R}'s final score ({target:.1f}) within its budget{where}"
        return out
    if ref_flops > 0:
        frac = flops / ref_flops
        out["fraction_of_reference_compute"] = frac
        out["percent"] = 100 * frac
        qualifier = "at most " if bound == "at_most" else ""
        out["text"] = (
            f"{W} reaches {R}'s final score ({target:.1f}) with {qualifier}{fmt_percent(100 * frac)} of {R}'s compute "
            f"({fmt_flops(flops)} of {fmt_flops(ref_flops)} FLOPs, {convention} convention)"
        )
    else:
        out["text"] = f"{W} reaches {R}'s final score ({target:.1f}) at {fmt_flops(flops)} FLOPs"
    if bound == "at_most":
        out["text"] += "; already at its first checkpoint, so the true share may be lower"
    if flops <= 0:
        # 0% would read as "RTD needs none of MLM's compute"; it means the shared starting point (the
        # untrained encoder) already scores as high as the reference's final checkpoint: no share to report
        out.update(bound="untrained", fraction_of_reference_compute=None, percent=None)
        out["text"] = (f"The untrained encoder already reaches {R}'s final score ({target:.1f}): on the downstream "
                       f"tasks, {R}'s pre-training has not improved on its starting point")
    return out


def _ranges(*points: dict | None) -> list[float]:
    return [p["score"]["range"] for p in points if p is not None and p["score"]["range"] is not None]


def noise_verdict(points: list[dict], stats: Mapping[str, Any], learning_block: Mapping[str, Any] | None = None
                  ) -> Verdict:
    """The verdict from the statistics (summarise/confidence.py), after the learning check. `kind`:
    not_learned | incomplete | too_small | no_noise | ranked | not_resolved. "ranked" (`separated`) exactly
    when the 95% CI of RTD - MLM at the final checkpoint excludes 0; otherwise "not resolved with n
    pre-training seeds", with the plan (the smallest difference the design detects, the seeds that would
    resolve the measured one). An objective beats the untrained encoder when its CI against it is above 0.
    `band` is the descriptive range over pre-training seeds (the larger of the two final points')."""
    finals = {o: final_point(points, o) for o in TRAINED}
    usable = {o: p for o, p in finals.items() if p is not None and p["score"]["value"] is not None}
    v = Verdict(rule=("ranked when the 95% CI of RTD - MLM at the final checkpoint (Multi-Bootstrap over pre-training "
                      "seeds and dev examples, docs/results.md) excludes 0"), method=stats.get("method"))
    out = v.__dict__  # filled in place below; returned as the typed record
    r = _ranges(*usable.values())
    out["band"] = max(r) if r else None
    final_fraction = min((p["fraction"] for p in usable.values()), default=None) if len(usable) == 2 else None
    diff = next((d for d in stats.get("differences", []) if final_fraction is not None
                 and abs(d["fraction"] - final_fraction) < 1e-9), None)
    if diff is not None:
        n = min(stats["n_pretrain_seeds"].get(f"rtd@{diff['fraction']:.4f}", 0),
                stats["n_pretrain_seeds"].get(f"mlm@{diff['fraction']:.4f}", 0))
        seq = stats.get("sequential")
        if seq is not None and abs(seq["fraction"] - diff["fraction"]) < 1e-9:
            # --until-resolved: the decision is the sequential test's, at the look where it stopped (or the
            # last one taken), whose interval is wider than 95% so that every look together errs 5%
            look = seq["looks"][seq["deciding"] if seq["stopped"] else -1] if seq["looks"] else None
            diff = {**diff, "leave_one_out": {}, "resolved": bool(look and look["resolved"])}
            if look is not None:
                diff.update(estimate=look["estimate"], ci=look["ci"], p_value=look["p_value"])
                n = look["n_pretrain_seeds"]
            out["sequential"] = seq
            out["rule"] = ("ranked when RTD - MLM at the final checkpoint crosses the group-sequential boundary of "
                           "compare --until-resolved (docs/results.md, Seeds until resolved)")
        out.update(difference=diff["estimate"], ci=diff["ci"], p_value=diff["p_value"],
                   prob_improvement=diff.get("prob_improvement"),
                   rliable_prob_improvement=diff.get("rliable_prob_improvement"), plan=diff["plan"], n_pretrain_seeds=n)
    for o, p in usable.items():
        vs = next((v for v in stats.get("vs_untrained", []) if v["objective"] == o
                   and abs(v["fraction"] - p["fraction"]) < 1e-9), None)
        if vs is not None:
            out["beats_untrained"][o] = {"difference": vs["estimate"], "ci": vs["ci"], "p_value": vs["p_value"],
                                         "beats": vs["ci"][0] > 0}
    for o in TRAINED:
        for run in (learning_block or {}).get(o, {}).get("runs", []):
            if run.get("learned") is False:
                out["not_learned"].append(learning.not_learned_line(LABELS[o], run["seed"], run))
    _decide(out, usable, diff, stats)
    return v


def _decide(out: dict, usable: dict, diff: dict | None, stats: Mapping[str, Any]) -> None:
    """The verdict's kind and sentence, in order: a run that did not learn, too few scored objectives,
    neither beats the untrained encoder, no noise estimate, then ranked or not resolved by the CI."""
    beats = [v["beats"] for v in out["beats_untrained"].values()]
    if out["not_learned"]:
        out["kind"] = "not_learned"
        who = sorted({line.split(" (")[0] for line in out["not_learned"]})
        out["verdict"] = (f"not ranked: {' and '.join(who)} did not learn (see the learning diagnostics); "
                          "a score difference would compare a broken run, not the objectives")
    elif len(usable) < 2:
        out["kind"] = "incomplete"
        out["verdict"] = ("no trained checkpoint has scores yet" if not usable
                          else f"only {LABELS[next(iter(usable))]} has scores: nothing to compare")
    elif len(beats) == 2 and not any(beats):
        out["kind"] = "too_small"
        out["verdict"] = VERDICT_TOO_SMALL
    elif diff is None:
        out["kind"] = "no_noise"
        out["verdict"] = VERDICT_NO_SEEDS
    elif diff["resolved"]:
        out["kind"] = "ranked"
        out["separated"] = True
        out["better"] = "rtd" if diff["estimate"] > 0 else "mlm"
        other = "mlm" if out["better"] == "rtd" else "rtd"
        out["verdict"] = f"{LABELS[out['better']]} ahead of {LABELS[other]} (95% CI of the difference excludes 0)"
        if out["sequential"]:
            seq = out["sequential"]
            level = sequential.fmt_level(seq["looks"][seq["deciding"]]["level"])
            out["verdict"] = (f"{LABELS[out['better']]} ahead of {LABELS[other]} (crossed the sequential boundary at "
                              f"look {seq['deciding'] + 1} of at most {seq['planned']}: the {level} CI of the "
                              f"difference excludes 0)")
        holds = lambda loo: loo["resolved"] and (loo["estimate"] > 0) == (diff["estimate"] > 0)  # noqa: E731
        # each task left out, then (a suite of kinds, ebs-3) each kind: a lead that rests on one says so
        left_out = sorted(diff.get("leave_one_out", {}).items()) + [
            (f"the {k} kind", loo) for k, loo in sorted(diff.get("leave_one_kind_out", {}).items())]
        out["carried_by"] = [name for name, loo in left_out if not holds(loo)]
        # without some of them the other objective may be ahead by its CI: "not resolved" would hide that
        flips = lambda loo: loo["resolved"] and (loo["estimate"] > 0) != (diff["estimate"] > 0)  # noqa: E731
        out["reversed_by"] = [name for name, loo in left_out if flips(loo)]
        unresolved = [name for name, loo in left_out if not loo["resolved"]]
        if unresolved:
            out["verdict"] += f"; not resolved without {', '.join(unresolved)}"
        if out["reversed_by"]:
            out["verdict"] += f"; {LABELS[other]} ahead without {', '.join(out['reversed_by'])}"
        if stats.get("unit") != "pre-training seeds" or (out["n_pretrain_seeds"] or 0) < 2:
            # measured: one seed re-run with another thread count moved a final score by 1.9 points, more
            # than such a CI's half-width (docs/results.md, Reproducibility)
            out["verdict"] += "; one pre-training seed, so the CI leaves out seed noise (--pretrain-seeds 2 or more)"
    else:
        out["kind"] = "not_resolved"
        out["verdict"] = f"not resolved with {out['n_pretrain_seeds']} {stats.get('unit', 'pre-training seeds')}"
        seq = out["sequential"]
        if seq and seq["finished"]:
            out["verdict"] += f", the maximum (sequential: {seq['taken']} looks, boundary not crossed)"
        elif seq:
            out["verdict"] = (f"not resolved yet: look {seq['taken']} of at most {seq['planned']} "
                              f"({out['n_pretrain_seeds']} pre-training seeds; compare --until-resolved adds seeds)")


HEADLINE_BOUNDS = ("exact", "interpolated", "at_most", "untrained", "not_reached")


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def invariant_violations(summary: Mapping[str, Any]) -> list[str]:
    """Every way this summary contradicts itself (empty: none). The invariants are listed in
    docs/results.md ("Invariants"); load_or_build rebuilds a stored summary that breaks one."""
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    try:
        protocols = summary["protocols"]
        main = summary["main_protocol"]
        need(main in protocols, f"main_protocol {main!r} has no block")
        if main in protocols:
            need(summary.get("headline") == protocols[main]["headline"], "top-level headline is not the main protocol's")
            need(summary.get("verdict") == protocols[main]["verdict"], "top-level verdict is not the main protocol's")
            need(summary.get("crossover") == protocols[main].get("crossover"),
                 "top-level crossover is not the main protocol's")
        learning_block = summary.get("learning") or {}
        for o in TRAINED:
            if o in learning_block:
                runs = learning_block[o]["runs"]
                need(learning_block[o]["learned"] == all(r["learned"] is not False for r in runs),
                     f"learning.{o}.learned disagrees with its runs")
        for name, block in protocols.items():
            bad += [f"{name}: {v}" for v in _block_violations(block, learning_block)]
    except (KeyError, TypeError, AttributeError) as e:  # a field is missing or has the wrong type
        bad.append(f"malformed summary ({type(e).__name__}: {e})")
    return bad


def _block_violations(block: Mapping[str, Any], learning_block: Mapping[str, Any]) -> list[str]:
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    points = block["points"]
    for p in points:
        where = f"point {p['objective']}@{p['fraction']:g}"
        need(p["objective"] in ("init",) + TRAINED, f"{where}: unknown objective")
        if p["objective"] == "init":
            need(p["fraction"] == 0 and p["train_flops"] == 0, f"{where}: the untrained point is not at 0 FLOPs")
        else:
            need(p["fraction"] > 0 and p["train_flops"] >= 0, f"{where}: a checkpoint needs fraction > 0, FLOPs >= 0")
        sc = p["score"]
        need(sc["band"] in ("eval_seeds", "pretrain_seeds"), f"{where}: unknown band {sc['band']!r}")
        if sc["min"] is not None:
            need(sc["max"] is not None and sc["min"] <= sc["max"], f"{where}: score min > max")
        if sc["range"] is not None:
            need(sc["range"] >= 0 and _close(sc["range"], sc["max"] - sc["min"]), f"{where}: range != max - min")
        need(sc["std"] is None or sc["std"] >= 0, f"{where}: negative std")
        if sc["band"] == "pretrain_seeds" and sc["value"] is not None:
            need(sc["min"] <= sc["value"] <= sc["max"], f"{where}: value outside its pre-training-seed band")
        for task, t in p["tasks"].items():
            if t.get("min") is not None:
                need(t["min"] <= t["median"] <= t["max"], f"{where}: {task} median outside [min, max]")
                need(t["min"] - 1e-9 <= t["mean"] <= t["max"] + 1e-9, f"{where}: {task} mean outside [min, max]")
    for o in TRAINED:
        fp = final_point(points, o)
        need(block["final"].get(o) == (fp["fraction"] if fp else None), f"final.{o} is not its largest fraction")
        cv = block["curves"][o]
        expected = curve(points, o)
        need([(c["objective"], c["fraction"]) for c in cv] == [(q["objective"], q["fraction"]) for q in expected],
             f"curves.{o} is not init then its checkpoints by FLOPs")
        flops = [c["train_flops"] for c in cv]
        need(flops == sorted(flops), f"curves.{o} FLOPs decrease")
        need(all(c["score"] == q["score"]["value"] for c, q in zip(cv, expected)), f"curves.{o} scores differ from points")
    for key, h in block["headline"].items():
        if h is not None:
            bad += [f"headline.{key}: {v}" for v in _headline_violations(h, points)]
    bad += [f"verdict: {v}" for v in _verdict_violations(block["verdict"], points, learning_block)]
    bad += _crossover_violations(block)
    return bad


def _crossover_violations(block: Mapping[str, Any]) -> list[str]:
    """A crossover that holds is a checkpoint from which the CI of the difference is above 0 to the end."""
    bad = []
    stats = block.get("statistics") or {}
    for key, c in (block.get("crossover") or {}).items():
        if not isinstance(c, Mapping) or "status" not in c:
            continue
        if key == "rtd_over_mlm":
            los = sorted((d["fraction"], d["ci"][0]) for d in stats.get("differences", []))
        else:
            los = sorted((d["fraction"], d["ci"][0]) for d in stats.get("vs_untrained", [])
                         if d["objective"] == c["objective"])
        if c["status"] == "crossed":
            after = [lo for f, lo in los if f >= c["from_fraction"] - 1e-12]
            if not after or min(after) <= 0:
                bad.append(f"crossover.{key}: crossed, but a CI at or after it reaches 0")
        elif los and all(lo > 0 for _, lo in los):
            bad.append(f"crossover.{key}: every CI is above 0, yet status {c['status']!r}")
    return bad


def _headline_violations(h: Mapping[str, Any], points: list[dict]) -> list[str]:
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    need(h["objective"] in TRAINED and h["reference"] in TRAINED and h["objective"] != h["reference"],
         "objective/reference are not MLM and RTD")
    ref = final_point(points, h["reference"])
    need(ref is not None and h["target_score"] == ref["score"]["value"], "target_score is not the reference's final score")
    need(ref is not None and h["reference_flops"] == ref["train_flops"], "reference_flops is not the reference's final FLOPs")
    bound = h["bound"]
    need(bound in HEADLINE_BOUNDS, f"unknown bound {bound!r}")
    need(h["reached"] == (h["flops"] is not None) == (bound != "not_reached"), "reached, flops and bound disagree")
    if not h["reached"]:
        need(h["percent"] is None and h["fraction_of_reference_compute"] is None, "a share without reaching")
        need("does not reach" in h["text"], "text does not say 'does not reach'")
    elif bound == "untrained":
        need(h["flops"] == 0, "bound 'untrained' with FLOPs != 0")
        need(h["percent"] is None and h["fraction_of_reference_compute"] is None, "bound 'untrained' with a share")
        need(h["text"].startswith("The untrained encoder already reaches"), "text does not say the untrained encoder reaches")
        init = next((p for p in points if p["objective"] == "init"), None)
        need(init is not None and init["score"]["value"] is not None and init["score"]["value"] >= h["target_score"],
             "bound 'untrained' but the untrained encoder is below the target")
    else:
        need(h["flops"] > 0, "reached with FLOPs <= 0 outside bound 'untrained'")
        own = final_point(points, h["objective"])
        need(own is not None and h["flops"] <= own["train_flops"] * (1 + 1e-9), "reached beyond its own final FLOPs")
        if h["reference_flops"] > 0:
            frac = h["fraction_of_reference_compute"]
            need(frac is not None and frac > 0 and _close(frac, h["flops"] / h["reference_flops"]),
                 "fraction_of_reference_compute != flops / reference_flops")
            need(h["percent"] is not None and h["percent"] > 0 and _close(h["percent"], 100 * frac),
                 "percent != 100 x fraction, or not > 0")
            need(fmt_percent(h["percent"]) in h["text"], "text does not carry the percent")
        else:
            need(h["percent"] is None, "a percent of 0 reference FLOPs")
        need(("at most" in h["text"]) == (bound == "at_most"), "'at most' in the text iff bound 'at_most'")
    return bad


def _verdict_violations(v: Mapping[str, Any], points: list[dict], learning_block: Mapping[str, Any]) -> list[str]:
    bad: list[str] = []

    def need(cond: bool, what: str) -> None:
        if not cond:
            bad.append(what)

    kind = v["kind"]
    need(kind in VERDICT_KINDS, f"unknown kind {kind!r}")
    need(isinstance(v["separated"], bool), "separated is not a bool")
    need(v["separated"] == (kind == "ranked"), f"separated={v['separated']} with kind {kind!r}")
    need((v["better"] is not None) == (kind == "ranked"), f"better={v['better']!r} with kind {kind!r}")
    need(v["better"] in (None,) + TRAINED, f"unknown better {v['better']!r}")
    need(isinstance(v["verdict"], str) and v["verdict"], "no verdict sentence")
    finals = {o: final_point(points, o) for o in TRAINED}
    usable = {o: p for o, p in finals.items() if p is not None and p["score"]["value"] is not None}
    diff, ci = v["difference"], v["ci"]
    need((diff is None) == (ci is None), "a difference without its CI, or a CI without one")
    if ci is not None:
        need(ci[0] <= ci[1], "CI lower bound above its upper bound")
        need(0 < v["p_value"] <= 1, "p-value outside (0, 1]")
    need(v["band"] is None or v["band"] >= 0, "negative band")
    for o, b in v["beats_untrained"].items():
        need(b["beats"] == (b["ci"][0] > 0), f"beats_untrained.{o}: beats != CI above 0")
    flagged = any(r.get("learned") is False for o in TRAINED for r in (learning_block.get(o) or {}).get("runs", []))
    need((kind == "not_learned") == bool(v["not_learned"]) == flagged, "not_learned kind, list and learning disagree")
    if kind == "incomplete":
        need(len(usable) < 2, "incomplete with both final scores")
    elif kind == "too_small":
        need(len(usable) == 2 and [b["beats"] for b in v["beats_untrained"].values()] == [False, False],
             "too_small while an objective beats (or was not compared with) the untrained encoder")
    elif kind == "no_noise":
        need(len(usable) == 2 and ci is None, "no_noise with an interval")
    elif kind == "ranked":
        need(ci is not None and (ci[0] > 0 or ci[1] < 0), "ranked while the CI includes 0")
        need(v["better"] == ("rtd" if diff > 0 else "mlm"), "better is not the sign of the difference")
        need(v["verdict"].startswith(LABELS[v["better"]] + " ahead"), "verdict sentence does not name the better one")
    elif kind == "not_resolved":
        need(ci is not None and ci[0] <= 0 <= ci[1], "not_resolved while the CI excludes 0")
    return bad


def learning_report(run: RunDir) -> dict:
    """Per objective: every pre-training seed's diagnostics (trajectory, final values, flags) and the
    mean of the final values over seeds."""
    out: dict[str, Any] = {
        "thresholds": {"min_mlm_gain_nats": learning.MIN_MLM_GAIN_NATS, "min_disc_auc": learning.MIN_DISC_AUC,
                       "min_disc_gap_nats": learning.MIN_DISC_GAP_NATS,
                       "max_token_cosine": learning.MAX_TOKEN_COSINE},
    }
    for o in TRAINED:
        runs = []
        for seed in run.pretrain_seeds(o):
            report = learning.run_report(o, atomic_io.read_jsonl(run.layout.pretrain(o, seed).log))
            runs.append({"seed": seed, **report})
        if runs:
            out[o] = {
                "runs": runs,
                "final_mean": {k: learning.mean_final(runs, k) for k in learning.DIAGNOSTICS},
                "learned": all(r["learned"] is not False for r in runs),
            }
    return out


def _param_count(params: Any, objective: str) -> int | None:
    value = params
    if isinstance(params, Mapping):
        value = params.get(objective)
        if value is None and objective == "init":  # the untrained encoder is the same architecture
            value = params.get("mlm", params.get("rtd"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _models(config: Mapping[str, Any], extra: Mapping[str, Any]) -> dict:
    """Row labels and parameter counts, from the optional keys `preset` (a name, or a dict with "name")
    and `params` (one int, or {objective: int}) of the run config, else of provenance.json's `extra`."""
    preset = config.get("preset", extra.get("preset"))
    if isinstance(preset, Mapping):
        preset = preset.get("name")
    params = config.get("params", extra.get("params"))
    out = {}
    for obj in ("mlm", "rtd", "init"):
        label = LABELS[obj] if obj == "init" or not preset else f"{LABELS[obj]} {preset}"
        out[obj] = {"label": label, "params": _param_count(params, obj)}
    return out


def _pick_convention(df: pd.DataFrame, convention: str | None, path) -> str:
    present = sorted(set(df.loc[df["objective"] != "init", "convention"])) or sorted(set(df["convention"]))
    if convention is None:
        if len(present) > 1:
            raise BenchError(f"{at(path)}: scores in both FLOP conventions ({', '.join(present)}): choose one")
        return present[0] if present else "measured"
    if convention not in FLOP_CONVENTIONS:
        raise BenchError(f"unknown FLOP convention '{convention}': choose one of {', '.join(FLOP_CONVENTIONS)}")
    if present and convention not in present:
        raise BenchError(f"{at(path)}: no scores in the '{convention}' FLOP convention (it has {', '.join(present)})")
    return convention


def build_summary(run: RunDir, task_specs: Mapping[str, Any] | None = None, convention: str | None = None, *,
                  score_convention: str = "electra", suite_name: str | None = None) -> dict:
    """The run's summary (see docs/results.md). `convention` is the FLOP convention of train_flops
    ("measured" or "paper"; None: the only one present); `score_convention` the GLUE convention used
    when the suite is GLUE."""
    path = run.layout.scores
    df = run.scores()
    if df.empty:
        raise BenchError(f"{at(path)}: no scores to summarise")
    convention = _pick_convention(df, convention, path)
    df = df[(df["objective"] == "init") | (df["convention"] == convention)]
    key = ["objective", "pretrain_seed", "fraction", "task", "seed", "metric", "protocol"]
    df = df.drop_duplicates(subset=key, keep="last")
    config, extra = _read_or_empty(lambda: run.config), _read_or_empty(lambda: run.provenance() or {})
    extra = extra.get("extra") if isinstance(extra.get("extra"), Mapping) else {}
    present = [p for p in PROTOCOLS if p in set(df["protocol"])]
    # the suite's tasks that some reading of this run scores (a probe run of ebs-3 leaves its minimal pairs out)
    suite_tasks = [t for t in task_specs if any(reads_spec(p, task_specs[t]) for p in present)] if task_specs \
        else sorted(df["task"].unique())
    suite_name = suite_name or _suite_name(suite_tasks, score_convention, config, extra)
    scorer = _Scorer(suite_tasks, task_specs, score_convention)
    learning_block = _learning_block(run)
    ref_rows = references.stored(run)
    protocols = {protocol: _protocol_block(run, df[df["protocol"] == protocol],
                                           _reading_scorer(scorer, protocol, df, task_specs, score_convention),
                                           convention, learning_block, ref_rows[ref_rows["protocol"] == protocol],
                                           config.get("until_resolved"))
                 for protocol in present}
    # the headline's reading: the one the run named first; else (runs made before a run named several) the
    # paper's fine-tuning when scored
    main = config.get("protocol") if config.get("protocol") in protocols else \
        "finetune" if "finetune" in protocols else present[0]
    return Summary(
        run_id=run.run_id,
        created_utc=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        flop_convention=convention,
        score_convention=score_convention,
        score_scale="0-100 (accuracy/F1 x100, MCC and correlations x100)",
        suite={"name": suite_name, "tasks": suite_tasks, "aggregate": scorer.kind, "description": scorer.description,
               **({"kinds": scorer.kinds} if scorer.kind == "suite-kind-mean" else {})},
        models=_models(config, extra),
        config=config,
        learning=learning_block,
        main_protocol=main,
        protocols=protocols,
        headline=protocols[main]["headline"],
        verdict=protocols[main]["verdict"],
        crossover=protocols[main]["crossover"],
        readings=readings.compare_readings(protocols, main, df[df["protocol"] == "zeroshot"]
                                           if "zeroshot" in protocols else None,
                                           scorer.kinds if scorer.kind == "suite-kind-mean" else None),
    ).to_json()


def _reading_scorer(scorer: _Scorer, protocol: str, df: pd.DataFrame, task_specs, score_convention: str) -> _Scorer:
    """The suite's scorer over the tasks `protocol` reads (score/readings.py): a suite may hold minimal-pair
    tasks, which only the zero-shot reading scores, beside tasks every other protocol scores."""
    if task_specs:
        tasks = [t for t in scorer.tasks if reads_spec(protocol, task_specs.get(t))]
    else:
        tasks = sorted(df.loc[df["protocol"] == protocol, "task"].unique())
    if tasks == scorer.tasks:
        return scorer
    return _Scorer(tasks, {t: task_specs[t] for t in tasks} if task_specs else None, score_convention)


def _read_or_empty(read) -> dict:
    try:
        return read()
    except BenchError:
        return {}


def _suite_name(tasks: list[str], score_convention: str, config: Mapping, extra: Mapping) -> str:
    if glue_score.is_glue(tasks):
        return "GLUE" if glue_score.covers(tasks, score_convention) else f"GLUE subset ({', '.join(tasks)})"
    return next((v for v in (config.get("suite"), extra.get("suite")) if isinstance(v, str) and v), "task suite")


def _learning_block(run: RunDir) -> dict:
    """learning_report, keeping a committed summary's record for runs without their pre-training logs."""
    block = learning_report(run)
    stored = _read_or_empty(lambda: run.summary() or {})
    for o in TRAINED:
        if o not in block and isinstance((stored.get("learning") or {}).get(o), Mapping):
            block[o] = stored["learning"][o]
    return block


def _protocol_block(run: RunDir, prows: pd.DataFrame, scorer: _Scorer, convention: str, learning_block: dict,
                    ref_rows: pd.DataFrame, sequential_design: Mapping[str, Any] | None = None) -> dict:
    """One protocol's points, curves, headline, statistics, verdict and crossover (docs/results.md);
    `sequential_design`: the run's --until-resolved design (config.json's `until_resolved`)."""
    points = [_point(objective, fraction, rows, scorer)
              for (objective, fraction), rows in prows.groupby(["objective", "fraction"], sort=False)]
    points.sort(key=lambda p: (listing_order(p["objective"]), p["fraction"]))
    stats = confidence.compute(run, prows, scorer, points, sequential_design=sequential_design)
    block = {
        "tasks": sorted(prows["task"].unique()),
        "points": points,
        "curves": {o: [{"objective": p["objective"], "fraction": p["fraction"], "train_flops": p["train_flops"],
                        "score": p["score"]["value"], "min": p["score"]["min"], "max": p["score"]["max"]}
                       for p in curve(points, o)] for o in TRAINED},
        "final": {o: (fp["fraction"] if (fp := final_point(points, o)) else None) for o in TRAINED},
        "headline": {"rtd_reaches_mlm": _reach(points, "rtd", "mlm", convention),
                     "mlm_reaches_rtd": _reach(points, "mlm", "rtd", convention)},
        "verdict": noise_verdict(points, stats, learning_block).to_json(),
        "crossover": confidence.crossover_from_ci(stats, convention),
        "statistics": stats,
    }
    refs = reference_points(ref_rows, scorer)
    if refs:  # left out when there are none: summaries made before references existed stay as they were
        block["references"] = refs
    return block


def seeds_phrase(block: Mapping[str, Any]) -> str:
    """How a point's score is made (SCORE_DEFINITION), with this protocol block's seed counts: what the
    report's Score note, the score plot's axis and the tasks plot say."""
    n = max((p["score"]["n_seeds"] for p in block["points"]), default=0)
    n_pre = max((p["score"].get("n_pretrain_seeds", 1) for p in block["points"]), default=1)
    if n_pre > 1:
        return f"mean over {n} evaluation seeds, then over {n_pre} pre-training seeds"
    return f"mean over {n} evaluation seed{'s' if n != 1 else ''}"


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
    for o, b in verdict.get("beats_untrained", {}).items():
        if b.get("beats") is False:
            lines.append(f"{LABELS[o]} does not beat the untrained encoder (95% CI of {LABELS[o]} - untrained: "
                         f"{confidence.fmt_ci(b['ci'])}, estimate {b['difference']:+.1f})")
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


def update_summary(run: RunDir, task_specs: Mapping[str, Any] | None = None, convention: str | None = None,
                   **kwargs) -> dict:
    """Build the summary and write it to the (writable) run; returns it."""
    summary = build_summary(run, task_specs, convention, **kwargs)
    run.write_summary(summary)
    return summary


def load_or_build(run: RunDir, task_specs: Mapping[str, Any] | None = None, convention: str | None = None,
                  **kwargs) -> dict:
    """summary.json when it exists with this schema version (and, if given, this FLOP convention) and
    keeps every invariant (`invariant_violations`); otherwise built from scores.jsonl, so a summary
    written by an older version that contradicts itself is not shown as it is."""
    stored = run.summary()
    if stored is not None:
        try:
            Summary.from_json(stored)
        except BenchError:  # another schema, or fields missing or unknown: built again from the scores
            stored = None
    if (stored is not None and stored.get("schema_version") == SCHEMA_VERSION
            and (convention is None or stored.get("flop_convention") == convention) and task_specs is None
            and not invariant_violations(stored)):
        return stored
    return build_summary(run, task_specs, convention, **kwargs)
