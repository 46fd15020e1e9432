#!/usr/bin/env python
"""A protocol control for a finished compare run: fully fine-tune its final checkpoints (every objective and
pre-training seed) and the untrained encoders on one task, with evaluation seeds, and say whether the
ranking the run's probe gave holds under the paper's protocol (issue 23, part 4).

    python scripts/finetune_control.py results/<run-id> --task word-scramble --seeds 3

Scores go to RUN/controls/finetune-TASK.jsonl (written once, atomically; a rerun reuses the file) in the
run's own score-row format; the table printed (and RUN/controls/finetune-TASK.md) gives, per encoder, the
mean over evaluation seeds for each pre-training seed, and the objective's mean with the two bands the
README uses: half the range over pre-training seeds, and half the range over evaluation seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from electra_bench.store import atomic_io
from electra_bench.data.task_sources import load_tasks
from electra_bench.score.glue_score import primary_metric
from electra_bench.experiments.references import spec_of_run
from electra_bench.experiments.work import score_job
from electra_bench.store.layout import RunLayout
from electra_bench.store.runs import load_compare_run


def _jobs(spec, layout: RunLayout) -> list[tuple]:
    """(label, pre-training seed, point) for the untrained encoder and each objective's final checkpoint."""
    out = []
    for s in range(spec.pretrain_seeds):
        out.append(("init", s, (0.0, 0, 0.0, None)))
        for objective in spec.objectives:
            run = layout.pretrain(objective, s)
            done = json.loads(run.done.read_text())
            final = max(done["checkpoints"].values(), key=lambda c: c["fraction"])
            out.append((objective, s, (final["fraction"], final["step"], final["train_flops"],
                                       str(run.checkpoint(final["fraction"])))))
    return out


def _score(spec, label, seed, point, task):
    return score_job(spec, label, seed, [point], {point[0]: [task]})["rows"]


def summarise(rows: list[dict], task_spec, run_rows: list[dict] = ()) -> list[dict]:
    """Per objective: mean over evaluation seeds per pre-training seed, the objective's mean, both bands, and
    the run's own score (its protocol, usually the probe) on the same task at the same checkpoint, so the two
    rankings can be put side by side."""
    by: dict = {}
    for r in rows:
        by.setdefault(r["objective"], {}).setdefault(r["pretrain_seed"], {}).setdefault(r["seed"], {})[
            r["metric"]] = r["value"]
    table = []
    for objective, seeds in by.items():
        metric = primary_metric(task_spec.name, task_spec, next(iter(next(iter(seeds.values())).values())))
        per_seed = {s: [m[metric] for m in evals.values()]  # stored 0-100, as the run's scores
                    for s, evals in sorted(seeds.items())}
        means = [statistics.fmean(v) for v in per_seed.values()]
        final = max((r["fraction"] for r in run_rows if r["objective"] == objective), default=None)
        probe = [r["value"] for r in run_rows if r["objective"] == objective and r["fraction"] == final
                 and r["task"] == task_spec.name and r["metric"] == metric]
        table.append({
            "objective": objective, "metric": metric, "per_pretrain_seed": [round(m, 2) for m in means],
            "mean": round(statistics.fmean(means), 2),
            "pretrain_band": round((max(means) - min(means)) / 2, 2),
            "eval_band": round(max((max(v) - min(v)) / 2 for v in per_seed.values()), 2),
            "run_protocol_mean": round(statistics.fmean(probe), 2) if probe else None,
        })
    return table


def ranking(table: list[dict], key: str) -> str:
    """'a > b > c' by `key`, best first (encoders without a value left out)."""
    rows = sorted((t for t in table if t[key] is not None), key=lambda t: -t[key])
    return " > ".join(t["objective"] for t in rows) or "n/a"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a finished compare run directory")
    ap.add_argument("--task", default="word-scramble")
    ap.add_argument("--seeds", type=int, default=3, help="evaluation (fine-tuning) seeds per encoder")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (one thread each)")
    args = ap.parse_args()

    root = Path(args.run)
    config = load_compare_run(root).config
    spec = dataclasses.replace(spec_of_run(config, "cpu"), protocol="finetune", tasks=(args.task,),
                               seeds=args.seeds, threads=1)
    task_spec = load_tasks(spec.source, [args.task])[0].spec
    out = root / "controls" / f"finetune-{args.task}.jsonl"
    if out.is_file():
        rows = atomic_io.read_jsonl(out)
    else:
        jobs = _jobs(spec, RunLayout(root))
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
            futures = [pool.submit(_score, spec, label, s, point, args.task) for label, s, point in jobs]
            rows = [r for f in futures for r in f.result()]
        out.parent.mkdir(exist_ok=True)
        atomic_io.write_text(out, "".join(json.dumps(r) + "\n" for r in rows))
    run_protocol = config.get("protocol", "probe")
    table = summarise(rows, task_spec, atomic_io.read_jsonl(root / "scores.jsonl"))
    lines = [f"Full fine-tuning control on `{args.task}` ({table[0]['metric']}, dev, {args.seeds} evaluation "
             f"seeds, {spec.pretrain_seeds} pre-training seeds; the final checkpoint of each run):", "",
             f"| encoder | per pre-training seed | mean | ± pre-training band | ± evaluation band | "
             f"the run's {run_protocol} |", "|---|---|---|---|---|---|"]
    for t in sorted(table, key=lambda t: -t["mean"]):
        own = "n/a" if t["run_protocol_mean"] is None else f"{t['run_protocol_mean']:.2f}"
        lines.append(f"| {t['objective']} | {' / '.join(f'{m:.2f}' for m in t['per_pretrain_seed'])} | "
                     f"{t['mean']:.2f} | {t['pretrain_band']:.2f} | {t['eval_band']:.2f} | {own} |")
    lines += ["", f"Ranking by full fine-tuning: {ranking(table, 'mean')}; by the run's {run_protocol}: "
                  f"{ranking(table, 'run_protocol_mean')}"]
    text = "\n".join(lines) + "\n"
    atomic_io.write_text(out.with_suffix(".md"), text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
