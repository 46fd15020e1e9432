"""The Multi-Bootstrap's resampling (summarise/bootstrap.py) on synthetic designs drawn from a known model
(scripts/stat_designs.py): what a replicate keeps, pairing, determinism, detection of a true difference; its
weighted metrics against scikit-learn on explicitly resampled data; rliable's probability of improvement.
Coverage: tests/test_summarise_coverage.py; the interval itself: tests/test_summarise_interval.py."""

import numpy as np
import pytest

from electra_bench.score.metrics import compute
from electra_bench.summarise import bootstrap, interval
from electra_bench.summarise.bootstrap import multibootstrap
from stat_scripts import stat_designs

SMALL = (stat_designs.Task("pairs", "accuracy", 300, 2, 0.60, 0.35, 0.05, 0.01, 0.01),
         stat_designs.Task("three-way", "accuracy", 400, 3, 0.55, 0.35, 0.05, 0.01, 0.01))
DIFF = {"rtd": 1.0, "mlm": -1.0}


def small_design(rng, n_seeds=4, **kw):
    return stat_designs.design(rng, n_seeds, tasks=SMALL, eval_seeds=1, **kw)


def test_a_replicate_keeps_each_seeds_full_data_score_and_its_deviation_on_the_example_draw():
    tasks = small_design(np.random.default_rng(0))
    reps = multibootstrap(tasks, 50, seed=1)
    values = stat_designs.suite_values(tasks)
    for a in ("mlm", "rtd"):
        assert [reps.per_seed[None][a][s] for s in reps.seeds[a]] == pytest.approx(list(values[a]))
        assert reps.estimate[None][a] == pytest.approx(values[a].mean())
        assert reps.deviation[None][a].shape == (4, 50)
        assert abs(reps.deviation[None][a].mean()) < 1.0  # a deviation, centred near 0
    assert reps.counts["rtd"] is reps.counts["mlm"] and reps.counts["rtd"].sum(1).tolist() == [4] * 50


def test_first_seeds_is_the_run_as_it_stood_with_fewer_seeds():
    tasks = small_design(np.random.default_rng(1), n_seeds=4)
    reps = multibootstrap(tasks, 40, seed=2)
    two = reps.first_seeds(2)
    assert two.seeds == {"mlm": [0, 1], "rtd": [0, 1]}
    assert two.estimate[None]["rtd"] == pytest.approx(np.mean([reps.per_seed[None]["rtd"][s] for s in (0, 1)]))
    assert np.array_equal(two.deviation["pairs"]["mlm"], reps.deviation["pairs"]["mlm"][:2])


def test_a_difference_of_a_few_standard_errors_is_detected():
    rng = np.random.default_rng(5)
    detected = 0
    for d in range(30):
        reps = multibootstrap(small_design(rng, 8, delta=0.06), 100, seed=d)
        st = interval.statement(interval.split(reps, None, DIFF))
        detected += st["ci"][0] > 0
        assert (st["ci"][0] > 0) == (st["p_value"] < 0.025)
    assert detected >= 27  # 6 points against a CI about 3 points wide


def test_pairing_narrows_the_interval_when_seeds_share_their_effect():
    shared = tuple(stat_designs.Task(t.name, t.metric, t.n, t.classes, t.mu, t.w, t.arm_example, 0.05, 0.005)
                   for t in SMALL)
    rng = np.random.default_rng(7)
    widths = {True: [], False: []}
    for d in range(20):
        tasks = stat_designs.design(rng, 6, tasks=shared, eval_seeds=1)
        for paired in (True, False):
            reps = multibootstrap(tasks, 100, seed=d, paired=paired)
            assert reps.paired is paired
            lo, hi = interval.statement(interval.split(reps, None, DIFF))["ci"]
            widths[paired].append(hi - lo)
    assert np.median(widths[True]) < 0.5 * np.median(widths[False])


def test_same_seed_same_numbers_other_seed_other_numbers():
    tasks = small_design(np.random.default_rng(3))
    a, b, c = multibootstrap(tasks, 100, seed=11), multibootstrap(tasks, 100, seed=11), multibootstrap(tasks, 100, seed=12)
    st = lambda r: interval.statement(interval.split(r, None, DIFF))  # noqa: E731
    assert st(a) == st(b)
    # another resampling moves the shared example part (the interval may not move: the paired t over the
    # seeds is the wider branch when the seeds dominate)
    assert st(a)["noise"]["shared_example_variance"] != st(c)["noise"]["shared_example_variance"]
    assert a.estimate == c.estimate  # the full-data estimate does not depend on the resampling


@pytest.mark.parametrize("metric", ["accuracy", "f1", "mcc", "pearson", "spearman"])
def test_weighted_metrics_equal_scikit_learn_on_the_resampled_data(metric):
    rng = np.random.default_rng(0)
    n = 200
    if metric in ("pearson", "spearman"):
        y = np.round(rng.normal(size=n), 1)
        P = np.round(y + rng.normal(size=(4, n)), 1)  # ties on purpose
        P[3] = P[3][0]  # a constant prediction: undefined, 0
    else:
        k = 3 if metric == "mcc" else 2
        y = rng.integers(0, k, n)
        P = np.where(rng.random((4, n)) < 0.7, y, rng.integers(0, k, (4, n)))
    idx = rng.integers(0, n, (4, n))
    W = np.stack([np.bincount(i, minlength=n) for i in idx]).astype(float)
    got = bootstrap.metric_values(metric, P, y, W)
    want = np.array([[compute([metric], P[r][idx[b]], y[idx[b]])[metric] for b in range(4)] for r in range(4)])
    assert np.allclose(got, want, atol=1e-9)
    full = bootstrap.metric_values(metric, P, y, np.ones((1, n)))[:, 0]
    assert np.allclose(full, [compute([metric], p, y)[metric] for p in P], atol=1e-9)


def test_probability_of_improvement_is_rliables():
    assert bootstrap.probability_of_improvement([3, 4], [1, 2]) == 1.0
    assert bootstrap.probability_of_improvement([1, 2], [3, 4]) == 0.0
    assert bootstrap.probability_of_improvement([2, 3], [2, 1]) == pytest.approx((0.5 + 1 + 1 + 1) / 4)
