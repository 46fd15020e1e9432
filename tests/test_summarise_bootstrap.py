"""The Multi-Bootstrap (summarise/bootstrap.py) on synthetic designs drawn from a known model: coverage of
its 95% CI, detection of a true difference, pairing, determinism; its weighted metrics against
scikit-learn on explicitly resampled data; and the statistics of a run without stored predictions."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from electra_bench.score.metrics import compute
from electra_bench.summarise import bootstrap
from electra_bench.summarise.bootstrap import multibootstrap

_SPEC = importlib.util.spec_from_file_location(
    "bootstrap_coverage", Path(__file__).resolve().parents[1] / "scripts" / "bootstrap_coverage.py")
sim = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sim)
design, difference = sim.design, sim.difference


@pytest.mark.parametrize("n_seeds", [4, 8])
def test_ci_covers_the_true_difference_in_90_to_98_percent_of_designs(n_seeds):
    """Seed noise of the size the committed CPU runs show (per-seed suite differences about 1.5 points
    apart); 200 designs each. The plain Multi-Bootstrap undercovers at 4 seeds (measured: ~0.8), which is
    why the small-sample correction exists."""
    c = sim.coverage(n_seeds, 0.04, n_boot=200)["coverage"]  # the t interval needs spreads, not tails
    assert 0.90 <= c[True] <= 0.98, c
    if n_seeds == 4:
        assert c[False] < 0.90, c


def test_a_difference_of_a_few_standard_errors_is_detected():
    rng = np.random.default_rng(5)
    detected = 0
    for d in range(40):
        reps = multibootstrap(design(rng, 8, sd_seed=0.01, mu=(0.62, 0.68)), 400, seed=d)
        est, t = difference(reps)
        lo, hi = t["ci"]
        detected += lo > 0
        assert t["p_value"] < 0.5 and (lo > 0) == (t["p_value"] < 0.025)
    assert detected >= 36  # a 6-point difference against a CI about 2.5 points wide


def test_pairing_narrows_the_interval_when_seeds_share_their_effect():
    rng = np.random.default_rng(7)
    widths = {True: [], False: []}
    for d in range(30):
        tasks = design(rng, 6, sd_seed=0.04, shared=0.9)
        for paired in (True, False):
            reps = multibootstrap(tasks, 400, seed=d, paired=paired)
            assert reps.paired is paired
            lo, hi = difference(reps)[1]["ci"]
            widths[paired].append(hi - lo)
    assert np.median(widths[True]) < 0.7 * np.median(widths[False])


def test_same_seed_same_numbers_other_seed_other_numbers():
    tasks = design(np.random.default_rng(3), 4)
    a, b = multibootstrap(tasks, 300, seed=11), multibootstrap(tasks, 300, seed=11)
    c = multibootstrap(tasks, 300, seed=12)
    assert difference(a)[1] == difference(b)[1]
    assert difference(a)[1]["ci"] != difference(c)[1]["ci"]
    assert a.estimate == c.estimate  # the full-data estimate does not depend on the resampling


@pytest.mark.parametrize("metric", ["accuracy", "f1", "mcc", "pearson", "spearman"])
def test_weighted_metrics_equal_scikit_learn_on_the_resampled_data(metric):
    rng = np.random.default_rng(0)
    n = 200
    if metric in ("pearson", "spearman"):
        y = np.round(rng.normal(size=n), 1)
        P = np.round(y + rng.normal(size=(3, n)), 1)  # ties on purpose
    else:
        k = 3 if metric == "mcc" else 2
        y = rng.integers(0, k, n)
        P = np.where(rng.random((3, n)) < 0.7, y, rng.integers(0, k, (3, n)))
    idx = rng.integers(0, n, (4, n))
    W = np.stack([np.bincount(i, minlength=n) for i in idx]).astype(float)
    got = bootstrap.metric_values(metric, P, y, W)
    want = np.array([[compute([metric], P[r][idx[b]], y[idx[b]])[metric] for b in range(4)] for r in range(3)])
    assert np.allclose(got, want, atol=1e-9)
    full = bootstrap.metric_values(metric, P, y, np.ones((1, n)))[:, 0]
    assert np.allclose(full, [compute([metric], p, y)[metric] for p in P], atol=1e-9)


def test_plan_grows_the_seeds_with_the_noise_and_says_when_seeds_cannot_help():
    rng = np.random.default_rng(1)
    seeds_only = rng.normal(0, 1.0, 2000)
    examples_only = rng.normal(0, 0.2, 2000)
    p = bootstrap.plan(1.5, seeds_only, examples_only, n=4)
    assert p["resolvable"] and p["seeds_needed"] > 4 and p["detectable_difference"] > 1.5
    assert bootstrap.plan(3.0, seeds_only, examples_only, n=4)["seeds_needed"] < p["seeds_needed"]
    wide_examples = rng.normal(0, 2.0, 2000)  # the dev sets alone cannot resolve 1.5
    assert bootstrap.plan(1.5, seeds_only, wide_examples, n=4)["resolvable"] is False


def test_probability_of_improvement_is_rliables():
    assert bootstrap.probability_of_improvement([3, 4], [1, 2]) == 1.0
    assert bootstrap.probability_of_improvement([1, 2], [3, 4]) == 0.0
    assert bootstrap.probability_of_improvement([2, 3], [2, 1]) == pytest.approx((0.5 + 1 + 1 + 1) / 4)
