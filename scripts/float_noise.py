#!/usr/bin/env python
"""The float-noise floor of a compare run: one pre-training seed re-run with another thread count (or on
another machine), against the spread over the run's pre-training seeds (issue 31, part 4).

    electra-bench compare <the run's options> --pretrain-seeds 1 --threads 2 --jobs 1 --run-id RERUN
    python scripts/float_noise.py results/multiseed-cpu results/RERUN --seed 0

Both runs must have the same config but for `threads` (and `pretrain_seeds`): the same code, data and seed,
so every difference between them is floating-point rounding carried by training. For each objective and
checkpoint the table gives the seed's suite score in each run, their difference, and the standard deviation
over the reference run's pre-training seeds; the first pre-training log row whose loss differs; and the
largest difference over single score rows. Printed as Markdown and written to RERUN/float-noise.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from electra_bench.store import atomic_io
from electra_bench.data.task_sources import load_tasks
from electra_bench.store.runs import load_compare_run
from electra_bench.summarise.summary import build_summary

KEY = ["objective", "pretrain_seed", "fraction", "task", "seed", "metric"]


def first_divergence(a: Path, b: Path) -> tuple[int | None, int]:
    """(first logged step whose training loss differs, rows compared) of two pre-training logs."""
    la = {r["step"]: r.get("loss") for r in atomic_io.read_jsonl(a) if "loss" in r}
    lb = {r["step"]: r.get("loss") for r in atomic_io.read_jsonl(b) if "loss" in r}
    common = sorted(set(la) & set(lb))
    return next((s for s in common if la[s] != lb[s]), None), len(common)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reference", help="the compare run with several pre-training seeds")
    ap.add_argument("rerun", help="a compare run of one of its seeds with another thread count")
    ap.add_argument("--seed", type=int, default=0, help="the pre-training seed both runs share")
    args = ap.parse_args()
    ref, rerun = load_compare_run(args.reference), load_compare_run(args.rerun)
    ca, cb = dict(ref.config), dict(rerun.config)
    differs = sorted(k for k in set(ca) | set(cb) if ca.get(k) != cb.get(k) and k not in ("threads", "pretrain_seeds"))
    if differs:
        print(f"error: the runs differ in more than threads: {', '.join(differs)}", file=sys.stderr)
        return 2
    specs = {t.spec.name: t.spec for t in load_tasks(ref.config.get("source"), ref.config.get("tasks"))}
    sa, sb = build_summary(ref, specs), build_summary(rerun, specs)
    pa, pb = (s["protocols"][s["main_protocol"]]["points"] for s in (sa, sb))
    lines = [f"Float noise: pre-training seed {args.seed} at {cb.get('threads')} thread(s) "
             f"(`{rerun.run_id}`) against {ca.get('threads')} thread(s) (`{ref.run_id}`, "
             f"{len(ref.pretrain_seeds('rtd') or ref.pretrain_seeds('mlm'))} pre-training seeds)", "",
             "| encoder | fraction | FLOPs | seed's score, reference | the same, rerun | difference | SD over the "
             "reference's seeds | difference / SD |", "|---|---|---|---|---|---|---|---|"]
    ratios = []
    for p in pa:
        q = next((x for x in pb if x["objective"] == p["objective"] and abs(x["fraction"] - p["fraction"]) < 1e-9),
                 None)
        seeds = p["score"]["per_pretrain_seed"]
        if q is None or str(args.seed) not in seeds:
            continue
        mine = seeds[str(args.seed)]
        other = q["score"]["per_pretrain_seed"].get(str(args.seed), q["score"]["value"])
        sd = statistics.stdev(seeds.values()) if len(seeds) > 1 else float("nan")
        diff = other - mine
        ratios.append(abs(diff) / sd if sd > 0 else float("nan"))
        lines.append(f"| {p['objective']} | {p['fraction']:g} | {p['train_flops']:.2g} | {mine:.2f} | {other:.2f} | "
                     f"{diff:+.2f} | {sd:.2f} | {ratios[-1]:.2f} |")
    da, db = ref.scores(), rerun.scores()
    m = da[da["pretrain_seed"] == args.seed].merge(db[db["pretrain_seed"] == args.seed], on=KEY)
    delta = (m["value_x"] - m["value_y"]).abs()
    lines += ["", f"Score rows compared: {len(m)}; differing: {int((delta > 0).sum())}; largest difference "
                  f"{delta.max():.2f} points; median |difference / SD| over the encoders above "
                  f"{statistics.median(r for r in ratios if r == r):.2f}."]
    for o in ("mlm", "rtd"):
        la, lb = ref.layout.pretrain(o, args.seed).log, rerun.layout.pretrain(o, args.seed).log
        if la.is_file() and lb.is_file():
            step, n = first_divergence(la, lb)
            lines.append(f"{o.upper()} pre-training log: " + (f"the loss first differs at step {step} ({n} rows "
                         "compared)" if step is not None else f"identical losses over {n} rows"))
    text = "\n".join(lines) + "\n"
    atomic_io.write_text(Path(args.rerun) / "float-noise.md", text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
