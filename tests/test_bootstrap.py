"""The Multi-Bootstrap (reporting/bootstrap.py) on synthetic designs drawn from a known model: coverage of
its 95% CI, detection of a true difference, pairing, determinism; its weighted metrics against
scikit-learn on explicitly resampled data; and the statistics of a run without stored predictions."""

import numpy as np
import pytest

from electra_bench.evaluation.metrics import compute
from electra_bench.reporting import bootstrap
from electra_bench.reporting.bootstrap import TaskData, corrected, interval, multibootstrap, seed_df


def design(rng, n_seeds=4, n_examples=300, n_tasks=3, sd_seed=0.04, mu=(0.66, 0.68), shared=0.5, eval_sd=0.005):
    """Two arms (mlm, rtd) on n_tasks binary tasks. Example i of a task has difficulty g_i ~ U(-0.2, 0.2)
    (the same for both arms: example noise, paired); pre-training seed s moves an arm's accuracy by a seed
    effect (`shared` of it common to both arms at that seed, as compare's paired seeds are); each of 3
    evaluation seeds adds N(0, eval_sd). A run predicts example i correctly when U < q, q = mu_arm + effects
    + g_i (U shared by the arms at (seed, evaluation seed)). E[accuracy] = mu_arm exactly (nothing is clipped),
    so the true suite difference is 100 x (mu_rtd - mu_mlm)."""
    tasks = []
    for t in range(n_tasks):
        g = rng.uniform(-0.2, 0.2, n_examples)
        y = rng.integers(0, 2, n_examples)
        common = rng.normal(0, sd_seed, n_seeds)
        own = rng.normal(0, sd_seed, (n_seeds, 2))
        preds = {"mlm": {}, "rtd": {}}
        for s in range(n_seeds):
            U = rng.random((3, n_examples))
            for a, arm in enumerate(("mlm", "rtd")):
                effect = shared * common[s] + (1 - shared) * own[s, a] + rng.normal(0, eval_sd, (3, 1))
                q = np.clip(mu[a] + effect + g, 0, 1)
                preds[arm][s] = np.where(U < q, y, 1 - y)
        tasks.append(TaskData(f"t{t}", y, preds, {"accuracy": 1.0 / n_tasks}))
    return tasks


def difference(reps, small_sample=True, a="rtd", b="mlm"):
    """(estimate, t_interval's dict) of a - b on the suite."""
    ex = reps.examples[None][a] - reps.examples[None][b]
    dev = reps.seed_dev[None][a] - reps.seed_dev[None][b]
    est = reps.estimate[None][a] - reps.estimate[None][b]
    return est, bootstrap.t_interval(ex, dev, est, seed_df(reps, [a, b]), small_sample=small_sample)


def coverage(n_seeds, sd_seed, designs=200, n_boot=400, mu=(0.66, 0.68), **kw):
    rng = np.random.default_rng(n_seeds * 1000 + int(sd_seed * 1e4))
    true = 100 * (mu[1] - mu[0])
    hits = {True: 0, False: 0}
    for d in range(designs):
        reps = multibootstrap(design(rng, n_seeds, sd_seed=sd_seed, mu=mu, **kw), n_boot, seed=d)
        for small in (True, False):
            lo, hi = difference(reps, small)[1]["ci"]
            hits[small] += lo <= true <= hi
    return {k: v / designs for k, v in hits.items()}


@pytest.mark.parametrize("n_seeds", [4, 8])
def test_ci_covers_the_true_difference_in_90_to_98_percent_of_designs(n_seeds):
    """Seed noise of the size the committed CPU runs show (per-seed suite differences about 1.5 points
    apart); 200 designs each. The plain Multi-Bootstrap undercovers at 4 seeds (measured: ~0.8), which is
    why the small-sample correction exists."""
    c = coverage(n_seeds, 0.04)
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
