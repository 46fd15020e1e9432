"""Score reference points (summarise/references.py) into a run: external checkpoints scored with the run's
suite, protocol, probe sizes and evaluation seeds, each with its own tokenizer and its own fine-tuning
learning rate and layer-wise decay (the paper preset of its shape, or the exporting run's). Only what is
missing is scored, so `compare` and `report --reference` resume like any other scoring."""

from __future__ import annotations

import time
from pathlib import Path

from ..store import atomic_io
from ..data.task_sources import load_tasks
from ..errors import BenchError
from ..score.scoring import load_scorable, recipe_for, score_encoder
from ..model import count_parameters
from ..presets import Overrides
from ..summarise import references
from ..summarise.references import Reference
from ..store.runs import RunDir, load_compare_run, open_run
from ..pretrain.distributed import resolve_device
from .compare import work_done, write_outputs
from .graph import run_calls
from .spec import CompareSpec
from .work import thread_limits


def _score_reference(spec: CompareSpec, ref: Reference, names: list[str]) -> list[dict]:
    """One reference on the tasks still missing (in a worker, or inline)."""
    with thread_limits(spec.threads):
        encoder, tokenizer, meta = load_scorable(ref.source)
        tasks = load_tasks(spec.source, names)
        seq_len = spec.resolved_preset().schedule.seq_len
        recipe = recipe_for({"finetune_lr": meta.get("finetune_lr"), "layerwise_lr_decay": meta.get("layerwise_lr_decay"),
                             "seq_len": seq_len}, spec.protocol, probe_pool=spec.probe_pool,
                            probe_examples=spec.probe_examples, max_eval_examples=spec.max_eval_examples)
        params = count_parameters(encoder)
        rows = score_encoder(encoder, tokenizer, tasks, list(range(spec.seeds)), recipe, resolve_device(spec.device))
        return [{"label": ref.label, "source": ref.source, "train_flops": ref.train_flops, "params": params,
                 "protocol": spec.protocol, **r} for r in rows]


def score_references(spec: CompareSpec, run: RunDir, refs: list[Reference], task_names: list[str]) -> int:
    """Score every reference on what it lacks (each one loaded first, so a bad source fails in one line
    before any worker starts); returns the number of rows stored."""
    todo = {}
    for ref in refs:
        names = references.missing_tasks(run, ref, task_names, list(range(spec.seeds)), spec.protocol)
        if names:
            load_scorable(ref.source)  # refuse an unknown or unsupported model now
            todo[f"reference:{ref.label}"] = (_score_reference, spec, ref, names)
    stored = [0]

    def store(rows):
        references.append(run, rows)
        stored[0] += len(rows)

    if todo:
        result = run_calls(spec, todo, store, run.layout.root / "cluster")
        if result.failed:
            job, why = next(iter(result.failed.items()))
            raise BenchError(f"{job}: {why}")
    return stored[0]


def spec_of_run(config: dict, device: str = "auto") -> CompareSpec:
    """The CompareSpec a compare run was made with (its config.json), for scoring into it later."""
    fields = {f for f in CompareSpec.__dataclass_fields__}
    kw = {k: v for k, v in config.items() if k in fields}
    kw["overrides"] = tuple(sorted((config.get("overrides") or {}).items()))
    for key in ("tasks", "objectives", "readings"):  # JSON lists, the spec's tuples
        if kw.get(key) is not None:
            kw[key] = tuple(kw[key])
    if isinstance(kw.get("until_resolved"), dict):
        u = kw["until_resolved"]
        kw["until_resolved"] = (u["first"], u["batch"], u["max_pretrain_seeds"])
    Overrides(**dict(kw["overrides"]))  # a config this version cannot read fails here, in one line
    return CompareSpec(**kw, device=device, jobs=1)


def add_to_run(run_path: str | Path, texts: list[str], device: str = "auto") -> int:
    """`report RUN --reference ...`: score the references missing from a finished compare run."""
    refs = references.parse_all(texts)
    root = Path(run_path)
    config = load_compare_run(root).config
    spec = spec_of_run(config, device)
    with open_run(root.parent, root.name, config, create=False) as run:
        tasks = load_tasks(spec.source, list(spec.tasks) if spec.tasks else None)
        n = score_references(spec, run, refs, [t.spec.name for t in tasks])
        if n:  # the run's summary, plots and reports now show them
            write_outputs(run, {t.spec.name: t.spec for t in tasks}, spec.convention,
                          work_done(atomic_io.read_jsonl(run.layout.history)) if run.layout.history.is_file() else {})
        return n


def phase(refs: list[Reference]):
    """compare's extra scoring step for `--reference` (run_compare's `score_more`)."""
    def score(exp) -> None:
        t = time.perf_counter()
        score_references(exp.spec, exp.run, refs, [task.spec.name for task in exp.tasks])
        exp.timings["references_s"] = time.perf_counter() - t
    return score
