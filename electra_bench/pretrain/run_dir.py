"""The directory of one pre-training run, as the trainer keeps it: whether it already holds this run
(finished and usable, to resume, or another run: refused), preparing it, resuming from its saved state,
saving checkpoints and resumable state, and the summary (done.json) at the end. The training loop itself
is trainer.py; every path is store/layout.PretrainLayout's."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import torch

from ..errors import BenchError
from ..flops.budget import Plan
from ..run_config import RunConfig
from ..store import atomic_io
from ..store.layout import TOKENIZER_FROM_CHECKPOINT, PretrainLayout, fraction_dir
from ..data.tokenizer import Tokenizer
from . import checkpoint, distributed


def finished_or_prepared(out: PretrainLayout, identity: dict, plan: Plan, resume: bool, d, tokenizer) -> dict | None:
    """The summary of a finished, usable run in `out` (nothing to train), else None with the directory ready
    for training (a finished run that fails verification is trained again from the start: deterministic)."""
    done = check_run_dir(out, identity, resume)
    # every rank reads the directory before rank 0 writes to it: a rank that looked after rank 0 had
    # written this run's identity would take it for an earlier run (and refuse it under --no-resume)
    distributed.barrier(d)
    if done is not None:
        problem = unusable_part(out, plan)
        if problem is None:
            if d.is_main and tokenizer is not None:
                ensure_tokenizer(out.tokenizer, tokenizer)
            return done
        if d.is_main:
            print(f"warning: {out.root}: {problem}; training this run again from the start", file=sys.stderr)
            out.done.unlink(missing_ok=True)
            shutil.rmtree(out.state, ignore_errors=True)
        distributed.barrier(d)
    if d.is_main:
        _prepare_run_dir(out, identity, tokenizer)
    return None


def _prepare_run_dir(out: PretrainLayout, identity: dict, tokenizer) -> None:
    out.root.mkdir(parents=True, exist_ok=True)
    atomic_io.remove_stale_temp_files(out.root)
    atomic_io.write_json(out.run_file, identity)
    if tokenizer is not None:
        ensure_tokenizer(out.tokenizer, tokenizer)


def check_run_dir(out: PretrainLayout, identity: dict, resume: bool) -> dict | None:
    """A finished run returns its summary; a different run in the same directory is refused."""
    run_file = out.run_file
    if not run_file.is_file():
        return None
    existing = comparable_identity(json.loads(run_file.read_text()))
    identity = comparable_identity(json.loads(json.dumps(identity, default=str)))
    if identity != existing:
        changed = sorted(k for k in set(existing) | set(identity) if existing.get(k) != identity.get(k))
        raise BenchError(f"{out.root} already holds a different run (differs in: {', '.join(changed)}); choose another --out")
    if not resume:
        raise BenchError(f"{out.root} already holds this run; rerun without --no-resume to continue it, or choose another --out")
    if out.done.is_file():
        return json.loads(out.done.read_text())
    return None


def comparable_identity(identity: dict) -> dict:
    """A run's identity with its config in the current schema: a run.json written before the config tree
    (schema 1, flat) is the same run as one written now when it reads back as the same config."""
    try:
        return {**identity, "preset": RunConfig.from_dict(identity["preset"]).to_dict()}
    except (KeyError, TypeError, ValueError, BenchError):
        return identity  # unreadable: compared as it is, so it differs


def unusable_part(out: PretrainLayout, plan: Plan) -> str | None:
    """What of a finished run a later step could not use (a checkpoint or the log), or None. Verified
    rather than trusted: a file can be lost or cut short after the run finished."""
    for fraction in plan.checkpoints:
        try:
            checkpoint.verify_checkpoint(out.checkpoint(fraction))
        except BenchError as e:
            return f"checkpoint {fraction_dir(fraction)} is unusable ({e})"
    try:
        steps = [r.get("step") for r in atomic_io.read_jsonl(out.log)] if out.log.is_file() else []
    except (OSError, ValueError) as e:
        return f"its log is unreadable ({e})"
    if plan.total_steps not in steps:
        return "its log does not reach the last step"
    return None


def ensure_tokenizer(directory: Path, tokenizer) -> None:
    """The saved tokenizer must be complete and the one the data was encoded with: verify it rather
    than trust that the folder exists (a kill mid-save leaves a folder without it), else save it."""
    try:
        if Tokenizer.load(directory).sha256 == tokenizer.sha256:
            return
    except BenchError:
        pass
    tokenizer.save(directory)


def resume_state(out: PretrainLayout, model, optimizer, resume: bool, d, diag) -> int:
    """The step to start from: the saved state's, or 0 (then the step-0 diagnostics row is logged).
    Log rows written after that state are dropped: they will be written again, identically."""
    start_step = 0
    if resume:
        info = checkpoint.load_state(out.state, model, optimizer)
        if info is not None:
            start_step = info["step"]
            threads = info.get("threads")
            if d.is_main and threads is not None and threads != torch.get_num_threads():
                print(f"warning: {out.root}: resuming with {torch.get_num_threads()} threads where the run started "
                      f"with {threads}; float sums may differ in the last bits from an uninterrupted run",
                      file=sys.stderr)
    if d.is_main:
        truncate_log(out.log, start_step if start_step > 0 else -1)
        if start_step == 0 and diag.enabled:
            atomic_io.append_jsonl(out.log, {"step": 0, "flops": 0.0, "fraction": 0.0, **diag.row()})
    return start_step


def truncate_log(path: Path, step: int) -> None:
    """Drop log rows written after the state we resume from (they will be written again, identically)."""
    if not path.is_file():
        return
    atomic_io.repair_torn_tail(path)
    rows = [r for r in atomic_io.read_jsonl(path) if r.get("step", 0) <= step]
    atomic_io.write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


class StateSaver:
    """Resumable state every `save_every_steps`, at every checkpoint, and every `save_interval_s`."""

    def __init__(self, out: PretrainLayout, opts, plan: Plan, start_step: int):  # opts: trainer.TrainOptions
        self.out, self.opts, self.plan = out, opts, plan
        self.last = time.perf_counter()
        self.last_step = start_step  # the step the newest state on disk (or the start) is at

    def due(self, step: int) -> bool:
        every = self.opts.save_every_steps
        due = (every and step % every == 0) or step in self.plan.checkpoints.values() or (
            time.perf_counter() - self.last > self.opts.save_interval_s)
        return bool(due) and step < self.plan.total_steps

    def save(self, step: int, model, optimizer, d) -> None:
        if d.is_main:
            checkpoint.save_state(self.out.state, step, model, optimizer,
                                  {"objective": self.plan.objective, "threads": torch.get_num_threads()})
        distributed.barrier(d)
        self.last, self.last_step = time.perf_counter(), step


def save_checkpoint(out: PretrainLayout, model, plan: Plan, preset: RunConfig, seed: int, step: int) -> None:
    fraction = next(f for f, s in plan.checkpoints.items() if s == step)
    checkpoint.save_encoder(
        out.checkpoint(fraction), model.backbone(),
        {"objective": plan.objective, "fraction": fraction, "step": step, "train_flops": plan.flops_at(step),
         "convention": plan.convention, "preset": preset.name, "seed": seed, "seq_len": preset.schedule.seq_len,
         "tokenizer": TOKENIZER_FROM_CHECKPOINT, "finetune_lr": preset.evaluation.finetune_lr,
         "layerwise_lr_decay": preset.evaluation.layerwise_lr_decay},
        objective=model,
    )


def finish(out: PretrainLayout, plan: Plan, peak: float, d, bf16: bool) -> dict:
    """The run's summary, written as done.json; the resumable state goes (the checkpoints hold what is kept)."""
    summary = _summary(plan, peak, d, bf16)
    if d.is_main:
        atomic_io.write_json(out.done, summary)
        shutil.rmtree(out.state, ignore_errors=True)
    distributed.barrier(d)
    return summary


def _summary(plan: Plan, peak: float, d, bf16: bool) -> dict:
    return {
        "objective": plan.objective,
        "steps": plan.total_steps,
        "train_flops": plan.planned_flops,
        "budget": plan.budget,
        "convention": plan.convention,
        "flops_per_step": plan.flops_per_step,
        "checkpoints": {fraction_dir(f): {"fraction": f, "step": s, "train_flops": plan.flops_at(s)}
                        for f, s in plan.checkpoints.items()},
        "peak_flops_per_s": peak,
        "world_size": d.world,
        "device": str(d.device),
        "precision": "bf16" if bf16 else "fp32",
        "threads": torch.get_num_threads(),
    }
