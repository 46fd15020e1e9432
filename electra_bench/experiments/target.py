"""The machine a job graph is for, which need not be the one the command is typed on: a plan for 64 GPUs
of a cluster made on its login node, or a laptop, must check the memory of those GPUs and size the hours
at their speed, not the CPU's at hand.

- `--device-kind K` names it (experiments/hardware.py: h100, h200, a100-80gb, a100-40gb): its memory and
  speed, whatever this machine has (pre-training checks the real device again before it allocates).
- Without it, jobs that run elsewhere or on GPUs this machine lacks (`--engine slurm`; GPU options such as
  `--devices 8` or `--gpus-per-run 8` where no GPU is visible) are planned for hardware.DEFAULT_KIND, and
  the plan says it assumed so.
- Otherwise the jobs run here: the memory is this machine's device's. On this machine's CPU (no GPU, or
  --device cpu) the hours are sized at the speed each pre-training run's step has here, measured in a few
  steps at one worker's thread count (pretrain/speed.py; a CPU has no datasheet peak to assume an MFU
  against), and scoring at the slowest of those. On a GPU here they are sized for the default kind as a
  reference.

Speed: a pre-training run whose (preset, objective) was measured on a GPU (hardware.MEASURED) is sized at
that speed: measured on this kind, or measured on another kind and carried over at the same share of the
datasheet peak (said so). Everything else is sized at the assumed sizing.MFU of the kind's peak (said so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from .. import presets
from ..errors import BenchError
from ..pretrain import memory
from . import hardware, sizing

MEMORY_OF_WHAT = ("the step's weights, gradients, AdamW moments and activations per process, bf16 autocast "
                  "(pretrain/memory.py; refused above 2x the device's memory)")


class Placed(Protocol):
    """What a target reads of a run's spec (experiments/spec.CompareSpec is one): where and how wide it runs,
    what it pre-trains. Named here, so that the spec, which checks its memory on its target, and the target
    do not import each other."""

    device: str
    devices: str | None
    engine: str
    gpus_per_run: int
    threads: int
    device_kind: str | None
    objectives: tuple[str, ...]

    def resolved_preset(self) -> presets.RunConfig: ...


@dataclass(frozen=True)
class Target:
    kind: hardware.DeviceKind | None  # None: this machine's CPU
    runs_here: bool  # memory is this machine's device's (the jobs run here, on what it has)
    why: str  # how the kind was chosen
    threads: int = 1  # on this machine's CPU: one worker's threads, the speed is measured at

    def check_memory(self, spec: Placed) -> None:
        """Refuse a step that cannot fit the target's device (one line, before anything is created)."""
        if self.runs_here:
            from ..pretrain import run as runner

            runner.check_memory(spec.resolved_preset(), spec.objectives, spec.device, "auto")
            return
        p = spec.resolved_preset()
        for objective in spec.objectives:
            memory.check_capacity(p.for_objective(objective), objective, self.kind.memory_bytes,
                                  f"an {self.kind.name} ({self.why}; --device-kind names another)", "cuda",
                                  bf16=True, world=spec.gpus_per_run)

    def pretrain_rate(self, preset: presets.RunConfig, objective: str, plan, gpus: int = 1) -> sizing.Rate:
        """The speed of one device of this kind pre-training `objective` on `preset` (resolved, for that
        objective), in FLOP/s of `plan`'s convention."""
        if self.kind is None:
            return _measured_here(preset, objective, plan, self.threads)
        peak = self.kind.peak_flops
        if _is_registered_model(preset, objective):
            per_device = max(1, preset.schedule.batch_size // max(1, gpus))
            found = hardware.measured_speed(preset.name, objective, preset.schedule.seq_len, per_device)
            own = [m for m in found if m.device_kind == self.kind.name]
            m = (own or found or [None])[0]
            if m is not None:
                measured_kind = hardware.KINDS[m.device_kind]
                tokens_per_s = m.tokens_per_s * peak / measured_kind.peak_flops  # the same share of the peak
                tokens_per_step = preset.schedule.batch_size * preset.schedule.seq_len
                flops_per_s = tokens_per_s * plan.flops_per_step / tokens_per_step
                how = ("measured on this kind" if own else
                       f"measured on {m.device_kind}, carried over at the same share of the datasheet peak")
                at = (f"{m.batch_size} x {m.seq_len} per device, {m.mode}, bf16; this run: {per_device} x "
                      f"{preset.schedule.seq_len} per device")
                source = (f"{how}: {m.tokens_per_s:,.0f} tokens/s ({m.mfu:.1%} MFU of its measured "
                          f"{m.measured_peak / 1e12:.0f} TFLOP/s peak) at {at}; torch {m.torch}, {m.date}, "
                          f"{m.source}")
                return sizing.Rate(flops_per_s, source, flops_per_s / peak)
        return self.assumed_rate(f"no speed measured for {preset.name} {objective} at these shapes")

    def scoring_rate(self, pretrain_rates: dict[str, sizing.Rate]) -> sizing.Rate:
        """The speed of a scoring job: on this machine's CPU the slowest pre-training speed measured here
        (scoring runs the same encoder), on a GPU kind the assumed MFU."""
        if self.kind is None and pretrain_rates:
            slowest = min(pretrain_rates.values(), key=lambda r: r.flops_per_s)
            return sizing.Rate(slowest.flops_per_s, "assumed: the slowest pre-training speed measured here "
                                                    "(scoring runs the same encoder)", None)
        return self.assumed_rate("no speed measured for scoring")

    def assumed_rate(self, why: str = "no speed measured for this kind of job") -> sizing.Rate:
        return sizing.Rate(self.kind.peak_flops * sizing.MFU,
                           f"assumed: {sizing.MFU:.0%} MFU of the {self.kind.name}'s {self.kind.peak_flops / 1e12:.0f} "
                           f"TFLOP/s ({why})", sizing.MFU)

    def describe(self, spec: Placed) -> dict:
        """What --dry-run prints about the target: the kind, why, and one step's memory on it."""
        p = spec.resolved_preset()
        device_type = _here(spec) if self.runs_here else "cuda"
        need = {o: memory.step_bytes(p.for_objective(o), o, device_type, bf16=device_type == "cuda",
                                     world=spec.gpus_per_run) for o in spec.objectives}
        if self.runs_here:
            import torch

            have = memory.available_bytes(torch.device(device_type))
        else:
            have = self.kind.memory_bytes
        kind = self.kind or CPU
        return {"kind": kind.name, "why": self.why, "memory_bytes": have, "memory_of": (
                    device_type if self.runs_here else f"one {kind.name}, datasheet"),
                "peak_flops": kind.peak_flops, "kind_source": kind.source, "runs_here": self.runs_here,
                "step_memory_bytes": need, "memory_estimate": MEMORY_OF_WHAT}


# How describe() names this machine's CPU: no datasheet peak (speeds are measured, pretrain/speed.py).
CPU = hardware.DeviceKind("cpu", 0.0, None, "this machine's CPU: speeds measured here")


def _measured_here(preset: presets.RunConfig, objective: str, plan, threads: int) -> sizing.Rate:
    from ..pretrain import speed

    m = speed.measure(preset, objective, threads)
    flops_per_s = m.tokens_per_s * plan.flops_per_step / (preset.schedule.batch_size * preset.schedule.seq_len)
    return sizing.Rate(flops_per_s, f"measured here: {m.tokens_per_s:,.0f} tokens/s over {m.steps} step(s) of "
                                    f"{m.batch_size} x {preset.schedule.seq_len} on {m.threads} thread(s), load "
                                    f"average {os.getloadavg()[0]:.1f}", None)


def resolve(spec: Placed) -> Target:
    """The target of `spec` (the module docstring's rules)."""
    named = getattr(spec, "device_kind", None)
    if named:
        return Target(hardware.KINDS[named], runs_here=False, why="--device-kind")
    default = hardware.KINDS[hardware.DEFAULT_KIND]
    if spec.device == "cpu" or spec.devices == "cpu":
        why = "CPU jobs of --engine slurm, sized at this machine's speed" if spec.engine == "slurm" else "--device cpu"
        return Target(None, runs_here=True, why=why, threads=spec.threads)
    if spec.engine == "slurm":
        return Target(default, runs_here=False, why="assumed for --engine slurm")
    wants_gpus = (spec.gpus_per_run > 1 or spec.device.startswith("cuda")
                  or (spec.devices not in (None, "auto") and spec.devices != "cpu"))
    if wants_gpus and not _has_gpu():
        return Target(default, runs_here=False, why="assumed: GPUs asked for, none visible here")
    if _here(spec) == "cpu":
        return Target(None, runs_here=True, why="no GPU here", threads=spec.threads)
    return Target(default, runs_here=True, why="the jobs run on this machine")


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available() and torch.cuda.device_count() > 0


def _here(spec: Placed) -> str:
    return "cuda" if spec.device.startswith("cuda") or (spec.device == "auto" and _has_gpu()) else "cpu"


def _is_registered_model(preset: presets.RunConfig, objective: str) -> bool:
    """The preset computes what its registered namesake does (a measured speed holds for that model only)."""
    try:
        registered = presets.get(preset.name).for_objective(objective)
    except BenchError:  # a preset built in code, not registered: nothing was measured on it
        return False
    mine = preset.for_objective(objective)
    return (mine.model, mine.schedule.seq_len) == (registered.model, registered.schedule.seq_len)
