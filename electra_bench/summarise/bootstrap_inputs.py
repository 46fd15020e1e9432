"""What the Multi-Bootstrap (bootstrap.py) resamples for a protocol's statistics (confidence.py): per task, each
arm's (objective, fraction) units, from the stored per-example predictions checked against the score rows,
or from the score values alone where predictions are missing or do not reproduce the rows; and each
metric's weight in the suite's aggregate."""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd

from . import bootstrap
from ..store.predictions import PredictionStore

SEEDS_ONLY_NOTE = ("no per-example predictions stored (a run made before they were): resampled over "
                   "pre-training seeds only, the dev sets taken as exact, so the intervals leave out "
                   "example noise and are too narrow")


def arm_key(objective: str, fraction: float) -> str:
    return f"{objective}@{float(fraction):.4f}"


def _split_for(metric: str, splits: list[str]) -> tuple[str, str]:
    """(base metric, evaluation split) of a stored metric name: MNLI's 'accuracy_matched' is 'accuracy' on
    the split ending in 'matched'; a one-split task's metric is that split's."""
    for split in splits:
        suffix = split.split("_", 1)[-1]
        if len(splits) > 1 and metric.endswith("_" + suffix):
            return metric[: -len(suffix) - 1], split
    return metric, splits[0]


def metric_weights(scorer, task_metrics: Mapping[str, list[str]]) -> dict[str, dict[str, float]]:
    """d(aggregate) / d(metric) for every (task, metric): the aggregate (the suite mean or a GLUE
    convention) is a fixed linear combination of task metrics; read off by unit steps."""
    zero = {t: {m: 0.0 for m in ms} for t, ms in task_metrics.items()}
    base = scorer(zero, partial=True).value
    out: dict[str, dict[str, float]] = {}
    for t, ms in task_metrics.items():
        for m in ms:
            bumped = {k: dict(v) for k, v in zero.items()}
            bumped[t][m] = 1.0
            w = scorer(bumped, partial=True).value - base
            if abs(w) > 1e-12:
                out.setdefault(t, {})[m] = w
    return out


def inputs(run, rows: pd.DataFrame, weights: dict, arms: list[tuple[str, float]], seeds: dict
            ) -> tuple[list[bootstrap.TaskData], str, str | None]:
    """TaskData per task from the stored predictions of the rows' protocol (checked against the score rows),
    or from the score values alone when predictions are missing or do not reproduce the rows."""
    protocols = sorted(rows["protocol"].unique())
    if len(protocols) != 1:  # each reading has its own predictions and its own statistics
        raise ValueError(f"statistics of one protocol at a time, not of {', '.join(protocols)}")
    store = PredictionStore(run.path)
    eval_seeds = sorted(int(s) for s in rows["seed"].unique())
    note = None
    if store.has_any():
        try:
            return (_from_predictions(store, protocols[0], rows, weights, arms, seeds, eval_seeds),
                    "multi-bootstrap", None)
        except _Mismatch as e:
            note = f"stored predictions not used ({e}): resampled over pre-training seeds only"
    return _from_scores(rows, weights, arms, seeds, eval_seeds), "seeds-only", note or SEEDS_ONLY_NOTE


class _Mismatch(Exception):
    pass


def _from_predictions(store, protocol, rows, weights, arms, seeds, eval_seeds) -> list[bootstrap.TaskData]:
    out = []
    for task, metrics in weights.items():
        try:
            labels = store.labels(task)
        except Exception as e:  # a missing or unreadable file: fall back, saying why
            raise _Mismatch(f"{task}: {e}") from None
        splits = labels["splits"]
        bases = {m: _split_for(m, splits) for m in metrics}
        split_set = sorted({s for _, s in bases.values()})
        if len(split_set) != 1:  # a task number mixing splits (MNLI m/mm averaged): one array per split
            raise _Mismatch(f"{task}: metrics over several splits ({', '.join(split_set)})")
        split = split_set[0]
        y = labels["labels"][split]
        preds: dict = {}
        for objective, fraction in arms:
            a = arm_key(objective, fraction)
            preds[a] = {}
            for s in seeds[a]:
                p = store.read(objective, s, fraction, task, protocol)
                if p is None or p["dev_sha256"] != labels["dev_sha256"]:
                    raise _Mismatch(f"{task}: no predictions for {a} seed {s}" if p is None
                                    else f"{task}: predictions of {a} seed {s} are of another dev set")
                missing = [e for e in eval_seeds if e not in p["seeds"]]
                if missing:
                    raise _Mismatch(f"{task}: {a} seed {s} lacks evaluation seeds {missing}")
                arr = p["preds"][split][[p["seeds"].index(e) for e in eval_seeds]]
                try:
                    _check_rows(rows, objective, fraction, s, task, eval_seeds, bases, arr, y)
                except _Mismatch as e:  # say which file: an unkeyed one may be another reading's
                    raise _Mismatch(f"{e} from {p['path'].relative_to(store.root)}") from None
                preds[a][s] = arr
        base_metrics = {}
        for m, w in metrics.items():
            base = bases[m][0]
            base_metrics[base] = base_metrics.get(base, 0.0) + w
        out.append(bootstrap.TaskData(task, y, preds, base_metrics))
    return out


def _check_rows(rows, objective, fraction, pseed, task, eval_seeds, bases, arr, y) -> None:
    """The predictions must give the stored scores (a row recomputed from its predictions, to 1e-6)."""
    sel = rows[(rows["objective"] == objective) & (rows["pretrain_seed"] == pseed) & (rows["task"] == task)
               & ((rows["fraction"] - fraction).abs() < 1e-9)]
    for metric, (base, _) in bases.items():
        values = bootstrap.metric_values(base, arr, y, np.ones((1, len(y))))[:, 0]
        for e, v in zip(eval_seeds, values):
            stored = sel[(sel["seed"] == e) & (sel["metric"] == metric)]["value"]
            if len(stored) and abs(float(stored.iloc[-1]) - v) > 1e-6:
                raise _Mismatch(f"{task} {metric} of {objective}@{fraction:g} seed {pseed}/{e}: stored "
                                f"{float(stored.iloc[-1]):.6f}, recomputed {v:.6f}")


def _from_scores(rows, weights, arms, seeds, eval_seeds) -> list[bootstrap.TaskData]:
    """Each run's stored metric values (bootstrap.TaskData.from_values): the resampling then only moves
    pre-training seeds, the examples are fixed."""
    out = []
    for task, metrics in weights.items():
        preds: dict = {}
        for objective, fraction in arms:
            a = arm_key(objective, fraction)
            preds[a] = {}
            sel = rows[(rows["objective"] == objective) & (rows["task"] == task)
                       & ((rows["fraction"] - fraction).abs() < 1e-9)]
            for s in seeds[a]:
                ps = sel[sel["pretrain_seed"] == s]
                cols = []
                for m in metrics:
                    vals = [ps[(ps["seed"] == e) & (ps["metric"] == m)]["value"] for e in eval_seeds]
                    cols.append([float(v.iloc[-1]) if len(v) else math.nan for v in vals])
                preds[a][s] = np.array(cols, dtype=np.float64).T  # (E, metrics)
        out.append(bootstrap.TaskData.from_values(task, preds, dict(metrics)))
    return out


def eval_seeds_as_units(tasks: list[bootstrap.TaskData]) -> list[bootstrap.TaskData]:
    """One pre-training seed's evaluation seeds as the resampled units (the old band's unit)."""
    out = []
    for t in tasks:
        preds = {a: {e: by_seed[s][e:e + 1] for s in by_seed for e in range(len(by_seed[s]))}
                 for a, by_seed in t.preds.items()}
        out.append(bootstrap.TaskData(t.name, t.labels, preds, t.metrics))
    return out


def name_unkeyed_predictions(run, dry_run: bool = False) -> list[tuple[str, str]]:
    """Give each unkeyed prediction file of an older run (`<task>.npz`, stored before the protocol was in
    the name) the name of the one reading whose score rows it reproduces (`<task>@<protocol>.npz`); a file
    that reproduces none (overwritten by another reading whose rows it no longer matches) or whose keyed name
    is taken is left as it is. Returns (file, what was done) for every unkeyed file."""
    store = PredictionStore(run.path)
    rows = run.scores()
    done = []
    for f in sorted(store.root.glob("*/seed-*/frac-*/*.npz")):
        if "@" in f.stem:
            continue
        objective, seed, fraction, task = f.parts[-4], int(f.parts[-3][5:]), float(f.parts[-2][5:]), f.stem
        rel = str(f.relative_to(store.root))
        labels = store.labels(task)
        p = store.read(objective, seed, fraction, task, None)
        sel = rows[(rows["objective"] == objective) & (rows["pretrain_seed"] == seed) & (rows["task"] == task)
                   & ((rows["fraction"] - fraction).abs() < 1e-9)]
        matches = [protocol for protocol, prow in sel.groupby("protocol")
                   if p["dev_sha256"] == labels["dev_sha256"] and _reproduces(prow, p, labels)]
        if len(matches) != 1:
            done.append((rel, "left: reproduces " + (f"several readings' rows ({', '.join(matches)})" if matches
                                                      else "no reading's rows")))
            continue
        target = store.path(objective, seed, fraction, task, matches[0])
        if target.exists():
            done.append((rel, f"left: {target.name} exists"))
            continue
        if not dry_run:
            f.rename(target)
        done.append((rel, f"{'would be' if dry_run else ''} named {target.name}".strip()))
    return done


def _reproduces(prow: pd.DataFrame, p: dict, labels: dict) -> bool:
    """Whether stored predictions `p` give every score row of `prow` (one reading's rows of one encoder and
    task), to 1e-6."""
    eval_seeds = sorted(int(s) for s in prow["seed"].unique())
    if any(e not in p["seeds"] for e in eval_seeds):
        return False
    checked = 0
    for metric in prow["metric"].unique():
        base, split = _split_for(metric, labels["splits"])
        if base not in bootstrap.METRICS:  # a record kept beside the scores (the tuned lr and epochs)
            continue
        if split not in p["preds"]:
            return False
        checked += 1
        y = labels["labels"][split]
        arr = p["preds"][split][[p["seeds"].index(e) for e in eval_seeds]]
        values = bootstrap.metric_values(base, arr, y, np.ones((1, len(y))))[:, 0]
        for e, v in zip(eval_seeds, values):
            stored = prow[(prow["seed"] == e) & (prow["metric"] == metric)]["value"]
            if len(stored) and abs(float(stored.iloc[-1]) - v) > 1e-6:
                return False
    return checked > 0
