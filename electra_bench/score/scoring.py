"""Score one checkpoint on a set of tasks with several seeds (the `finetune` command, and compare's unit)."""

from __future__ import annotations

import statistics
from pathlib import Path

from ..data.task_sources import load_tasks
from ..data.tokenizer import Tokenizer
from ..errors import BenchError
from ..interop import hf_import
from ..store.layout import checkpoint_tokenizer
from ..run_config import FINETUNE_LR, LAYERWISE_LR_DECAY
from ..pretrain import checkpoint
from ..pretrain.distributed import resolve_device
from . import zeroshot
from .finetune import Recipe, evaluate
from .readings import check_readings, readable


def recipe_for(meta: dict, protocol: str, **overrides) -> Recipe:
    """The paper's recipe with the checkpoint's preset lr / layer-wise decay; inputs no longer than the
    pre-training sequences (positions beyond them were never trained)."""
    overrides.setdefault("max_len", min(128, meta.get("seq_len", 128)))
    return Recipe(protocol=protocol, lr=meta.get("finetune_lr", FINETUNE_LR),
                  layerwise_lr_decay=meta.get("layerwise_lr_decay", LAYERWISE_LR_DECAY), **overrides)


def score_encoder(encoder, tokenizer, tasks, seeds: list[int], recipe: Recipe, device, on_result=None,
                  predictions: dict | None = None) -> list[dict]:
    """Rows {task, seed, metric, value} for every task and seed; `on_result(task, seed, metrics)` after each;
    `predictions` (a dict) receives {task: {seed: {split: (predictions, labels, indices, dev sha256)}}}."""
    rows = []
    cache: dict = {}  # probe features are computed once per checkpoint
    for task in tasks:
        for seed in seeds:
            record = {} if predictions is not None else None
            metrics = evaluate(encoder, task, tokenizer, recipe, seed, device, cache, record)
            if record is not None:
                predictions.setdefault(task.spec.name, {})[seed] = record
            if on_result:
                on_result(task, seed, metrics)
            rows += [{"task": task.spec.name, "seed": seed, "metric": m, "value": v} for m, v in metrics.items()]
    return rows


def load_scorable(model: str) -> tuple:
    """(encoder, tokenizer, meta) of what `finetune` and reference points score: an electra-bench
    checkpoint directory, a local transformers folder of a BERT/ELECTRA encoder, or hf:NAME from the
    local Hugging Face cache (interop/hf_import.py)."""
    if hf_import.is_hf_source(model):
        ext = hf_import.load_external(model)
        return ext.encoder, ext.tokenizer, ext.meta
    encoder, meta = checkpoint.load_encoder(model)
    return encoder, Tokenizer.load(checkpoint_tokenizer(model, meta)), meta


def score_checkpoint(ckpt_dir: str, source: str | None, task_names: list[str] | None, n_seeds: int,
                     protocol: str, device: str) -> dict:
    encoder, tokenizer, meta = load_scorable(ckpt_dir)
    tasks = load_tasks(source, task_names)
    check_readings((protocol,), tasks, named=bool(task_names))
    tasks = readable(protocol, tasks)
    dev = resolve_device(device)
    recipe = recipe_for(meta, protocol)
    if protocol == "zeroshot":  # the checkpoint's own heads (an electra-bench checkpoint of MLM or RTD)
        if hf_import.is_hf_source(ckpt_dir):
            raise BenchError(f"{ckpt_dir}: the zero-shot reading needs an electra-bench checkpoint with its heads")
        module = checkpoint.load_objective(Path(ckpt_dir), checkpoint.run_preset(Path(ckpt_dir)), tokenizer.special)
        if module is None:
            raise BenchError(f"{ckpt_dir}: no {checkpoint.OBJECTIVE_FILE} (a checkpoint saved before heads were kept)")
        rows = zeroshot.score_readers(zeroshot.readers_of(module), zeroshot.own_reading(meta.get("objective")),
                                      tokenizer, tasks, list(range(n_seeds)), recipe.max_len, dev)
    else:
        rows = score_encoder(encoder, tokenizer, tasks, list(range(n_seeds)), recipe, dev)
    per: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        per.setdefault((r["task"], r["metric"]), []).append(r["value"])
    summary = [
        {"task": t, "metric": m, "median": statistics.median(v), "min": min(v), "max": max(v), "n_seeds": len(v)}
        for (t, m), v in per.items()
    ]
    described = {"lr": recipe.lr, "layerwise_lr_decay": recipe.layerwise_lr_decay, "max_len": recipe.max_len,
                 "from": meta.get("recipe_from", "the checkpoint's preset")}
    if protocol == "finetune-tuned":  # lr above is the preset's; the chosen ones are the tuned_* results
        described["tuning"] = {"lrs": list(recipe.tune_lrs), "epochs": list(recipe.tune_epochs),
                               "search": recipe.tune_search, "max_train": recipe.tune_max_train,
                               "max_heldout": recipe.tune_max_heldout}
    return {"checkpoint": str(ckpt_dir), "objective": meta.get("objective"), "train_flops": meta.get("train_flops"),
            "recipe": described,
            "protocol": protocol, "seeds": n_seeds, "results": summary, "rows": rows}
