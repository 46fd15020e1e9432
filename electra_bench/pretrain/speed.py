"""How fast this machine pre-trains an objective: a few timed steps at the preset's shapes, for sizing a plan
whose jobs run on this machine's CPU (experiments/target.py). A CPU has no datasheet peak to assume an MFU
against, and its speed depends on the machine and on what else runs on it, so it is measured, not assumed.

The step is the trainer's (`step.train_step`: forward, backward, clipping, AdamW) on a packed batch of random
ids, at the thread count of one worker. To keep a dry run short the batch is cut to about `TOKENS` tokens
(tokens/s on a CPU hardly depends on the batch beyond that), and a step slower than `SLOW_S` is timed once.
What the trainer adds around the step (data, logging, diagnostics, checkpoints) is not timed: a few percent.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import torch

from .. import objectives, special_tokens
from ..flops.measured import packed_batch
from ..run_config import RunConfig
from . import optim
from .step import train_step

TOKENS = 2048  # per timed step
SECONDS = 1.0  # timed steps until this much time has passed (after one untimed warm-up step) ...
MAX_STEPS = 8  # ... or this many
SLOW_S = 5.0  # a warm-up step slower than this is the measurement


@dataclass(frozen=True)
class Measured:
    tokens_per_s: float
    batch_size: int  # sequences per timed step
    steps: int
    threads: int


_CACHE: dict[tuple, Measured] = {}


@contextmanager
def _threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def measure(preset: RunConfig, objective: str, threads: int) -> Measured:
    """Tokens/s of `objective`'s training step on `preset` (resolved for it) on this machine's CPU with
    `threads` threads; measured once per process for each model, shape and thread count."""
    key = (objective, repr(preset.model), repr(preset.objective), preset.schedule.seq_len, threads)
    if key not in _CACHE:
        _CACHE[key] = _measure(preset, objective, threads)
    return _CACHE[key]


def _measure(preset: RunConfig, objective: str, threads: int) -> Measured:
    seq_len = preset.schedule.seq_len
    batch = max(1, min(preset.schedule.batch_size, math.ceil(TOKENS / seq_len)))
    special = special_tokens.DEFAULT
    ids, segments, mask = packed_batch(batch, seq_len, preset.model.encoder.vocab_size, special)
    data = {"input_ids": ids, "segment_ids": segments, "attention_mask": mask}
    with _threads(threads), torch.random.fork_rng(devices=[]):  # the caller's random state is left as it was
        torch.manual_seed(0)
        model = objectives.build(objective, preset, special).train()
        optimizer = optim.pretraining_optimizer(model, preset.optim, torch.device("cpu"))
        params = [p for g in optimizer.param_groups for p in g["params"]]

        def step(i: int) -> float:
            t = time.perf_counter()
            train_step(model, optimizer, data, torch.Generator().manual_seed(i), params, preset.optim.grad_clip,
                       "cpu", False)
            return time.perf_counter() - t

        first = step(0)  # allocations and one-off set-up
        if first > SLOW_S:
            return Measured(batch * seq_len / first, batch, 1, threads)
        times: list[float] = []
        while sum(times) < SECONDS and len(times) < MAX_STEPS:
            times.append(step(len(times) + 1))
    return Measured(batch * seq_len * len(times) / sum(times), batch, len(times), threads)
