"""A preset's budget: what "100%" means, a budget in FLOPs, its limits (budget.py's), and the plan.

Nothing here imports torch at module level. The paper's convention is an analytic formula (flops/paper.py);
the measured one runs fvcore on a forward (flops/measured.py, imported when first asked for, and torch with
it: seconds). So `check_schedule_bound` can refuse an absurd budget from the command line before torch is
loaded, and `resolve` gives the exact verdict afterwards: the budget in one pass (parse, the share check,
each objective's steps and their length, the note), as a `Budget` that the compare spec carries.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..flops import step_flops
from ..run_config import RunConfig
from ..flops.budget import MAX_SEQUENCES, Plan, check_length, check_share, make_plan, parse_budget

# How many times the paper's count of a training step the measured count can be, at most. Measured
# (2026-12-05) on every preset and objective: 0.73 (tiny, rtd) to 1.38 (large, mlm); with a mask rate of
# 0.9-0.95 and vocabularies up to 100,000: 0.69 to 1.41 (tests/test_pretrain_schedule_bound.py keeps it so). The measured convention takes 3 x forward where the paper takes 2 x, and otherwise counts less
# (embedding lookups are free, elementwise ops cheaper); it could count more only through the MLM head at
# a --mask-prob far above the paper's 15.6% of positions, by at most 1.5 x 1 / 0.15625 = 9.6 even if the
# head were all of the step. 10 bounds that, so a refusal on this bound is never one the exact count would
# lift.
MEASURED_OVER_PAPER_MAX = 10.0


def reference_flops(preset: RunConfig, convention: str) -> float:
    """What '100%' means: the paper's full ELECTRA schedule for this preset, in this convention."""
    rtd = preset.for_objective("rtd")
    return rtd.schedule.steps["rtd"] * step_flops(rtd, "rtd", convention).flops_per_step


def _is_share(budget: str | float) -> bool:
    return isinstance(budget, str) and budget.strip().endswith("%")


def resolve_budget(preset: RunConfig, budget: str | float, convention: str) -> float:
    return parse_budget(budget, reference_flops(preset, convention) if _is_share(budget) else None)


def budget_note(preset: RunConfig, budget: float, convention: str) -> str | None:
    """A line for a budget beyond the paper's full schedule (allowed, but rarely what was meant)."""
    return _note(preset, budget, budget / reference_flops(preset, convention), convention)


def check_schedule_bound(preset: RunConfig, objectives: tuple[str, ...], budget: str | float, convention: str,
                         allow_long: bool = False) -> None:
    """`check_schedule` without the measured count, so without torch: exact in the paper's convention and
    for a share of the paper's budget ("25%" is a quarter in any convention); for an absolute budget in the
    measured convention it refuses only what the paper's count, bounded by `MEASURED_OVER_PAPER_MAX`, shows
    the exact check would refuse too. Whatever it lets through, `check_schedule` decides."""
    if convention == "paper":
        check_schedule(preset, objectives, budget, convention, allow_long)
        return
    if _is_share(budget):
        share = parse_budget(budget, 1.0)
        check_share(share, share, preset.name, convention, allow_long, in_flops=False)
        return
    b = parse_budget(budget)
    check_share(b, b / (MEASURED_OVER_PAPER_MAX * reference_flops(preset, "paper")), preset.name, convention,
                allow_long, at_least=True)
    for objective in objectives:
        p = preset.for_objective(objective)
        fewest = b // (MEASURED_OVER_PAPER_MAX * step_flops(p, objective, "paper").flops_per_step)
        if fewest * p.schedule.batch_size > MAX_SEQUENCES:
            check_length(objective, int(fewest), p.schedule.batch_size)


@dataclass(frozen=True)
class Budget:
    """A budget resolved on one preset (its vocabulary decides each step's FLOPs): what `resolve` returns."""

    text: str  # as given: "1.2e13", "25%"
    flops: float  # the FLOPs it means for each objective
    convention: str
    share: bool  # given as a share of the paper's full schedule
    reference_flops: float  # that full schedule, in this convention ("100%")
    preset: RunConfig  # what it was resolved on
    flops_per_step: dict[str, float]  # objective -> FLOPs of one training step
    steps: dict[str, int]  # objective -> steps it buys (0: below one step, refused by `plan`)
    note: str | None  # budget_note's line

    def fits(self, text: str | float, convention: str, objectives: tuple[str, ...]) -> bool:
        """Whether it is this budget for these objectives (on whichever preset: see `on`)."""
        return str(text) == self.text and convention == self.convention and set(objectives) <= set(self.steps)

    def on(self, preset: RunConfig) -> Budget:
        """This budget on `preset` (the data's vocabulary may have changed the one it was resolved on): itself
        if unchanged, else resolved again, once, without the share limit (decided before any data)."""
        if preset == self.preset:
            return self
        return resolve(preset, tuple(self.steps), self.text, self.convention, allow_long=True)

    def plan(self, objective: str) -> Plan:
        """The objective's plan; a budget below one of its steps is refused here (make_plan)."""
        return _plan(self.preset, objective, self.flops, self.convention, self.flops_per_step[objective])

    def plans(self) -> dict[str, Plan]:
        return {o: self.plan(o) for o in self.steps}


def resolve(preset: RunConfig, objectives: tuple[str, ...], budget: str | float, convention: str,
            allow_long: bool = False) -> Budget:
    """The budget on this preset in one pass: parsed (a share of the reference), refused beyond
    MAX_SCHEDULE_SHARE times the paper's schedule unless `allow_long`, each objective's steps counted and
    refused if the int64 counter cannot hold them. Each FLOP count runs once (the reference, one step per
    objective). A budget below one step is left to `Budget.plan`: the data's smaller vocabulary may make
    steps cheaper."""
    ref = reference_flops(preset, convention)
    b = parse_budget(budget, ref if _is_share(budget) else None)
    check_share(b, b / ref, preset.name, convention, allow_long)
    per_step, steps = {}, {}
    for objective in objectives:
        p = preset.for_objective(objective)
        per_step[objective] = step_flops(p, objective, convention).flops_per_step
        steps[objective] = int(b // per_step[objective])
        check_length(objective, steps[objective], p.schedule.batch_size)
    return Budget(str(budget), b, convention, _is_share(budget), ref, preset, per_step, steps,
                  _note(preset, b, b / ref, convention))


def _note(preset: RunConfig, budget: float, share: float, convention: str) -> str | None:
    if share <= 1.0:
        return None
    return (f"note: budget {budget:.3g} FLOPs is {100 * share:.0f}% of the paper's full schedule for preset "
            f"{preset.name} ({convention} convention): more compute than the paper trained with")


def check_schedule(preset: RunConfig, objectives: tuple[str, ...], budget: str | float, convention: str,
                   allow_long: bool = False) -> float:
    """The budget in FLOPs, once its schedule is known not to be absurdly long (budget.py's limits):
    checked on the preset alone, before data or any directory exists. The preset's vocabulary stands in
    for the data's (as in --dry-run); `plan` checks the length again with the data's. A budget below one
    step is left to `plan`: a smaller vocabulary from the data makes steps cheaper."""
    return resolve(preset, objectives, budget, convention, allow_long).flops


def plan(preset: RunConfig, objective: str, budget: float, convention: str) -> Plan:
    return _plan(preset, objective, budget, convention,
                 step_flops(preset.for_objective(objective), objective, convention).flops_per_step)


def _plan(preset: RunConfig, objective: str, budget: float, convention: str, flops_per_step: float) -> Plan:
    s = preset.for_objective(objective).schedule
    return make_plan(objective, convention, budget, flops_per_step, s.checkpoint_fractions,
                     describe_step=f" at batch {s.batch_size} x length {s.seq_len}", batch_size=s.batch_size)
