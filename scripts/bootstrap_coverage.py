"""Coverage of the statistics' 95% CI on synthetic designs with a known difference: the table in
docs/results.md ("Statistics"). Each design draws fresh dev sets, pre-training seed effects and evaluation
noise from the model in `design`; the coverage is the share of designs whose interval contains the true
difference. `tests/test_summarise_bootstrap.py` runs the two seed-dominated rows.

    python scripts/bootstrap_coverage.py                 # the table (about a minute on one core)
    python scripts/bootstrap_coverage.py --designs 500   # tighter estimates
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from electra_bench.summarise import bootstrap
from electra_bench.summarise.bootstrap import TaskData, multibootstrap, seed_df


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
    """{"coverage": {corrected: share}, "width": {corrected: mean CI width}} over `designs` designs."""
    rng = np.random.default_rng(n_seeds * 1000 + int(sd_seed * 1e4))
    true = 100 * (mu[1] - mu[0])
    hits = {True: 0, False: 0}
    widths = {True: [], False: []}
    for d in range(designs):
        reps = multibootstrap(design(rng, n_seeds, sd_seed=sd_seed, mu=mu, **kw), n_boot, seed=d)
        for small in (True, False):
            lo, hi = difference(reps, small)[1]["ci"]
            hits[small] += lo <= true <= hi
            widths[small].append(hi - lo)
    return {"coverage": {k: v / designs for k, v in hits.items()},
            "width": {k: float(np.mean(v)) for k, v in widths.items()}}



ROWS = [  # (pre-training seeds, seed-effect SD, what the row stands for)
    (2, 0.04, "seed noise of the committed CPU runs' size"),
    (4, 0.04, "seed noise of the committed CPU runs' size"),
    (8, 0.04, "seed noise of the committed CPU runs' size"),
    (4, 0.015, "less seed noise"),
    (4, 0.0, "no seed effect (run-to-run noise only)"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--designs", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=400)
    args = ap.parse_args()
    print("| pre-training seeds | seed-effect SD | setting | corrected (ours) | plain Multi-Bootstrap | mean CI width (ours / plain) |")
    print("|---|---|---|---|---|---|")
    for n, sd, what in ROWS:
        t = time.perf_counter()
        c = coverage(n, sd, designs=args.designs, n_boot=args.n_boot)
        print(f"| {n} | {sd} | {what} | {c['coverage'][True]:.3f} | {c['coverage'][False]:.3f} | "
              f"{c['width'][True]:.2f} / {c['width'][False]:.2f} |", flush=True)
        print(f"<!-- {time.perf_counter() - t:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
