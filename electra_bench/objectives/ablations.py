"""The ELECTRA paper's efficiency ablations (Clark et al. 2020, section 3.2 and Table 5).

Each separates one of the two things RTD changes against BERT: the pre-train/fine-tune mismatch of
[MASK] tokens, and learning from every position instead of the 15% that were masked.

  rtd-15         ELECTRA 15%: RTD with the discriminator's loss only on the masked positions.
  replace-mlm    MLM whose masked positions hold generator samples instead of [MASK].
  alltokens-mlm  Replace MLM that predicts the identity of EVERY token, with a copy mechanism.

All three are built from RTD's pieces (generator.py: the same draws, `generator_step`, generator knobs)
and keep the encoder that `initial_encoder` builds: it is constructed first, so under one seed every
objective starts from the same weights, and sees RTD's inputs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import BenchError
from ..model import Encoder, EncoderConfig, MaskedLMHead, init_weights
from ..special_tokens import SpecialIds
from .base import Batch, Noise, Objective, ObjectiveResult
from .generator import draw_generator_noise, generator_modules, generator_step, generator_term, masked_token_mask
from .masking import weighted_mlm
from .rtd import ReplacedTokenDetection


def logit(p: float) -> float:
    p = min(max(p, 1e-3), 1 - 1e-3)
    return math.log(p / (1 - p))


class ElectraOnMasked(ReplacedTokenDetection):
    """ELECTRA 15% (`rtd-15`): RTD whose discriminator loss is summed over the masked positions only
    (paper: "the sum in the discriminator loss is over i in m instead of from 1 to n"). The model, its
    initialisation and every random draw are RTD's; only which positions carry loss differs.
    loss = gen_weight x MLM(gen) + disc_weight x BCE(disc) averaged over the masked positions."""

    name = "rtd-15"

    def compute(self, batch: Batch, noise: Noise, padded: bool | None = None) -> ObjectiveResult:
        """RTD's step (its draws, generator step and discriminator) with the loss on the masked positions."""
        seg, att = batch["segment_ids"], batch["attention_mask"]
        c = generator_step(self, batch, noise, self.discriminator.cfg.vocab_size, padded)
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


class ReplaceMLM(Objective):
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

    def draw_noise(self, batch: Batch, rng: torch.Generator | None) -> Noise:
        """RTD's draws (generator.draw_generator_noise): under one seed it sees the inputs RTD sees."""
        return draw_generator_noise(batch, rng, self.max_predictions, self.encoder.cfg.vocab_size)

    def compute(self, batch: Batch, noise: Noise, padded: bool | None = None) -> ObjectiveResult:
        """MLM on the masked positions, whose input holds the generator's samples (never [MASK])."""
        seg, att = batch["segment_ids"], batch["attention_mask"]
        c = generator_step(self, batch, noise, self.encoder.cfg.vocab_size, padded, forbid=(self.special.mask,))
        logits = self.head(self.encoder(c.corrupted, seg, att, padded), c.positions)  # (B, P, V)
        mlm_loss, mlm_acc = weighted_mlm(logits, c.labels, c.weights)
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

    def compute(self, batch: Batch, noise: Noise, padded: bool | None = None) -> ObjectiveResult:
        """Every real token's identity through the copy mechanism, on Replace MLM's input."""
        ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
        c = generator_step(self, batch, noise, self.encoder.cfg.vocab_size, padded, forbid=(self.special.mask,))
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
        self.copy_head.bias.fill_(logit(1 - self.mask_prob))
