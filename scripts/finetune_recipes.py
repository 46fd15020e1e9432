"""The paper's fine-tuning recipe (`finetune`) against `finetune-tuned` on one pre-training seed's encoders:
the untrained encoder, MLM and RTD at the full budget, on a few tasks, one evaluation seed; each score with
the chosen lr / epochs (tuned), every held-out score of the selection, and the wall and CPU seconds it took
(one thread, as compare's workers run). docs/suite.md, "Fine-tuning tuned for small encoders".

    nice -n 10 .venv/bin/python scripts/finetune_recipes.py --pretrain /work/runs/ms-ebs3-1.2e13/pretrain \
        --out /work/runs/finetune-recipes.jsonl
    .venv/bin/python scripts/finetune_recipes.py --out /work/runs/finetune-recipes.jsonl --table

Rows are appended as they finish (JSON lines) and a rerun skips those already there, so a killed run resumes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from electra_bench.data.task_sources import load_tasks
from electra_bench.model import EncoderConfig
from electra_bench.objectives import initial_encoder
from electra_bench.score.finetune import evaluate
from electra_bench.score.scoring import load_scorable, recipe_for

PROTOCOLS = ("finetune", "finetune-tuned")


def _done(out: Path) -> dict:
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()] if out.exists() else []
    return {(r["task"], r["encoder"], r["protocol"]): r for r in rows}


def measure(args) -> None:
    torch.set_num_threads(1)
    out = Path(args.out)
    done = _done(out)
    root = Path(args.pretrain)
    encoders = {}
    for obj in ("mlm", "rtd"):
        encoders[obj] = load_scorable(str(root / obj / f"seed-{args.seed}" / "checkpoints" / "frac-1.0000"))
    enc, tok, meta = encoders["mlm"]
    encoders = {"untrained": (initial_encoder(EncoderConfig(**meta["encoder"]), args.seed), tok, meta), **encoders}
    tasks = load_tasks(args.suite, args.tasks.split(","))
    dev = torch.device("cpu")
    for task in tasks:
        for name, (encoder, tokenizer, m) in encoders.items():
            for protocol in PROTOCOLS:
                if (task.spec.name, name, protocol) in done:
                    continue
                recipe = recipe_for(m, protocol)
                cache: dict = {}
                w0, c0 = time.perf_counter(), time.process_time()
                metrics = evaluate(encoder, task, tokenizer, recipe, args.eval_seed, dev, cache)
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
                choice = next(iter(cache.values()), None) if protocol == "finetune-tuned" else None
                row = {"task": task.spec.name, "encoder": name, "protocol": protocol, "pretrain_seed": args.seed,
                       "eval_seed": args.eval_seed, "metric": task.spec.primary,
                       "score": metrics[task.spec.primary], "lr": metrics.get("tuned_lr", recipe.lr),
                       "epochs": int(metrics.get("tuned_epochs", recipe.epochs_for(task.spec.name))),
                       "heldout": None if choice is None else {f"{lr:g}x{e}": v for (lr, e), v in choice.heldout.items()},
                       "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load": open("/proc/loadavg").read().split()[0]}
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)


def table(args) -> None:
    done = _done(Path(args.out))
    tasks = list(dict.fromkeys(k[0] for k in done))
    print("| task | encoder | finetune | finetune-tuned | chosen lr x epochs | held-out (lr x epochs: score) "
          "| CPU s finetune / tuned (ratio) | wall s finetune / tuned |")
    print("|---|---|---|---|---|---|---|---|")
    for t in tasks:
        for e in ("untrained", "mlm", "rtd"):
            a, b = done.get((t, e, "finetune")), done.get((t, e, "finetune-tuned"))
            if a is None or b is None:
                continue
            held = "; ".join(f"{k}: {v:.1f}" for k, v in b["heldout"].items())
            print(f"| {t} | {e} | {a['score']:.1f} | {b['score']:.1f} | {b['lr']:g} x {b['epochs']} | {held} "
                  f"| {a['cpu_s']:.0f} / {b['cpu_s']:.0f} ({b['cpu_s'] / a['cpu_s']:.1f}x) "
                  f"| {a['wall_s']:.0f} / {b['wall_s']:.0f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pretrain", default="/work/runs/ms-ebs3-1.2e13/pretrain")
    p.add_argument("--seed", type=int, default=0, help="pre-training seed")
    p.add_argument("--eval-seed", type=int, default=0)
    p.add_argument("--suite", default="ebs-3")
    p.add_argument("--tasks", default="vader-rating,rt-polarity")
    p.add_argument("--out", required=True)
    p.add_argument("--table", action="store_true", help="print the markdown table of --out and exit")
    args = p.parse_args()
    table(args) if args.table else measure(args)


if __name__ == "__main__":
    main()
