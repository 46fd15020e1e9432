import os

import electra_bench  # noqa: F401  (sets the MKL reproducibility switches before torch loads)
import numpy as np
import pytest
import torch

os.environ.setdefault("MPLBACKEND", "Agg")
torch.set_num_threads(min(2, torch.get_num_threads()))


class SyntheticSequences:
    """Packed sequences of random tokens: [CLS] ... [SEP], ids >= 5 (specials are 0-4)."""

    def __init__(self, n: int, seq_len: int, vocab_size: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.ids = rng.integers(5, vocab_size, (n, seq_len))
        self.ids[:, 0], self.ids[:, -1] = 2, 3
        self.seq_len = seq_len

    def __len__(self):
        return len(self.ids)

    def token_counts(self, vocab_size):
        return np.bincount(self.ids.ravel(), minlength=vocab_size)[:vocab_size]

    def batch(self, idx):
        x = torch.from_numpy(self.ids[idx])
        return {"input_ids": x, "segment_ids": torch.zeros_like(x), "attention_mask": torch.ones_like(x)}


@pytest.fixture
def synthetic():
    return SyntheticSequences


@pytest.fixture(scope="session")
def word_corpus(tmp_path_factory):
    """A small text corpus for end-to-end runs: 60 paragraphs of 6 twelve-word sentences over 16 words."""
    corpus = tmp_path_factory.mktemp("word-corpus") / "corpus.txt"
    words = "the cat sat on a mat while dogs ran past old trees near quiet rivers at dawn".split()
    rng = torch.Generator().manual_seed(0)
    lines = []
    for _ in range(60):
        for _ in range(6):
            lines.append(" ".join(words[i] for i in torch.randint(len(words), (12,), generator=rng).tolist()) + ".")
        lines.append("")
    corpus.write_text("\n".join(lines))
    return corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A deterministic corpus for pre-training runs that fault tests interrupt and resume: 50 paragraphs of 6
    twelve-word sentences cycling over 16 words."""
    words = "the cat sat on a mat while dogs ran past old trees near quiet rivers at dawn".split()
    lines = []
    for d in range(50):
        for s in range(6):
            lines.append(" ".join(words[(d * 7 + s * 3 + i * i) % len(words)] for i in range(12)) + ".")
        lines.append("")
    path = tmp_path_factory.mktemp("corpus") / "c.txt"
    path.write_text("\n".join(lines))
    return path
