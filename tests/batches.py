"""A random packed batch for objective tests: [CLS] ... [SEP] over ids >= 5 (specials are 0-4)."""

import torch

from electra_bench.special_tokens import DEFAULT as SP


def random_batch(B=8, T=32, vocab=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, vocab, (B, T), generator=g)
    ids[:, 0], ids[:, -1] = SP.cls, SP.sep
    return {"input_ids": ids, "segment_ids": torch.zeros_like(ids), "attention_mask": torch.ones_like(ids)}
