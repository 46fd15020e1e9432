"""The two pre-training objectives, separate from the backbone they train.

Both take a batch of packed sequences `{"input_ids", "segment_ids", "attention_mask"}` (each (B, T))
and return an `ObjectiveResult`. All randomness (which positions, what replaces them, the generator's
samples) comes from an explicit `torch.Generator`, so a step is a pure function of (weights, batch, seed):
that is what makes kill-and-resume exact.

A step is split in two so that it compiles without graph breaks: `draw_noise(batch, rng)` makes every draw
from the generator, in the order the step uses them (torch.compile cannot trace a `torch.Generator`), and
`compute(batch, noise, padded)` is the rest, with no host sync and no data-dependent Python branch.
`forward(batch, rng)` is the two in sequence and gives exactly the numbers it gave before the split.
`compile_step()` compiles `compute` only (`torch.compile(module)` would break its graph at the
generator's draws).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import math

import torch
import torch.nn.functional as F
from torch import nn

from .model import DiscriminatorHead, Encoder, EncoderConfig, MaskedLMHead
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


@dataclass
class Noise:
    """One step's draws from its generator (`draw_noise`), so that `compute` needs no generator."""

    scores: torch.Tensor  # (B, T) uniform: which positions are masked
    corrupt_r: torch.Tensor  # (B, P) uniform: [MASK] / random / kept
    corrupt_tokens: torch.Tensor  # (B, P) random token ids
    gumbel: torch.Tensor | None = None  # RTD: (B, P, V) uniform for the generator's samples (overwritten)


class _Compilable:
    """`compute` runs eagerly unless `compile_step()` was called; `forward` draws, then calls `_compute`."""

    _compiled = None

    def _compute(self, batch, noise, padded):
        fn = self._compiled if self._compiled is not None else self.compute
        return fn(batch, noise, padded)

    def compile_step(self, **kwargs) -> None:
        """torch.compile this objective's `compute` (not the draws, which need the generator): one graph,
        no breaks when `padded` is passed. Not bit-identical to eager (fused kernels round differently)."""
        self._compiled = torch.compile(self.compute, **kwargs)


def choose_positions(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    special: SpecialIds,
    mask_prob: float,
    max_predictions: int,
    rng: torch.Generator | None,
    scores: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick round(mask_prob x real tokens) positions per sequence, uniformly without replacement,
    never [CLS]/[SEP]/[PAD]. As the official ELECTRA `mask()`, the count is over all real tokens,
    [CLS]/[SEP] included, though those are never picked.

    Returns positions (B, P) and weights (B, P): P = max_predictions is fixed so the step's compute,
    and so its FLOPs, never depends on the draw; rows with fewer picks have weight 0 on the tail.
    `scores`: the (B, T) uniform draw, made beforehand (`draw_noise`); None: drawn here from `rng`.
    """
    B, T = input_ids.shape
    candidates = attention_mask.bool() & (input_ids != special.cls) & (input_ids != special.sep)
    candidates &= input_ids != special.pad
    if scores is None:
        scores = torch.rand(B, T, generator=rng, device=input_ids.device)
    scores = scores.masked_fill(~candidates, -1.0)
    P = min(max_predictions, T)
    positions = scores.topk(P, dim=1).indices  # (B, P), in random order
    n_real = attention_mask.bool().sum(1)
    n_pick = torch.clamp(torch.round(n_real.float() * mask_prob), min=1).long().clamp(max=P)
    n_pick = torch.minimum(n_pick, candidates.sum(1))
    weights = (torch.arange(P, device=input_ids.device)[None] < n_pick[:, None]).float()  # (B, P)
    return positions, weights


def _corrupt(
    input_ids: torch.Tensor,
    positions: torch.Tensor,
    weights: torch.Tensor,
    special: SpecialIds,
    vocab_size: int,
    mask_frac: float,
    random_frac: float,
    rng: torch.Generator | None,
    draws: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Replace chosen positions: mask_frac -> [MASK], random_frac -> a random token, rest unchanged.
    `draws`: (r, random_tokens), each (B, P), made beforehand (`corruption_draws`); None: drawn here."""
    originals = torch.gather(input_ids, 1, positions)  # (B, P)
    r, random_tokens = draws if draws is not None else corruption_draws(positions.shape, vocab_size, rng,
                                                                          input_ids.device)
    new = originals.masked_fill((r < mask_frac) & (weights > 0), special.mask)  # (B, P)
    if random_frac > 0:  # RTD has none; its random tokens are drawn all the same, so the stream is one
        new = torch.where((r >= mask_frac) & (r < mask_frac + random_frac) & (weights > 0), random_tokens, new)
    return input_ids.scatter(1, positions, new)


def corruption_draws(shape, vocab_size: int, rng: torch.Generator | None, device) -> tuple[torch.Tensor, torch.Tensor]:
    """`_corrupt`'s draws in its order: a uniform (B, P) choosing what happens, random tokens (B, P)."""
    r = torch.rand(shape, generator=rng, device=device)
    return r, torch.randint(vocab_size, shape, generator=rng, device=device)


def _weighted_mlm(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor):
    """Mean cross-entropy and accuracy over the real (weight 1) masked positions."""
    ce = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="none")
    denom = weights.sum().clamp(min=1.0)
    loss = (ce * weights.flatten()).sum() / denom
    acc = ((logits.argmax(-1) == labels).float() * weights).sum() / denom
    return loss, acc


class MaskedLM(_Compilable, nn.Module):
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

    def forward(self, batch: Batch, rng: torch.Generator | None = None, *, padded: bool | None = None,
                noise: Noise | None = None) -> ObjectiveResult:
        """One step's loss. `padded`: whether the batch has padding, decided on the host (None: read from the
        attention mask, a host sync on CUDA); `noise`: `draw_noise`'s output (None: drawn here from `rng`)."""
        if noise is None:
            noise = self.draw_noise(batch, rng)
        return self._compute(batch, noise, padded)

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
        corrupted = _corrupt(ids, positions, weights, self.special, self.encoder.cfg.vocab_size, 0.8, 0.1, None,
                             draws=(noise.corrupt_r, noise.corrupt_tokens))
        hidden = self.encoder(corrupted, seg, att, padded)  # (B, T, H)
        logits = self.head(hidden, positions)  # (B, P, V)
        loss, acc = _weighted_mlm(logits, labels, weights)
        extras = {"mlm_logits": logits.detach(), "mlm_labels": labels, "mlm_weights": weights}
        return ObjectiveResult(loss, {"mlm_loss": loss.detach(), "mlm_acc": acc.detach()}, extras)

    @torch.no_grad()
    def init_output_priors(self, unigram_log_probs: torch.Tensor) -> None:
        """Start the output layer at the unigram distribution (bias = log p(token)), so the first
        steps are not spent learning token frequencies (our small-budget adaptation; docs/tuning.md)."""
        self.head.bias.copy_(unigram_log_probs)


class ReplacedTokenDetection(_Compilable, nn.Module):
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

    def forward(self, batch: Batch, rng: torch.Generator | None = None, *, padded: bool | None = None,
                noise: Noise | None = None) -> ObjectiveResult:
        """One step's loss; `padded` and `noise` as `MaskedLM.forward`."""
        if noise is None:
            noise = self.draw_noise(batch, rng)
        return self._compute(batch, noise, padded)

    def draw_noise(self, batch: Batch, rng: torch.Generator | None) -> Noise:
        """Every draw of the step from `rng`, in the order `forward` always made them: masking scores,
        corruption, then the gumbel noise of the generator's samples. With no `rng` (the global generator,
        which dropout also draws from) the gumbel noise is left to `compute`, after the generator's dropout,
        where it always was."""
        ids = batch["input_ids"]
        B, T = ids.shape
        P = min(self.max_predictions, T)
        V = self.discriminator.cfg.vocab_size
        scores = torch.rand(B, T, generator=rng, device=ids.device)
        r, tokens = corruption_draws((B, P), V, rng, ids.device)
        gumbel = None if rng is None else torch.rand(B, P, V, generator=rng, device=ids.device, dtype=torch.float32)
        return Noise(scores, r, tokens, gumbel)

    def compute(self, batch: Batch, noise: Noise, padded: bool | None = None) -> ObjectiveResult:
        """The step from its draws: no generator, no host sync when `padded` is given (compiles whole)."""
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        positions, weights = choose_positions(ids, att, self.special, self.mask_prob, self.max_predictions, None,
                                              scores=noise.scores)
        labels = torch.gather(ids, 1, positions)  # (B, P)
        V = self.discriminator.cfg.vocab_size
        gen_in = _corrupt(ids, positions, weights, self.special, V, 0.85, 0.0, None,
                          draws=(noise.corrupt_r, noise.corrupt_tokens))

        gen_hidden = self.generator(gen_in, seg, att, padded)  # (B, T, Hg)
        gen_logits = self.gen_head(gen_hidden, positions)  # (B, P, V)
        gen_loss, gen_acc = _weighted_mlm(gen_logits, labels, weights)

        with torch.no_grad():
            sampled = sample_replacements(gen_logits.detach(), labels, self.temperature, self.disallow_correct, None,
                                          uniform=noise.gumbel)
            sampled = torch.where(weights > 0, sampled, labels)  # (B, P)
            disc_in = ids.scatter(1, positions, sampled)  # (B, T)
            replaced = (disc_in != ids).float()  # (B, T); a correct sample counts as original

        disc_hidden = self.discriminator(disc_in, seg, att, padded)  # (B, T, H)
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
                        disallow_correct: bool, rng: torch.Generator | None,
                        uniform: torch.Tensor | None = None) -> torch.Tensor:
    """Gumbel-max samples from softmax(logits / temperature): (B, P, V) -> (B, P). `disallow_correct`
    removes the original token from the choice (the official code's option); temperature 0 is argmax.
    `uniform`: the (B, P, V) float32 uniform draw, made beforehand and overwritten here; None: drawn from `rng`.

    (B, P, V) is the largest tensor of the step, so it is touched as few times as possible: the noise is
    transformed in place, and at temperature 1 the logits are added as they are (x / 1 == x, so no
    scaled copy)."""
    if temperature == 1:
        scaled = logits.float()  # the logits themselves when they are fp32: not written to
    else:
        scaled = logits.float() / temperature if temperature > 0 else logits.float() * 1e6
    if disallow_correct:
        scaled = scaled.scatter(-1, originals[..., None], float("-inf"))
    # gumbel noise -log(-log(u + eps) + eps), in place
    g = uniform if uniform is not None else torch.rand(logits.shape, generator=rng, device=logits.device,
                                                        dtype=torch.float32)
    g.add_(1e-9).log_().neg_().add_(1e-9).log_().neg_()
    return g.add_(scaled).argmax(-1)


def build(objective: str, preset, special: SpecialIds) -> MaskedLM | ReplacedTokenDetection:
    """The objective module for a resolved `presets.Preset`."""
    if objective == "mlm":
        return MaskedLM(preset.encoder, special, preset.mask_prob, preset.max_predictions)
    if objective == "rtd":
        return ReplacedTokenDetection(
            preset.encoder, preset.generator, special, preset.mask_prob, preset.max_predictions, preset.disc_weight,
            preset.rtd_temperature, preset.disallow_correct,
        )
    from .errors import BenchError

    raise BenchError(f"unknown objective '{objective}': choose mlm or rtd")
