"""Fine-tuning examples -> model inputs: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, as BERT does.

Pairs longer than `max_len` are truncated one token at a time from the end of the longer side (from b
on ties), BERT's `_truncate_seq_pair`; single texts keep their first max_len - 2 tokens. A text_b that
is None or tokenizes to nothing gives a single-segment input (BERT does the same).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..errors import BenchError
from .tasks import Example
from .tokenizer import Tokenizer


def truncate_pair(la: int, lb: int, budget: int) -> tuple[int, int]:
    """Lengths after BERT's _truncate_seq_pair(a, b, budget) (pop from the longer, b on ties)."""
    excess = la + lb - budget
    if excess <= 0:
        return la, lb
    r = min(excess, abs(la - lb))
    if la > lb:
        la -= r
    else:
        lb -= r
    excess -= r
    if excess > 0:  # now equal: b loses the first token, then they alternate
        lb -= (excess + 1) // 2
        la -= excess // 2
    return la, lb


def encode_examples(tokenizer: Tokenizer, examples: Sequence[Example], max_len: int, *,
                    pad_to_max_len: bool = False, regression: bool | None = None) -> dict[str, torch.Tensor]:
    """Batch tensors for `examples`: input_ids, segment_ids, attention_mask ((N, L) int64) and labels.

    L = the longest encoded example (or max_len with pad_to_max_len). `labels` is int64 for
    classification, float32 for regression (inferred from the label types unless `regression` is
    given), and absent when every label is None (an unlabeled test split).
    """
    if max_len < 4:
        raise BenchError(f"max_len {max_len} is too short (need >= 4 for [CLS] a [SEP] b [SEP])")
    n = len(examples)
    sp = tokenizer.special
    a_ids = tokenizer.encode_batch([e.text_a or "" for e in examples])
    pair_idx = [i for i, e in enumerate(examples) if e.text_b is not None]
    b_ids: list[list[int] | None] = [None] * n
    if pair_idx:
        for i, ids in zip(pair_idx, tokenizer.encode_batch([examples[i].text_b for i in pair_idx]), strict=False):
            b_ids[i] = ids or None
    rows = []
    for a, b in zip(a_ids, b_ids, strict=False):
        if b is None:
            a = a[: max_len - 2]
            rows.append(([sp.cls, *a, sp.sep], len(a) + 2))
        else:
            la, lb = truncate_pair(len(a), len(b), max_len - 3)
            rows.append(([sp.cls, *a[:la], sp.sep, *b[:lb], sp.sep], la + 2))
    L = max_len if pad_to_max_len else max((len(r) for r, _ in rows), default=2)
    ids = np.full((n, L), sp.pad, dtype=np.int64)
    seg = np.zeros((n, L), dtype=np.int64)
    att = np.zeros((n, L), dtype=np.int64)
    for i, (r, a_end) in enumerate(rows):
        ids[i, : len(r)] = r
        att[i, : len(r)] = 1
        seg[i, a_end: len(r)] = 1
    out = {"input_ids": torch.from_numpy(ids), "segment_ids": torch.from_numpy(seg),
           "attention_mask": torch.from_numpy(att)}
    labels = [e.label for e in examples]
    if n and all(x is None for x in labels):
        return out
    if any(x is None for x in labels):
        raise ValueError("encode_examples: some examples are labeled and some are not")
    if regression is None:
        regression = any(isinstance(x, float) for x in labels)
    if regression:
        out["labels"] = torch.tensor([float(x) for x in labels], dtype=torch.float32)
    else:
        out["labels"] = torch.tensor([int(x) for x in labels], dtype=torch.int64)
    return out
