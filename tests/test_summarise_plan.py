"""The plan of a design (summarise/plan.py): read off the interval the report prints, per-seed noise shrinking
with the seeds, the shared example noise not; its power formula against a simulation of that interval.
The check on synthetic runs is scripts/plan_check.py (docs/results.md)."""

import numpy as np
import pytest

from electra_bench.summarise import interval, plan

# results/multiseed-cpu's final RTD - MLM: per-seed variance 1.37, shared example variance 0.046, 4 seeds
V1, SHARED = 1.368, 0.046


def split(n, v1=V1, shared=SHARED, est=1.3):
    return interval.Split(est, ((v1 / n, n - 1, n),), shared, 0.0)


def test_the_vectorised_half_width_is_the_intervals():
    for vs in (0.0, 0.01, 0.3, 2.0):
        for sh in (0.0, 0.05, 1.0):
            for k in (1, 3, 7):
                got = plan.half_widths(np.array([vs]), k, sh, 0.025)[0]
                assert got == pytest.approx(interval.half_width(interval.Split(0, ((vs, k, k + 1),), sh, 0), 0.025))


@pytest.mark.parametrize("n", [2, 4, 8])
def test_power_is_what_the_interval_does_on_normal_seeds(n):
    """Seeds' differences normal with variance V1, the shared part known: the share of designs whose 95%
    interval is above 0 matches plan.power at the detectable difference (20,000 designs)."""
    rng = np.random.default_rng(n)
    d = plan.detectable(V1, SHARED, n)
    shared = rng.normal(0, np.sqrt(SHARED), 20_000)
    seeds = rng.normal(d, np.sqrt(V1), (20_000, n))
    est = seeds.mean(1) + shared
    v = seeds.var(1, ddof=1) / n
    lo = est - plan.half_widths(v, n - 1, SHARED, 0.025)
    assert np.mean(lo > 0) == pytest.approx(0.8, abs=0.015)
    assert plan.power(d, V1, SHARED, n) == pytest.approx(0.8, abs=1e-3)


def test_the_plan_of_the_committed_run_and_how_it_moves():
    p = plan.plan(1.3, split(4))
    assert p["n_pretrain_seeds"] == 4 and p["per_seed_variance"] == pytest.approx(V1)
    assert 2.3 < p["detectable_difference"] < 2.7 and p["resolvable"]
    # the seeds that resolve +1.3 with 80% power: the interval's own SE and degrees of freedom, the per-seed
    # noise shrinking with n (holding all example noise fixed, as before, said about 20)
    assert 9 <= p["seeds_needed"] <= 11
    assert plan.power(1.3, V1, SHARED, p["seeds_needed"]) >= 0.8 > plan.power(1.3, V1, SHARED, p["seeds_needed"] - 1)
    assert plan.plan(3.0, split(4))["seeds_needed"] < p["seeds_needed"]  # a bigger difference: fewer seeds
    assert plan.plan(1.3, split(4, v1=4 * V1))["seeds_needed"] > p["seeds_needed"]  # noisier seeds: more
    # the shared example noise alone too wide: no number of seeds resolves it
    wide = plan.plan(1.3, split(4, shared=1.0))
    assert wide["resolvable"] is False and wide["seeds_needed"] is None
    assert [plan.detectable(V1, SHARED, n) for n in (2, 4, 8, 16)] == sorted(
        [plan.detectable(V1, SHARED, n) for n in (2, 4, 8, 16)], reverse=True)
    assert plan.plan(1.3, interval.Split(1.3, (), SHARED, 0.0))["detectable_difference"] is None  # one seed
