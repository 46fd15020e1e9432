"""What the training loop reads and sets around each step without a device sync of its own: which steps
get a log row, the generator's temperature, tokens/s and MFU, a non-finite loss, and a log row's metrics in
one read."""

from __future__ import annotations

import time
from typing import Callable

import torch

from .. import objectives
from ..errors import BenchError
from ..flops.budget import Plan
from ..run_config import ObjectiveConfig
from ..store.layout import PretrainLayout


def read_metrics(result: objectives.ObjectiveResult) -> dict[str, float]:
    """A step's loss and metrics as floats for its log row, in one device-to-host read (the scalars stacked,
    in float64, so each is exactly the float its own read gave): a log step waits for the device once, not
    once per metric."""
    names = ["loss", *result.metrics]
    values = torch.stack([result.loss.detach().double(), *(v.detach().double() for v in result.metrics.values())])
    return dict(zip(names, values.tolist()))


class LogSchedule:
    """Which steps get a log row: every `every` steps, the checkpoints, the diagnostics points and the
    last step. A predicate, not a set of steps: the set grew with the schedule (a 1e21-FLOP budget of
    tiny is 1.6e11 steps; its set filled 18 GB within a minute before the first step)."""

    def __init__(self, plan: Plan, every: int, diag_steps: frozenset[int]):
        self.every, self.total = every, plan.total_steps
        self.special = frozenset(plan.checkpoints.values()) | diag_steps  # O(checkpoints + diagnostics points)

    def is_log_step(self, step: int) -> bool:
        return step % self.every == 0 or step == self.total or step in self.special


class TemperatureSchedule:
    """The generator's sampling temperature on its schedule (`ObjectiveConfig.temperature_at`), set on the objective
    before each step; with no warm-up, or an objective without a temperature, there is nothing to set.
    Eager, the objective gets a Python float, as always. Compiled, a 0-d tensor on the device, updated in
    place: an input of the step's one graph, where a float would be a constant that recompiles it."""

    def __init__(self, model, cfg: ObjectiveConfig, compiled: bool, device: torch.device):
        self.model, self.cfg = model, cfg
        self.on = cfg.rtd_temperature_warmup is not None and hasattr(model, "temperature")
        self.value: float | None = None
        self.tensor = torch.zeros((), device=device) if self.on and compiled else None
        self.set(0.0)

    def set(self, fraction: float) -> None:
        if not self.on:
            return
        self.value = self.cfg.temperature_at(fraction)
        if self.tensor is not None:
            self.tensor.fill_(self.value)  # a kernel on CUDA, no host sync
        self.model.temperature = self.tensor if self.tensor is not None else self.value

    def logged(self) -> dict[str, float]:
        return {"temperature": self.value} if self.on else {}


class Throughput:
    """Tokens/s and MFU over the steps since the last read.

    MFU is a share of a peak measured once at start-up. Measured while the machine was busy (another job, the
    other workers starting up), that peak is too low, and runs showed MFU 168-175%. A step rate above the
    peak proves the peak wrong, so then it is measured again (`remeasure`; the highest measurement stands,
    at most `MAX_REMEASURES` times: each costs a second's matmuls). An MFU that would still exceed 100% (the
    machine busy again while measuring, or a declared --peak-flops below what the run achieves) is not
    reported (None) rather than reported impossible."""

    MAX_REMEASURES = 5

    def __init__(self, tokens_per_step: int, flops_per_step: float, peak: float,
                 remeasure: Callable[[], float] | None = None):
        self.tokens_per_step, self.flops_per_step, self.peak = tokens_per_step, flops_per_step, peak
        self.remeasure, self.remeasures_left = remeasure, self.MAX_REMEASURES if remeasure else 0
        self.t, self.steps = time.perf_counter(), 0

    def tick(self) -> None:
        self.steps += 1

    def read(self) -> tuple[float, float | None]:
        elapsed = max(time.perf_counter() - self.t, 1e-9)
        tokens_per_s, flops_per_s = self.steps * self.tokens_per_step / elapsed, self.steps * self.flops_per_step / elapsed
        if flops_per_s > self.peak and self.remeasures_left > 0:
            self.remeasures_left -= 1
            self.peak = max(self.peak, self.remeasure())
        mfu = flops_per_s / self.peak if flops_per_s <= self.peak else None
        self.t, self.steps = time.perf_counter(), 0
        return tokens_per_s, mfu


class FiniteLoss:
    """A non-finite loss stops the run, noticed without a device sync per step: a flag accumulates on
    the device and is read where the loop syncs anyway (log rows) and before anything is saved, so no
    checkpoint or state ever holds weights updated by a non-finite loss."""

    def __init__(self, device: torch.device, plan: Plan, out: PretrainLayout, start_step: int):
        self.bad = torch.zeros((), dtype=torch.bool, device=device)
        self.plan, self.out, self.last_ok = plan, out, start_step

    def add(self, loss: torch.Tensor) -> None:
        self.bad |= ~torch.isfinite(loss.detach())

    def check(self, step: int, lr: float) -> None:
        if bool(self.bad):
            at = f"step {step}" if step == self.last_ok + 1 else f"a step from {self.last_ok + 1} to {step}"
            raise BenchError(
                f"non-finite {self.plan.objective} loss at {at} of {self.plan.total_steps} (lr {lr:.2g}); the last "
                f"good state is kept in {self.out.state}; try a lower --lr"
            )
        self.last_ok = step
