"""Tokenizer: training (deterministic, specials first), vocab files, save/load, encoding."""

from __future__ import annotations

import pytest

from electra_bench.data.token_cache import token_dtype
from electra_bench.data.tokenizer import Tokenizer
from electra_bench.errors import BenchError
from electra_bench.special_tokens import ALL, DEFAULT

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Pack my box with five dozen liquor jugs!",
    "How vexingly quick daft zebras jump; the five boxing wizards jump quickly.",
    "Sphinx of black quartz, judge my vow. Jackdaws love my big sphinx of quartz.",
    "Über café naïve résumé — accents are stripped, CASE is lowered.",
] * 20


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return Tokenizer.train(TEXTS, 300)


def bert_like_vocab(path, extra=("the", "quick", "brown", "fox", "##es", "jump", "##s", ".")):
    """A vocab laid out like BERT's: [PAD]=0, [unused..], [UNK]=100, [CLS]=101, [SEP]=102, [MASK]=103."""
    lines = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    lines += list("abcdefghijklmnopqrstuvwxyz") + list(extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


def test_train_puts_specials_first_and_is_deterministic(tok):
    assert tok.vocab[: len(ALL)] == list(ALL)
    assert tok.special == DEFAULT
    assert 50 < tok.vocab_size <= 300
    again = Tokenizer.train(iter(TEXTS), 300)  # a one-shot iterator works too
    assert again.sha256 == tok.sha256 and again.vocab == tok.vocab


def test_encode_has_no_specials_and_bert_normalisation(tok):
    ids = tok.encode("THE Quick café")
    assert ids and not set(ids) & set(range(len(ALL)))
    assert tok.tokenize("Café")[0].startswith("caf")
    assert tok.decode(tok.encode("the quick brown fox")) == "the quick brown fox"
    assert tok.encode_batch(["the fox", "", "quick"]) == [tok.encode("the fox"), [], tok.encode("quick")]


def test_save_load_roundtrip(tok, tmp_path):
    tok.save(tmp_path / "t")
    assert Tokenizer.is_saved_in(tmp_path / "t")
    back = Tokenizer.load(tmp_path / "t")
    assert back.sha256 == tok.sha256 and back.vocab == tok.vocab
    assert back.encode("jackdaws love quartz") == tok.encode("jackdaws love quartz")


def test_load_detects_edited_vocab(tok, tmp_path):
    tok.save(tmp_path / "t")
    vocab = (tmp_path / "t" / "vocab.txt").read_text().splitlines()
    (tmp_path / "t" / "vocab.txt").write_text("\n".join(vocab + ["zzzextra"]) + "\n")
    with pytest.raises(BenchError, match="does not match the sha256"):
        Tokenizer.load(tmp_path / "t")


def test_load_without_metadata(tmp_path):
    with pytest.raises(BenchError, match="electra_bench_tokenizer.json: missing"):
        Tokenizer.load(tmp_path)


def test_bert_vocab_file_ids_are_looked_up(tmp_path):
    lines = bert_like_vocab(tmp_path / "vocab.txt")
    tok = Tokenizer.from_vocab_file(tmp_path / "vocab.txt")
    assert (tok.special.pad, tok.special.unk, tok.special.cls, tok.special.sep, tok.special.mask) == (0, 100, 101,
                                                                                                     102, 103)
    assert tok.vocab_size == len(lines)
    assert tok.tokenize("The foxes jump.") == ["the", "fox", "##es", "jump", "."]
    assert tok.encode("Zebra!")[-1] == tok.special.unk  # "!" is not in this vocab


@pytest.mark.parametrize("content,match", [
    ("[PAD]\n[UNK]\n[CLS]\nthis is prose\n", r"vocab.txt:4: 'this is prose' is not a single token"),
    ("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nb\na\n", r"vocab.txt:8: duplicate token 'a' \(first on line 6\)"),
    ("[PAD]\n[UNK]\n\n[CLS]\n[SEP]\n[MASK]\n", r"vocab.txt:3: empty line inside the vocab"),
    ("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n", r"vocab.txt: the vocab lacks the special token\(s\) \[MASK\]"),
    ("", r"vocab.txt: the vocab file is empty"),
    ('{\n  "version": "1.0",\n', r"vocab.txt:2: .* \(this looks like JSON"),
])
def test_bad_vocab_files(tmp_path, content, match):
    (tmp_path / "vocab.txt").write_text(content, encoding="utf-8")
    with pytest.raises(BenchError, match=match):
        Tokenizer.from_vocab_file(tmp_path / "vocab.txt")


def test_binary_vocab_file(tmp_path):
    (tmp_path / "vocab.txt").write_bytes(b"[PAD]\n\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(BenchError, match=r"vocab.txt:2: invalid UTF-8"):
        Tokenizer.from_vocab_file(tmp_path / "vocab.txt")


def test_missing_vocab_file(tmp_path):
    with pytest.raises(BenchError, match="no such vocab file"):
        Tokenizer.from_vocab_file(tmp_path / "vocab.txt")


def test_token_dtype_by_vocab_size():
    assert token_dtype(30522).name == "uint16" and token_dtype(65535).name == "uint16"
    assert token_dtype(65536).name == "uint32" and token_dtype(250000).name == "uint32"
