"""Does the plan (summarise/plan.py) keep its word? On a generative model of scripts/stat_designs.py whose
noise is known (measured once on many designs: the per-seed variance of the suite difference, each seed's
own example noise inside it, and the example noise all seeds share), the plan states how many seeds
resolve a true difference with 80% power and what a design detects; designs are then run with those seeds
and the share whose 95% interval is above 0 is compared with the stated power (docs/results.md, "The
plan"). Resumable like the other simulations (default .cache/stat-sims/plan.jsonl).

    python scripts/plan_check.py run --max-seconds 240
    python scripts/plan_check.py table
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

from electra_bench.summarise import bootstrap, interval, plan  # noqa: E402

OUT = Path(".cache/stat-sims/plan.jsonl")
MODEL = "independent"
REFERENCE_DELTA = 0.016
DESIGNS = 300
N_BOOT = 100
COEF = {"rtd": 1.0, "mlm": -1.0}


def noise(path: Path) -> dict:
    """The model's noise (stat_designs.calibration on 120 designs of 8 seeds), measured once and kept."""
    for r in _records(path):
        if "noise" in r:
            return r["noise"]
    out = stat_designs.calibration(MODEL, designs=120, n_seeds=8, n_boot=N_BOOT)
    _append(path, {"noise": out})
    return out


def cells(path: Path) -> list[dict]:
    """What is checked: the seeds the plan asks for at two true differences, and the difference it says a
    4-seed design detects. Each with the delta that makes it (truth ~ linear in delta) and its truth."""
    for r in _records(path):
        if "cells" in r:
            return r["cells"]
    nz = noise(path)
    v1, sh = nz["per_seed_variance"], nz["shared"]
    ref = stat_designs.true_difference(REFERENCE_DELTA, MODEL)
    out = []
    for delta in (REFERENCE_DELTA, 0.010):
        truth = stat_designs.true_difference(delta, MODEL)
        p = plan.plan(truth, interval.Split(truth, ((v1 / 8, 7, 8),), sh, 0.0))
        n = p["seeds_needed"]
        out.append({"what": f"seeds to resolve {truth:+.2f} with 80% power", "delta": delta, "truth": truth,
                    "seeds": n, "stated": plan.power(truth, v1, sh, n)})
    d4 = plan.detectable(v1, sh, 4)
    delta = REFERENCE_DELTA * d4 / ref
    truth = stat_designs.true_difference(delta, MODEL)
    out.append({"what": f"detectable with 4 seeds ({d4:.2f})", "delta": delta, "truth": truth, "seeds": 4,
                "stated": plan.power(truth, v1, sh, 4)})
    _append(path, {"cells": out})
    return out


def one_design(cell: dict, index: int) -> bool:
    rng = np.random.default_rng([77, cell["seeds"], int(round(cell["delta"] * 1e5)), index])
    reps = bootstrap.multibootstrap(stat_designs.design(rng, cell["seeds"], MODEL, cell["delta"]), N_BOOT, seed=index)
    return bool(interval.statement(interval.split(reps, None, COEF))["ci"][0] > 0)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _append(path: Path, r: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(r) + "\n")


def run(args) -> None:
    path = Path(args.out)
    t0, cpu0, done = time.perf_counter(), time.process_time(), 0
    todo = cells(path)
    have: dict = {}
    for r in _records(path):
        if "cell" in r:
            have.setdefault(r["cell"], set()).add(r["i"])
    while time.perf_counter() - t0 < args.max_seconds:
        left = [(len(have.get(k, ())), k) for k in range(len(todo)) if len(have.get(k, ())) < DESIGNS]
        if not left:
            break
        _, k = min(left)
        i = next(j for j in range(DESIGNS) if j not in have.get(k, set()))
        _append(path, {"cell": k, "i": i, "resolved": one_design(todo[k], i)})
        have.setdefault(k, set()).add(i)
        done += 1
    _append(path, {"chunk": {"designs": done, "wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0,
                             "load": os.getloadavg()}})
    print(f"{done} designs in {time.perf_counter() - t0:.0f} s (load {os.getloadavg()[0]:.1f}); "
          f"{sum(DESIGNS - len(have.get(k, ())) for k in range(len(todo)))} left")


def table(args) -> None:
    path = Path(args.out)
    recs = _records(path)
    nz = next(r["noise"] for r in recs if "noise" in r)
    todo = next(r["cells"] for r in recs if "cells" in r)
    print(f"Noise of the suite difference ({MODEL} model): per-seed variance {nz['per_seed_variance']:.2f} "
          f"(of which each seed's own example noise {nz['own_per_seed']:.2f}), shared example variance "
          f"{nz['shared']:.3f}\n")
    print("| the plan says | true RTD - MLM | pre-training seeds | stated power | designs | resolved (95% CI above 0) |")
    print("|---|---|---|---|---|---|")
    for k, c in enumerate(todo):
        res = [r["resolved"] for r in recs if r.get("cell") == k]
        print(f"| {c['what']} | {c['truth']:+.2f} | {c['seeds']} | {100 * c['stated']:.0f}% | {len(res)} | "
              f"{100 * np.mean(res):.1f}% |")


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
