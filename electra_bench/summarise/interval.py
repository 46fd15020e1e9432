"""One statement's interval from the Multi-Bootstrap's replicates (summarise/bootstrap.py): its noise split
into sources counted once each, the interval, its p-value, and replicates for statements that are not
linear in the scores.

A statement is a linear combination of arms' scores (an arm's score, RTD - MLM, objective - untrained), on
one task or the suite. Its noise has three sources:
- seed noise: which pre-training seeds were drawn. Measured by the spread of the seeds' full-data scores
  (per seed: the combination; seeds paired across arms give one group, unpaired arms one group each), which
  already holds each seed's own example noise: a seed's score on this dev set differs from its score on
  another by the examples it happens to get right, and that part differs from seed to seed;
- example noise all seeds share (the dev sets' difficulty): from the bootstrap, the covariance between
  different seeds' deviations on the same example draw. A seed's own example noise is the rest of its
  deviation's variance; counting it again here is what made the earlier interval too wide;
- evaluation seeds are averaged inside a pre-training seed, so their noise is part of each seed's score.

The interval is the wider of two t intervals: the paired t over the seeds alone (n - 1 degrees of freedom,
the seed part's SE) and the t over seeds and shared examples together, with the Welch-Satterthwaite
degrees of freedom of a seed part with n - 1 and an example part with infinitely many (its variance comes
from a thousand replicates):
    half-width(alpha) = max(t(n - 1, 1 - alpha) SE_seeds, t(df_WS, 1 - alpha) SE).
The second alone is what issue 31 used: adding a little example noise to few seeds raises its degrees of
freedom faster than its SE, so the interval narrowed as noise was added (on results/multiseed-cpu, 2.08 /
1.91 / 2.13 at 0 / 1 / 2 x its example spread). Taking the wider of the two restores the order: the first
grows with seed noise only, the second with either, and the second, as a function of the shared part, only
falls then rises, so the maximum is the largest the interval would be with any smaller shared part: the
interval narrows, never widens, as any noise source shrinks (tests/test_summarise_interval.py checks it on a
grid and on that run). Its coverage under normal theory at every split of the noise, and on synthetic runs:
docs/results.md (`scripts/bootstrap_coverage.py normal-theory` and `run`). The p-value is the same family's: the one-sided level at which the bound touches 0, so p < 0.025 exactly when
the 95% interval is above 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtri, stdtrit

from .bootstrap import Replicates

P_FLOOR = 1e-12  # a p-value below this is reported as this (the report prints "< 0.001" long before)


@dataclass(frozen=True)
class Split:
    """A statement's estimate and its noise by source: per independently drawn group of pre-training seeds
    (variance of its mean, degrees of freedom, seeds), the example noise all seeds share, and (reported, not
    added: it is inside the seed parts) each seed's own example noise as a variance of the mean."""

    estimate: float
    seeds: tuple[tuple[float, int, int], ...]  # (variance, df, n) per seed group
    shared: float
    own: float

    @property
    def se(self) -> float:
        return math.sqrt(sum(v for v, _, _ in self.seeds) + self.shared)

    @property
    def per_seed_variance(self) -> float:
        """The variance of one seed's score (seed effect plus its own example noise), pooled over groups:
        what a design with other seed counts scales (summarise/plan.py)."""
        return sum(v * n for v, _, n in self.seeds)

    def to_json(self) -> dict:
        return {"seed_variance": sum(v for v, _, _ in self.seeds), "shared_example_variance": self.shared,
                "own_example_variance": self.own, "n_pretrain_seeds": min((n for _, _, n in self.seeds), default=1)}


def split(reps: Replicates, task: str | None, coef: dict[str, float], tasks_w: dict | None = None) -> Split:
    """The noise split of sum_a coef[a] x score(a) on `task` (None: the suite; with `tasks_w` the suite
    re-weighted, e.g. leaving a task out)."""
    keys = [task] if tasks_w is None else list(tasks_w)
    w = {task: 1.0} if tasks_w is None else tasks_w

    def values(a):  # (n,) full-data scores and (n, B) deviations of arm a's seeds
        v = sum(w[t] * np.array([reps.per_seed[t][a][s] for s in reps.seeds[a]]) for t in keys)
        return v, sum(w[t] * reps.deviation[t][a] for t in keys)

    if reps.paired:
        parts = [(sum(c * values(a)[0] for a, c in coef.items()), sum(c * values(a)[1] for a, c in coef.items()))]
    else:
        parts = [(c * v, c * d) for a, c in coef.items() for v, d in [values(a)]]
    estimate = float(sum(v.mean() for v, _ in parts))
    total = float(np.var(sum(d.mean(0) for _, d in parts), ddof=1)) if reps.n_boot > 1 else 0.0
    seeds, own = [], 0.0
    for v, d in parts:
        n = len(v)
        if n < 2:  # one seed: its own example noise cannot be told from the shared part, nor seed noise measured
            continue
        seeds.append((float(np.var(v, ddof=1)) / n, n - 1, n))
        if reps.n_boot > 1:
            # var(mean over seeds) = own/n + shared and the mean per-seed variance = own + shared, so
            # own/n = (mean per-seed variance - var of the mean) / (n - 1)
            own += max(0.0, (float(np.var(d, axis=1, ddof=1).mean()) - float(np.var(d.mean(0), ddof=1))) / (n - 1))
    return Split(estimate, tuple(seeds), max(0.0, total - own), own)


def half_width(s: Split, alpha: float) -> float:
    """The half-width of the two-sided (1 - 2 alpha) interval (module docstring)."""
    return max(_welch(s.seeds, 0.0, alpha), _welch(s.seeds, s.shared, alpha))


def _welch(seeds, shared: float, alpha: float) -> float:
    """t(df_WS, 1 - alpha) x SE of seed groups and a shared part with infinitely many degrees of freedom."""
    v = sum(g for g, _, _ in seeds) + shared
    den = sum(g * g / df for g, df, _ in seeds if df > 0)
    if v <= 0:
        return 0.0
    q = float(ndtri(1 - alpha)) if den <= 0 else float(stdtrit(v * v / den, 1 - alpha))
    return q * math.sqrt(v)


def p_value(s: Split) -> float:
    """One-sided p for 'the statement is > 0': the alpha at which half_width(alpha) = |estimate| (the
    (1 - 2 alpha) interval's bound at 0), 1 - that alpha when the estimate is <= 0."""
    est = s.estimate
    if s.se <= 0:
        return P_FLOOR if est > 0 else 1.0
    if est == 0:
        return 0.5
    if half_width(s, P_FLOOR) <= abs(est):
        alpha = P_FLOOR
    else:
        alpha = brentq(lambda a: half_width(s, a) - abs(est), P_FLOOR, 0.5, xtol=1e-14, rtol=1e-10)
    return float(alpha if est > 0 else 1.0 - alpha)


def statement(s: Split, level: float = 0.95) -> dict:
    """estimate, ci, one-sided p_value, se and the split (`noise`) of one statement."""
    h = half_width(s, (1 - level) / 2)
    return {"estimate": s.estimate, "ci": [s.estimate - h, s.estimate + h], "p_value": p_value(s), "se": s.se,
            "noise": s.to_json()}


def replicates(reps: Replicates, arm: str, level: float = 0.95) -> np.ndarray:
    """(B,) replicates of one arm's suite score spread like its interval, for statements that are not linear in
    the scores (the headline's compute share) and read off replicates: the seed draw on the full data (its
    spread unbiased by n / (n - 1)) plus the all-seed mean on the example draw shrunk to the shared example
    part's spread, both stretched by the interval's half-width over z x SE. Arms drawn with the same seed and
    example draws stay paired."""
    s = split(reps, None, {arm: 1.0})
    est = reps.estimate[None][arm]
    values = np.array([reps.per_seed[None][arm][k] for k in reps.seeds[arm]])
    n = len(values)
    out = np.zeros(reps.n_boot)
    if n > 1 and reps.counts is not None:
        out += (reps.counts[arm] @ values / n - values.mean()) * math.sqrt(n / (n - 1))
    examples = reps.deviation[None][arm].mean(0)
    total = float(np.var(examples, ddof=1)) if reps.n_boot > 1 else 0.0
    if total > 0:
        out += examples * math.sqrt(s.shared / total)
    alpha = (1 - level) / 2
    stretch = half_width(s, alpha) / (float(ndtri(1 - alpha)) * s.se) if s.se > 0 else 1.0
    return est + stretch * out
