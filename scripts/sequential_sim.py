"""Type-I error and power of `compare --until-resolved` (summarise/sequential.py) on synthetic designs with a
known truth (scripts/stat_designs.py), beside a fixed design with every seed and the naive procedure that
reads the plain 95% interval at every look: the table in docs/results.md ("Seeds until resolved").

Each design draws the maximum number of seeds once; a look at n seeds is the statistics over the first n
(as a run that added seeds would have them: a seed's scores do not depend on the seeds after it). Results
go to a JSONL file (default .cache/stat-sims/sequential.jsonl); an invocation skips the designs there and
stops after --max-seconds, so it is resumed by running it again.

    python scripts/sequential_sim.py run --max-seconds 240
    python scripts/sequential_sim.py table
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stat_designs  # noqa: E402

from electra_bench.summarise import bootstrap, interval, sequential  # noqa: E402

OUT = Path(".cache/stat-sims/sequential.jsonl")
DESIGN = {"first": 2, "batch": 2, "max_pretrain_seeds": 8}
DELTAS = (0.0, 0.016)
DESIGNS = {0.0: 600, 0.016: 300}
N_BOOT = 100
COEF = {"rtd": 1.0, "mlm": -1.0}


def one_design(model: str, delta: float, index: int, design: dict = DESIGN, tasks=stat_designs.TASKS,
               n_boot: int = N_BOOT, eval_seeds: int = stat_designs.EVAL_SEEDS) -> dict:
    rng = np.random.default_rng([99, design["max_pretrain_seeds"], stat_designs.MODELS.index(model),
                                 int(round(delta * 1e4)), index])
    reps = bootstrap.multibootstrap(stat_designs.design(rng, design["max_pretrain_seeds"], model, delta, tasks,
                                                        eval_seeds), n_boot, seed=index)
    seq = sequential.looks(reps, COEF, design)
    last = seq["looks"][-1]
    naive = []  # the plain 95% interval at every look, stopping at the first that excludes 0
    for n in seq["schedule"]:
        st = interval.statement(interval.split(reps.first_seeds(n), None, COEF))
        naive.append(st["ci"])
        if st["ci"][0] > 0 or st["ci"][1] < 0:
            break
    fixed = interval.statement(interval.split(reps, None, COEF))["ci"]
    return {"model": model, "delta": delta, "i": index, "looks": seq["taken"], "stopped": seq["stopped"],
            "seeds": last["n_pretrain_seeds"], "direction": (1 if last["ci"][0] > 0 else -1) if seq["stopped"] else 0,
            "naive": (1 if naive[-1][0] > 0 else -1 if naive[-1][1] < 0 else 0), "naive_looks": len(naive),
            "fixed": (1 if fixed[0] > 0 else -1 if fixed[1] < 0 else 0)}


def read(path: Path) -> dict:
    cells: dict = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if "i" in r:
                cells.setdefault((r["model"], r["delta"]), {})[r["i"]] = r
    return cells


def run(args) -> None:
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    cells = read(path)
    wanted = [(m, d) for m in stat_designs.MODELS for d in DELTAS]
    t0, cpu0, done = time.perf_counter(), time.process_time(), 0
    with path.open("a") as f:
        while time.perf_counter() - t0 < args.max_seconds:
            todo = [(len(cells.get(c, {})) / DESIGNS[c[1]], c) for c in wanted if len(cells.get(c, {})) < DESIGNS[c[1]]]
            if not todo:
                break
            _, (m, d) = min(todo)
            i = next(k for k in range(DESIGNS[d]) if k not in cells.get((m, d), {}))
            r = one_design(m, d, i)
            cells.setdefault((m, d), {})[i] = r
            f.write(json.dumps(r) + "\n")
            f.flush()
            done += 1
        f.write(json.dumps({"chunk": {"designs": done, "wall_s": time.perf_counter() - t0,
                                      "cpu_s": time.process_time() - cpu0, "load": os.getloadavg()}}) + "\n")
    left = sum(max(0, DESIGNS[c[1]] - len(cells.get(c, {}))) for c in wanted)
    print(f"{done} designs in {time.perf_counter() - t0:.0f} s (load {os.getloadavg()[0]:.1f}); {left} left")


def table(args) -> None:
    cells = read(Path(args.out))
    truths = {}
    print("| model | true RTD - MLM | designs | resolved, RTD ahead / MLM ahead: sequential | mean looks | mean seeds "
          "| naive 95% at every look | fixed 8 seeds (95%) |")
    print("|---|---|---|---|---|---|---|---|")
    for (m, d), recs in sorted(cells.items()):
        recs = list(recs.values())
        truths.setdefault((m, d), stat_designs.true_difference(d, m))
        share = lambda key, v: 100 * np.mean([r[key] == v for r in recs])  # noqa: E731
        print(f"| {m} | {truths[(m, d)]:+.2f} | {len(recs)} | {share('direction', 1):.1f}% / {share('direction', -1):.1f}% "
              f"| {np.mean([r['looks'] for r in recs]):.2f} | {np.mean([r['seeds'] for r in recs]):.1f} "
              f"| {share('naive', 1):.1f}% / {share('naive', -1):.1f}% | {share('fixed', 1):.1f}% / {share('fixed', -1):.1f}% |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--max-seconds", type=float, default=240)
    r.add_argument("--out", default=str(OUT))
    t = sub.add_parser("table")
    t.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    run(args) if args.cmd == "run" else table(args)


if __name__ == "__main__":
    main()
