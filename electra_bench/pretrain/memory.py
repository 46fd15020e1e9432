"""Will one training step fit? A rough upper estimate of a step's memory, checked against what the
device has before anything is allocated, so an absurd --seq-len or --batch-size is one clear line
instead of an allocator crash minutes later.

The estimate counts weights, gradients and both AdamW moments (16 bytes a parameter) plus the
activations autograd keeps per layer and token of one process's share of the batch: ~16 H-wide tensors
and, on CPU, ~3 attention maps of T entries per head (on CUDA, fused attention keeps none; bf16 autocast
halves the activations), and the vocabulary logits at the masked positions. It is rough, so only a step
estimated at more than `MARGIN` x the available memory is refused; a borderline one is left to run (an
out-of-memory error is still reported in one line).
"""

from __future__ import annotations

import os

import torch

from ..errors import BenchError
from ..model import EncoderConfig

MARGIN = 2.0


def _encoder_activation_bytes(cfg: EncoderConfig, batch: int, seq_len: int, attention_maps: bool,
                              bytes_per: int) -> float:
    per_layer = batch * seq_len * (16 * cfg.hidden_size + (3 * cfg.num_heads * seq_len if attention_maps else 0))
    return bytes_per * cfg.num_layers * per_layer


def _parameters(cfg: EncoderConfig, seq_len: int) -> float:
    H, E, F = cfg.hidden_size, cfg.embedding_size, cfg.ffn_size
    embeddings = (cfg.vocab_size + max(cfg.max_positions, seq_len) + cfg.type_vocab_size) * E + E * H
    layers = cfg.num_layers * (4 * H * H + 2 * H * F)
    return embeddings + layers + H * E + cfg.vocab_size  # + output head


def step_bytes(preset, objective: str, device_type: str = "cpu", bf16: bool = False, world: int = 1) -> float:
    """Estimated peak bytes of one training step of `objective` in one of `world` processes."""
    B, T = max(1, preset.schedule.batch_size // world), preset.schedule.seq_len
    bytes_per = 2 if bf16 else 4
    # every objective but MLM has a generator
    models = [preset.model.encoder] + ([preset.model.generator] if objective != "mlm" else [])
    params = sum(_parameters(cfg, T) for cfg in models)
    activations = sum(_encoder_activation_bytes(cfg, B, T, device_type != "cuda", bytes_per) for cfg in models)
    # vocabulary logits: at the masked positions (the generator's, or MLM's); Replace MLM's model adds
    # its own there, All-Tokens MLM's at every position
    positions = preset.max_predictions + {"replace-mlm": preset.max_predictions, "alltokens-mlm": T}.get(objective, 0)
    logits = 3 * 4 * B * positions * preset.model.encoder.vocab_size
    return 16 * params + activations + logits


def available_bytes(device: torch.device) -> float | None:
    """Free memory of the device (CUDA: free device memory; CPU: MemAvailable, else physical RAM)."""
    if device.type == "cuda":
        return float(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(preset, objective: str, device: torch.device, bf16: bool = False, world: int = 1) -> None:
    """On this machine's `device`: what it has free now."""
    check_capacity(preset, objective, available_bytes(device), device.type, device.type, bf16, world)


def check_capacity(preset, objective: str, have: float | None, where: str, device_type: str, bf16: bool = False,
                   world: int = 1) -> None:
    """Against `have` bytes of a device described as `where`: this machine's, or the kind a plan is for
    (experiments/target.py: a cluster's GPUs are not the login node's CPU)."""
    need = step_bytes(preset, objective, device_type, bf16, world)
    if have is not None and need > MARGIN * have:
        raise BenchError(
            f"one {objective} step at --batch-size {preset.schedule.batch_size} x --seq-len "
            f"{preset.schedule.seq_len} needs about "
            f"{need / 2**30:.3g} GiB{f' per process of {world}' if world > 1 else ''}, far more than the "
            f"{have / 2**30:.3g} GiB available on {where}; lower --seq-len or --batch-size"
        )
