"""Coverage of the RTD - MLM interval on 200 synthetic designs (scripts/bootstrap_coverage.py at a CI size:
four smaller tasks, one of each kind, 4 pre-training seeds, each seed of each objective with its own
per-example luck, heavy-tailed seed effects). The full table, both generative models at 2, 4 and 8 seeds,
is in docs/results.md; this is the cell where counting a seed's own example noise twice showed: the earlier
interval covered every design (measured here: 1.000), so it claimed less than the data hold."""

import numpy as np
from threadpoolctl import threadpool_limits

from stat_scripts import bootstrap_coverage, stat_designs

T = stat_designs.Task
CI_TASKS = (T("pairs", "accuracy", 300, 2, 0.58, 0.40, 0.10, 0.010, 0.004),
            T("three-way", "accuracy", 500, 3, 0.55, 0.40, 0.10, 0.010, 0.004),
            T("scramble", "mcc", 600, 2, 0.80, 0.19, 0.12, 0.030, 0.022),
            T("rating", "spearman", 500, 0, 0.30, 0.75, 0.22, 0.010, 0.015, own=0.60))


def test_the_95_percent_interval_covers_95_percent_of_200_designs():
    with threadpool_limits(1):  # small matrices: BLAS threads only contend with the other test worker
        recs = [bootstrap_coverage.one_design("independent", 4, 0.0, i, tasks=CI_TASKS, n_boot=50, eval_seeds=1)
                for i in range(200)]
    ours = bootstrap_coverage.rates(recs, 0.0, "ours")
    before = bootstrap_coverage.rates(recs, 0.0, "before")
    paired = bootstrap_coverage.rates(recs, 0.0, "paired_t")
    # 200 designs: a true 95% lands in 0.92-0.98 with 95% probability; one-sided type-I 5% in 2-8%
    assert 0.92 <= ours["coverage"] <= 0.98, ours
    assert 0.02 <= ours["p05"] <= 0.08, ours
    assert before["coverage"] > 0.98, before  # what this test would have caught
    # never wider than needed: within 10% of the paired t over seeds, which ignores the shared examples
    assert ours["width"] < 1.1 * paired["width"] and np.isfinite(ours["width"])
