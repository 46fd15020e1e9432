"""Score one checkpoint on a set of tasks with several seeds (the `finetune` command, and compare's unit)."""

from __future__ import annotations

import statistics
from pathlib import Path

import torch
from rich.table import Table

from .finetune import Recipe, evaluate
from .training import checkpoint


def recipe_for(meta: dict, protocol: str, **overrides) -> Recipe:
    """The paper's recipe with the checkpoint's preset lr / layer-wise decay; inputs no longer than the
    pre-training sequences (positions beyond them were never trained)."""
    overrides.setdefault("max_len", min(128, meta.get("seq_len", 128)))
    return Recipe(protocol=protocol, lr=meta.get("finetune_lr", 3e-4),
                  layerwise_lr_decay=meta.get("layerwise_lr_decay", 0.8), **overrides)


def load_tokenizer_for(ckpt_dir: str | Path, meta: dict):
    from .data.tokenizer import Tokenizer

    return Tokenizer.load((Path(ckpt_dir) / meta.get("tokenizer", "../../tokenizer")).resolve())


def score_encoder(encoder, tokenizer, tasks, seeds: list[int], recipe: Recipe, device, on_result=None) -> list[dict]:
    """Rows {task, seed, metric, value} for every task and seed; `on_result(task, seed, metrics)` after each."""
    rows = []
    cache: dict = {}  # probe features are computed once per checkpoint
    for task in tasks:
        for seed in seeds:
            metrics = evaluate(encoder, task, tokenizer, recipe, seed, device, cache)
            if on_result:
                on_result(task, seed, metrics)
            rows += [{"task": task.spec.name, "seed": seed, "metric": m, "value": v} for m, v in metrics.items()]
    return rows


def score_checkpoint(ckpt_dir: str, source: str | None, task_names: list[str] | None, n_seeds: int,
                     protocol: str, device: str) -> dict:
    from .data.tasks import load_tasks
    from .training.distributed import resolve_device

    encoder, meta = checkpoint.load_encoder(ckpt_dir)
    tokenizer = load_tokenizer_for(ckpt_dir, meta)
    tasks = load_tasks(source, task_names)
    dev = resolve_device(device)
    recipe = recipe_for(meta, protocol)
    rows = score_encoder(encoder, tokenizer, tasks, list(range(n_seeds)), recipe, dev)
    per: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        per.setdefault((r["task"], r["metric"]), []).append(r["value"])
    summary = [
        {"task": t, "metric": m, "median": statistics.median(v), "min": min(v), "max": max(v), "n_seeds": len(v)}
        for (t, m), v in per.items()
    ]
    return {"checkpoint": str(ckpt_dir), "objective": meta.get("objective"), "train_flops": meta.get("train_flops"),
            "protocol": protocol, "seeds": n_seeds, "results": summary, "rows": rows}


def checkpoint_table(result: dict) -> Table:
    t = Table(title=f"{result['objective']} at {result['train_flops']:.3g} FLOPs ({result['protocol']}, "
                    f"{result['seeds']} seeds: median [min, max])")
    for c in ("task", "metric", "median", "spread"):
        t.add_column(c, justify="right" if c in ("median", "spread") else "left")
    for r in result["results"]:
        t.add_row(r["task"], r["metric"], f"{r['median']:.2f}", f"[{r['min']:.2f}, {r['max']:.2f}]")
    return t
