"""The pre-training objectives, separate from the backbone they train: every one is an `Objective`
(base.py: `draw_noise` then `compute`, `backbone`, `compile_step`) on the same `Encoder`, so a budget
compares objectives, not architectures.

  mlm.py        BERT's MLM
  rtd.py        ELECTRA's replaced-token detection
  ablations.py  the paper's Table 5: rtd-15, replace-mlm, alltokens-mlm (built from RTD's pieces)
  generator.py  RTD's generator: its make-up, its step, its sampling
  masking.py    which positions a step predicts and what they hold; the masked-LM loss
"""

from __future__ import annotations

import torch
from torch import nn

from .. import special_tokens
from ..choices import ALL_OBJECTIVES, require
from ..model import Encoder, EncoderConfig, count_parameters
from ..run_config import RunConfig
from ..special_tokens import SpecialIds
from .ablations import AllTokensMLM, ElectraOnMasked, ReplaceMLM
from .base import Batch, Noise, Objective, ObjectiveResult
from .generator import GeneratorCorruption, GradientDisentangledEmbeddings, generator_step, kept_encoder, sample_replacements
from .masking import choose_positions, corrupt, corruption_draws, weighted_mlm
from .mlm import MaskedLM
from .rtd import ReplacedTokenDetection

__all__ = ["AllTokensMLM", "Batch", "ElectraOnMasked", "GeneratorCorruption", "GradientDisentangledEmbeddings",
           "MaskedLM", "Noise", "Objective", "ObjectiveResult", "ReplaceMLM", "ReplacedTokenDetection", "build",
           "choose_positions", "corrupt", "corruption_draws", "generator_parameters", "generator_step",
           "initial_encoder", "kept_encoder", "parameter_counts", "sample_replacements", "weighted_mlm"]


def build(objective: str, config: RunConfig, special: SpecialIds) -> Objective:
    """The objective module for a resolved config (its `model` and `objective` sections, and the masked
    slots its sequence length gives): `mlm`, `rtd`, or one of the ELECTRA paper's efficiency ablations
    (`rtd-15`, `replace-mlm`, `alltokens-mlm`; Table 5), all on the same encoder."""
    objective = require("objective", objective, ALL_OBJECTIVES)
    model, task, slots = config.model, config.objective, config.max_predictions
    if objective == "mlm":
        return MaskedLM(model.encoder, special, task.mask_prob, slots)
    knobs = dict(gen_weight=task.gen_weight, uniform_generator=model.uniform_generator,
                 embedding_sharing=model.embedding_sharing, untied_generator=model.untied_generator)
    if objective in ("rtd", "rtd-15"):
        cls = ReplacedTokenDetection if objective == "rtd" else ElectraOnMasked
        return cls(model.encoder, model.generator, special, task.mask_prob, slots, task.disc_weight,
                   task.rtd_temperature, task.disallow_correct, **knobs)
    cls = ReplaceMLM if objective == "replace-mlm" else AllTokensMLM
    return cls(model.encoder, model.generator, special, task.mask_prob, slots, task.rtd_temperature,
               task.disallow_correct, **knobs)


def initial_encoder(encoder_cfg: EncoderConfig, seed: int) -> Encoder:
    """The encoder both objectives start from under `seed` (the trainer seeds torch, then builds the
    objective, whose kept encoder is constructed first): the 'untrained' point of a comparison.
    tests/test_experiments_orchestration.py checks the identity by weights for both objectives."""
    torch.manual_seed(seed)
    return Encoder(encoder_cfg)


def parameter_counts(p) -> dict[str, int]:
    """Parameters of a resolved `RunConfig`: the kept encoder, each objective's whole model and
    RTD's generator (without the embeddings it shares with the discriminator)."""
    # built on the meta device: no memory, no time, exact counts
    with torch.device("meta"):
        mlm = build("mlm", p.for_objective("mlm"), special_tokens.DEFAULT)
        rtd = build("rtd", p.for_objective("rtd"), special_tokens.DEFAULT)
    return {
        "encoder": count_parameters(mlm.backbone()),
        "mlm_total": count_parameters(mlm),
        "rtd_total": count_parameters(rtd),
        "generator": generator_parameters(rtd),
    }


def generator_parameters(m: nn.Module) -> int:
    """Parameters of an objective's generator Encoder that the kept encoder does not also use (shared
    embeddings are the kept model's; a uniform generator, or one that IS the discriminator, has none)."""
    kept_module = m.discriminator if hasattr(m, "discriminator") else m.encoder
    kept = {id(q) for q in kept_module.parameters()}
    if isinstance(kept_module.embeddings, GradientDisentangledEmbeddings):  # read by the kept model too
        kept |= {id(q) for q in kept_module.embeddings.shared.parameters()}
    return sum(q.numel() for q in {id(q): q for q in m.generator.parameters()}.values() if id(q) not in kept)
