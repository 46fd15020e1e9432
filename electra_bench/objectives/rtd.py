"""ELECTRA's objective (RTD): a small generator fills the masked positions, the discriminator labels every
token original or replaced."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..model import DiscriminatorHead, Encoder, EncoderConfig, MaskedLMHead
from ..special_tokens import SpecialIds
from .base import Batch, Noise, Objective, ObjectiveResult
from .generator import draw_generator_noise, generator_modules, generator_step, generator_term, kept_encoder


class ReplacedTokenDetection(Objective):
    """ELECTRA's objective, as its official code does it.

    Mask round(15%) of positions ([MASK] in 85% of them, 15% left unchanged); the generator (a narrow MLM
    sharing the embeddings) predicts them; replacements are sampled from its softmax (temperature 1,
    gumbel-max, no gradient through the sample); the discriminator labels every real token replaced or
    original (a sample equal to the original counts as original). loss = MLM(gen) + disc_weight x BCE(disc).

    The official code's knobs: `temperature` (sampling from softmax(logits / temperature)),
    `disallow_correct` (the sample is never the original token, so every masked position is replaced),
    `gen_weight` (the generator loss's weight), and the generator's make-up (`generator_modules`):
    `uniform_generator`, `embedding_sharing` ("untied": the official untied_generator_embeddings;
    "gdes": DeBERTaV3's gradient-disentangled sharing) and `untied_generator` (False: one transformer is
    both generator and discriminator).
    """

    name = "rtd"

    def __init__(
        self,
        disc_cfg: EncoderConfig,
        gen_cfg: EncoderConfig,
        special: SpecialIds,
        mask_prob: float,
        max_predictions: int,
        disc_weight: float = 50.0,
        temperature: float = 1.0,
        disallow_correct: bool = False,
        gen_weight: float = 1.0,
        uniform_generator: bool = False,
        embedding_sharing: str = "shared",
        untied_generator: bool = True,
    ):
        super().__init__()
        self.special, self.mask_prob, self.max_predictions = special, mask_prob, max_predictions
        self.disc_weight, self.temperature, self.disallow_correct = disc_weight, temperature, disallow_correct
        self.gen_weight = gen_weight
        self.discriminator = Encoder(disc_cfg)
        # by default a narrow generator sharing the discriminator's embeddings (built after it, as always)
        self.generator, self.gen_head = generator_modules(self.discriminator, gen_cfg, embedding_sharing,
                                                          uniform_generator, untied_generator)
        self.disc_head = DiscriminatorHead(disc_cfg)

    def backbone(self) -> Encoder:
        """The discriminator is the model that is kept and fine-tuned (under gdes, as a plain Encoder
        with its embeddings merged: `kept_encoder`)."""
        return kept_encoder(self.discriminator)

    def draw_noise(self, batch: Batch, rng: torch.Generator | None) -> Noise:
        """Masking scores, corruption, then the gumbel noise of the generator's samples
        (generator.draw_generator_noise)."""
        return draw_generator_noise(batch, rng, self.max_predictions, self.discriminator.cfg.vocab_size)

    def compute(self, batch: Batch, noise: Noise, padded: bool | None = None) -> ObjectiveResult:
        """The step from its draws: no generator, no host sync when `padded` is given (compiles whole)."""
        seg, att = batch["segment_ids"], batch["attention_mask"]
        c = generator_step(self, batch, noise, self.discriminator.cfg.vocab_size, padded)
        disc_hidden = self.discriminator(c.corrupted, seg, att, padded)  # (B, T, H)
        disc_logits = self.disc_head(disc_hidden)  # (B, T)
        tok_w = att.float()
        n_tok = tok_w.sum().clamp(min=1.0)
        bce = F.binary_cross_entropy_with_logits(disc_logits.float(), c.replaced, reduction="none")
        disc_loss = (bce * tok_w).sum() / n_tok
        loss = generator_term(c.gen_loss, self.gen_weight) + self.disc_weight * disc_loss

        with torch.no_grad():
            pred = (disc_logits > 0).float()
            disc_acc = ((pred == c.replaced).float() * tok_w).sum() / n_tok
            n_rep = (c.replaced * tok_w).sum()
            disc_recall = (pred * c.replaced * tok_w).sum() / n_rep.clamp(min=1.0)
            replaced_frac = n_rep / n_tok
        extras = {"mlm_logits": c.gen_logits.detach(), "mlm_labels": c.labels, "mlm_weights": c.weights,
                  "disc_logits": disc_logits.detach(), "replaced": c.replaced, "token_mask": tok_w}
        return ObjectiveResult(
            loss,
            {
                "gen_loss": c.gen_loss.detach(),
                "gen_acc": c.gen_acc,
                "disc_loss": disc_loss.detach(),
                "disc_acc": disc_acc,
                "disc_recall": disc_recall,
                "replaced_frac": replaced_frac,
            },
            extras,
        )

    @torch.no_grad()
    def init_output_priors(self, unigram_log_probs: torch.Tensor) -> None:
        """The generator's output starts at the unigram distribution and the discriminator at the
        expected replaced rate (bias = logit(mask_prob), output weights zero): a small-budget adaptation
        that skips learning what a constant already knows (docs/tuning.md)."""
        if isinstance(self.gen_head, MaskedLMHead):  # a uniform generator has no output layer
            self.gen_head.bias.copy_(unigram_log_probs)
        p = min(max(self.mask_prob, 1e-3), 1 - 1e-3)
        self.disc_head.out.weight.zero_()
        self.disc_head.out.bias.fill_(math.log(p / (1 - p)))
