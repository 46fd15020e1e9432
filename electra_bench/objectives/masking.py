"""Which positions a step predicts and what they hold: BERT's masking and corruption, shared by every
objective, and the masked-LM loss over the chosen positions. Static shapes throughout: a fixed number of
prediction slots per sequence (`max_predictions`), so no step depends on its draw for its shapes."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..special_tokens import SpecialIds


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


def weighted_mlm(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor):
    """Mean cross-entropy and accuracy over the real (weight 1) masked positions."""
    ce = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), reduction="none")
    denom = weights.sum().clamp(min=1.0)
    loss = (ce * weights.flatten()).sum() / denom
    acc = ((logits.argmax(-1) == labels).float() * weights).sum() / denom
    return loss, acc
