#!/usr/bin/env python
"""Round-3 harness of docs/tuning.md: final learning diagnostics and probe scores of pre-training runs.

Each argument is a directory written by `electra-bench pretrain --out DIR` (or `init:DIR` for the untrained
encoder of that run's preset and seed 0). Prints one JSON line per run: the diagnostics logged at the end
of its budget (pretrain/diagnostics.py) and, with --probe, the probe score of its final checkpoint on the
embedded suite's dev splits (2 evaluation seeds, the default probe recipe). A run stopped early is probed at
its latest checkpoint (the line's "checkpoint" says which); --trajectory prints every diagnostics point of
the run (step 0 and each 1/16 of the budget) instead of the last, with the RTD sampling temperature there.

    electra-bench pretrain --objective rtd --budget 1.2e13 --temperature 2 --out runs/r12-t2
    python scripts/diagnose_runs.py --probe runs/r12-t2 init:runs/r12-t2
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

KEYS = ("mlm_gain_nats", "mlm_acc", "disc_auc", "disc_gap_nats", "token_cosine", "top_pc_share")


def diagnostics(run: Path) -> list[dict]:
    """Every diagnostics point logged by the run, in order."""
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if line.strip()]
    temperature = None
    out, seen = [], set()
    for r in rows:
        temperature = r.get("temperature", temperature)  # logged on training rows, not on diagnostics rows
        if "diag/mlm_gain_nats" in r and r["step"] not in seen:  # some steps log it twice
            seen.add(r["step"])
            out.append({"step": r["step"], "fraction": round(r["fraction"], 4),
                        **({"temperature": round(temperature, 3)} if temperature is not None else {}),
                        **{k: round(r[f"diag/{k}"], 4) for k in KEYS if f"diag/{k}" in r}})
    return out


def final_diagnostics(run: Path) -> dict:
    return diagnostics(run)[-1]


def probe_scores(run: Path, untrained: bool) -> dict:
    from electra_bench.data.task_sources import load_tasks
    from electra_bench.score.glue_score import primary_metric
    from electra_bench.model import Encoder
    from electra_bench.data.tokenizer import Tokenizer
    from electra_bench.score.scoring import recipe_for, score_encoder
    from electra_bench.store.layout import checkpoint_tokenizer
    from electra_bench.pretrain import checkpoint

    ckpt = max((run / "checkpoints").glob("frac-*"), key=lambda p: float(p.name[5:]))
    encoder, meta = checkpoint.load_encoder(ckpt)
    if untrained:
        torch.manual_seed(json.loads((run / "run.json").read_text())["seed"])
        encoder = Encoder(encoder.cfg)
    tasks = load_tasks(None, None)
    rows = score_encoder(encoder, Tokenizer.load(checkpoint_tokenizer(ckpt, meta)), tasks, [0, 1],
                         recipe_for({"seq_len": meta.get("seq_len", 128)}, "probe"), torch.device("cpu"))
    per: dict = {}
    for r in rows:
        per.setdefault(r["task"], {}).setdefault(r["metric"], []).append(r["value"])
    out = {"checkpoint": ckpt.name}
    for t in tasks:
        name = t.spec.name
        m = primary_metric(name, t.spec, {k: v[0] for k, v in per[name].items()})
        out[name] = round(sum(per[name][m]) / len(per[name][m]), 2)
    scores = [v for k, v in out.items() if k != "checkpoint"]
    out["probe_mean"] = round(sum(scores) / len(scores), 2)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--probe", action="store_true", help="also probe-score the latest checkpoint")
    ap.add_argument("--trajectory", action="store_true", help="every diagnostics point, not only the last")
    args = ap.parse_args()
    for arg in args.runs:
        if args.trajectory and not arg.startswith("init:"):
            for point in diagnostics(Path(arg)):
                print(json.dumps({"run": arg, **point}), flush=True)
            if not args.probe:
                continue
        untrained = arg.startswith("init:")
        run = Path(arg[5:] if untrained else arg)
        line = {"run": arg}
        if not untrained:
            line.update(final_diagnostics(run))
        if args.probe or untrained:
            line.update(probe_scores(run, untrained))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
