"""Tune the CPU default fairly: the same search space and effort for MLM and RTD, selected on dev only.

Each trial pre-trains one objective on the embedded corpus to the same FLOP budget and scores its final
checkpoint with the linear probe (the default protocol) on the suite's dev splits, eval seed 0.
Shared knobs: peak learning rate x batch size. Objective knob (equal count of values for both):
RTD's generator size, MLM's masking rate. Trials are stored under results/tuning/ and reused when the
script is run again; the table it prints is what docs/tuning.md reports.

    python scripts/tune_cpu_default.py --budget 6e12
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import time
from pathlib import Path

import torch

from electra_bench.store import atomic_io

from electra_bench import presets
from electra_bench.pretrain import run as runner
from electra_bench.data.task_sources import load_tasks
from electra_bench.score.glue_score import suite_score
from electra_bench.score.scoring import recipe_for, score_encoder
from electra_bench.pretrain import checkpoint
from electra_bench.pretrain.trainer import TrainOptions

KNOBS = {"rtd": ("generator_size", (0.25, 0.5)), "mlm": ("mask_prob", (0.15, 0.25))}


def trial_id(objective, lr, batch, knob, value):
    return f"{objective}-lr{lr:g}-b{batch}-{knob}{value:g}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", default="6e12")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--lrs", default="1e-3,3e-3")
    ap.add_argument("--batches", default="16,32")
    ap.add_argument("--out", default="results/tuning")
    ap.add_argument("--objectives", default="mlm,rtd")
    args = ap.parse_args()
    out = Path(args.out)
    log = out / "trials.jsonl"
    done = {r["trial"]: r for r in (atomic_io.read_jsonl(log) if log.exists() else [])}
    base = presets.resolve(args.preset)
    data, base = runner.prepare_data(base, None, None, 0, quiet=True)
    tasks = load_tasks(None)
    specs = {t.spec.name: t.spec for t in tasks}
    lrs = [float(x) for x in args.lrs.split(",")]
    batches = [int(x) for x in args.batches.split(",")]
    for objective in args.objectives.split(","):
        knob, values = KNOBS[objective]
        for lr, batch, value in itertools.product(lrs, batches, values):
            tid = trial_id(objective, lr, batch, knob, value)
            if tid in done:
                continue
            p = dataclasses.replace(base, lr=lr, batch_size=batch, **{knob: value})
            budget = runner.resolve_budget(p, args.budget, "measured")
            plan = runner.plan(p, objective, budget, "measured")
            t = time.perf_counter()
            runner.run(p, plan, data, out / tid, TrainOptions(seed=0, quiet=True))
            train_s = time.perf_counter() - t
            enc, meta = checkpoint.load_encoder(out / tid / "checkpoints" / "frac-1.0000")
            rows = score_encoder(enc, data.tokenizer, tasks, [0], recipe_for(meta, "probe"), torch.device("cpu"))
            per_task = {}
            for r in rows:
                per_task.setdefault(r["task"], {})[r["metric"]] = r["value"]
            last = atomic_io.read_jsonl(out / tid / "log.jsonl")[-1]
            row = {"trial": tid, "objective": objective, "lr": lr, "batch_size": batch, knob: value,
                   "budget": budget, "steps": plan.total_steps, "train_s": train_s,
                   "score": suite_score(per_task, specs), "per_task": per_task,
                   "final": {k: v for k, v in last.items() if k.endswith(("loss", "acc", "frac", "recall"))}}
            atomic_io.append_jsonl(log, row)
            done[tid] = row
            print(json.dumps({k: row[k] for k in ("trial", "score", "steps", "train_s")}), flush=True)
    print("\n| trial | steps | score (dev, probe) | " + " | ".join(specs) + " | final pre-training metrics |")
    print("|---|---|---|" + "---|" * len(specs) + "---|")
    for r in sorted(done.values(), key=lambda r: (r["objective"], -r["score"])):
        tasks_cells = " | ".join(
            f"{r['per_task'][n][specs[n].primary]:.1f}" for n in specs)
        fin = ", ".join(f"{k}={v:.3f}" for k, v in sorted(r["final"].items()))
        print(f"| {r['trial']} | {r['steps']} | {r['score']:.2f} | {tasks_cells} | {fin} |")


if __name__ == "__main__":
    main()
