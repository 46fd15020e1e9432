"""From command-line choices to a planned and finished pre-training run.

Order matters: the data decides the vocabulary (a given vocab.txt or one trained on the corpus), the
vocabulary finishes the preset, the preset gives FLOPs per step, and the budget then gives the steps.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..data.pretraining import PretrainingData, prepare_pretraining
from ..store.locking import DirectoryLock
from ..model import resolve_precision
from ..run_config import RunConfig
from . import memory
from ..flops.budget import Plan
from .distributed import resolve_device
# a preset's budget, its limits and its plan, re-exported: they need no torch and live in schedule.py
from .schedule import budget_note, check_schedule, check_schedule_bound, plan, reference_flops, resolve_budget  # noqa: F401
from .schedule import resolve as resolve_schedule  # noqa: F401
from .trainer import TrainOptions, pretrain


def with_vocab(preset: RunConfig, vocab_size: int) -> RunConfig:
    if preset.model.encoder.vocab_size == vocab_size:
        return preset
    return preset.with_knobs(vocab_size=vocab_size)


def check_memory(preset: RunConfig, objectives: tuple[str, ...], device: str, precision: str,
                 allow_emulated_bf16: bool = False) -> None:
    """Refuse a precision this device cannot run and shapes that cannot fit, before the data is prepared
    for them (packing for an absurd --seq-len alone takes minutes); the trainer checks again with the
    data's vocabulary."""
    dev = resolve_device(device)
    bf16 = resolve_precision(precision, dev, allow_emulated_bf16) == "bf16"
    for objective in objectives:
        memory.check_fits(preset.for_objective(objective), objective, dev, bf16, int(os.environ.get("WORLD_SIZE", "1")))


def prepare_data(preset: RunConfig, corpus: str | None, vocab_file: str | None, seed: int, quiet: bool,
                 tokenizer_dir: str | None = None) -> tuple[PretrainingData, RunConfig]:
    data = prepare_pretraining(
        corpus, preset.schedule.seq_len, preset.model.encoder.vocab_size, vocab_file=vocab_file,
        tokenizer_dir=tokenizer_dir, seed=seed, progress=not quiet,
    )
    return data, with_vocab(preset, data.tokenizer.vocab_size)


def run(preset: RunConfig, the_plan: Plan, data: PretrainingData, out_dir: str | Path, opts: TrainOptions) -> dict:
    """Pre-train into `out_dir`, holding its lock: a second process on the same directory is refused."""
    with _writer_lock(out_dir):
        return pretrain(
            preset.for_objective(the_plan.objective), the_plan, data.train, data.heldout, data.tokenizer.special,
            out_dir, opts, run_info={"data": data.hashes()}, tokenizer=data.tokenizer,
        )


@contextmanager
def _writer_lock(out_dir: str | Path) -> Iterator[None]:
    """The directory's lock, taken by the one process that writes it (rank 0 under torchrun)."""
    if int(os.environ.get("RANK", "0")) != 0:
        yield
        return
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    with DirectoryLock(out_dir, f"pre-training directory {out_dir}"):
        yield
