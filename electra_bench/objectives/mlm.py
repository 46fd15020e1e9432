"""BERT's objective (MLM): mask round(mask_prob x tokens) positions, predict the originals."""

from __future__ import annotations

import torch

from ..model import Encoder, EncoderConfig, MaskedLMHead
from ..special_tokens import SpecialIds
from .base import Batch, Noise, Objective, ObjectiveResult
from .masking import choose_positions, corrupt, corruption_draws, weighted_mlm


class MaskedLM(Objective):
    """BERT's objective: 15% of positions, 80% [MASK] / 10% random / 10% kept, predict the originals."""

    name = "mlm"

    def __init__(self, cfg: EncoderConfig, special: SpecialIds, mask_prob: float, max_predictions: int):
        super().__init__()
        self.special, self.mask_prob, self.max_predictions = special, mask_prob, max_predictions
        self.encoder = Encoder(cfg)
        self.head = MaskedLMHead(cfg, self.encoder.embeddings.word)

    def backbone(self) -> Encoder:
        """The encoder that is kept and fine-tuned."""
        return self.encoder

    def draw_noise(self, batch: Batch, rng: torch.Generator | None) -> Noise:
        """Every draw of the step from `rng`, in the order `forward` always made them."""
        ids = batch["input_ids"]
        B, T = ids.shape
        P = min(self.max_predictions, T)
        scores = torch.rand(B, T, generator=rng, device=ids.device)
        return Noise(scores, *corruption_draws((B, P), self.encoder.cfg.vocab_size, rng, ids.device))

    def compute(self, batch: Batch, noise: Noise, padded: bool | None = None) -> ObjectiveResult:
        """The step from its draws: no generator, no host sync when `padded` is given (compiles whole)."""
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        positions, weights = choose_positions(ids, att, self.special, self.mask_prob, self.max_predictions, None,
                                              scores=noise.scores)
        labels = torch.gather(ids, 1, positions)  # (B, P)
        corrupted = corrupt(ids, positions, weights, self.special, self.encoder.cfg.vocab_size, 0.8, 0.1, None,
                             draws=(noise.corrupt_r, noise.corrupt_tokens))
        hidden = self.encoder(corrupted, seg, att, padded)  # (B, T, H)
        logits = self.head(hidden, positions)  # (B, P, V)
        loss, acc = weighted_mlm(logits, labels, weights)
        extras = {"mlm_logits": logits.detach(), "mlm_labels": labels, "mlm_weights": weights}
        return ObjectiveResult(loss, {"mlm_loss": loss.detach(), "mlm_acc": acc.detach()}, extras)

    @torch.no_grad()
    def init_output_priors(self, unigram_log_probs: torch.Tensor) -> None:
        """Start the output layer at the unigram distribution (bias = log p(token)), so the first
        steps are not spent learning token frequencies (our small-budget adaptation; docs/tuning.md)."""
        self.head.bias.copy_(unigram_log_probs)
