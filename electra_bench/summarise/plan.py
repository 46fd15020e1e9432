"""The plan of a design: the smallest difference it detects, and the pre-training seeds that would resolve
the measured one, read off the interval the report prints (summarise/interval.py) so the two agree.

With n' seeds, each seed group's variance is its per-seed variance / n' with n' - 1 degrees of freedom (a
seed's own example noise is part of its score, so it shrinks with n' like the seed effect), and the example
noise all seeds share stays as it is: more seeds cannot remove it, more or larger tasks can. A true
difference d is resolved when the interval's lower bound is above 0; its probability is averaged over the
seed variance the design will measure (a chi-square with n' - 1 degrees of freedom, on a quantile grid):

    power(d, n') = E[ Phi((d - half_width(chi2)) / SE(n')) ]

`detectable_difference` is the d with power 80% at the run's own n; `seeds_needed` the smallest n' whose
detectable difference is at most the measured |difference|; `resolvable` false when no n' does (the shared
example part alone is too wide). scripts/plan_check.py checks the stated power by simulation.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import chdtri, ndtr, ndtri, stdtrit

from .interval import Split

POWER = 0.8
ALPHA = 0.025  # one-sided: the 95% interval's lower bound
_GRID = 200  # chi-square quantiles the power is averaged over


def power(d: float, per_seed_variance: float, shared: float, n: int, alpha: float = ALPHA) -> float:
    """P(the (1 - 2 alpha) interval's lower bound > 0) for a true difference d with n seeds."""
    if n < 2:
        return float("nan")
    k = n - 1
    chi = chdtri(k, (np.arange(_GRID) + 0.5) / _GRID) / k  # the grid's quantiles of chi2_k / k
    v_seed = per_seed_variance / n
    se = math.sqrt(v_seed + shared)
    if se <= 0:
        return 1.0 if d > 0 else 0.0
    return float(np.mean(ndtr((d - half_widths(v_seed * chi, k, shared, alpha)) / se)))


def half_widths(v_seed: np.ndarray, k: int, shared: float, alpha: float) -> np.ndarray:
    """interval.half_width of one seed group for an array of seed variances (the same formula, vectorised:
    tests/test_summarise_plan.py holds them equal)."""
    v = v_seed + shared
    seeds_only = float(stdtrit(k, 1 - alpha)) * np.sqrt(v_seed)
    df = np.where(v_seed > 0, v * v / np.maximum(v_seed * v_seed / k, 1e-300), np.inf)
    return np.maximum(seeds_only, stdtrit(df, 1 - alpha) * np.sqrt(v))


def detectable(per_seed_variance: float, shared: float, n: int, target: float = POWER) -> float | None:
    """The difference resolved with probability `target` at n seeds."""
    if n < 2:
        return None
    se = math.sqrt(per_seed_variance / n + shared)
    if se <= 0:
        return 0.0
    hi = se * 10
    while power(hi, per_seed_variance, shared, n) < target:
        hi *= 2
    return float(brentq(lambda d: power(d, per_seed_variance, shared, n) - target, 0.0, hi, xtol=1e-4 * se))


def plan(diff: float, s: Split, *, target: float = POWER, max_seeds: int = 1000) -> dict:
    """The plan of a difference with noise split `s` (module docstring)."""
    n = min((k for _, _, k in s.seeds), default=1)
    v1 = s.per_seed_variance  # unpaired arms: their seed groups' variances add, and scale together
    out = {"power": target, "n_pretrain_seeds": n, "per_seed_variance": v1 if s.seeds else None,
           "shared_example_variance": s.shared, "detectable_difference": None, "seeds_needed": None,
           "resolvable": None}
    if not s.seeds:
        return out
    out["detectable_difference"] = detectable(v1, s.shared, n, target)
    limit = (float(ndtri(1 - ALPHA)) + float(ndtri(target))) * math.sqrt(s.shared)  # infinitely many seeds
    if abs(diff) <= limit:
        out["resolvable"] = False
        return out
    if detectable(v1, s.shared, max_seeds, target) > abs(diff):
        out["resolvable"] = False
        return out
    lo, hi = 2, max_seeds  # detectable() falls with the seeds: the smallest n' by bisection
    while lo < hi:
        mid = (lo + hi) // 2
        if detectable(v1, s.shared, mid, target) <= abs(diff):
            hi = mid
        else:
            lo = mid + 1
    out.update(seeds_needed=lo, resolvable=True)
    return out
