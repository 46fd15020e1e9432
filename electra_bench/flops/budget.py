"""From a FLOP budget to a step count, and the checkpoint schedule.

A budget is absolute ("1e15", "2.5e13") or a percentage of the preset's reference budget ("25%"):
the paper's full ELECTRA schedule for that preset (`preset.schedule.steps["rtd"]` steps of the RTD objective),
counted in the run's FLOP convention. Both objectives of a comparison get the same number, so "25%"
means the same compute for MLM and RTD (the paper sized BERT-Small's 1.45M steps to match it).

The run takes floor(budget / flops_per_step) steps, so it never spends more than the budget and
stops less than one step short of it.

How long a schedule may be: nothing the trainer keeps grows with the number of steps (only what it
writes: a log row every --log-every steps), so length is not refused for memory. Two limits remain,
checked before data or directories exist (pretrain/run.check_schedule; make_plan checks the second
again with the data's vocabulary):
- `MAX_SCHEDULE_SHARE`: a budget beyond this many times the paper's full schedule is almost always a
  slip of the exponent (1e21 for 1e12) that would train for centuries; refused unless the user opts in
  with --allow-long-schedule.
- `MAX_SEQUENCES`: the data order numbers the sequences it has served (steps x batch size) in int64;
  a schedule that cannot be counted is refused, opt-in or not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import BenchError

MAX_SCHEDULE_SHARE = 1000.0
MAX_SEQUENCES = 2**63 - 1

_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(%)?\s*$")


@dataclass(frozen=True)
class Plan:
    objective: str
    convention: str
    budget: float  # FLOPs asked for
    flops_per_step: float
    total_steps: int
    checkpoints: dict[float, int]  # nominal fraction of the budget -> step at which it is saved

    @property
    def planned_flops(self) -> float:
        return self.total_steps * self.flops_per_step

    def flops_at(self, step: int) -> float:
        return step * self.flops_per_step

    def to_dict(self) -> dict:
        return {
            "objective": self.objective,
            "convention": self.convention,
            "budget": self.budget,
            "flops_per_step": self.flops_per_step,
            "total_steps": self.total_steps,
            "planned_flops": self.planned_flops,
            "checkpoints": {f"{f:g}": s for f, s in self.checkpoints.items()},
        }


def parse_budget(text: str | float, reference_flops: float | None = None) -> float:
    """'1e15' -> 1e15; '25%' -> 0.25 x reference_flops. Malformed or non-positive -> BenchError."""
    if isinstance(text, (int, float)):
        value, percent = float(text), False
    else:
        m = _NUMBER.match(str(text))
        if not m:
            raise BenchError(f"malformed budget '{text}': expected FLOPs like 1e15 or a percentage like 25%")
        value, percent = float(m.group(1)), m.group(2) is not None
    if not math.isfinite(value) or value <= 0:
        raise BenchError(f"budget must be a positive number of FLOPs, got '{text}'")
    if percent:
        if reference_flops is None:
            raise BenchError(f"budget '{text}' is a percentage but this preset has no reference budget")
        return value / 100.0 * reference_flops
    return value


def check_share(budget: float, share: float, preset_name: str, convention: str, allow_long: bool, *,
                at_least: bool = False, in_flops: bool = True) -> None:
    """Refuse a budget beyond `MAX_SCHEDULE_SHARE` times the paper's full schedule (`share` of it)
    unless the user opted in. `at_least`: `share` is a lower bound (schedule.check_schedule_bound);
    `in_flops=False`: the budget was given as that share."""
    if share > MAX_SCHEDULE_SHARE and not allow_long:
        what = f"budget {budget:.3g} FLOPs is" if in_flops else f"budget {100 * share:.3g}% is"
        raise BenchError(
            f"{what} {'more than ' if at_least else ''}{share:.3g} times the paper's full schedule for preset "
            f"{preset_name} ({convention} convention), beyond the {MAX_SCHEDULE_SHARE:g}x limit; check its "
            f"exponent (a share like 25% may be what was meant), or pass --allow-long-schedule if you mean it"
        )


def check_length(objective: str, steps: int, batch_size: int) -> None:
    """Refuse a schedule whose sequence count (steps x batch size) does not fit the int64 counter."""
    if steps * batch_size > MAX_SEQUENCES:
        raise BenchError(
            f"a schedule of {steps:.3g} steps of {objective} at batch size {batch_size} is more sequences than "
            f"an int64 counter holds (at most {MAX_SEQUENCES // batch_size:.3g} steps at this batch size); "
            f"choose a smaller --budget"
        )


def make_plan(
    objective: str,
    convention: str,
    budget: float,
    flops_per_step: float,
    fractions: tuple[float, ...],
    describe_step: str = "",
    batch_size: int = 1,
) -> Plan:
    total = int(budget // flops_per_step)
    if total < 1:
        raise BenchError(
            f"budget {budget:.3g} FLOPs is smaller than one training step of {objective} "
            f"({flops_per_step:.3g} FLOPs{describe_step}, {convention} convention)"
        )
    check_length(objective, total, batch_size)
    for f in fractions:
        if not 0 < f <= 1:
            raise BenchError(f"checkpoint fraction {f} must be in (0, 1]")
    by_step: dict[int, float] = {}  # when two fractions round to one step, the larger one names it
    for f in sorted(set(fractions)):
        by_step[max(1, round(f * total))] = f
    checkpoints = {f: s for s, f in sorted(by_step.items())}
    return Plan(objective, convention, budget, flops_per_step, total, checkpoints)
