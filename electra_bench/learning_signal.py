"""The learning-signal arithmetic behind ELECTRA's claim, per sequence.

MLM gets a gradient at the masked positions only (int(mask_prob x T): 76 of 512), each a choice among
V tokens (log2 V = 14.9 bits); RTD gets one binary decision at every position (512 x 1 bit).
Positions with gradient differ 6.7x; bits of target information go the other way (1132 vs 512).
"""

from __future__ import annotations

import math

from .errors import BenchError


def learning_signal(seq_len: int = 512, mask_prob: float = 0.15, vocab_size: int = 30522) -> dict:
    if seq_len <= 0 or vocab_size <= 1 or not 0 < mask_prob < 1:
        raise BenchError("signal needs --seq-len > 0, --vocab-size > 1 and 0 < --mask-prob < 1")
    mlm_positions = int(mask_prob * seq_len)
    bits = math.log2(vocab_size)
    return {
        "seq_len": seq_len,
        "mask_prob": mask_prob,
        "vocab_size": vocab_size,
        "mlm_positions": mlm_positions,
        "rtd_positions": seq_len,
        "mlm_bits_per_position": bits,
        "rtd_bits_per_position": 1.0,
        "mlm_bits": mlm_positions * bits,
        "rtd_bits": float(seq_len),
        "position_ratio": seq_len / max(1, mlm_positions),
        "bits_ratio": seq_len / (mlm_positions * bits) if mlm_positions else math.inf,
    }
