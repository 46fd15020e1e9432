"""The encoder's shape (`EncoderConfig`) and ELECTRA's generator shape derived from it: plain data, no torch.

Kept apart from model.py so that what only needs shapes (presets, the paper's FLOP formula, argument
checks on the command line) is importable without torch, which takes seconds to import: a typo in a
budget or a preset name is answered before it loads. model.py re-exports both names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class EncoderConfig:
    vocab_size: int = 30522
    embedding_size: int = 128  # E; projected to H when it differs (ELECTRA's factorised embeddings)
    hidden_size: int = 256  # H
    num_layers: int = 12
    num_heads: int = 4
    ffn_size: int = 1024
    max_positions: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


def generator_config(disc: EncoderConfig, size: float) -> EncoderConfig:
    """ELECTRA's generator: same depth and embedding size, hidden = `size` x the discriminator's
    (or `size` itself when > 1), FFN 4x hidden, heads = hidden / 64 (at least 1)."""
    hidden = int(size) if size > 1 else max(1, int(round(disc.hidden_size * size)))
    heads = max(1, hidden // 64)
    if hidden % heads:
        heads = math.gcd(hidden, heads)
    return EncoderConfig(
        vocab_size=disc.vocab_size,
        embedding_size=disc.embedding_size,
        hidden_size=hidden,
        num_layers=disc.num_layers,
        num_heads=heads,
        ffn_size=4 * hidden,
        max_positions=disc.max_positions,
        type_vocab_size=disc.type_vocab_size,
        dropout=disc.dropout,
        layer_norm_eps=disc.layer_norm_eps,
    )
