"""The two pre-training objectives, separate from the backbone they train.

Both take a batch of packed sequences `{"input_ids", "segment_ids", "attention_mask"}` (each (B, T))
and return an `ObjectiveResult`. All randomness (which positions, what replaces them, the generator's
samples) comes from an explicit `torch.Generator`, so a step is a pure function of (weights, batch, seed):
that is what makes kill-and-resume exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import special_tokens
from .choices import OBJECTIVES, require
from .model import DiscriminatorHead, Encoder, EncoderConfig, MaskedLMHead, count_parameters
from .special_tokens import SpecialIds

Batch = dict[str, torch.Tensor]


@dataclass
class ObjectiveResult:
    loss: torch.Tensor  # scalar, what is back-propagated
    metrics: dict[str, torch.Tensor]  # detached scalars: losses and accuracies by name
    # detached per-position tensors the learning diagnostics need (training/diagnostics.py):
    # mlm_logits (B, P, V), mlm_labels (B, P), mlm_weights (B, P); RTD adds disc_logits (B, T),
    # replaced (B, T), token_mask (B, T)
    extras: dict[str, torch.Tensor] = field(default_factory=dict)


def choose_positions(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    special: SpecialIds,
    mask_prob: float,
    max_predictions: int,
    rng: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick round(mask_prob x real tokens) positions per sequence, uniformly without replacement,
    never [CLS]/[SEP]/[PAD]. As the official ELECTRA `mask()`, the count is over all real tokens,
    [CLS]/[SEP] included, though those are never picked.

    Returns positions (B, P) and weights (B, P): P = max_predictions is fixed so the step's compute,
    and so its FLOPs, never depends on the draw; rows with fewer picks have weight 0 on the tail.
    """
    B, T = input_ids.shape
    candidates = attention_mask.bool() & (input_ids != special.cls) & (input_ids != special.sep)
    candidates &= input_ids != special.pad
    scores = torch.rand(B, T, generator=rng, device=input_ids.device)
    scores = scores.masked_fill(~candidates, -1.0)
    P = min(max_predictions, T)
    positions = scores.topk(P, dim=1).indices  # (B, P), in random order
    n_real = attention_mask.bool().sum(1)
    n_pick = torch.clamp(torch.round(n_real.float() * mask_prob), min=1).long().clamp(max=P)
    n_pick = torch.minimum(n_pick, candidates.sum(1))
    weights = (torch.arange(P, device=input_ids.device)[None] < n_pick[:, None]).float()  # (B, P)
    return positions, weights


def corrupt(
    input_ids: torch.Tensor,
    positions: torch.Tensor,
    weights: torch.Tensor,
    special: SpecialIds,
    vocab_size: int,
    mask_frac: float,
    random_frac: float,
    rng: torch.Generator | None,
) -> torch.Tensor:
    """Replace chosen positions: mask_frac -> [MASK], random_frac -> a random token, rest unchanged."""
    originals = torch.gather(input_ids, 1, positions)  # (B, P)
    r = torch.rand(positions.shape, generator=rng, device=input_ids.device)
    random_tokens = torch.randint(vocab_size, positions.shape, generator=rng, device=input_ids.device)
    new = torch.where(r < mask_frac, torch.full_like(originals, special.mask), originals)
    new = torch.where((r >= mask_frac) & (r < mask_frac + random_frac), random_tokens, new)
    new = torch.where(weights > 0, new, originals)
    return input_ids.scatter(1, positions, new)


def _weighted_mlm(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor):
    """Mean cross-entropy and accuracy over the real (weight 1) masked positions."""
    ce = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="none")
    denom = weights.sum().clamp(min=1.0)
    loss = (ce * weights.flatten()).sum() / denom
    acc = ((logits.argmax(-1) == labels).float() * weights).sum() / denom
    return loss, acc


class MaskedLM(nn.Module):
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

    def forward(self, batch: Batch, rng: torch.Generator | None = None) -> ObjectiveResult:
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        positions, weights = choose_positions(ids, att, self.special, self.mask_prob, self.max_predictions, rng)
        labels = torch.gather(ids, 1, positions)  # (B, P)
        corrupted = corrupt(ids, positions, weights, self.special, self.encoder.cfg.vocab_size, 0.8, 0.1, rng)
        hidden = self.encoder(corrupted, seg, att)  # (B, T, H)
        logits = self.head(hidden, positions)  # (B, P, V)
        loss, acc = _weighted_mlm(logits, labels, weights)
        extras = {"mlm_logits": logits.detach(), "mlm_labels": labels, "mlm_weights": weights}
        return ObjectiveResult(loss, {"mlm_loss": loss.detach(), "mlm_acc": acc.detach()}, extras)

    @torch.no_grad()
    def init_output_priors(self, unigram_log_probs: torch.Tensor) -> None:
        """Start the output layer at the unigram distribution (bias = log p(token)), so the first
        steps are not spent learning token frequencies (our small-budget adaptation; docs/tuning.md)."""
        self.head.bias.copy_(unigram_log_probs)


class ReplacedTokenDetection(nn.Module):
    """ELECTRA's objective, as its official code does it.

    Mask round(15%) of positions ([MASK] in 85% of them, 15% left unchanged); the generator (a narrow MLM
    sharing the embeddings) predicts them; replacements are sampled from its softmax (temperature 1,
    gumbel-max, no gradient through the sample); the discriminator labels every real token replaced or
    original (a sample equal to the original counts as original). loss = MLM(gen) + disc_weight x BCE(disc).

    The official code's knobs: `temperature` (sampling from softmax(logits / temperature)) and
    `disallow_correct` (the sample is never the original token, so every masked position is replaced).
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
    ):
        super().__init__()
        self.special, self.mask_prob, self.max_predictions = special, mask_prob, max_predictions
        self.disc_weight, self.temperature, self.disallow_correct = disc_weight, temperature, disallow_correct
        self.discriminator = Encoder(disc_cfg)
        self.generator = Encoder(gen_cfg, embeddings=self.discriminator.embeddings)  # shared embeddings
        self.gen_head = MaskedLMHead(gen_cfg, self.discriminator.embeddings.word)
        self.disc_head = DiscriminatorHead(disc_cfg)

    def backbone(self) -> Encoder:
        """The discriminator is the model that is kept and fine-tuned."""
        return self.discriminator

    def forward(self, batch: Batch, rng: torch.Generator | None = None) -> ObjectiveResult:
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        positions, weights = choose_positions(ids, att, self.special, self.mask_prob, self.max_predictions, rng)
        labels = torch.gather(ids, 1, positions)  # (B, P)
        V = self.discriminator.cfg.vocab_size
        gen_in = corrupt(ids, positions, weights, self.special, V, 0.85, 0.0, rng)

        gen_hidden = self.generator(gen_in, seg, att)  # (B, T, Hg)
        gen_logits = self.gen_head(gen_hidden, positions)  # (B, P, V)
        gen_loss, gen_acc = _weighted_mlm(gen_logits, labels, weights)

        with torch.no_grad():
            sampled = sample_replacements(gen_logits.detach(), labels, self.temperature, self.disallow_correct, rng)
            sampled = torch.where(weights > 0, sampled, labels)  # (B, P)
            disc_in = ids.scatter(1, positions, sampled)  # (B, T)
            replaced = (disc_in != ids).float()  # (B, T); a correct sample counts as original

        disc_hidden = self.discriminator(disc_in, seg, att)  # (B, T, H)
        disc_logits = self.disc_head(disc_hidden)  # (B, T)
        tok_w = att.float()
        n_tok = tok_w.sum().clamp(min=1.0)
        bce = F.binary_cross_entropy_with_logits(disc_logits.float(), replaced, reduction="none")
        disc_loss = (bce * tok_w).sum() / n_tok
        loss = gen_loss + self.disc_weight * disc_loss

        with torch.no_grad():
            pred = (disc_logits > 0).float()
            disc_acc = ((pred == replaced).float() * tok_w).sum() / n_tok
            n_rep = (replaced * tok_w).sum()
            disc_recall = (pred * replaced * tok_w).sum() / n_rep.clamp(min=1.0)
            replaced_frac = n_rep / n_tok
        extras = {"mlm_logits": gen_logits.detach(), "mlm_labels": labels, "mlm_weights": weights,
                  "disc_logits": disc_logits.detach(), "replaced": replaced, "token_mask": tok_w}
        return ObjectiveResult(
            loss,
            {
                "gen_loss": gen_loss.detach(),
                "gen_acc": gen_acc.detach(),
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
        self.gen_head.bias.copy_(unigram_log_probs)
        p = min(max(self.mask_prob, 1e-3), 1 - 1e-3)
        self.disc_head.out.weight.zero_()
        self.disc_head.out.bias.fill_(math.log(p / (1 - p)))


def sample_replacements(logits: torch.Tensor, originals: torch.Tensor, temperature: float,
                        disallow_correct: bool, rng: torch.Generator | None) -> torch.Tensor:
    """Gumbel-max samples from softmax(logits / temperature): (B, P, V) -> (B, P). `disallow_correct`
    removes the original token from the choice (the official code's option); temperature 0 is argmax."""
    scaled = logits.float() / temperature if temperature > 0 else logits.float() * 1e6
    if disallow_correct:
        scaled = scaled.scatter(-1, originals[..., None], float("-inf"))
    # gumbel noise -log(-log(u + eps) + eps), in place: (B, P, V) is the largest tensor of the step
    g = torch.rand(scaled.shape, generator=rng, device=logits.device, dtype=torch.float32)
    g.add_(1e-9).log_().neg_().add_(1e-9).log_().neg_()
    return g.add_(scaled).argmax(-1)


def build(objective: str, preset, special: SpecialIds) -> MaskedLM | ReplacedTokenDetection:
    """The objective module for a resolved `presets.Preset`."""
    if require("objective", objective, OBJECTIVES) == "mlm":
        return MaskedLM(preset.encoder, special, preset.mask_prob, preset.max_predictions)
    return ReplacedTokenDetection(
        preset.encoder, preset.generator, special, preset.mask_prob, preset.max_predictions, preset.disc_weight,
        preset.rtd_temperature, preset.disallow_correct,
    )


def initial_encoder(encoder_cfg: EncoderConfig, seed: int) -> Encoder:
    """The encoder both objectives start from under `seed` (the trainer seeds torch, then builds the
    objective, whose kept encoder is constructed first): the 'untrained' point of a comparison.
    tests/test_orchestration.py checks the identity by weights for both objectives."""
    torch.manual_seed(seed)
    return Encoder(encoder_cfg)


def parameter_counts(p) -> dict[str, int]:
    """Parameters of a resolved `presets.Preset`: the kept encoder, each objective's whole model and
    RTD's generator (without the embeddings it shares with the discriminator)."""
    # built on the meta device: no memory, no time, exact counts
    with torch.device("meta"):
        mlm = build("mlm", p.for_objective("mlm"), special_tokens.DEFAULT)
        rtd = build("rtd", p.for_objective("rtd"), special_tokens.DEFAULT)
    return {
        "encoder": count_parameters(mlm.backbone()),
        "mlm_total": count_parameters(mlm),
        "rtd_total": count_parameters(rtd),
        "generator": count_parameters(rtd.generator) - count_parameters(rtd.discriminator.embeddings),
    }
