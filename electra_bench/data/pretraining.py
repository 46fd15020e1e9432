"""One call from a corpus spec to ready-to-batch pre-training data (tokenizer, token cache, packing).

    data = prepare_pretraining("corpus/", seq_len=128, vocab_size=30522)
    batch = data.train.batch(np.arange(32))   # {"input_ids", "segment_ids", "attention_mask"}

Every step is cached under the cache root (see cache.py) and keyed by content, so a second call with
the same inputs only hashes the corpus (memoised by file stat) and opens memory maps.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from ..errors import BenchError
from .cache import HashMemo, cache_root, entry_lock, short_key
from .corpus import open_corpus
from .suite import load_suite
from .packing import PackedSequences, PackingConfig, pack
from .token_cache import TokenCache, build_token_cache
from .tokenizer import VOCAB_FILE, Tokenizer

TOKENIZER_TRAIN_MAX_CHARS = 200_000_000  # a trained vocab sees at most this much text (the first part)
_TRAIN_FORMAT = "electra-bench-trained-wordpiece-v1"


@dataclass
class PretrainingData:
    train: PackedSequences
    heldout: PackedSequences  # whole held-out documents, for the pre-training loss evaluation
    tokenizer: Tokenizer
    corpus_sha256: str
    corpus: str = ""  # the spec it was built from
    token_cache: TokenCache | None = field(default=None, repr=False)

    def hashes(self) -> dict:
        """What identifies this data in a run's identity and provenance."""
        return {
            "corpus_sha256": self.corpus_sha256,
            "tokenizer_sha256": self.tokenizer.sha256,
            "train_sequences_sha256": self.train.sha256,
            "heldout_sequences_sha256": self.heldout.sha256,
        }


def prepare_pretraining(corpus: str | os.PathLike | None, seq_len: int, vocab_size: int, *,
                        vocab_file: str | os.PathLike | None = None, tokenizer_dir: str | os.PathLike | None = None,
                        cache_dir: str | os.PathLike | None = None, seed: int = 0, progress: bool = True,
                        packing: PackingConfig | None = None) -> PretrainingData:
    """Tokenizer + token cache + packed train/held-out sequences for `corpus` (None = the embedded suite).

    Tokenizer: the one saved in `tokenizer_dir` if there is one (a bare BERT vocab.txt there also
    works); else `vocab_file`; else a WordPiece vocab of `vocab_size` trained on the corpus (cached,
    keyed by corpus hash + vocab_size). When `tokenizer_dir` is given and empty, the tokenizer used is
    saved there. With a given vocab, `vocab_size` is ignored: `data.tokenizer.vocab_size` is the truth.
    """
    if corpus is None:
        corpus = str(load_suite().corpus)
    c = open_corpus(corpus)
    root = cache_root(cache_dir)
    memo = HashMemo(root)
    corpus_sha = c.sha256(memo)
    memo.save()

    tokenizer = _tokenizer(c, corpus_sha, vocab_size, vocab_file, tokenizer_dir, root, progress)
    cache = build_token_cache(c, tokenizer, cache_dir=root, progress=progress, corpus_sha256=corpus_sha)
    config = packing or PackingConfig(seq_len=seq_len)
    if config.seq_len != seq_len:
        raise BenchError(f"packing config seq_len {config.seq_len} != seq_len {seq_len}")
    train, heldout = pack(cache, tokenizer.special, config, seed=seed, progress=progress)
    return PretrainingData(train=train, heldout=heldout, tokenizer=tokenizer, corpus_sha256=corpus_sha,
                           corpus=str(corpus), token_cache=cache)


def _tokenizer(c, corpus_sha: str, vocab_size: int, vocab_file, tokenizer_dir, root: Path,
               progress: bool) -> Tokenizer:
    if tokenizer_dir is not None:
        d = Path(tokenizer_dir)
        if Tokenizer.is_saved_in(d):
            return Tokenizer.load(d)
        if (d / VOCAB_FILE).is_file():
            tok = Tokenizer.from_vocab_file(d / VOCAB_FILE)
            tok.save(d)
            return tok
        if d.exists() and not d.is_dir():
            raise BenchError(f"{d}: not a directory (expected a tokenizer directory)")
    if vocab_file is not None:
        tok = Tokenizer.from_vocab_file(vocab_file)
    else:
        tok = trained_tokenizer(c, corpus_sha, vocab_size, root, progress)
    if tokenizer_dir is not None:
        tok.save(tokenizer_dir)
    return tok


def trained_tokenizer(c, corpus_sha: str, vocab_size: int, root: Path, progress: bool = False) -> Tokenizer:
    """A WordPiece vocab trained on the corpus, cached in `<root>/tokenizers/<key>/`."""
    entry = root / "tokenizers" / short_key(_TRAIN_FORMAT, corpus_sha, vocab_size, TOKENIZER_TRAIN_MAX_CHARS)
    if Tokenizer.is_saved_in(entry):
        return Tokenizer.load(entry)
    with entry_lock(entry):
        if Tokenizer.is_saved_in(entry):
            return Tokenizer.load(entry)
        if progress and sys.stderr.isatty():
            with Console(stderr=True).status(f"training a {vocab_size}-token WordPiece vocab on {c.spec}"):
                tok = Tokenizer.train(c.texts(), vocab_size, max_chars=TOKENIZER_TRAIN_MAX_CHARS)
        else:
            tok = Tokenizer.train(c.texts(), vocab_size, max_chars=TOKENIZER_TRAIN_MAX_CHARS)
        tok.save(entry)
        tok.source = str(entry)
    return tok
