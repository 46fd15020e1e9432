"""Coverage, type-I rate and power of the statistics' RTD - MLM interval on synthetic designs with a known
truth (scripts/stat_designs.py: both generative models), against a paired t over pre-training seeds and
the interval before each noise source was counted once: the table in docs/results.md ("Statistics").

Each design goes through `summarise/bootstrap.multibootstrap` and `summarise/interval`, as a run's final
difference does. Designs are seeded by (cell, index), so a cell's numbers do not depend on how its designs
were split over invocations; results are appended to a JSONL file (default .cache/stat-sims/coverage.jsonl)
and an invocation skips what is there, so it can be stopped and resumed (each invocation stops after
--max-seconds; run it again until every cell is full).

    python scripts/bootstrap_coverage.py run --max-seconds 240      # fill every cell to --designs, in turns
    python scripts/bootstrap_coverage.py run --model shared --seeds 4 --delta 0
    python scripts/bootstrap_coverage.py table                      # the Markdown table
    python scripts/bootstrap_coverage.py normal-theory              # the interval's coverage under normal theory
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.special import stdtr, stdtrit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stat_designs  # noqa: E402

from electra_bench.summarise import bootstrap, interval  # noqa: E402

OUT = Path(".cache/stat-sims/coverage.jsonl")
SEEDS = (2, 4, 8)
DELTAS = (0.0, 0.016)  # RTD's mu raised by this: about 2.4 standard errors of the 4-seed suite difference
N_BOOT = 100  # the interval reads variances off the replicates, not tails: 100 hold the shared part to ~15%, a few % of the total
COEF = {"rtd": 1.0, "mlm": -1.0}


def paired_t(reps) -> dict:
    """The t test over pre-training seeds' suite differences on the dev sets as they are."""
    d = np.array([reps.per_seed[None]["rtd"][s] - reps.per_seed[None]["mlm"][s] for s in reps.seeds["rtd"]])
    n = len(d)
    se = float(d.std(ddof=1) / math.sqrt(n))
    q = float(stdtrit(n - 1, 0.975))
    return {"lo": float(d.mean() - q * se), "hi": float(d.mean() + q * se),
            "p": float(stdtr(n - 1, -d.mean() / se)) if se > 0 else float(d.mean() <= 0)}


def before(reps) -> dict:
    """The interval as it was before each source was counted once (commit b175642's t_interval): the
    all-seed mean on each example draw plus the seed draw's deviation measured on the resampled examples,
    the seed part unbiased by n / (n - 1), Welch-Satterthwaite degrees of freedom."""
    n = len(reps.seeds["rtd"])
    x = sum(c * (np.array([reps.per_seed[None][a][s] for s in reps.seeds[a]])[:, None] + reps.deviation[None][a])
            for a, c in COEF.items())  # (n, B): each seed's difference on each example draw
    examples = x.mean(0)
    seed_dev = (reps.counts["rtd"] * x.T).sum(1) / n - examples
    est = float(np.mean([reps.per_seed[None]["rtd"][s] - reps.per_seed[None]["mlm"][s] for s in reps.seeds["rtd"]]))
    v_seed = float(np.var(seed_dev, ddof=1)) * n / (n - 1)
    v_ex = float(np.var(examples, ddof=1))
    se = math.sqrt(v_seed + v_ex)
    df = (v_seed + v_ex) ** 2 / (v_seed ** 2 / (n - 1)) if v_seed > 0 else math.inf
    q = float(stdtrit(df, 0.975))
    return {"lo": est - q * se, "hi": est + q * se, "p": float(stdtr(df, -est / se))}


def ours(reps) -> dict:
    s = interval.split(reps, None, COEF)
    st = interval.statement(s)
    return {"lo": st["ci"][0], "hi": st["ci"][1], "p": st["p_value"], "se": st["se"]}


def one_design(model: str, n_seeds: int, delta: float, index: int, tasks=stat_designs.TASKS, n_boot: int = N_BOOT,
               eval_seeds: int = stat_designs.EVAL_SEEDS) -> dict:
    rng = np.random.default_rng([n_seeds,
                                 stat_designs.MODELS.index(model), int(round(delta * 1e4)), index])
    reps = bootstrap.multibootstrap(stat_designs.design(rng, n_seeds, model, delta, tasks, eval_seeds), n_boot,
                                    seed=index)
    est = reps.estimate[None]["rtd"] - reps.estimate[None]["mlm"]
    return {"model": model, "seeds": n_seeds, "delta": delta, "i": index, "estimate": est,
            "ours": ours(reps), "paired_t": paired_t(reps), "before": before(reps)}


def cell_key(r: dict) -> tuple:
    return r["model"], r["seeds"], r["delta"]


def read(path: Path) -> tuple[dict, dict]:
    """(designs by cell {cell: {index: record}}, truths {(model, delta): value})."""
    cells: dict = {}
    truths: dict = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if "truth" in r:
                truths[(r["model"], r["delta"])] = r["truth"]
            elif "i" in r:
                cells.setdefault(cell_key(r), {})[r["i"]] = r
    return cells, truths


def append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")


def run(args) -> None:
    path = Path(args.out)
    cells, truths = read(path)
    wanted = [(m, n, d) for m in ([args.model] if args.model else stat_designs.MODELS)
              for n in ([args.seeds] if args.seeds else SEEDS) for d in ([args.delta] if args.delta is not None else DELTAS)]
    t0, cpu0, done = time.perf_counter(), time.process_time(), 0
    for m, d in sorted({(m, d) for m, _, d in wanted}):
        if (m, d) not in truths:
            truths[(m, d)] = stat_designs.true_difference(d, m)
            append(path, {"model": m, "delta": d, "truth": truths[(m, d)]})
    while time.perf_counter() - t0 < args.max_seconds:
        todo = [(len(cells.get(c, {})), c) for c in wanted if len(cells.get(c, {})) < args.designs]
        if not todo:
            break
        _, (m, n, d) = min(todo)  # the emptiest cell first: every cell fills at the same pace
        i = next(k for k in range(args.designs) if k not in cells.get((m, n, d), {}))
        r = one_design(m, n, d, i)
        cells.setdefault((m, n, d), {})[i] = r
        append(path, r)
        done += 1
    append(path, {"chunk": {"designs": done, "wall_s": time.perf_counter() - t0,
                            "cpu_s": time.process_time() - cpu0, "load": os.getloadavg()}})
    left = sum(max(0, args.designs - len(cells.get(c, {}))) for c in wanted)
    print(f"{done} designs in {time.perf_counter() - t0:.0f} s (load {os.getloadavg()[0]:.1f}); {left} left")


def rates(records: list[dict], truth: float, method: str) -> dict:
    lo = np.array([r[method]["lo"] for r in records])
    hi = np.array([r[method]["hi"] for r in records])
    p = np.array([r[method]["p"] for r in records])
    return {"coverage": float(np.mean((lo <= truth) & (truth <= hi))), "p05": float(np.mean(p < 0.05)),
            "resolved": float(np.mean(lo > 0)), "width": float(np.mean(hi - lo)), "n": len(records)}


def table(args) -> None:
    cells, truths = read(Path(args.out))
    print("| model | pre-training seeds | true RTD - MLM | designs | coverage of the 95% CI: ours / paired t / before "
          "| one-sided p < 0.05: ours / paired t / before | mean CI width: ours / paired t / before |")
    print("|---|---|---|---|---|---|---|")
    for m in stat_designs.MODELS:
        for d in DELTAS:
            for n in SEEDS:
                recs = list(cells.get((m, n, d), {}).values())
                if not recs:
                    continue
                truth = truths[(m, d)]
                r = {k: rates(recs, truth, k) for k in ("ours", "paired_t", "before")}
                what = "type-I" if d == 0 else "power"
                print(f"| {m} | {n} | {truth:+.2f} | {len(recs)} | "
                      + " / ".join(f"{r[k]['coverage']:.3f}" for k in r) + f" | {what} "
                      + " / ".join(f"{100 * r[k]['p05']:.1f}%" for k in r) + " | "
                      + " / ".join(f"{r[k]['width']:.2f}" for k in r) + " |")


def normal_theory(args) -> None:
    """Coverage of the interval when the seeds' scores are normal and the shared example variance is known,
    at each share r of the seed part in the variance of the estimate: P(Z^2 <= half_width^2) averaged over
    the seed variance the design measures (chi-square with n - 1 degrees of freedom, 2,000 quantiles);
    beside it, adding the two parts' half-widths in quadrature, the rule considered first."""
    from scipy.special import chdtri, chdtr, ndtri

    z = float(ndtri(0.975))
    shares = (0.05, 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0)
    print("| pre-training seeds | " + " | ".join(f"seed share {r:g}" for r in shares) + " |")
    print("|---|" + "---|" * len(shares))
    for n in (2, 4, 8):
        k = n - 1
        chi = chdtri(k, (np.arange(2000) + 0.5) / 2000) / k
        cells = []
        for r in shares:
            ours = np.mean([chdtr(1, interval.half_width(interval.Split(0.0, ((r * c, k, n),), 1 - r, 0.0), 0.025) ** 2)
                            for c in chi])
            quad = np.mean(chdtr(1, float(stdtrit(k, 0.975)) ** 2 * r * chi + z * z * (1 - r)))
            cells.append(f"{ours:.3f} ({quad:.3f})")
        print(f"| {n} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--model", choices=stat_designs.MODELS)
    r.add_argument("--seeds", type=int)
    r.add_argument("--delta", type=float)
    r.add_argument("--designs", type=int, default=300)
    r.add_argument("--max-seconds", type=float, default=240)
    r.add_argument("--out", default=str(OUT))
    t = sub.add_parser("table")
    t.add_argument("--out", default=str(OUT))
    sub.add_parser("normal-theory")
    args = ap.parse_args()
    {"run": run, "table": table, "normal-theory": normal_theory}[args.cmd](args)


if __name__ == "__main__":
    main()
