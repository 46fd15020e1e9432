#!/usr/bin/env python
"""Candidate designs for the default `compare`, compared by how often each resolves what a first run should
answer (issue 48): each objective against the untrained encoder, and RTD - MLM, at the effects and noise a
committed run measured.

For every run given, every reading it was scored under (protocol) and every checkpoint with statistics,
the probability that a design with n pre-training seeds resolves each statement (its 95% CI excludes 0; for
"beats the untrained encoder", lies above 0, so a negative measured difference reads under 2.5%) is
the plan's power (electra_bench/summarise/plan.py: the statement's measured per-seed variance scaled to n
seeds, the example noise all seeds share kept as it is) at the measured difference. The wall time of a
design is n pre-training seeds of both objectives to that checkpoint's FLOPs on 2 workers at the speed given
(`--flops-per-s`, one worker's measured speed) plus the scoring of its points (`--score-s`, seconds per
encoder of one worker for that reading, measured).

    python scripts/default_designs.py RUN[:LABEL] ... [--seeds 2,3,4,6] [--flops-per-s 3.6e10]
        [--score-s probe=30,zeroshot=150] [--max-minutes 15] [--md]

The probabilities assume the measured difference is the true one (a plan, not a promise): a difference
estimated from few seeds is itself noisy.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from electra_bench.summarise.plan import power  # noqa: E402


def _power(statement: dict, n: int, above: bool = False) -> float:
    """P(the 95% interval excludes 0) at the measured difference: in its own direction, or (`above`) only
    above 0, as "beats the untrained encoder" needs (a negative difference then scores under 2.5%)."""
    noise = statement.get("noise") or {}
    k = noise.get("n_pretrain_seeds") or 1
    if k < 2 or noise.get("seed_variance") is None:
        return float("nan")
    per_seed = noise["seed_variance"] * k  # the variance of one seed's score (interval.Split.per_seed_variance)
    d = statement["estimate"] if above else abs(statement["estimate"])
    return power(d, per_seed, noise.get("shared_example_variance", 0.0), n)


def designs(run: Path, label: str, seeds: list[int], flops_per_s: float, score_s: dict[str, float],
            scored_per_seed: int = 3) -> list[dict]:
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    out = []
    for protocol, block in summary["protocols"].items():
        stats = block.get("statistics") or {}
        vs = {(v["objective"], round(v["fraction"], 4)): v for v in stats.get("vs_untrained", [])}
        diffs = {round(d["fraction"], 4): d for d in stats.get("differences", [])}
        for fraction, d in sorted(diffs.items()):
            mlm, rtd = vs.get(("mlm", fraction)), vs.get(("rtd", fraction))
            if mlm is None or rtd is None:
                continue
            flops = d["train_flops"]
            for n in seeds:
                # both objectives' n runs on 2 workers, then `scored_per_seed` encoders a seed scored (3: the
                # untrained, MLM and RTD at the final checkpoint; 7 with the probe's 1/4 and 1/2 checkpoints)
                wall = n * flops / flops_per_s + scored_per_seed * n * score_s.get(protocol, float("nan")) / 2
                out.append({"run": label, "reading": protocol, "train_flops": flops, "fraction": fraction,
                            "n": n, "minutes": wall / 60,
                            "mlm_vs_untrained": (mlm["estimate"], _power(mlm, n, above=True)),
                            "rtd_vs_untrained": (rtd["estimate"], _power(rtd, n, above=True)),
                            "rtd_minus_mlm": (d["estimate"], _power(d, n)),
                            "measured_with": (d.get("noise") or {}).get("n_pretrain_seeds")})
    return out


def _cell(pair) -> str:
    est, p = pair
    return f"{est:+.1f}: {100 * p:.0f}%" if not math.isnan(p) else f"{est:+.1f}: n/a"


def render(rows: list[dict], max_minutes: float, md: bool) -> str:
    head = ["run", "reading", "FLOPs", "seeds", "minutes", "MLM beats untrained", "RTD beats untrained",
            "RTD - MLM resolved", "both beat untrained"]
    lines = []
    for r in rows:
        both = r["mlm_vs_untrained"][1] * r["rtd_vs_untrained"][1]
        lines.append([r["run"], r["reading"], f"{r['train_flops']:.1e}", str(r["n"]),
                      f"{r['minutes']:.0f}" + ("" if r["minutes"] <= max_minutes else " (over)"),
                      _cell(r["mlm_vs_untrained"]), _cell(r["rtd_vs_untrained"]), _cell(r["rtd_minus_mlm"]),
                      f"{100 * both:.0f}%" if not math.isnan(both) else "n/a"])
    if md:
        return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(c) + " |" for c in lines])
    return "\n".join("\t".join(c) for c in [head] + lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="RUN_DIR[:LABEL] (a compare run with summary.json)")
    ap.add_argument("--seeds", default="2,3,4,6", help="pre-training seeds per objective to plan for")
    ap.add_argument("--flops-per-s", type=float, default=3.6e10,
                    help="one worker's pre-training speed (FLOP/s, the run's convention): measured, e.g. the dry run's")
    ap.add_argument("--score-s", default="probe=30,zeroshot=150",
                    help="seconds of one worker to score one encoder, per reading (measured)")
    ap.add_argument("--scored-per-seed", type=int, default=3,
                    help="encoders scored per pre-training seed (3: untrained and both final checkpoints; 7 with "
                         "two more checkpoints of each objective)")
    ap.add_argument("--max-minutes", type=float, default=15.0)
    ap.add_argument("--md", action="store_true")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    score_s = {k: float(v) for k, v in (kv.split("=") for kv in args.score_s.split(","))}
    rows = []
    for spec in args.runs:
        path, _, label = spec.partition(":")
        if not (Path(path) / "summary.json").is_file():
            print(f"error: {Path(path) / 'summary.json'}: missing (a finished compare run?)", file=sys.stderr)
            return 2
        rows += designs(Path(path), label or Path(path).name, seeds, args.flops_per_s, score_s,
                        args.scored_per_seed)
    print(render(rows, args.max_minutes, args.md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
