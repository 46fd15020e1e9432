"""The optimizer's parameter groups and the learning-rate schedule: one definition each, used by
pre-training (trainer.py) and by fine-tuning (score/finetune.py)."""

from __future__ import annotations

import torch

from ..run_config import OptimConfig


def decays(name: str, param: torch.Tensor) -> bool:
    """Weight decay applies to weight matrices only: not to LayerNorm parameters or biases (BERT/ELECTRA)."""
    return param.ndim >= 2 and "norm" not in name


def param_groups(module: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups by `decays`; a parameter shared between submodules is listed once."""
    decay, no_decay, seen = [], [], set()
    for name, p in module.named_parameters():
        if id(p) in seen or not p.requires_grad:
            continue
        seen.add(id(p))
        (decay if decays(name, p) else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def pretraining_optimizer(module: torch.nn.Module, cfg: OptimConfig, device: torch.device) -> torch.optim.AdamW:
    """AdamW with the run's optimisation settings; fused on CPU and CUDA (same numbers, fewer kernels)."""
    return torch.optim.AdamW(
        param_groups(module, cfg.weight_decay), lr=cfg.lr, betas=cfg.adam_betas, eps=cfg.adam_eps,
        fused=device.type in ("cuda", "cpu"),
    )


def lr_at(step: int, total_steps: int, peak: float, warmup_fraction: float) -> float:
    """Learning rate for optimizer step `step` (0-based), keyed to the fraction of the budget spent:
    linear warmup over `warmup_fraction` of the budget, then linear decay to zero at the budget (the
    paper's schedule, rescaled so a 1/16 budget still warms up and decays fully, as cramming does)."""
    frac = step / total_steps
    warm = 1.0 if warmup_fraction <= 0 else min(1.0, (step + 1) / max(1.0, warmup_fraction * total_steps))
    return peak * warm * max(0.0, 1.0 - frac)


def set_lr(optimizer: torch.optim.Optimizer, scale_or_lr: float, *, relative: bool = False) -> None:
    """Set every group's lr; `relative`: as a multiple of the group's `base_lr` (layer-wise decay)."""
    for g in optimizer.param_groups:
        g["lr"] = g["base_lr"] * scale_or_lr if relative else scale_or_lr
