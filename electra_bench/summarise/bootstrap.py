"""The Multi-Bootstrap (Sellam et al., ICLR 2022, "The MultiBERTs"): confidence intervals for scores of
pre-training recipes that resample pre-training seeds and test examples together.

A score of one arm (an objective at one checkpoint, or the untrained encoder) is, per task, the metric of
each (pre-training seed, evaluation seed) run on the dev set, averaged over evaluation seeds inside a
pre-training seed and then over pre-training seeds; the suite score is a fixed linear combination of task
metrics (the suite mean, or a GLUE convention: summarise/summary.py). Two sources of noise make a rerun
differ: which pre-training seeds were drawn, and which dev examples the tasks happen to hold. One
replicate resamples both: n pre-training seeds drawn with replacement from the n run (the same draw for
every arm when the arms share seeds, as compare's do: paired), and each task's dev examples drawn with
replacement (the same draw for every arm and seed, so arm differences are paired on examples), with each
metric recomputed on the resampled examples (as weights: a multinomial count per example) and the suite
score computed inside the replicate.

What a replicate keeps. Per arm and pre-training seed, the score on the dev sets as they are (`per_seed`)
and its deviation on each replicate's examples (`deviation`, seeds x replicates). The interval
(summarise/interval.py) takes the seed noise from the spread of the seeds' full-data scores, which already
holds each seed's own example noise once, and from the deviations only the example noise all seeds share:
adding the whole example spread to the seeds' would count each seed's own example noise twice.

Outputs are replicate arrays (what confidence.py turns into CIs, p-values and plans) and the estimates on
the full data. Deterministic for a given `seed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class TaskData:
    """One task's dev labels and every run's predictions on it.

    preds[arm][pretrain_seed]: (evaluation seeds, N) predictions (class ids, or values for regression);
    metrics: metric name -> weight in the suite score (metrics absent from the suite have weight 0 but are
    still computed when listed, for per-task reporting)."""

    name: str
    labels: np.ndarray | None  # None: `preds` holds stored metric values, not predictions (below)
    preds: dict[str, dict[int, np.ndarray]]
    metrics: dict[str, float]

    @classmethod
    def from_values(cls, name: str, values: dict[str, dict[int, np.ndarray]], metrics: dict[str, float]):
        """A task known only by its stored metric values, values[arm][seed] (evaluation seeds, metrics in the
        order of `metrics`): its examples cannot be resampled, so a replicate moves seeds only."""
        return cls(name, None, values, metrics)


@dataclass
class Replicates:
    """What `multibootstrap` returns, for each task (and the suite, key None) and arm: the estimate on the
    full data (the mean over pre-training seeds of `per_seed`), each pre-training seed's full-data score, and
    each seed's deviation from it on every replicate's example draw ((n seeds, B), `deviation`); and the seed
    draws per arm ((B, n) counts, one array shared by every arm when paired), for statements read off
    replicates (summarise/interval.py)."""

    arms: list[str]
    seeds: dict[str, list[int]]
    n_boot: int
    paired: bool
    estimate: dict[str | None, dict[str, float]]
    per_seed: dict[str | None, dict[str, dict[int, float]]]  # full-data score of each pre-training seed
    deviation: dict[str | None, dict[str, np.ndarray]]
    counts: dict[str, np.ndarray] | None
    weights: dict[str, float] = field(default_factory=dict)  # task -> its weight in the suite score

    def first_seeds(self, n: int) -> "Replicates":
        """The same replicates restricted to each arm's first n pre-training seeds (a sequential look taken
        when only those were run): a seed's deviations do not depend on which other seeds were run."""
        keep = {a: s[:n] for a, s in self.seeds.items()}
        per_seed = {t: {a: {s: v[s] for s in keep[a]} for a, v in by_arm.items()} for t, by_arm in self.per_seed.items()}
        estimate = {t: {a: float(np.mean(list(v.values()))) for a, v in by_arm.items()} for t, by_arm in per_seed.items()}
        deviation = {t: {a: d[:len(keep[a])] for a, d in by_arm.items()} for t, by_arm in self.deviation.items()}
        return Replicates(self.arms, keep, self.n_boot, self.paired, estimate, per_seed, deviation, None,
                          self.weights)


# ---- metrics under example weights ------------------------------------------------------------------
# W: (B, N) example counts of the replicates (all ones: the full data); P: (R, N) runs' predictions;
# y: (N,) labels. Each returns (R, B) on the 0-100 scale, undefined values 0 (as score/metrics.py).


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape)
    ok = np.broadcast_to(den, out.shape) > 0
    np.divide(num, den, out=out, where=ok)
    return out


def _accuracy(P, y, W):
    return 100.0 * ((P == y).astype(np.float64) @ W.T) / W.sum(1)


def _f1(P, y, W):
    pos, true = (P == 1).astype(np.float64), (y == 1)
    tp = (pos * true) @ W.T
    fp = (pos * ~true) @ W.T
    fn = ((1.0 - pos) * true) @ W.T
    return 100.0 * _safe_div(2 * tp, 2 * tp + fp + fn)


def _mcc(P, y, W):
    """Matthews correlation of a multi-class confusion matrix (Gorodkin; scikit-learn's formula)."""
    classes = np.union1d(np.unique(P), np.unique(y))
    s = W.sum(1)  # (B,)
    c = (P == y).astype(np.float64) @ W.T  # (R, B)
    sum_pt = np.zeros_like(c)
    sum_pp = np.zeros_like(c)
    sum_tt = np.zeros_like(s, dtype=np.float64)
    for k in classes:
        pk = (P == k).astype(np.float64) @ W.T  # (R, B)
        tk = W @ (y == k).astype(np.float64)  # (B,)
        sum_pt += pk * tk
        sum_pp += pk * pk
        sum_tt += tk * tk
    cov_tp = c * s - sum_pt
    den = (s * s - sum_pp) * (s * s - sum_tt)
    return 100.0 * _safe_div(cov_tp, np.sqrt(np.clip(den, 0, None)))


def _weighted_pearson(X, Y, W):
    """X: (R, N) or (R, B, N); Y: (N,) or (B, N); per replicate weighted Pearson r, (R, B)."""
    s = W.sum(1)
    if X.ndim == 2:
        mx = (X @ W.T) / s
        xx = ((X * X) @ W.T) / s
    else:
        mx = np.einsum("rbn,bn->rb", X, W) / s
        xx = np.einsum("rbn,rbn,bn->rb", X, X, W) / s
    if Y.ndim == 1:
        my, yy = (W @ Y) / s, (W @ (Y * Y)) / s
        xy = ((X * Y) @ W.T) / s if X.ndim == 2 else np.einsum("rbn,n,bn->rb", X, Y, W) / s
    else:
        my, yy = np.einsum("bn,bn->b", Y, W) / s, np.einsum("bn,bn,bn->b", Y, Y, W) / s
        xy = (np.einsum("rn,bn,bn->rb", X, Y, W) if X.ndim == 2 else np.einsum("rbn,bn,bn->rb", X, Y, W)) / s
    cov = xy - mx * my
    vx, vy = xx - mx * mx, yy - my * my
    den = np.sqrt(np.clip(vx, 0, None) * np.clip(vy, 0, None))
    tiny = 1e-12 * (np.abs(xx) + np.abs(yy)[None] + 1e-300)
    out = np.where(den > tiny, cov / np.where(den > tiny, den, 1.0), 0.0)
    return 100.0 * np.clip(out, -1.0, 1.0)


def _pearson(P, y, W):
    P = P.astype(np.float64)
    P = P - P.mean(1, keepdims=True)  # centring first keeps the moments exact enough in float64
    return _weighted_pearson(P, y.astype(np.float64) - y.mean(), W)


def _rank_groups(v: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Ties of values v (N,) and their mid-ranks in each replicate's weighted sample (an example drawn k
    times is k tied observations; equal values tie), as Spearman ranks the resampled data: the sort order,
    where each distinct value starts in it, and per replicate each distinct value's weight and mid-rank
    ((B, U) each)."""
    order = np.argsort(v, kind="stable")
    sv = v[order]
    starts = np.flatnonzero(np.r_[True, sv[1:] != sv[:-1]])
    G = np.add.reduceat(W[:, order], starts, axis=1)
    mid = np.cumsum(G, axis=1) - G + (G + 1.0) / 2.0
    return order, starts, G, mid


def _spearman(P, y, W):
    """Pearson's r of the weighted mid-ranks. The weighted mean rank is (s + 1) / 2 whatever the ties (s:
    the replicate's size) and a rank's second moment is a sum over distinct values, so only the cross
    term needs the examples: one sort, one gather and one reduceat per run, which is what makes the
    Multi-Bootstrap of a Spearman task affordable."""
    y = y.astype(np.float64)
    out = np.zeros((len(P), len(W)))
    if np.all(y == y[0]):
        return out
    s = W.sum(1)
    m = (s + 1.0) / 2.0
    order, starts, G, mid = _rank_groups(y, W)
    group_of = np.empty(len(y), dtype=np.int64)
    group_of[order] = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(y)]))
    vy = (G * mid * mid).sum(1) / s - m * m
    centred = W * (mid[:, group_of] - m[:, None])  # (B, N): w_i (rank_y,i - mean rank)
    for r, p in enumerate(P.astype(np.float64)):
        if np.all(p == p[0]):
            continue
        order, starts, G, mid = _rank_groups(p, W)
        vx = (G * mid * mid).sum(1) / s - m * m
        cov = (np.add.reduceat(centred[:, order], starts, axis=1) * mid).sum(1) / s
        den = np.sqrt(np.clip(vx, 0, None) * np.clip(vy, 0, None))
        ok = den > 1e-9 * m * m  # every drawn value tied: undefined, 0 (as score/metrics.py)
        out[r] = np.where(ok, cov / np.where(ok, den, 1.0), 0.0)
    return 100.0 * np.clip(out, -1.0, 1.0)


METRICS = {"accuracy": _accuracy, "f1": _f1, "mcc": _mcc, "pearson": _pearson, "spearman": _spearman}


def metric_values(metric: str, P: np.ndarray, y: np.ndarray, W: np.ndarray) -> np.ndarray:
    """(R, B) values of `metric` for runs P (R, N) against labels y under example weights W (B, N)."""
    return METRICS[metric](np.asarray(P), np.asarray(y), np.asarray(W, dtype=np.float64))


# ---- the resampling -----------------------------------------------------------------------------------


def example_weights(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(B, n) multinomial counts: each replicate draws n examples with replacement."""
    idx = rng.integers(0, n, size=(n_boot, n))
    flat = (idx + np.arange(n_boot)[:, None] * n).ravel()
    return np.bincount(flat, minlength=n_boot * n).reshape(n_boot, n).astype(np.float64)


def seed_counts(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(B, n) how often each of n seeds is drawn in each replicate (n draws with replacement)."""
    return example_weights(n, n_boot, rng)


def multibootstrap(tasks: list[TaskData], n_boot: int = 1000, seed: int = 0, *, paired: bool | None = None
                   ) -> Replicates:
    """Replicates of every arm's per-task and suite scores (module docstring). `paired`: one seed draw for
    every arm (None: when every arm has the same pre-training seeds). Arms with one pre-training seed have
    no seed term. Examples are resampled per task, the same draw for every arm and seed."""
    rng = np.random.default_rng([seed, 31])
    arms = list(tasks[0].preds)
    seeds = {a: sorted(tasks[0].preds[a]) for a in arms}
    for t in tasks:
        if list(t.preds) != arms or any(sorted(t.preds[a]) != seeds[a] for a in arms):
            raise ValueError(f"task {t.name}: arms or pre-training seeds differ from {tasks[0].name}'s")
    same = len({tuple(s) for s in seeds.values()}) == 1
    paired = same if paired is None else (paired and same)
    # seed draws: one (B, n) count matrix for all arms when paired, else one per arm
    if paired:
        shared = seed_counts(len(seeds[arms[0]]), n_boot, rng)
        counts = {a: shared for a in arms}
    else:
        counts = {a: seed_counts(len(seeds[a]), n_boot, rng) for a in arms}

    estimate: dict = {None: {a: 0.0 for a in arms}}
    per_seed: dict = {None: {a: {s: 0.0 for s in seeds[a]} for a in arms}}
    deviation: dict = {None: {a: np.zeros((len(seeds[a]), n_boot)) for a in arms}}
    weights = {}
    for t in tasks:
        W = example_weights(len(t.labels), n_boot, rng) if t.labels is not None else None
        task_w = sum(t.metrics.values())
        weights[t.name] = task_w
        estimate[t.name] = {a: 0.0 for a in arms}
        per_seed[t.name] = {a: {s: 0.0 for s in seeds[a]} for a in arms}
        deviation[t.name] = {a: np.zeros((len(seeds[a]), n_boot)) for a in arms}
        for metric, w in t.metrics.items():
            share = w / task_w if task_w else 0.0  # the metric's share of its task's number
            for a, (x, xf) in _seed_means(t, metric, arms, seeds, W, n_boot).items():
                dev = x - xf[:, None]
                deviation[t.name][a] += share * dev
                deviation[None][a] += w * dev
                estimate[t.name][a] += share * xf.mean()
                estimate[None][a] += w * xf.mean()
                for s, v in zip(seeds[a], xf):
                    per_seed[t.name][a][s] += share * v
                    per_seed[None][a][s] += w * v
    return Replicates(arms, seeds, n_boot, paired, estimate, per_seed, deviation, counts, weights)


def _seed_means(t: TaskData, metric: str, arms: list, seeds: dict, W: np.ndarray | None, n_boot: int) -> dict:
    """Per arm: the metric under every example draw, (n seeds, B), and on the dev set as it is, (n,), each
    the mean over evaluation seeds inside a pre-training seed. W: (B, examples) example counts (None: the
    task stores values, the same under every draw)."""
    keys, rows = [], []  # rows: every (arm, pre-training seed, evaluation seed) run
    for a in arms:
        for s in seeds[a]:
            arr = np.atleast_2d(t.preds[a][s])
            keys += [(a, s)] * len(arr)
            rows.append(arr)
    P = np.concatenate(rows)
    if W is None:  # stored values: column k is metric k
        full = P[:, list(t.metrics).index(metric)].astype(np.float64)
        rep = np.repeat(full[:, None], n_boot, axis=1)
    else:
        rep = metric_values(metric, P, t.labels, W)  # (R, B)
        full = metric_values(metric, P, t.labels, np.ones((1, len(t.labels))))[:, 0]  # (R,)
    out = {}
    for a in arms:
        x = np.stack([rep[[i for i, k in enumerate(keys) if k == (a, s)]].mean(0) for s in seeds[a]])
        xf = np.array([full[[i for i, k in enumerate(keys) if k == (a, s)]].mean() for s in seeds[a]])
        out[a] = (x, xf)
    return out


# ---- pairs of seeds ------------------------------------------------------------------------------------


def probability_of_improvement(x: list[float], y: list[float]) -> float | None:
    """rliable's P(X > Y): over every pair of runs, 1 when x beats y, 1/2 on a tie (Mann-Whitney U / n m)."""
    if not x or not y:
        return None
    X, Y = np.asarray(x)[:, None], np.asarray(y)[None, :]
    return float(np.mean((X > Y) + 0.5 * (X == Y)))
