"""Data parallelism applied outside the model: torchrun sets RANK/WORLD_SIZE, we wrap in DDP.

Each rank processes global_batch / world sequences per step, so the global batch (and with it the FLOPs
per step, summed over ranks) is the same as in one process. Only rank 0 writes files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ..errors import BenchError


@dataclass(frozen=True)
class Dist:
    rank: int
    world: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise BenchError(f"--device {name}: no CUDA device is available on this machine")
    return torch.device(name)


def setup(device: str = "auto") -> Dist:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = resolve_device(device)
    if dev.type == "cuda" and world > 1:
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    return Dist(rank, world, local_rank, dev)


def wrap(module: torch.nn.Module, d: Dist) -> torch.nn.Module:
    if d.world == 1:
        return module
    ids = [d.device.index] if d.device.type == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids)


def barrier(d: Dist) -> None:
    if d.world > 1:
        dist.barrier()


def mean_over_ranks(values: dict[str, float], d: Dist) -> dict[str, float]:
    if d.world == 1 or not values:
        return values
    keys = sorted(values)
    t = torch.tensor([values[k] for k in keys], dtype=torch.float64)
    if d.device.type == "cuda":
        t = t.to(d.device)
    dist.all_reduce(t)
    return {k: float(v) / d.world for k, v in zip(keys, t.tolist())}


def any_rank(flag: bool, d: Dist) -> bool:
    """Whether `flag` is set on any rank: a decision every rank takes together (a rank that stopped
    alone would leave the others waiting in the next all-reduce)."""
    if d.world == 1:
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=d.device if d.device.type == "cuda" else "cpu")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())
