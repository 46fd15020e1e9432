"""encode_examples: BERT's input layout and longest-first truncation."""

from __future__ import annotations

import pytest
import torch

from electra_bench.data.encoding import encode_examples, truncate_pair
from electra_bench.data.tasks import Example
from electra_bench.data.tokenizer import Tokenizer
from electra_bench.errors import BenchError

WORDS = "one two three four five six seven eight nine ten".split()


@pytest.fixture(scope="module")
def tok():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS  # one token per word
    return Tokenizer(vocab)


def bert_truncate(la, lb, budget):
    """BERT's _truncate_seq_pair, literally."""
    a, b = list(range(la)), list(range(lb))
    while len(a) + len(b) > budget:
        if len(a) > len(b):
            a.pop()
        else:
            b.pop()
    return len(a), len(b)


def test_truncate_pair_matches_bert():
    for la in range(0, 14):
        for lb in range(0, 14):
            for budget in range(0, 16):
                assert truncate_pair(la, lb, budget) == bert_truncate(la, lb, budget), (la, lb, budget)


def test_single_and_pair_layout(tok):
    sp = tok.special
    out = encode_examples(tok, [Example("one two", None, 1), Example("three", "four five", 0)], max_len=16)
    ids, seg, att = out["input_ids"], out["segment_ids"], out["attention_mask"]
    w = {t: tok.token_to_id(t) for t in WORDS}
    assert ids.shape == (2, 6)  # padded to the longest in the batch
    assert ids[0].tolist() == [sp.cls, w["one"], w["two"], sp.sep, sp.pad, sp.pad]
    assert ids[1].tolist() == [sp.cls, w["three"], sp.sep, w["four"], w["five"], sp.sep]
    assert seg.tolist() == [[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]]
    assert att.tolist() == [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]]
    assert out["labels"].dtype == torch.int64 and out["labels"].tolist() == [1, 0]
    padded = encode_examples(tok, [Example("one", None, 0)], max_len=10, pad_to_max_len=True)
    assert padded["input_ids"].shape == (1, 10) and padded["attention_mask"].sum() == 3


def test_truncation_longest_first(tok):
    sp = tok.special
    a = " ".join(WORDS)  # 10 tokens
    b = "one two three"  # 3 tokens
    out = encode_examples(tok, [Example(a, b, 0)], max_len=10)
    ids, seg = out["input_ids"][0].tolist(), out["segment_ids"][0].tolist()
    assert len(ids) == 10
    # budget 7: a is cut to 4 (a was longer), b keeps 3
    assert ids == [sp.cls, *tok.encode("one two three four"), sp.sep, *tok.encode(b), sp.sep]
    assert seg == [0] * 6 + [1] * 4
    single = encode_examples(tok, [Example(a, None, 0)], max_len=6)["input_ids"][0].tolist()
    assert single == [sp.cls, *tok.encode("one two three four"), sp.sep]
    even = encode_examples(tok, [Example("one two three", "four five six", 0)], max_len=7)["input_ids"][0]
    assert even.tolist() == [sp.cls, *tok.encode("one two"), sp.sep, *tok.encode("four five"), sp.sep]


def test_labels_regression_unlabeled_and_empty_b(tok):
    reg = encode_examples(tok, [Example("one", "two", 4.5), Example("three", "four", 0.0)], max_len=8)
    assert reg["labels"].dtype == torch.float32 and reg["labels"].tolist() == [4.5, 0.0]
    forced = encode_examples(tok, [Example("one", None, 3)], max_len=8, regression=True)
    assert forced["labels"].dtype == torch.float32
    test = encode_examples(tok, [Example("one", "two", None)], max_len=8)
    assert "labels" not in test
    empty_b = encode_examples(tok, [Example("one", "", 1)], max_len=8)  # BERT: no tokens_b -> single
    assert empty_b["input_ids"][0].tolist() == [tok.special.cls, tok.token_to_id("one"), tok.special.sep]
    with pytest.raises(BenchError, match="max_len 3 is too short"):
        encode_examples(tok, [Example("one", None, 1)], max_len=3)
