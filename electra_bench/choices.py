"""The named choices of the tool, each spelled once: the CLI's `click.Choice`s, the validation of
stored rows and the error messages all read them from here."""

from __future__ import annotations

from typing import Sequence

from .errors import BenchError

OBJECTIVES = ("mlm", "rtd")  # the objectives `compare` puts side by side (objectives.py)
# the ELECTRA paper's efficiency ablations (Table 5), on the same encoder: ELECTRA 15%, Replace MLM,
# All-Tokens MLM (objectives.py)
ABLATION_OBJECTIVES = ("rtd-15", "replace-mlm", "alltokens-mlm")
ALL_OBJECTIVES = OBJECTIVES + ABLATION_OBJECTIVES  # every objective `objectives.build` knows
SCORED_OBJECTIVES = ("init",) + ALL_OBJECTIVES  # what a score row can name: "init" is the untrained encoder


def listing_order(objective: str) -> int:
    """Where an objective's points are listed in summaries and tables: the untrained encoder, then the
    objectives in SCORED_OBJECTIVES's order (MLM before RTD), anything else last."""
    return SCORED_OBJECTIVES.index(objective) if objective in SCORED_OBJECTIVES else len(SCORED_OBJECTIVES)

# how the RTD family's generator and kept encoder share embeddings: one module (the paper), DeBERTaV3's
# gradient-disentangled sharing, or none (the official untied_generator_embeddings)
EMBEDDING_SHARING = ("shared", "gdes", "untied")
FLOP_CONVENTIONS = ("measured", "paper")  # flops/: fvcore on our modules, or the paper's formula
# score/finetune.py (finetune-tuned: score/tuning.py; zeroshot: score/zeroshot.py, minimal-pair tasks only)
PROTOCOLS = ("finetune", "probe", "fewshot", "finetune-tuned", "zeroshot")
# metrics a protocol records beside its scores that are never scored as the task's: finetune-tuned's choice
# of lr and epochs; the zero-shot reading's every head by name (its `accuracy` is the kept encoder's own) and
# how many pairs fit the sequence length
RECORDED_METRICS = ("tuned_lr", "tuned_epochs", "pll_accuracy", "discriminator_accuracy", "generator_accuracy",
                    "pairs_scored")
PRECISIONS = ("auto", "fp32", "bf16")  # training: auto = bf16 autocast on CUDA, fp32 on CPU
ENGINES = ("local", "submitit-local", "slurm")  # where a job graph runs: experiments/graph.py, docs/scheduling.md
DEVICE_KINDS = ("h100", "h200", "a100-80gb", "a100-40gb")  # --device-kind: what a plan is sized for (experiments/hardware.py)


def require(kind: str, value: str, allowed: Sequence[str]) -> str:
    """`value` if it is one of `allowed`, else the one-line error every caller gives."""
    if value not in allowed:
        raise BenchError(f"unknown {kind} '{value}': choose one of {', '.join(allowed)}")
    return value
