"""One pre-training step: forward under the precision's autocast, backward, clip, update. The trainer
calls it in its loop and benchmarks/bench_train.py times it, so both measure the same step."""

from __future__ import annotations

from typing import Callable

import torch


def train_step(forward: Callable, optimizer: torch.optim.Optimizer, batch: dict[str, torch.Tensor],
               rng: torch.Generator, clip_params: list[torch.Tensor], grad_clip: float, device_type: str,
               bf16: bool):
    """Returns the objective's result (loss, metrics) of this step's forward, after the update.

    `forward` is the objective module (possibly DDP-wrapped or compiled); `rng` drives its random
    draws (masking, generator samples), so a step is a function of (weights, batch, seed)."""
    with torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
        result = forward(batch, rng)
    optimizer.zero_grad(set_to_none=True)
    result.loss.backward()
    torch.nn.utils.clip_grad_norm_(clip_params, grad_clip)
    optimizer.step()
    return result
