"""FLOP accounting for a pre-training step, in two conventions (docs/flops.md):

* "measured": fvcore on the real forward of our objective modules, training FLOPs = 6 x fvcore MACs
  (`flops/measured.py`); fails loudly when an op it cannot count would matter.
* "paper": the ELECTRA paper's analytic formula (the official `flops_computation.py`), which
  reproduces the paper's numbers (`flops/paper.py`).

    step_flops(preset, "rtd").flops_per_step * preset.schedule.steps["rtd"]   # total pre-training FLOPs
"""

from __future__ import annotations

from dataclasses import dataclass

from ..choices import ALL_OBJECTIVES, FLOP_CONVENTIONS, require
from .paper import paper_inference_flops, paper_step

# flops/measured.py (fvcore, torch and the forward it counts) is imported where a measured count is asked
# for: the paper's convention needs no torch, so checks built on it answer before torch is loaded.


@dataclass(frozen=True)
class StepFlops:
    convention: str  # "measured" | "paper"
    flops_per_step: float  # training FLOPs of ONE optimizer step at batch_size x seq_len
    forward_flops: float  # forward-only FLOPs of that step, same convention
    # training FLOPs of the step by part, summing to flops_per_step: {"encoder"} (mlm),
    # {"generator", "discriminator"} (rtd, rtd-15), {"generator", "encoder"} (replace-mlm) or
    # {"generator", "encoder", "copy_head"} (alltokens-mlm) for "paper"; by op name ("linear", "matmul",
    # ...) for "measured"
    breakdown: dict[str, float]


_CACHE: dict[tuple[str, str, str], StepFlops] = {}


def step_flops(preset, objective: str, convention: str = "measured") -> StepFlops:
    """FLOPs of one optimizer step of `objective` (any of choices.ALL_OBJECTIVES) for a resolved `presets.Preset`.
    "paper": train = 2 x forward (the paper counts backward = forward); "measured": train = 3 x forward.
    Cached per (preset, objective, convention)."""
    require("FLOP convention", convention, FLOP_CONVENTIONS)
    require("objective", objective, ALL_OBJECTIVES)
    key = (repr(preset), objective, convention)
    if key not in _CACHE:
        if convention == "paper":
            forward, breakdown = paper_step(preset, objective)
            train = 2 * forward
        else:
            from .measured import TRAIN_OVER_FORWARD, measured_step

            forward, breakdown = measured_step(preset, objective)
            train = TRAIN_OVER_FORWARD * forward
        _CACHE[key] = StepFlops(convention, float(train), float(forward), {k: float(v) for k, v in breakdown.items()})
    cached = _CACHE[key]
    return StepFlops(cached.convention, cached.flops_per_step, cached.forward_flops, dict(cached.breakdown))


def inference_flops(preset, convention: str = "paper") -> float:
    """FLOPs of one forward of the fine-tuned model (the encoder / discriminator, without the
    pre-training heads) on ONE sequence of preset.schedule.seq_len. "paper" follows the script's
    `get_infer_flops` (a binary head at every position stands in for the classifier);
    "measured" counts the encoder plus a 2-label [CLS] classifier."""
    require("FLOP convention", convention, FLOP_CONVENTIONS)
    if convention == "paper":
        return float(paper_inference_flops(preset))
    from .measured import measured_inference_flops

    return float(measured_inference_flops(preset))


__all__ = ["StepFlops", "step_flops", "inference_flops"]
