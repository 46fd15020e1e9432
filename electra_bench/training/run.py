"""From command-line choices to a planned and finished pre-training run.

Order matters: the data decides the vocabulary (a given vocab.txt or one trained on the corpus), the
vocabulary finishes the preset, the preset gives FLOPs per step, and the budget then gives the steps.
"""

from __future__ import annotations

import dataclasses
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..data.pretraining import PretrainingData, prepare_pretraining
from ..flops import step_flops
from ..locking import DirectoryLock
from ..model import resolve_precision
from ..presets import Preset
from . import memory
from .budget import Plan, check_length, check_share, make_plan, parse_budget
from .distributed import resolve_device
from .trainer import TrainOptions, pretrain


def reference_flops(preset: Preset, convention: str) -> float:
    """What '100%' means: the paper's full ELECTRA schedule for this preset, in this convention."""
    rtd = preset.for_objective("rtd")
    return rtd.steps["rtd"] * step_flops(rtd, "rtd", convention).flops_per_step


def resolve_budget(preset: Preset, budget: str | float, convention: str) -> float:
    needs_reference = isinstance(budget, str) and budget.strip().endswith("%")
    return parse_budget(budget, reference_flops(preset, convention) if needs_reference else None)


def budget_note(preset: Preset, budget: float, convention: str) -> str | None:
    """A line for a budget beyond the paper's full schedule (allowed, but rarely what was meant)."""
    share = budget / reference_flops(preset, convention)
    if share <= 1.0:
        return None
    return (f"note: budget {budget:.3g} FLOPs is {100 * share:.0f}% of the paper's full schedule for preset "
            f"{preset.name} ({convention} convention): more compute than the paper trained with")


def check_schedule(preset: Preset, objectives: tuple[str, ...], budget: str | float, convention: str,
                   allow_long: bool = False) -> float:
    """The budget in FLOPs, once its schedule is known not to be absurdly long (budget.py's limits):
    checked on the preset alone, before data or any directory exists. The preset's vocabulary stands in
    for the data's (as in --dry-run); `plan` checks the length again with the data's. A budget below one
    step is left to `plan`: a smaller vocabulary from the data makes steps cheaper."""
    b = resolve_budget(preset, budget, convention)
    check_share(b, b / reference_flops(preset, convention), preset.name, convention, allow_long)
    for objective in objectives:
        p = preset.for_objective(objective)
        check_length(objective, int(b // step_flops(p, objective, convention).flops_per_step), p.batch_size)
    return b


def plan(preset: Preset, objective: str, budget: float, convention: str) -> Plan:
    preset = preset.for_objective(objective)
    sf = step_flops(preset, objective, convention)
    return make_plan(
        objective, convention, budget, sf.flops_per_step, preset.checkpoint_fractions,
        describe_step=f" at batch {preset.batch_size} x length {preset.seq_len}", batch_size=preset.batch_size,
    )


def with_vocab(preset: Preset, vocab_size: int) -> Preset:
    if preset.encoder.vocab_size == vocab_size:
        return preset
    return dataclasses.replace(preset, encoder=dataclasses.replace(preset.encoder, vocab_size=vocab_size))


def check_memory(preset: Preset, objectives: tuple[str, ...], device: str, precision: str,
                 allow_emulated_bf16: bool = False) -> None:
    """Refuse a precision this device cannot run and shapes that cannot fit, before the data is prepared
    for them (packing for an absurd --seq-len alone takes minutes); the trainer checks again with the
    data's vocabulary."""
    dev = resolve_device(device)
    bf16 = resolve_precision(precision, dev, allow_emulated_bf16) == "bf16"
    for objective in objectives:
        memory.check_fits(preset.for_objective(objective), objective, dev, bf16, int(os.environ.get("WORLD_SIZE", "1")))


def prepare_data(preset: Preset, corpus: str | None, vocab_file: str | None, seed: int, quiet: bool,
                 tokenizer_dir: str | None = None) -> tuple[PretrainingData, Preset]:
    data = prepare_pretraining(
        corpus, preset.seq_len, preset.encoder.vocab_size, vocab_file=vocab_file, tokenizer_dir=tokenizer_dir,
        seed=seed, progress=not quiet,
    )
    return data, with_vocab(preset, data.tokenizer.vocab_size)


def run(preset: Preset, the_plan: Plan, data: PretrainingData, out_dir: str | Path, opts: TrainOptions) -> dict:
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
