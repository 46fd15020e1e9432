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

Small-sample correction (ours, on top of the MultiBERTs recipe). With the few pre-training seeds CPU runs
afford (2-8), the plain bootstrap's percentile interval is too narrow: the spread of a mean over n resampled
seeds is sqrt((n-1)/n) of its standard error, its tails are normal rather than Student-t, and with 4 seeds
it takes only 35 distinct values. So a statement's interval is built from the replicates' two parts
(`t_interval`): each replicate is split into the all-seed mean on its example draw and the deviation its seed
draw adds; their variances, the seed part's made unbiased, add up to SE^2; the interval is estimate +- t x SE
with the Welch-Satterthwaite degrees of freedom of a seed part with n - 1 and an example part with
infinitely many, and the p-value is the same t's. Where seeds dominate this is the paired t test over
pre-training seeds; where examples do, the bootstrap's normal interval. `scripts/bootstrap_coverage.py`
measures coverage on synthetic designs with known differences (docs/results.md has its table); without the
correction a 4-seed design whose noise is mostly seed noise covers about 80% instead of 95%.

Outputs are replicate arrays (what confidence.py turns into CIs, p-values and plans) and the estimates on
the full data. Deterministic for a given `seed`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

Z975 = 1.959963984540054
Z80 = 0.8416212335729143


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
    """What `multibootstrap` returns, for each task (and the suite, key None) and arm: per replicate (B,)
    the all-seed mean on that replicate's examples (`examples`) and the deviation its seed draw adds
    (`seed_dev`), so that a joint replicate is their sum (`corrected` adds the small-sample correction);
    the seed draw alone on the full data (`seeds_only`, unscaled: what `plan` reads); and the
    estimate on the full data."""

    arms: list[str]
    seeds: dict[str, list[int]]
    n_boot: int
    paired: bool
    examples: dict[str | None, dict[str, np.ndarray]]
    seed_dev: dict[str | None, dict[str, np.ndarray]]
    seeds_only: dict[str | None, dict[str, np.ndarray]]
    estimate: dict[str | None, dict[str, float]]
    per_seed: dict[str | None, dict[str, dict[int, float]]]  # full-data score of each pre-training seed
    weights: dict[str, float] = field(default_factory=dict)  # task -> its weight in the suite score


def seed_df(reps: "Replicates", arms: list[str]) -> int:
    """Degrees of freedom of the seed part of a statement about `arms`: n - 1 (paired or one arm), else
    the smallest arm's (conservative)."""
    return max(0, min(len(reps.seeds[a]) for a in arms) - 1)


def t_interval(examples: np.ndarray, seed_dev: np.ndarray, estimate: float, df: int, level: float = 0.95,
               small_sample: bool = True) -> dict:
    """A statement's interval and one-sided p-value from its two replicate parts: SE^2 = SE_seed^2 +
    SE_examples^2 (the seed part's bootstrap variance unbiased by n / (n - 1)), the interval
    estimate +- t(df_eff) x SE and p = P(T_df_eff > estimate / SE), df_eff the Welch-Satterthwaite degrees
    of freedom of a seed part with `df` and an example part with infinitely many. Where seeds dominate this
    is the paired t test over pre-training seeds; where examples do, the bootstrap's normal interval.
    `small_sample=False`: the plain Multi-Bootstrap's percentile interval and share of replicates <= 0."""
    from scipy.special import stdtr, stdtrit

    if not small_sample or df < 1:
        joint = examples + seed_dev
        lo, hi = interval(joint, level)
        return {"ci": [lo, hi], "p_value": p_value(joint), "se": float(np.std(joint, ddof=1)), "df": None}
    v_seed = float(np.var(seed_dev, ddof=1)) * (df + 1) / df
    v_ex = float(np.var(examples, ddof=1))
    se = math.sqrt(v_seed + v_ex)
    df_eff = math.inf if v_seed <= 0 else (v_seed + v_ex) ** 2 / (v_seed ** 2 / df)
    if se <= 0:
        return {"ci": [float(estimate), float(estimate)], "p_value": 1.0 / len(examples) if estimate > 0 else 1.0,
                "se": 0.0, "df": df_eff}
    q = float(stdtrit(df_eff, 0.5 + level / 2)) if math.isfinite(df_eff) else Z975
    p = float(stdtr(df_eff, -estimate / se)) if math.isfinite(df_eff) else 0.5 * math.erfc(estimate / se / math.sqrt(2))
    return {"ci": [float(estimate - q * se), float(estimate + q * se)], "p_value": max(p, 1.0 / len(examples)),
            "se": se, "df": df_eff}


def corrected(examples: np.ndarray, seed_dev: np.ndarray, estimate: float, df: int,
              small_sample: bool = True) -> np.ndarray:
    """Joint replicates of one statement (an arm's score, a difference: any linear combination of arms),
    spread like `t_interval`'s interval (for statements that are not linear in the scores, such as the
    headline's compute share, whose interval is read off the replicates): the seed deviations scaled by
    sqrt((df + 1) / df), then the replicates' deviations from the estimate
    are scaled by t(df_eff, 0.975) / z(0.975), df_eff the Welch-Satterthwaite degrees of freedom of the
    seed part (df) and the example part (infinite). Seed-dominated: the t interval with n - 1 degrees of
    freedom; example-dominated: the plain bootstrap. `small_sample=False`: the plain Multi-Bootstrap."""
    if not small_sample or df < 1:
        return examples + seed_dev
    seed_dev = seed_dev * math.sqrt((df + 1) / df)
    joint = examples + seed_dev
    v_seed, v_ex = float(np.var(seed_dev)), float(np.var(examples))
    if v_seed <= 0:
        return joint
    df_eff = (v_seed + v_ex) ** 2 / (v_seed ** 2 / df)
    from scipy.special import stdtrit

    k = float(stdtrit(df_eff, 0.975)) / Z975
    return estimate + k * (joint - estimate)


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

    examples: dict = {None: {a: np.zeros(n_boot) for a in arms}}
    seed_dev: dict = {None: {a: np.zeros(n_boot) for a in arms}}
    s_only: dict = {None: {a: np.zeros(n_boot) for a in arms}}
    estimate: dict = {None: {a: 0.0 for a in arms}}
    per_seed: dict = {None: {a: {s: 0.0 for s in seeds[a]} for a in arms}}
    weights = {}
    for t in tasks:
        W = example_weights(len(t.labels), n_boot, rng) if t.labels is not None else None
        task_w = sum(t.metrics.values())
        weights[t.name] = task_w
        for store in (examples, seed_dev, s_only):
            store[t.name] = {a: np.zeros(n_boot) for a in arms}
        estimate[t.name] = {a: 0.0 for a in arms}
        per_seed[t.name] = {a: {s: 0.0 for s in seeds[a]} for a in arms}
        for metric, w in t.metrics.items():
            share = w / task_w if task_w else 0.0  # the metric's share of its task's number
            for a, (x, xf) in _seed_means(t, metric, arms, seeds, W, n_boot).items():
                n = len(seeds[a])
                C = counts[a]  # (B, n)
                all_mean = x.mean(0)  # (B,)
                dev = (C * x.T).sum(1) / n - all_mean
                so = (C * xf).sum(1) / n
                for store, val in ((examples, all_mean), (seed_dev, dev), (s_only, so)):
                    store[t.name][a] += share * val
                    store[None][a] += w * val
                estimate[t.name][a] += share * xf.mean()
                estimate[None][a] += w * xf.mean()
                for s, v in zip(seeds[a], xf):
                    per_seed[t.name][a][s] += share * v
                    per_seed[None][a][s] += w * v
    return Replicates(arms, seeds, n_boot, paired, examples, seed_dev, s_only, estimate, per_seed, weights)


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


# ---- from replicates to statements --------------------------------------------------------------------


def interval(samples: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def p_value(diff_samples: np.ndarray) -> float:
    """One-sided p for 'the difference is > 0': the share of replicates at or below 0, at least 1/B (a
    bootstrap cannot estimate a smaller p)."""
    return float(max(np.mean(diff_samples <= 0), 1.0 / len(diff_samples)))


def probability_of_improvement(x: list[float], y: list[float]) -> float | None:
    """rliable's P(X > Y): over every pair of runs, 1 when x beats y, 1/2 on a tie (Mann-Whitney U / n m)."""
    if not x or not y:
        return None
    X, Y = np.asarray(x)[:, None], np.asarray(y)[None, :]
    return float(np.mean((X > Y) + 0.5 * (X == Y)))


def plan(diff: float, seeds_only: np.ndarray, examples_only: np.ndarray, n: int, *, power: float = 0.8,
         max_seeds: int = 1000) -> dict:
    """The design this difference needs. The replicate spreads split the standard error into a seed part
    (shrinks as 1/sqrt(seeds)) and an example part (fixed by the dev sets); the 95% CI half-width with n'
    seeds is sqrt((t(n'-1) SE_seed(n'))^2 + (z SE_examples)^2), and a true difference d is resolved with
    probability `power` when d >= half-width x (z + z_power) / z. Returns the smallest detectable
    difference of this design, and the seeds that would resolve |diff| (None: no number of seeds does on
    these dev sets, the example part alone is too wide)."""
    from scipy.special import ndtri, stdtrit

    z_pow = float(ndtri(power))
    se_ex = float(np.std(examples_only, ddof=1)) if len(examples_only) > 1 else 0.0
    se_seed = float(np.std(seeds_only, ddof=1)) * math.sqrt(n / (n - 1)) if n > 1 else None

    def half_width(k: int) -> float:
        seed_part = 0.0 if se_seed is None else float(stdtrit(k - 1, 0.975)) * se_seed * math.sqrt(n / k)
        return math.sqrt(seed_part ** 2 + (Z975 * se_ex) ** 2)

    scale = (Z975 + z_pow) / Z975
    out = {"power": power, "se_seed": se_seed, "se_examples": se_ex, "n_pretrain_seeds": n,
           "detectable_difference": half_width(n) * scale if n > 1 else None, "seeds_needed": None,
           "resolvable": None}
    if se_seed is None:
        return out
    target = abs(diff)
    if target <= Z975 * se_ex * scale:
        out["resolvable"] = False
        return out
    for k in range(2, max_seeds + 1):
        if half_width(k) * scale <= target:
            out.update(seeds_needed=k, resolvable=True)
            return out
    out["resolvable"] = False
    return out
