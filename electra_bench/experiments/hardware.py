"""What the package knows about the devices a job graph is planned for: each device kind's memory and dense
bf16 peak (datasheets), and the pre-training speeds measured on them (docs/performance.md). Plain data:
sizing (`--dry-run`) reads it through experiments/target.py.

A measured speed is tokens/s of one pre-training step (forward, backward, AdamW, clipping) at the shape it
was measured at, with its MFU against the matmul peak measured in the same session (the denominator
docs/performance.md uses). tokens/s does not depend on the FLOP convention, so a run counted in either
convention is sized from it; it holds for the model it was measured on (the preset without overrides that
change its shape), not for another one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..choices import DEVICE_KINDS


@dataclass(frozen=True)
class DeviceKind:
    name: str  # as --device-kind takes it (choices.DEVICE_KINDS)
    memory_bytes: float  # the datasheet's, GB = 1e9 bytes (a little below what nvidia-smi reports)
    peak_flops: float | None  # dense bf16 tensor-core FLOP/s, datasheet (2:4 sparsity doubles it; nothing here
    # uses it); None for a CPU (target.CPU), whose speed is measured
    source: str


KINDS = {k.name: k for k in (
    DeviceKind("h100", 80e9, 989e12, "NVIDIA H100 SXM5 datasheet: 80 GB HBM3, 989 TFLOP/s dense BF16"),
    DeviceKind("h200", 141e9, 989e12, "NVIDIA H200 SXM datasheet: 141 GB HBM3e, 989 TFLOP/s dense BF16"),
    DeviceKind("a100-80gb", 80e9, 312e12, "NVIDIA A100 SXM4 80GB datasheet: 80 GB HBM2e, 312 TFLOP/s dense BF16"),
    DeviceKind("a100-40gb", 40e9, 312e12, "NVIDIA A100 SXM4 40GB datasheet: 40 GB HBM2, 312 TFLOP/s dense BF16"),
)}
assert tuple(KINDS) == DEVICE_KINDS
# What a plan is sized for when no kind is named: the kind the 40% assumption was first stated for.
DEFAULT_KIND = "h100"


@dataclass(frozen=True)
class MeasuredSpeed:
    preset: str
    objective: str
    device_kind: str
    batch_size: int  # sequences per step on the one device
    seq_len: int
    mode: str  # eager | compiled (torch.compile, inductor)
    tokens_per_s: float
    mfu: float  # against `measured_peak`
    measured_peak: float  # bf16 dense matmul FLOP/s measured in the same session (n = 8192)
    torch: str
    date: str
    source: str


_FIRST = "docs/performance.md, first run on a GPU: scripts/gpu_check.sh at commit 205fa96, bench_train --precision bf16"
_SECOND = "docs/performance.md, second run on a GPU: bench_train --precision bf16, after the RTD fix"
MEASURED = (
    MeasuredSpeed("small", "mlm", "h200", 128, 128, "eager", 363_693, 0.033, 713.6e12, "2.11.0+cu130", "2026-12-04", _FIRST),
    MeasuredSpeed("small", "rtd", "h200", 128, 128, "eager", 212_825, 0.021, 713.6e12, "2.11.0+cu130", "2026-12-04", _FIRST),
    MeasuredSpeed("base", "mlm", "h200", 64, 512, "eager", 423_301, 0.350, 713.6e12, "2.11.0+cu130", "2026-12-04", _FIRST),
    MeasuredSpeed("base", "rtd", "h200", 64, 512, "eager", 287_067, 0.269, 713.6e12, "2.11.0+cu130", "2026-12-04", _FIRST),
    # the second run's torch is not recorded (the same device image as the first, by the doc)
    MeasuredSpeed("small", "mlm", "h200", 1024, 128, "eager", 1_678_834, 0.180, 755.1e12, "not recorded", "2026-12-04", _SECOND),
    MeasuredSpeed("small", "rtd", "h200", 1024, 128, "eager", 1_149_016, 0.133, 755.1e12, "not recorded", "2026-12-04", _SECOND),
    MeasuredSpeed("small", "mlm", "h200", 128, 128, "compiled", 925_462, 0.101, 755.1e12, "not recorded", "2026-12-04", _SECOND),
)


def measured_speed(preset: str, objective: str, seq_len: int, batch_per_device: int,
                   mode: str = "eager") -> list[MeasuredSpeed]:
    """Measurements of (preset, objective) at this sequence length and mode, on any kind, nearest in batch
    size first (a step's efficiency grows with its batch: 3.3% at 128 against 18% at 1024 for small)."""
    found = [m for m in MEASURED
             if (m.preset, m.objective, m.seq_len, m.mode) == (preset, objective, seq_len, mode)]
    return sorted(found, key=lambda m: abs(math.log(m.batch_size / max(1, batch_per_device))))
