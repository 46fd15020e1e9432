"""Token cache: content, reuse across runs, cache-dir selection, atomicity when interrupted."""

from __future__ import annotations

import numpy as np
import pytest

from electra_bench.data import token_cache as tc_mod
from electra_bench.data.corpus import open_corpus
from electra_bench.data.token_cache import build_token_cache
from electra_bench.data.tokenizer import Tokenizer
from electra_bench.errors import BenchError

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()


def write_corpus(path, n_docs=30, seed=0):
    import random

    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        sents = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 25))) + "." for _ in range(rng.randint(1, 8))]
        docs.append(sents)
    path.write_text("\n\n".join("\n".join(s) for s in docs) + "\n", encoding="utf-8")
    return docs


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.train([" ".join(WORDS) + " ."] * 50, 120)


def test_contents_match_the_tokenizer(tmp_path, tok):
    docs = write_corpus(tmp_path / "c.txt")
    # a line of control characters tokenizes to nothing: dropped, and its document is kept
    text = (tmp_path / "c.txt").read_text() + "\n\x01\x02\n"
    (tmp_path / "c.txt").write_text(text)
    cache = build_token_cache(open_corpus(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    assert not cache.hit
    sents = [s for d in docs for s in d]
    expect = [i for s in sents for i in tok.encode(s)]
    assert cache.tokens.dtype == np.uint16
    assert cache.tokens.tolist() == expect
    assert cache.n_sentences == len(sents) and cache.n_documents == len(docs)
    assert cache.meta["dropped_empty_lines"] == 1 and cache.meta["dropped_empty_documents"] == 1
    lens = np.diff(np.concatenate([[0], cache.sentence_ends]))
    assert lens.tolist() == [len(tok.encode(s)) for s in sents]
    assert np.diff(np.concatenate([[0], cache.document_ends])).tolist() == [len(d) for d in docs]
    assert cache.document_token_counts().sum() == len(expect)


def test_second_call_hits_the_cache_without_tokenizing(tmp_path, tok, monkeypatch):
    write_corpus(tmp_path / "c.txt")
    first = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)

    def boom(*a, **k):
        raise AssertionError("re-tokenized on a cache hit")

    monkeypatch.setattr(Tokenizer, "encode_batch", boom)
    again = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    assert again.hit and again.path == first.path
    assert np.array_equal(again.tokens, first.tokens)


def test_key_changes_with_content_and_tokenizer(tmp_path, tok):
    write_corpus(tmp_path / "c.txt")
    a = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    other_tok = Tokenizer.train([" ".join(WORDS)] * 10, 60)
    b = build_token_cache(str(tmp_path / "c.txt"), other_tok, cache_dir=tmp_path / "cache", progress=False)
    write_corpus(tmp_path / "c.txt", seed=1)
    c = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    assert len({a.key, b.key, c.key}) == 3 and not c.hit


def test_cache_dir_from_env_and_argument(tmp_path, tok, monkeypatch):
    write_corpus(tmp_path / "c.txt")
    monkeypatch.setenv("ELECTRA_BENCH_CACHE", str(tmp_path / "env"))
    a = build_token_cache(str(tmp_path / "c.txt"), tok, progress=False)
    assert a.path.is_relative_to(tmp_path / "env")
    b = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "arg", progress=False)
    assert b.path.is_relative_to(tmp_path / "arg") and not b.hit


@pytest.mark.parametrize("exc", [KeyboardInterrupt, RuntimeError])
def test_interrupted_build_leaves_nothing_half_written(tmp_path, tok, exc):
    write_corpus(tmp_path / "c.txt", n_docs=60)
    corpus = open_corpus(tmp_path / "c.txt")

    def interrupt(n_chunks):
        if n_chunks == 3:
            raise exc("interrupted")

    with pytest.raises(exc):
        build_token_cache(corpus, tok, cache_dir=tmp_path / "cache", progress=False, chunk_bytes=200,
                          on_chunk=interrupt)
    entries = list((tmp_path / "cache" / "tokens").iterdir())
    leftovers = [p.name for e in entries if e.is_dir() for p in e.iterdir()]
    assert leftovers == []  # no tokens.bin, no temp file, no meta.json
    built = build_token_cache(corpus, tok, cache_dir=tmp_path / "cache", progress=False, chunk_bytes=200)
    assert not built.hit
    assert built.tokens.tolist() == [i for line in corpus.texts() for i in tok.encode(line)]


def test_incomplete_or_corrupt_entry_is_rebuilt(tmp_path, tok):
    write_corpus(tmp_path / "c.txt")
    a = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    expected = a.tokens.tolist()
    path = a.path
    del a
    (path / "tokens.bin").write_bytes(b"\x00\x00")  # wrong size for meta.json
    b = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    assert not b.hit and b.tokens.tolist() == expected
    (path / "meta.json").unlink()  # renamed files but no meta: incomplete
    c = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    assert not c.hit and c.tokens.tolist() == expected


def test_corpus_of_only_untokenizable_text(tmp_path, tok):
    (tmp_path / "c.txt").write_text("\x01\x02\n\x03\n")
    with pytest.raises(BenchError, match="tokenizes to no tokens"):
        build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    assert not any(p.is_file() for p in (tmp_path / "cache" / "tokens").rglob("*.bin"))


def test_large_vocab_uses_uint32(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(70000)] + ["hello"]
    big = Tokenizer(vocab)
    (tmp_path / "c.txt").write_text("hello w69999\n")
    cache = build_token_cache(str(tmp_path / "c.txt"), big, cache_dir=tmp_path / "cache", progress=False)
    assert cache.tokens.dtype == np.uint32 and cache.tokens.tolist() == [70005, 70004]
    assert tc_mod.token_dtype(big.vocab_size) == np.uint32


def test_temp_files_of_a_killed_builder_are_cleaned(tmp_path, tok):
    write_corpus(tmp_path / "c.txt")
    a = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    path = a.path
    (path / "meta.json").unlink()
    (path / ".tokens.bin.abc123.tmp").write_bytes(b"half")  # as if SIGKILLed mid-write
    b = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    assert not b.hit and not list(path.glob(".*.tmp"))
