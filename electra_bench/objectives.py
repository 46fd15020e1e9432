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

from . import special_tokens
from .choices import ALL_OBJECTIVES, EMBEDDING_SHARING, require
from .errors import BenchError
from .model import DiscriminatorHead, Dropout, Encoder, EncoderConfig, MaskedLMHead, count_parameters, init_weights
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


def corrupt(
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
    """`corrupt`'s draws in its order: a uniform (B, P) choosing what happens, random tokens (B, P)."""
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
        corrupted = corrupt(ids, positions, weights, self.special, self.encoder.cfg.vocab_size, 0.8, 0.1, None,
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
        gen_in = corrupt(ids, positions, weights, self.special, V, 0.85, 0.0, None,
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
        loss = generator_term(gen_loss, self.gen_weight) + self.disc_weight * disc_loss

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
        if isinstance(self.gen_head, MaskedLMHead):  # a uniform generator has no output layer
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


def build(objective: str, preset, special: SpecialIds) -> nn.Module:
    """The objective module for a resolved `presets.Preset`: `mlm`, `rtd`, or one of the ELECTRA paper's
    efficiency ablations (`rtd-15`, `replace-mlm`, `alltokens-mlm`; Table 5), all on the same encoder."""
    objective = require("objective", objective, ALL_OBJECTIVES)
    if objective == "mlm":
        return MaskedLM(preset.encoder, special, preset.mask_prob, preset.max_predictions)
    knobs = dict(gen_weight=preset.gen_weight, uniform_generator=preset.uniform_generator,
                 embedding_sharing=preset.embedding_sharing, untied_generator=preset.untied_generator)
    if objective in ("rtd", "rtd-15"):
        cls = ReplacedTokenDetection if objective == "rtd" else ElectraOnMasked
        return cls(
            preset.encoder, preset.generator, special, preset.mask_prob, preset.max_predictions, preset.disc_weight,
            preset.rtd_temperature, preset.disallow_correct, **knobs,
        )
    cls = ReplaceMLM if objective == "replace-mlm" else AllTokensMLM
    return cls(preset.encoder, preset.generator, special, preset.mask_prob, preset.max_predictions,
               preset.rtd_temperature, preset.disallow_correct, **knobs)


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


# ---- the ELECTRA paper's efficiency ablations (Clark et al. 2020, section 3.2 and Table 5) ---------------
#
# Each separates one of the two things RTD changes against BERT: the pre-train/fine-tune mismatch of
# [MASK] tokens, and learning from every position instead of the 15% that were masked.
#
#   rtd-15         ELECTRA 15%: RTD with the discriminator's loss only on the masked positions.
#   replace-mlm    MLM whose masked positions hold generator samples instead of [MASK].
#   alltokens-mlm  Replace MLM that predicts the identity of EVERY token, with a copy mechanism.
#
# All three use RTD's generator recipe (mask 15%, [MASK] in 85% of them, the generator predicts them,
# replacements sampled from its softmax without gradient) and keep the encoder that `initial_encoder`
# builds: it is constructed first, so under one seed every objective starts from the same weights.


@dataclass
class GeneratorCorruption:
    """One batch after the generator step of the RTD family."""

    positions: torch.Tensor  # (B, P) masked positions
    weights: torch.Tensor  # (B, P) 1 on the real ones
    labels: torch.Tensor  # (B, P) the original tokens there
    gen_logits: torch.Tensor  # (B, P, V) the generator's
    gen_loss: torch.Tensor  # scalar, MLM loss of the generator (with gradient)
    gen_acc: torch.Tensor  # scalar, detached
    corrupted: torch.Tensor  # (B, T) the input with the samples written at the masked positions
    replaced: torch.Tensor  # (B, T) float, 1 where the sample differs from the original


def generator_corruption(
    m: nn.Module, ids: torch.Tensor, seg: torch.Tensor, att: torch.Tensor, rng: torch.Generator | None,
    vocab_size: int, forbid: tuple[int, ...] = (), padded: bool | None = None,
) -> GeneratorCorruption:
    """The generator step, with exactly `ReplacedTokenDetection.forward`'s ops and random draws (so
    rtd-15 sees the very inputs rtd sees under one seed; tests/test_ablations.py checks it). `m` holds
    special, mask_prob, max_predictions, temperature, disallow_correct, generator and gen_head.
    `forbid`: token ids never sampled (Replace/All-Tokens MLM forbid [MASK], so their model never
    sees it, which is what those ablations test); `padded` as `MaskedLM.forward`."""
    positions, weights = choose_positions(ids, att, m.special, m.mask_prob, m.max_predictions, rng)
    labels = torch.gather(ids, 1, positions)  # (B, P)
    gen_in = corrupt(ids, positions, weights, m.special, vocab_size, 0.85, 0.0, rng)
    gen_hidden = m.generator(gen_in, seg, att, padded)  # (B, T, Hg)
    gen_logits = m.gen_head(gen_hidden, positions)  # (B, P, V)
    gen_loss, gen_acc = _weighted_mlm(gen_logits, labels, weights)
    with torch.no_grad():
        logits = gen_logits.detach()
        if forbid:
            logits = logits.index_fill(-1, torch.tensor(forbid, device=logits.device), float("-inf"))
        sampled = sample_replacements(logits, labels, m.temperature, m.disallow_correct, rng)
        sampled = torch.where(weights > 0, sampled, labels)  # (B, P)
        corrupted = ids.scatter(1, positions, sampled)  # (B, T)
        replaced = (corrupted != ids).float()  # (B, T); a correct sample counts as original
    return GeneratorCorruption(positions, weights, labels, gen_logits, gen_loss, gen_acc.detach(), corrupted, replaced)


def masked_token_mask(corruption: GeneratorCorruption, like: torch.Tensor) -> torch.Tensor:
    """(B, T) float: 1 at the real masked positions, 0 elsewhere (positions are distinct per row)."""
    return torch.zeros(like.shape, device=like.device).scatter(1, corruption.positions, corruption.weights)


def _logit(p: float) -> float:
    p = min(max(p, 1e-3), 1 - 1e-3)
    return math.log(p / (1 - p))


class ElectraOnMasked(ReplacedTokenDetection):
    """ELECTRA 15% (`rtd-15`): RTD whose discriminator loss is summed over the masked positions only
    (paper: "the sum in the discriminator loss is over i in m instead of from 1 to n"). The model, its
    initialisation and every random draw are RTD's; only which positions carry loss differs.
    loss = gen_weight x MLM(gen) + disc_weight x BCE(disc) averaged over the masked positions."""

    name = "rtd-15"

    def forward(self, batch: Batch, rng: torch.Generator | None = None, *, padded: bool | None = None
                ) -> ObjectiveResult:
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        c = generator_corruption(self, ids, seg, att, rng, self.discriminator.cfg.vocab_size, padded=padded)
        disc_logits = self.disc_head(self.discriminator(c.corrupted, seg, att, padded))  # (B, T)
        loss_w = masked_token_mask(c, disc_logits)  # (B, T): the loss positions
        n_loss = loss_w.sum().clamp(min=1.0)
        bce = F.binary_cross_entropy_with_logits(disc_logits.float(), c.replaced, reduction="none")
        disc_loss = (bce * loss_w).sum() / n_loss
        loss = generator_term(c.gen_loss, self.gen_weight) + self.disc_weight * disc_loss
        with torch.no_grad():
            tok_w = att.float()
            pred = (disc_logits > 0).float()
            disc_acc = ((pred == c.replaced).float() * loss_w).sum() / n_loss
            n_rep = (c.replaced * loss_w).sum()
            disc_recall = (pred * c.replaced * loss_w).sum() / n_rep.clamp(min=1.0)
            replaced_frac = (c.replaced * tok_w).sum() / tok_w.sum().clamp(min=1.0)
        # the diagnostics' token_mask is where the discriminator is trained: the masked positions
        extras = {"mlm_logits": c.gen_logits.detach(), "mlm_labels": c.labels, "mlm_weights": c.weights,
                  "disc_logits": disc_logits.detach(), "replaced": c.replaced, "token_mask": loss_w}
        metrics = {"gen_loss": c.gen_loss.detach(), "gen_acc": c.gen_acc, "disc_loss": disc_loss.detach(),
                   "disc_acc": disc_acc, "disc_recall": disc_recall, "replaced_frac": replaced_frac}
        return ObjectiveResult(loss, metrics, extras)

    @torch.no_grad()
    def init_output_priors(self, unigram_log_probs: torch.Tensor) -> None:
        """As RTD, except the discriminator starts at even odds: its loss positions are the masked ones,
        where the replaced rate runs from ~1 (untrained generator) down as the generator learns."""
        super().init_output_priors(unigram_log_probs)
        self.disc_head.out.bias.zero_()


class ReplaceMLM(nn.Module):
    """Replace MLM (`replace-mlm`): BERT's MLM on the masked positions, but their input holds samples of
    RTD's generator instead of [MASK] (never [MASK] itself), so the model never sees [MASK]; it still
    learns from the masked positions only. loss = gen_weight x MLM(gen) + MLM(model)."""

    name = "replace-mlm"

    def __init__(self, cfg: EncoderConfig, gen_cfg: EncoderConfig, special: SpecialIds, mask_prob: float,
                 max_predictions: int, temperature: float = 1.0, disallow_correct: bool = False,
                 gen_weight: float = 1.0, uniform_generator: bool = False, embedding_sharing: str = "shared",
                 untied_generator: bool = True):
        super().__init__()
        self.special, self.mask_prob, self.max_predictions = special, mask_prob, max_predictions
        self.temperature, self.disallow_correct, self.gen_weight = temperature, disallow_correct, gen_weight
        if embedding_sharing == "gdes":  # its MLM head is tied to the kept model's word embeddings
            raise BenchError(f"embedding sharing 'gdes' is defined for a discriminator (rtd, rtd-15), not for "
                             f"{self.name}, whose MLM output is tied to its input embeddings")
        self.encoder = Encoder(cfg)  # the kept model: first, so it is `initial_encoder`'s
        self.generator, self.gen_head = generator_modules(self.encoder, gen_cfg, embedding_sharing,
                                                          uniform_generator, untied_generator)  # as RTD's
        self.head = MaskedLMHead(cfg, self.encoder.embeddings.word)

    def backbone(self) -> Encoder:
        return self.encoder

    def forward(self, batch: Batch, rng: torch.Generator | None = None, *, padded: bool | None = None
                ) -> ObjectiveResult:
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        c = generator_corruption(self, ids, seg, att, rng, self.encoder.cfg.vocab_size, forbid=(self.special.mask,),
                                 padded=padded)
        logits = self.head(self.encoder(c.corrupted, seg, att, padded), c.positions)  # (B, P, V)
        mlm_loss, mlm_acc = _weighted_mlm(logits, c.labels, c.weights)
        loss = generator_term(c.gen_loss, self.gen_weight) + mlm_loss
        with torch.no_grad():
            tok_w = att.float()
            replaced_frac = (c.replaced * tok_w).sum() / tok_w.sum().clamp(min=1.0)
        extras = {"mlm_logits": logits.detach(), "mlm_labels": c.labels, "mlm_weights": c.weights}
        metrics = {"gen_loss": c.gen_loss.detach(), "gen_acc": c.gen_acc, "mlm_loss": mlm_loss.detach(),
                   "mlm_acc": mlm_acc.detach(), "replaced_frac": replaced_frac}
        return ObjectiveResult(loss, metrics, extras)

    @torch.no_grad()
    def init_output_priors(self, unigram_log_probs: torch.Tensor) -> None:
        """Both MLM outputs start at the unigram distribution (as MLM's and RTD's generator's)."""
        if isinstance(self.gen_head, MaskedLMHead):
            self.gen_head.bias.copy_(unigram_log_probs)
        self.head.bias.copy_(unigram_log_probs)


class AllTokensMLM(ReplaceMLM):
    """All-Tokens MLM (`alltokens-mlm`): Replace MLM's input, but the model predicts the identity of
    every real token, through the paper's copy mechanism: a sigmoid layer gives a copy probability D
    per token, and the output distribution is D on the input token plus (1 - D) x the MLM softmax.
    loss = gen_weight x MLM(gen) + mean over real tokens of -log p(original token)."""

    name = "alltokens-mlm"

    def __init__(self, cfg: EncoderConfig, gen_cfg: EncoderConfig, special: SpecialIds, mask_prob: float,
                 max_predictions: int, temperature: float = 1.0, disallow_correct: bool = False, **knobs):
        super().__init__(cfg, gen_cfg, special, mask_prob, max_predictions, temperature, disallow_correct, **knobs)
        self.copy_head = nn.Linear(cfg.hidden_size, 1)  # the copy probability D = sigmoid(copy_head(h))
        init_weights(self.copy_head)

    def outputs(self, input_ids: torch.Tensor, segment_ids: torch.Tensor, attention_mask: torch.Tensor,
                padded: bool | None = None):
        """The MLM logits (B, T, V) at every position and the copy logit (B, T), for this input."""
        hidden = self.encoder(input_ids, segment_ids, attention_mask, padded)  # (B, T, H)
        B, T = input_ids.shape
        everywhere = torch.arange(T, device=input_ids.device).expand(B, T)
        return self.head(hidden, everywhere), self.copy_head(hidden).squeeze(-1)

    @staticmethod
    def log_distribution(logits: torch.Tensor, copy_logit: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
        """log of the output distribution D x onehot(input) + (1 - D) x softmax(logits): (.., V)."""
        mlm = F.logsigmoid(-copy_logit.float())[..., None] + F.log_softmax(logits.float(), -1)
        copy = torch.full_like(mlm, float("-inf")).scatter(-1, input_ids[..., None], F.logsigmoid(copy_logit.float())[..., None])
        return torch.logaddexp(mlm, copy)

    def forward(self, batch: Batch, rng: torch.Generator | None = None, *, padded: bool | None = None
                ) -> ObjectiveResult:
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        c = generator_corruption(self, ids, seg, att, rng, self.encoder.cfg.vocab_size, forbid=(self.special.mask,),
                                 padded=padded)
        x = c.corrupted
        logits, copy_logit = self.outputs(x, seg, att, padded)  # (B, T, V), (B, T)
        B, T, V = logits.shape
        # log p(original) = log(D [input == original] + (1 - D) softmax(original)), in log space
        log_mlm = -F.cross_entropy(logits.flatten(0, 1).float(), ids.flatten(), reduction="none").view(B, T)
        log_keep, log_copy = F.logsigmoid(-copy_logit.float()), F.logsigmoid(copy_logit.float())
        from_mlm = log_keep + log_mlm
        log_p = torch.where(x == ids, torch.logaddexp(log_copy, from_mlm), from_mlm)  # (B, T)
        tok_w = att.float()
        n_tok = tok_w.sum().clamp(min=1.0)
        mlm_loss = -(log_p * tok_w).sum() / n_tok
        loss = generator_term(c.gen_loss, self.gen_weight) + mlm_loss
        with torch.no_grad():
            # the mixture's argmax is the input token or the softmax's top token; all from (B, T) gathers
            top = logits.argmax(-1)
            lse = logits.gather(-1, ids[..., None]).squeeze(-1).float() - log_mlm  # log-sum-exp of the logits
            p_in = (logits.gather(-1, x[..., None]).squeeze(-1).float() - lse).exp()
            p_top = (logits.gather(-1, top[..., None]).squeeze(-1).float() - lse).exp()
            d = torch.sigmoid(copy_logit.float())
            pred = torch.where(d + (1 - d) * p_in >= (1 - d) * p_top, x, top)
            hit = (pred == ids).float()
            rep_w = c.replaced * tok_w
            n_rep = rep_w.sum().clamp(min=1.0)
            kept_w = tok_w - rep_w
            metrics = {
                "gen_loss": c.gen_loss.detach(), "gen_acc": c.gen_acc, "mlm_loss": mlm_loss.detach(),
                "mlm_acc": (hit * tok_w).sum() / n_tok,
                "replaced_loss": -(log_p * rep_w).sum() / n_rep, "replaced_acc": (hit * rep_w).sum() / n_rep,
                "copy_prob_replaced": (d * rep_w).sum() / n_rep,
                "copy_prob_original": (d * kept_w).sum() / kept_w.sum().clamp(min=1.0),
                "replaced_frac": rep_w.sum() / n_tok,
            }
            # the diagnostics' MLM view: the model's whole output distribution at the masked positions
            at = c.positions
            masked_logp = self.log_distribution(
                logits.gather(1, at[..., None].expand(B, at.shape[1], V)), copy_logit.gather(1, at),
                x.gather(1, at))  # (B, P, V)
        extras = {"mlm_logits": masked_logp, "mlm_labels": c.labels, "mlm_weights": c.weights,
                  "copy_prob": d, "token_mask": tok_w}
        return ObjectiveResult(loss, metrics, extras)

    @torch.no_grad()
    def init_output_priors(self, unigram_log_probs: torch.Tensor) -> None:
        """Both MLM outputs at the unigram distribution; the copy head at the rate at which the input is
        the original (about 1 - mask_prob), weights zero."""
        super().init_output_priors(unigram_log_probs)
        self.copy_head.weight.zero_()
        self.copy_head.bias.fill_(_logit(1 - self.mask_prob))


# ---- the generator's make-up: the official code's knobs -------------------------------------------------


def generator_term(gen_loss: torch.Tensor, gen_weight: float) -> torch.Tensor:
    """gen_weight x the generator's loss (the official `gen_weight`). At the default 1 it is the loss
    itself, not a multiply: the traced step, and so its measured FLOPs and the run's identity, stay
    those of the objective before the knob existed."""
    return gen_loss if gen_weight == 1.0 else gen_weight * gen_loss


class UniformGenerator(nn.Module):
    """The official `uniform_generator`: no model at all. It 'encodes' nothing (returns its input ids)
    and `UniformHead` gives logits 0 over the vocabulary, so replacements are uniform over V (special
    tokens included, as the official code) and the generator loss is the constant log V."""

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor, attention_mask: torch.Tensor,
                padded: bool | None = None) -> torch.Tensor:
        return input_ids


class UniformHead(nn.Module):
    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size

    def forward(self, hidden: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return torch.zeros(*positions.shape, self.vocab_size, device=positions.device)  # (B, P, V)


def generator_modules(kept: Encoder, gen_cfg: EncoderConfig, embedding_sharing: str = "shared",
                      uniform: bool = False, untied: bool = True) -> tuple[nn.Module, nn.Module]:
    """(generator, gen_head) for the RTD family, built after the kept encoder `kept`:

    - default: a separate (narrow) Encoder sharing `kept`'s whole embedding module, its MLM head tied to
      the shared word embeddings (the official code, and the paper's best setting);
    - `embedding_sharing="untied"` (official untied_generator_embeddings): the generator has its own
      embeddings (of its hidden size, as the official code makes them) and its head is tied to those;
    - `untied=False` (official untied_generator=False): `kept` itself is the generator, every weight
      shared (the paper's "tying all weights"; the generator then has the discriminator's size);
    - `embedding_sharing="gdes"` (DeBERTaV3): as the default, then `kept` reads the shared embeddings
      through `GradientDisentangledEmbeddings`, so only the generator's loss trains the shared tables;
    - `uniform=True` (official uniform_generator): `UniformGenerator`/`UniformHead`, no parameters.
    """
    require("embedding sharing", embedding_sharing, EMBEDDING_SHARING)
    if uniform:
        return UniformGenerator(), UniformHead(kept.cfg.vocab_size)
    if not untied:
        if embedding_sharing != "shared":
            raise BenchError(f"a generator that is the discriminator (untied_generator off) shares every weight: "
                             f"embedding sharing '{embedding_sharing}' does not apply")
        return kept, MaskedLMHead(kept.cfg, kept.embeddings.word)
    if embedding_sharing == "untied":
        generator = Encoder(gen_cfg)
        return generator, MaskedLMHead(gen_cfg, generator.embeddings.word)
    generator = Encoder(gen_cfg, embeddings=kept.embeddings)
    head = MaskedLMHead(gen_cfg, kept.embeddings.word)
    if embedding_sharing == "gdes":
        kept.embeddings = GradientDisentangledEmbeddings(kept.embeddings)  # the generator keeps the tables
    return generator, head


class GradientDisentangledEmbeddings(nn.Module):
    """DeBERTaV3's gradient-disentangled embedding sharing (He et al. 2021, "GDES"), on our embedding
    module: the discriminator embeds with the generator's tables under stop-gradient plus its own
    word-embedding residual E_delta, initialised to zero (E_D = sg(E_G) + E_delta), and its own layer
    norm (initialised as the shared one is). So the discriminator's loss sends no gradient into the
    shared tables (the generator's MLM loss alone trains them: no tug-of-war between the two losses),
    while the discriminator still adapts its word embeddings through E_delta. At initialisation it
    computes exactly what the shared module computes.

    The shared module is the generator's (a submodule there), held here unregistered: the
    discriminator reads it and does not own it."""

    def __init__(self, shared: nn.Module):
        super().__init__()
        self._shared = (shared,)  # a tuple: not registered as a submodule
        # E_delta (V, E), given its zeros: nn.Embedding would otherwise draw a random init, and the
        # modules built after this one would no longer start where they do under "shared"
        self.residual = nn.Embedding(*shared.word.weight.shape, _weight=torch.zeros(shared.word.weight.shape))
        self.norm = nn.LayerNorm(shared.norm.normalized_shape, eps=shared.norm.eps)
        init_weights(self.norm)
        self.dropout = Dropout(shared.dropout.p)

    @property
    def shared(self) -> nn.Module:
        return self._shared[0]

    def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        s = self.shared
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        word = F.embedding(input_ids, s.word.weight.detach()) + self.residual(input_ids)  # (B, T, E)
        x = word + F.embedding(pos, s.position.weight.detach())[None] + F.embedding(segment_ids, s.segment.weight.detach())
        return self.dropout(self.norm(x))

    @torch.no_grad()
    def merged_state(self) -> dict[str, torch.Tensor]:
        """The state of a plain embedding module that computes what this one does (in eval)."""
        state = {k: v.detach().clone() for k, v in self.shared.state_dict().items()}
        state["word.weight"] = self.shared.word.weight.detach() + self.residual.weight.detach()
        state.update({f"norm.{k}": v.detach().clone() for k, v in self.norm.state_dict().items()})
        return state


def kept_encoder(encoder: Encoder) -> Encoder:
    """`encoder` itself, or, when it reads gradient-disentangled embeddings, a plain Encoder with the
    same weights and sg(E_G) + E_delta merged into its word table: what a checkpoint stores and
    fine-tuning loads (a copy without gradient path; built on the meta device, so no random draw)."""
    emb = encoder.embeddings
    if not isinstance(emb, GradientDisentangledEmbeddings):
        return encoder
    with torch.device("meta"):
        plain = Encoder(encoder.cfg)
    plain = plain.to_empty(device=emb.residual.weight.device)
    state = {k: v for k, v in encoder.state_dict().items() if not k.startswith("embeddings.")}
    state.update({f"embeddings.{k}": v for k, v in emb.merged_state().items()})
    plain.load_state_dict(state)
    return plain.train(encoder.training)
