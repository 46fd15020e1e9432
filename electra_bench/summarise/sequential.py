"""Seeds until resolved (`compare --until-resolved --max-pretrain-seeds N`): a group-sequential test of
RTD - MLM at the final checkpoint, so that adding pre-training seeds until the difference resolves keeps
the overall error at 5% however many looks are taken.

Looks. The run starts with its first seeds and adds a batch of the same size at each look
(`schedule`: 2, 4, 6, 8 for --pretrain-seeds 2 --max-pretrain-seeds 8); a look is the statistics'
interval (summarise/interval.py) of the difference over the first n seeds of each objective, which a
rerun recomputes from the stored scores, so the procedure is resumable and its decision reproducible.

Boundary. Lan-DeMets alpha spending with the O'Brien-Fleming-type function (gsDesign's sfLDOF), one-sided
alpha 2.5% each way, symmetric (two-sided 5% overall):
    spent(t) = 2 - 2 Phi(z(1 - 0.025 / 2) / sqrt(t)),   t = n / N (the share of the seeds),
and the z boundary c_k of each look is such that a standardised statistic with the correlations of a
growing sample (corr(Z_j, Z_k) = sqrt(t_j / t_k)) first crosses +-c_k at look k with probability
spent(t_k) - spent(t_{k-1}) (`boundaries`, by the recursive numerical integration of Armitage, McPherson
and Rowe). Early looks need overwhelming evidence (4 seeds of 8: p < 0.0015 one-sided), the last one
little more than a fixed design (p < 0.0245 instead of 0.025). At look k the interval is the statistics'
own at the one-sided level 1 - Phi(c_k): t quantiles over the seeds, the normal over the shared example
noise, so its small-sample widening is kept. Two simplifications, both conservative: the information
fraction is the seeds' share, while the example noise all seeds share makes the real correlation between
looks higher (a higher correlation crosses a fixed boundary less often); and the t quantiles at the
nominal levels are wider than the normal's the boundary was computed with. The simulated error rate and
power of the whole procedure: scripts/sequential_sim.py, docs/results.md.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from ..errors import BenchError
from . import interval
from .bootstrap import Replicates

ALPHA_EACH_WAY = 0.025
RULE = ("group-sequential: Lan-DeMets alpha spending, O'Brien-Fleming type (sfLDOF), one-sided 2.5% each "
        "way (two-sided 5% overall), information fraction = seeds / maximum")
_GRID = 1201  # points of the continuation region the recursion integrates over


def schedule(first: int, maximum: int, batch: int | None = None) -> list[int]:
    """The seed counts of the looks: `first`, then every `batch` (default `first`) more, and `maximum`."""
    batch = batch or first
    if first < 2 or maximum <= first or batch < 1:
        raise ValueError(f"looks need at least 2 seeds first and a maximum above them (got {first}, {maximum})")
    return list(range(first, maximum, batch)) + [maximum]


def check_design(first: int, maximum: int) -> None:
    """compare --until-resolved's refusal, in one line, before anything heavy is imported."""
    if first < 2 or maximum <= first:
        raise BenchError(f"--until-resolved needs --pretrain-seeds of at least 2 (a look needs a seed spread) and "
                         f"--max-pretrain-seeds above it (got {first} and {maximum})")


def spent(t: float, alpha: float = ALPHA_EACH_WAY) -> float:
    """One side's error spent by information fraction t (O'Brien-Fleming type)."""
    if t <= 0:
        return 0.0
    return float(2.0 - 2.0 * ndtr(ndtri(1 - alpha / 2) / math.sqrt(t)))


def boundaries(fractions: list[float], alpha: float = ALPHA_EACH_WAY) -> list[float]:
    """Symmetric z boundaries +-c_k for looks at increasing information fractions (module docstring)."""
    return list(_boundaries(tuple(float(f) for f in fractions), alpha))


@functools.lru_cache(maxsize=64)
def _boundaries(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    t = np.asarray(fractions, dtype=float)
    if np.any(np.diff(t) <= 0) or t[0] <= 0 or t[-1] > 1 + 1e-12:
        raise ValueError(f"information fractions must increase within (0, 1]: {list(fractions)}")
    out: list[float] = []
    x = w = density = None  # the sub-density of the score B(t) (variance t) over the continuation region
    prev_spent = 0.0
    for k, tk in enumerate(t):
        target = 2 * (spent(tk, alpha) - prev_spent)  # both sides
        prev_spent = spent(tk, alpha)
        if k == 0:
            c = float(ndtri(1 - target / 2))
        else:
            s = math.sqrt(tk - t[k - 1])

            def crossing(c, x=x, w=w, density=density, s=s, tk=tk):
                b = c * math.sqrt(tk)
                return float(np.sum(w * density * (ndtr((-b - x) / s) + ndtr((x - b) / s))))

            c = brentq(lambda c: crossing(c) - target, 0.0, 40.0, xtol=1e-10)
        out.append(c)
        b = c * math.sqrt(tk)
        new_x = np.linspace(-b, b, _GRID)
        new_w = np.full(_GRID, new_x[1] - new_x[0])
        new_w[[0, -1]] /= 2  # trapezoid
        if k == 0:
            density = np.exp(-new_x ** 2 / (2 * tk)) / math.sqrt(2 * math.pi * tk)
        else:
            kernel = np.exp(-((new_x[:, None] - x[None, :]) / s) ** 2 / 2) / (s * math.sqrt(2 * math.pi))
            density = kernel @ (w * density)
        x, w = new_x, new_w
    return tuple(out)


def looks(reps: Replicates, coef: dict[str, float], design: dict) -> dict:
    """The sequential block of a run made with --until-resolved: every look its stored seeds allow, each
    with its estimate, its interval at the look's boundary and whether it crossed; the procedure stops at
    the first look that does. `design`: {"first", "batch", "max_pretrain_seeds"} (the run's config)."""
    plan = schedule(design["first"], design["max_pretrain_seeds"], design.get("batch"))
    c = boundaries([n / plan[-1] for n in plan])
    have = min(_prefix(reps.seeds[a]) for a in coef)
    out = {"rule": RULE, "schedule": plan, "max_pretrain_seeds": plan[-1], "planned": len(plan),
           "z_boundaries": c, "looks": [], "taken": 0, "stopped": False, "finished": False, "deciding": None}
    for k, (n, ck) in enumerate(zip(plan, c)):
        if n > have:
            break
        alpha = float(1 - ndtr(ck))  # one-sided nominal level of this look
        s = interval.split(reps.first_seeds(n), None, coef)
        h = interval.half_width(s, alpha)
        lo, hi = s.estimate - h, s.estimate + h
        look = {"n_pretrain_seeds": n, "estimate": s.estimate, "ci": [lo, hi], "level": 1 - 2 * alpha,
                "p_threshold": alpha, "p_value": interval.p_value(s), "resolved": lo > 0 or hi < 0}
        out["looks"].append(look)
        out["taken"] = k + 1
        if look["resolved"]:
            out.update(stopped=True, deciding=k)
            break
    out["finished"] = out["stopped"] or (out["taken"] == len(plan))
    return out


def _prefix(seeds: list[int]) -> int:
    """How many of seeds 0, 1, 2, ... are all there: a look at n seeds is the run's first n."""
    n = 0
    while n in seeds:
        n += 1
    return n


def fmt_level(level: float) -> str:
    """A confidence level with the digits that tell it from its neighbours: 95%, 99.7%, 99.9993%."""
    miss = 100 * (1 - level)
    digits = max(0, -int(math.floor(math.log10(miss)))) if miss > 0 else 0
    return f"{100 * level:.{digits}f}%"


def text(seq: dict) -> str:
    """The report's line: how many looks were taken, the boundary, and the last look."""
    thresholds = ", ".join(f"{1 - float(ndtr(c)):.2g}" for c in seq["z_boundaries"])
    out = (f"Sequential (compare --until-resolved): {seq['taken']} look{'s' if seq['taken'] != 1 else ''} taken of at "
           f"most {seq['planned']}, at {', '.join(map(str, seq['schedule']))} pre-training seeds; boundary: Lan-DeMets "
           f"alpha spending, O'Brien-Fleming type, two-sided 5% overall (one-sided p thresholds {thresholds})")
    if seq["looks"]:
        k = seq["deciding"] if seq["stopped"] else len(seq["looks"]) - 1
        look = seq["looks"][k]
        out += (f"; look {k + 1} ({look['n_pretrain_seeds']} seeds): RTD - MLM = {look['estimate']:+.1f}, "
                f"{fmt_level(look['level'])} CI [{look['ci'][0]:+.1f}, {look['ci'][1]:+.1f}]: "
                + ("crossed, stopped" if look["resolved"] else "not crossed"))
    return out
