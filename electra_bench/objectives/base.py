"""What every pre-training objective is: an `nn.Module` over the shared encoder whose step splits in two,
so that it compiles without graph breaks and resumes exactly.

Every objective takes a batch of packed sequences `{"input_ids", "segment_ids", "attention_mask"}` (each
(B, T)) and returns an `ObjectiveResult`. All randomness (which positions, what replaces them, the
generator's samples) comes from an explicit `torch.Generator`, so a step is a pure function of (weights,
batch, seed): that is what makes kill-and-resume exact.

`draw_noise(batch, rng)` makes every draw from the generator, in the order the step uses them
(torch.compile cannot trace a `torch.Generator`), and `compute(batch, noise, padded)` is the rest, with no
host sync and no data-dependent Python branch. `forward(batch, rng)` is the two in sequence.
`compile_step()` compiles `compute` only (`torch.compile(module)` would break its graph at the
generator's draws). An objective implements `draw_noise`, `compute` and `backbone`, and may implement
`init_output_priors`; nothing else calls into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from ..model import Encoder

Batch = dict[str, torch.Tensor]


@dataclass
class ObjectiveResult:
    loss: torch.Tensor  # scalar, what is back-propagated
    metrics: dict[str, torch.Tensor]  # detached scalars: losses and accuracies by name
    # detached per-position tensors the learning diagnostics need (pretrain/diagnostics.py):
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


class Objective(nn.Module):
    """The interface of the module docstring. `compute` runs eagerly unless `compile_step()` was called (then
    training-mode calls run it compiled)."""

    name = "objective"
    _compiled = None

    def forward(self, batch: Batch, rng: torch.Generator | None = None, *, padded: bool | None = None,
                noise: Noise | None = None) -> ObjectiveResult:
        """One step's loss. `padded`: whether the batch has padding, decided on the host (None: read from the
        attention mask, a host sync on CUDA); `noise`: `draw_noise`'s output (None: drawn here from `rng`)."""
        if noise is None:
            noise = self.draw_noise(batch, rng)
        # The compiled graph is the training step's. Eval-mode calls (the held-out diagnostics: a few batches at
        # log points, other shapes, no dropout) run eager: compiled, each would compile, and under CUDA graphs
        # record, a graph of its own
        fn = self._compiled if self._compiled is not None and self.training else self.compute
        return fn(batch, noise, padded)

    def draw_noise(self, batch: Batch, rng: torch.Generator | None) -> Noise:
        """Every draw of the step from `rng`, in the order the step uses them."""
        raise NotImplementedError

    def compute(self, batch: Batch, noise: Noise, padded: bool | None = None) -> ObjectiveResult:
        """The step from its draws: no generator, no host sync when `padded` is given (compiles whole)."""
        raise NotImplementedError

    def backbone(self) -> Encoder:
        """The encoder that is kept and fine-tuned."""
        raise NotImplementedError

    def compile_step(self, **kwargs) -> None:
        """torch.compile this objective's `compute` (not the draws, which need the generator): one graph,
        no breaks when `padded` is passed. Not bit-identical to eager (fused kernels round differently)."""
        self._compiled = torch.compile(self.compute, **kwargs)

    @property
    def compiled(self) -> bool:
        return self._compiled is not None
