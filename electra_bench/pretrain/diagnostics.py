"""Learning diagnostics on a fixed held-out set: did this pre-training run learn anything?

A run can lower its training loss and still learn nothing a downstream task can use. These numbers
separate the two, for both objectives, against baselines computed on the same data and masks:

- `mlm_gain_nats`: the unigram baseline's cross-entropy minus the model's, on the same masked
  positions (MLM, and RTD's generator). 0 = the model knows token frequencies and nothing else.
- `disc_auc_replaceable`: ROC AUC of the discriminator's logits for replaced vs original tokens, over the
  tokens that can be replaced (not [CLS]/[SEP], which masking never picks); 0.5 = no signal. What reports
  show.
- `disc_auc`: the same over every real token, [CLS]/[SEP] included (the official code's `disc_auc`). A
  discriminator learns early that those are never replaced and ranks them lowest, which adds 0.02-0.03 to
  a chance-level AUC: a collapsed run's 0.53 is chance over the tokens that matter. Kept for comparison
  with the official code and with logs written before the replaceable figure existed.
- `disc_gap_nats`: the best constant predictor's loss (binary entropy of the replaced rate among tokens
  that can be replaced; [CLS]/[SEP] never are) minus the discriminator's loss. 0 = base rate.
- `token_cosine`, `top_pc_share`: representation collapse of the kept encoder on the clean held-out
  text: mean cosine between final hidden states of different tokens, and the first principal
  component's share of their variance. An untrained tiny encoder sits near 0.2; a discriminator that
  found no signal collapses toward 1.

Everything is a pure function of (weights, held-out data, seed), so it is bit-reproducible on CPU.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..special_tokens import SpecialIds


def unigram_log_probs(counts: np.ndarray, special: SpecialIds) -> torch.Tensor:
    """log p(token) from training-data counts, add-one smoothed; special tokens (never a masked label)
    get no mass."""
    c = counts.astype(np.float64) + 1.0
    for i in (special.pad, special.cls, special.sep, special.mask):
        if 0 <= i < len(c):
            c[i] = 0.0
    p = c / c.sum()
    with np.errstate(divide="ignore"):
        return torch.from_numpy(np.log(np.maximum(p, 1e-12))).float()  # (V,)


def auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney) formula, ties counted half; nan when one class is absent."""
    s = scores.double().flatten()
    y = labels.bool().flatten()
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = torch.argsort(s)
    sorted_s = s[order]
    ranks = torch.empty_like(s)
    ranks[order] = torch.arange(1, len(s) + 1, dtype=torch.float64, device=s.device)
    # average ranks over ties
    _, inverse, counts = torch.unique_consecutive(sorted_s, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).double()
    mean_rank = ends - (counts.double() - 1) / 2
    ranks[order] = mean_rank[inverse]
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def binary_entropy(p: float) -> float:
    """Nats; the loss of the best constant predictor of a Bernoulli(p) label."""
    if p <= 0 or p >= 1:
        return 0.0
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


def collapse(hidden: torch.Tensor, mask: torch.Tensor, max_tokens: int = 2048) -> dict[str, float]:
    """Mean token-token cosine and the first principal component's variance share of hidden states
    (B, T, H) at real tokens (the first `max_tokens`, in order)."""
    h = hidden[mask.bool()].double()[:max_tokens]  # (N, H)
    n = h.shape[0]
    if n < 2:
        return {"token_cosine": float("nan"), "top_pc_share": float("nan")}
    u = F.normalize(h, dim=-1)
    s = u.sum(0)
    cosine = float((s @ s - n) / (n * (n - 1)))  # mean over pairs i != j
    centred = h - h.mean(0, keepdim=True)
    sv = torch.linalg.svdvals(centred)
    share = float(sv[0] ** 2 / (sv**2).sum().clamp(min=1e-30))
    return {"token_cosine": cosine, "top_pc_share": share}


@torch.no_grad()
def heldout_diagnostics(model, batches: list[dict], seeds: list[int], unigram: torch.Tensor,
                        special: SpecialIds, device) -> dict[str, float]:
    """Every diagnostic of the module docstring on fixed held-out `batches` with fixed masking `seeds`."""
    was_training = model.training
    model.eval()
    sums = _HeldoutSums(unigram.to(device), special)
    for batch, seed in zip(batches, seeds):
        batch = {k: v.to(device) for k, v in batch.items()}
        r = model(batch, torch.Generator(device=device).manual_seed(seed))
        sums.add(r.extras, batch)
        h = model.backbone()(batch["input_ids"], batch["segment_ids"], batch["attention_mask"])  # (B, T, H), clean
        sums.hidden.append(h.float())
        sums.masks.append(batch["attention_mask"])
    if was_training:
        model.train()
    return sums.result()


class _HeldoutSums:
    """Sums over held-out batches, in batch order: MLM (or generator) and unigram cross-entropy and hits over
    masked positions; the discriminator's scores, labels and BCE over real tokens; hidden states for the
    collapse measures."""

    def __init__(self, unigram: torch.Tensor, special: SpecialIds) -> None:
        self.unigram, self.special, self.uni_argmax = unigram, special, int(unigram.argmax())
        self.mlm_ce = self.uni_ce = self.mlm_hit = self.uni_hit = self.n_masked = 0.0
        self.disc_scores: list[torch.Tensor] = []
        self.disc_labels: list[torch.Tensor] = []
        self.disc_replaceable: list[torch.Tensor] = []
        self.disc_bce = self.n_tok = self.can_replace = self.replaced_total = 0.0
        self.hidden: list[torch.Tensor] = []
        self.masks: list[torch.Tensor] = []

    def add(self, x: dict, batch: dict) -> None:
        w = x["mlm_weights"].flatten()
        labels = x["mlm_labels"].flatten()
        logits = x["mlm_logits"].flatten(0, 1).float()
        self.mlm_ce += float((F.cross_entropy(logits, labels, reduction="none") * w).sum())
        self.uni_ce += float((-self.unigram[labels] * w).sum())
        self.mlm_hit += float(((logits.argmax(-1) == labels).float() * w).sum())
        self.uni_hit += float(((labels == self.uni_argmax).float() * w).sum())
        self.n_masked += float(w.sum())
        if "disc_logits" in x:
            tm = x["token_mask"].bool()
            ids = batch["input_ids"]
            replaceable = tm & (ids != self.special.cls) & (ids != self.special.sep)
            self.disc_scores.append(x["disc_logits"][tm].float())
            self.disc_labels.append(x["replaced"][tm])
            self.disc_replaceable.append(replaceable[tm])
            self.disc_bce += float(F.binary_cross_entropy_with_logits(
                x["disc_logits"].float(), x["replaced"], reduction="none")[tm].sum())
            self.n_tok += float(tm.sum())
            self.can_replace += float(replaceable.sum())
            self.replaced_total += float(x["replaced"][tm].sum())

    def result(self) -> dict[str, float]:
        n = max(self.n_masked, 1.0)
        out = {
            "mlm_loss": self.mlm_ce / n,
            "mlm_acc": self.mlm_hit / n,
            "unigram_loss": self.uni_ce / n,
            "unigram_acc": self.uni_hit / n,
            "mlm_gain_nats": (self.uni_ce - self.mlm_ce) / n,
        }
        if self.disc_scores:
            rate = self.replaced_total / max(self.can_replace, 1.0)
            # specials: predicted perfectly by a constant
            base = binary_entropy(rate) * self.can_replace / max(self.n_tok, 1.0)
            loss = self.disc_bce / max(self.n_tok, 1.0)
            scores, labels = torch.cat(self.disc_scores), torch.cat(self.disc_labels)
            replaceable = torch.cat(self.disc_replaceable)
            out.update({
                "disc_loss": loss,
                "disc_base_rate_loss": base,
                "disc_gap_nats": base - loss,
                "disc_auc": auc(scores, labels),
                "disc_auc_replaceable": auc(scores[replaceable], labels[replaceable]),
                "replaced_rate": rate,
            })
        out.update(collapse(torch.cat(self.hidden), torch.cat(self.masks)))
        return out
