"""Packing invariants, determinism, held-out split, caching, and prepare_pretraining end to end."""

from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest
import torch

from electra_bench.data import packing as packing_mod
from electra_bench.data import suite as suite_mod
from electra_bench.data import token_cache as tc_mod
from electra_bench.data.corpus import open_corpus
from electra_bench.data.packing import PackedSequences, PackingConfig, pack
from electra_bench.data.pretraining import prepare_pretraining
from electra_bench.data.token_cache import build_token_cache
from electra_bench.data.tokenizer import Tokenizer
from electra_bench.errors import BenchError

WORDS = ("ant bee cat dog eel fox gnu hen ibis jay kite lark mole newt owl pig quail rat seal toad "
         "urchin vole wasp yak zebu").split()
T = 32


def write_corpus(path, n_docs=80, seed=0):
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        n = rng.randint(1, 10)
        sents = []
        for _ in range(n):
            k = rng.choice([rng.randint(1, 12), rng.randint(1, 30), 70])  # some longer than T
            sents.append(" ".join(rng.choice(WORDS) for _ in range(k)))
        docs.append(sents)
    path.write_text("\n\n".join("\n".join(s) for s in docs) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("pack")
    write_corpus(d / "c.txt")
    tok = Tokenizer.train([" ".join(WORDS)] * 20, 60)
    cache = build_token_cache(open_corpus(d / "c.txt"), tok, cache_dir=d / "cache", progress=False)
    return d, tok, cache


def content(ps: PackedSequences, i: int) -> list[int]:
    """The text tokens of row i, without [CLS]/[SEP]/[PAD]."""
    ids = np.asarray(ps._ids[i])
    length, b = int(ps.lengths[i]), int(ps._b_start[i])
    if b < length:
        return ids[1:b - 1].tolist() + ids[b:length - 1].tolist()
    return ids[1:length - 1].tolist()


def check_layout(ps: PackedSequences, special):
    batch = ps.batch(np.arange(len(ps)))
    ids, seg, att = batch["input_ids"], batch["segment_ids"], batch["attention_mask"]
    assert ids.dtype == seg.dtype == att.dtype == torch.int64 and ids.shape == (len(ps), T)
    lengths = att.sum(1)
    assert torch.equal(lengths, torch.as_tensor(np.array(ps.lengths), dtype=torch.int64))
    assert (lengths <= T).all() and (lengths >= 3).all()
    assert (ids[:, 0] == special.cls).all()
    pos = torch.arange(T)[None]
    assert (att == (pos < lengths[:, None]).long()).all()  # real tokens first, then padding
    assert (ids[att == 0] == special.pad).all() and (seg[att == 0] == 0).all()
    last = ids.gather(1, (lengths - 1)[:, None])[:, 0]
    assert (last == special.sep).all()
    n_sep = ((ids == special.sep) & (att == 1)).sum(1)
    two = seg.sum(1) > 0
    assert (n_sep == torch.where(two, 2, 1)).all()
    for i in range(len(ps)):  # segment 0 = [CLS] A [SEP], segment 1 = B [SEP]
        L, b = int(lengths[i]), int(ps._b_start[i])
        assert seg[i, :b].sum() == 0 and (seg[i, b:L] == 1).all()
        if b < L:
            assert ids[i, b - 1] == special.sep and b >= 3 and L - b >= 2
    real = ids[att == 1]
    assert ((real == special.pad).sum() == 0) and ((real == special.cls).sum() == len(ps))
    return two


def units_tokens(cache, split_meta_units):
    return [t for s0, s1 in split_meta_units for t in cache.tokens[
        (int(cache.sentence_ends[s0 - 1]) if s0 else 0):int(cache.sentence_ends[s1 - 1])].tolist()]


def test_layout_and_no_token_lost(setup):
    d, tok, cache = setup
    cfg = PackingConfig(seq_len=T)
    train, heldout = pack(cache, tok.special, cfg, seed=0, progress=False)
    train_units, held_units = packing_mod.choose_heldout(cache, cfg, 0)
    for ps, units in ((train, train_units), (heldout, held_units)):
        assert len(ps) > 0
        two = check_layout(ps, tok.special)
        assert 0 < int(two.sum()) < len(ps)  # both one- and two-segment sequences occur
        # every sequence is a contiguous run of the corpus starting at its src offset ...
        got = []
        for i in range(len(ps)):
            c = content(ps, i)
            src = int(ps.src_starts[i])
            assert c == cache.tokens[src:src + len(c)].tolist()
            got += c
        # ... and together they are exactly the split's documents, in order: no token lost
        assert got == units_tokens(cache, units)
        assert ps.stats["dropped_tokens"] == 0 and ps.stats["packed_text_tokens"] == len(got)


def test_padding_only_where_a_document_runs_out(setup):
    d, tok, cache = setup
    train, _ = pack(cache, tok.special, PackingConfig(seq_len=T, short_seq_prob=0.0), seed=0, progress=False)
    doc_token_ends = set(np.asarray(cache.sentence_ends)[np.asarray(cache.document_ends) - 1].tolist())
    short = 0
    for i in range(len(train)):
        end = int(train.src_starts[i]) + len(content(train, i))
        if end not in doc_token_ends:
            # full, except [CLS] A(T-3) [SEP] where B has no room: the official code also stops at T-1
            assert int(train.lengths[i]) >= T - 1
        elif int(train.lengths[i]) < T:
            short += 1
    assert short > 0


def test_official_overflow_drop(setup):
    d, tok, cache = setup
    cfg = PackingConfig(seq_len=T, carry_overflow=False)
    train, _ = pack(cache, tok.special, cfg, seed=0, progress=False)
    check_layout(train, tok.special)
    s = train.stats
    assert s["dropped_tokens"] > 0 and s["packed_text_tokens"] + s["dropped_tokens"] == s["text_tokens"]
    for i in range(len(train)):
        c = content(train, i)
        src = int(train.src_starts[i])
        assert c == cache.tokens[src:src + len(c)].tolist()


class OfficialExampleBuilder:
    """A direct port of ExampleBuilder from google-research/electra build_pretraining_dataset.py, with
    our one ordering change (once B has started, later sentences go to B), for comparison."""

    def __init__(self, max_length, rng):
        self._current_sentences, self._current_length = [], 0
        self._max_length = self._target_length = max_length
        self.rng = rng

    def add_sentence(self, ids):  # add_line for a non-empty line
        self._current_sentences.append(ids)
        self._current_length += len(ids)
        if self._current_length >= self._target_length:
            return self._create_example()
        return None

    def end_document(self):  # add_line("") at a document boundary
        return self._create_example() if self._current_length != 0 else None

    def _create_example(self):
        random = self.rng
        if random.random() < 0.1:
            first_segment_target_length = 100000
        else:
            first_segment_target_length = (self._target_length - 3) // 2
        first_segment, second_segment = [], []
        for sentence in self._current_sentences:
            if not second_segment and (
                    len(first_segment) == 0 or len(first_segment) + len(sentence) < first_segment_target_length
                    or (len(second_segment) == 0 and len(first_segment) < first_segment_target_length
                        and random.random() < 0.5)):
                first_segment += sentence
            else:
                second_segment += sentence
        first_segment = first_segment[:self._max_length - 2]
        second_segment = second_segment[:max(0, self._max_length - len(first_segment) - 3)]
        self._current_sentences, self._current_length = [], 0
        if random.random() < 0.05:
            self._target_length = random.randint(5, self._max_length)
        else:
            self._target_length = self._max_length
        return first_segment, second_segment


def test_official_mode_matches_a_port_of_the_official_builder(setup):
    d, tok, cache = setup
    cfg = PackingConfig(seq_len=T, carry_overflow=False)
    train, _ = pack(cache, tok.special, cfg, seed=5, progress=False)
    train_units, _ = packing_mod.choose_heldout(cache, cfg, 5)
    builder = OfficialExampleBuilder(T, random.Random(5 * 1_000_003 + 0))
    expected = []
    for s0, s1 in train_units:
        for s in range(s0, s1):
            a, b = cache.sentence_tokens(s)
            ex = builder.add_sentence(cache.tokens[a:b].tolist())
            if ex:
                expected.append(ex)
        ex = builder.end_document()
        if ex:
            expected.append(ex)
    sp = tok.special
    rows = [[sp.cls, *a, sp.sep] + ([*b, sp.sep] if b else []) for a, b in expected]
    assert len(rows) == len(train)
    for i, row in enumerate(rows):
        assert np.asarray(train._ids[i])[:len(row)].tolist() == row and int(train.lengths[i]) == len(row)


def test_deterministic_given_seed_and_cached(setup, tmp_path, monkeypatch):
    d, tok, cache = setup
    cfg = PackingConfig(seq_len=T)
    a, _ = pack(cache, tok.special, cfg, seed=3, progress=False)
    # same inputs in another cache dir: same bytes
    other = build_token_cache(open_corpus(d / "c.txt"), tok, cache_dir=tmp_path / "other", progress=False)
    b, _ = pack(other, tok.special, cfg, seed=3, progress=False)
    assert a.sha256 == b.sha256 and np.array_equal(np.asarray(a._ids), np.asarray(b._ids))
    c, _ = pack(cache, tok.special, cfg, seed=4, progress=False)
    assert c.sha256 != a.sha256
    monkeypatch.setattr(packing_mod, "_build", lambda *a, **k: pytest.fail("re-packed on a cache hit"))
    again, _ = pack(cache, tok.special, cfg, seed=3, progress=False)
    assert again.sha256 == a.sha256


def test_heldout_is_whole_documents_and_sized(setup):
    d, tok, cache = setup
    cfg = PackingConfig(seq_len=T, heldout_min_sequences=4)
    train_units, held_units = packing_mod.choose_heldout(cache, cfg, 0)
    starts = {0} | set(np.asarray(cache.document_ends)[:-1].tolist())
    ends = set(np.asarray(cache.document_ends).tolist())
    assert all(s0 in starts and s1 in ends for s0, s1 in train_units + held_units)
    assert not set(train_units) & set(held_units)
    assert len(train_units) + len(held_units) == cache.n_documents
    held_tokens = len(units_tokens(cache, held_units))
    assert 0.02 * cache.n_tokens <= held_tokens <= 0.1 * cache.n_tokens


def test_single_document_corpus_still_has_heldout(tmp_path):
    tok = Tokenizer.train([" ".join(WORDS)] * 20, 60)
    (tmp_path / "c.txt").write_text("\n".join(" ".join(WORDS[i:] + WORDS[:i]) for i in range(25)) + "\n")
    cache = build_token_cache(str(tmp_path / "c.txt"), tok, cache_dir=tmp_path / "cache", progress=False)
    train, heldout = pack(cache, tok.special, PackingConfig(seq_len=T), seed=0, progress=False)
    assert len(train) > 0 and len(heldout) > 0


def test_pickle_and_indexing(setup):
    d, tok, cache = setup
    train, _ = pack(cache, tok.special, PackingConfig(seq_len=T), seed=0, progress=False)
    back = pickle.loads(pickle.dumps(train))
    assert len(pickle.dumps(train)) < 1000  # pickles as a path, not data
    assert back.sha256 == train.sha256
    assert torch.equal(back.batch([2, 0])["input_ids"], train.batch([2, 0])["input_ids"])
    row = train[1]
    assert row["input_ids"].shape == (T,) and torch.equal(row["input_ids"], train.batch([1])["input_ids"][0])
    assert train[0:3]["input_ids"].shape == (3, T)
    with pytest.raises(IndexError):
        train.batch([len(train)])


def test_prepare_pretraining_end_to_end(tmp_path, monkeypatch):
    (tmp_path / "corpus").mkdir()
    write_corpus(tmp_path / "corpus" / "a.txt", n_docs=40, seed=1)
    write_corpus(tmp_path / "corpus" / "b.txt", n_docs=40, seed=2)
    kw = dict(cache_dir=tmp_path / "cache", progress=False)
    data = prepare_pretraining(str(tmp_path / "corpus"), T, 80, tokenizer_dir=tmp_path / "tok", **kw)
    assert data.tokenizer.special.cls == 2 and 30 < data.tokenizer.vocab_size <= 80
    assert Tokenizer.is_saved_in(tmp_path / "tok")  # an empty tokenizer_dir receives the tokenizer
    assert len(data.train) > len(data.heldout) > 0
    hashes = data.hashes()
    assert hashes["corpus_sha256"] == data.corpus_sha256 and hashes["train_sequences_sha256"] == data.train.sha256
    assert hashes["tokenizer_sha256"] == data.tokenizer.sha256
    json.dumps(hashes)

    # everything is cached: no training, tokenizing or packing the second time
    monkeypatch.setattr(Tokenizer, "train", lambda *a, **k: pytest.fail("retrained"))
    monkeypatch.setattr(tc_mod, "_build", lambda *a, **k: pytest.fail("re-tokenized"))
    monkeypatch.setattr(packing_mod, "_build", lambda *a, **k: pytest.fail("re-packed"))
    again = prepare_pretraining(str(tmp_path / "corpus"), T, 80, **kw)  # trained-tokenizer cache
    assert again.train.sha256 == data.train.sha256
    via_dir = prepare_pretraining(str(tmp_path / "corpus"), T, 999, tokenizer_dir=tmp_path / "tok", **kw)
    assert via_dir.tokenizer.sha256 == data.tokenizer.sha256  # vocab_size ignored for a given tokenizer


def test_prepare_pretraining_with_bert_vocab_file(tmp_path):
    vocab = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    write_corpus(tmp_path / "c.txt", n_docs=30)
    data = prepare_pretraining(str(tmp_path / "c.txt"), T, 30522, vocab_file=tmp_path / "vocab.txt",
                               cache_dir=tmp_path / "cache", progress=False)
    b = data.train.batch(np.arange(len(data.train)))
    assert (b["input_ids"][:, 0] == 101).all() and data.tokenizer.special.sep == 102
    assert (b["input_ids"][b["attention_mask"] == 0] == 0).all()
    assert not (b["input_ids"] == 100).any()  # every word is in the vocab: no [UNK]


def test_prepare_pretraining_default_is_the_embedded_suite(tmp_path, monkeypatch):
    import lzma

    suite = tmp_path / "suite"
    suite.mkdir()
    with lzma.open(suite / "corpus.txt.xz", "wt") as f:
        for i in range(60):
            f.write(" ".join(WORDS[i % 7:]) + ".\n" + " ".join(WORDS[: i % 11 + 3]) + ".\n\n")
    (suite / "suite.json").write_text(json.dumps({"name": "fake", "version": 1, "corpus": "corpus.txt.xz",
                                                  "tasks": []}))
    monkeypatch.setattr(suite_mod, "suite_dir", lambda name=None: suite)
    data = prepare_pretraining(None, T, 60, cache_dir=tmp_path / "cache", progress=False)
    assert data.corpus.endswith("corpus.txt.xz") and len(data.train) > 0


def test_missing_embedded_suite_is_a_bench_error(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_mod, "suite_dir", lambda name=None: tmp_path / "nowhere")
    with pytest.raises(BenchError, match="suite.json: the embedded suite is not installed"):
        prepare_pretraining(None, T, 60, cache_dir=tmp_path / "cache", progress=False)


def test_seq_len_too_short():
    with pytest.raises(BenchError, match="seq_len 4 is too short"):
        PackingConfig(seq_len=4)
