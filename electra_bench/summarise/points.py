"""Points and curves: what a checkpoint scores, as summary.json states it.

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
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..choices import OBJECTIVES
from ..score import glue_score
from . import references

SCORE_DEFINITION = "each run's score averaged over evaluation seeds, then over pre-training seeds"
TRAINED = OBJECTIVES
LABELS = {"mlm": "MLM", "rtd": "RTD", "init": "untrained"}


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


class Scorer:
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


def _complete_aggregate(rows: pd.DataFrame, scorer: Scorer) -> float | None:
    """The aggregate of these rows' per-(task, metric) means; None when a task is missing."""
    detail = scorer(_means(rows), partial=True)
    return None if detail.missing or not detail.per_task else detail.value


def point(objective: str, fraction: float, rows: pd.DataFrame, scorer: Scorer) -> dict:
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


def _task_entries(rows: pd.DataFrame, scorer: Scorer) -> tuple[dict[str, dict], dict[str, dict[str, float]]]:
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


def reference_points(rows: pd.DataFrame, scorer: Scorer) -> list[dict]:
    """One point per reference label (summarise/references.py), scored as a checkpoint is, with its
    stated FLOPs and no pre-training band (it was trained elsewhere, once)."""
    out = []
    for label, lrows in references.as_score_rows(rows).groupby("label", sort=False):
        p = point("reference", 0.0, lrows, scorer)
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
