"""ELECTRA-style packing of a token cache into fixed-length pre-training sequences.

The algorithm is the official ELECTRA `build_pretraining_dataset.py` (`ExampleBuilder`), with two
documented differences (see docs/data.md):

1. Sentences (lines) of a document are accumulated until they reach the target length (the sequence
   length; with probability `short_seq_prob` = 5% the next target is uniform in [5, seq_len]). The
   sentences are then split at a sentence boundary into segment A and segment B: with probability
   `one_segment_prob` = 10% everything goes into A (one segment, as in classification tasks); otherwise
   A takes sentences while it stays under (target - 3) // 2 (a sentence that would overflow it still
   joins A with probability 1/2 while B is empty). Output `[CLS] A [SEP] B [SEP]`, A trimmed to
   seq_len - 2 and B to what is left; padded with [PAD] when the text runs out (at the end of a
   document or for a short target).
   Difference 1 (order): the official loop can put a later, shorter sentence back into A after an
   earlier one went to B, which reorders the text; here, once B has started every later sentence goes
   to B, so A + B is always a contiguous run of the corpus.
2. Difference 2 (overflow): the official code drops whatever did not fit (the tail of the last
   sentence). By default (`carry_overflow=True`) that tail starts the next sequence of the same
   document instead, so no token of the corpus is lost; `carry_overflow=False` reproduces the official
   drop (the count of dropped tokens is recorded).

Segment ids: 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`, 0 for padding. The randomness comes from a
`random.Random` seeded from `seed` (one stream per split), so the result is a pure function of
(token cache, seq_len, seed, config).

Storage (one directory per configuration, next to the token cache), for each split in (train, heldout):
`<split>.ids.bin` (N, T) token ids (the cache's dtype), `<split>.lengths.bin` int32 (real tokens incl.
specials), `<split>.b_start.bin` int32 (first position of segment B, = length when there is no B),
`<split>.src.bin` int64 (offset in the token cache of the sequence's first text token: provenance).
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import torch

from ..store import atomic_io
from ..errors import BenchError
from ..special_tokens import SpecialIds
from .cache import entry_lock, read_meta, remove_stale_temps, short_key
from .token_cache import TokenCache

FORMAT = "electra-bench-packed"
FORMAT_VERSION = 1
SPLITS = ("train", "heldout")
_ARRAYS = ("ids", "lengths", "b_start", "src")


@dataclass(frozen=True)
class PackingConfig:
    seq_len: int
    one_segment_prob: float = 0.1  # official: random.random() < 0.1 -> one segment
    short_seq_prob: float = 0.05  # official: random.random() < 0.05 -> target ~ U[5, max_length]
    carry_overflow: bool = True  # False = the official drop of what did not fit
    heldout_fraction: float = 0.02  # of the corpus tokens, in whole documents
    heldout_min_sequences: int = 256  # ... but at least this many sequences' worth of tokens
    heldout_max_fraction: float = 0.1  # ... and never more than this fraction of the corpus

    def __post_init__(self):
        if self.seq_len < 8:
            raise BenchError(f"seq_len {self.seq_len} is too short (need >= 8 for [CLS] A [SEP] B [SEP])")


class PackedSequences:
    """Packed pre-training sequences of one split, memory-mapped read-only.

    Picklable (it pickles as its path, and reopens the memory maps on unpickling); holds no pickles.
    """

    def __init__(self, directory: str | Path, split: str):
        self.directory, self.split = Path(directory), split
        meta = read_meta(self.directory)
        if not meta or split not in meta.get("splits", {}):
            raise BenchError(f"{self.directory}: no packed split '{split}' (incomplete cache entry?)")
        info = meta["splits"][split]
        self.meta = meta
        self.seq_len: int = int(meta["seq_len"])
        self.sha256: str = info["sha256"]
        self.n: int = int(info["n_sequences"])
        self.stats: dict = info
        dtype = np.dtype(meta["dtype"])
        T = self.seq_len
        if self.n == 0:
            self._ids = np.zeros((0, T), dtype)
            self._lengths = np.zeros(0, np.int32)
            self._b_start = np.zeros(0, np.int32)
            self._src = np.zeros(0, np.int64)
        else:
            p = self.directory / split
            self._ids = np.memmap(f"{p}.ids.bin", dtype=dtype, mode="r", shape=(self.n, T))
            self._lengths = np.memmap(f"{p}.lengths.bin", dtype=np.int32, mode="r", shape=(self.n,))
            self._b_start = np.memmap(f"{p}.b_start.bin", dtype=np.int32, mode="r", shape=(self.n,))
            self._src = np.memmap(f"{p}.src.bin", dtype=np.int64, mode="r", shape=(self.n,))
        self._pos = np.arange(T, dtype=np.int32)[None, :]

    def __len__(self) -> int:
        return self.n

    def token_counts(self, vocab_size: int, chunk: int = 4096) -> np.ndarray:
        """How often each token id occurs in the real (unpadded) positions: the unigram baseline's counts."""
        counts = np.zeros(vocab_size, dtype=np.int64)
        for start in range(0, self.n, chunk):
            ids = np.asarray(self._ids[start : start + chunk], dtype=np.int64)
            real = self._pos < np.asarray(self._lengths[start : start + chunk])[:, None]
            counts += np.bincount(ids[real], minlength=vocab_size)[:vocab_size]
        return counts

    def batch(self, indices) -> dict[str, torch.Tensor]:
        """{"input_ids", "segment_ids", "attention_mask"}: (B, T) int64 tensors for these rows."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < -self.n or idx.max() >= self.n):
            raise IndexError(f"index out of range for {self.n} sequences")
        ids = np.asarray(self._ids[idx], dtype=np.int64)
        lengths = np.asarray(self._lengths[idx])[:, None]
        b_start = np.asarray(self._b_start[idx])[:, None]
        attention = self._pos < lengths
        segments = (self._pos >= b_start) & attention
        return {
            "input_ids": torch.from_numpy(ids),
            "segment_ids": torch.from_numpy(segments.astype(np.int64)),
            "attention_mask": torch.from_numpy(attention.astype(np.int64)),
        }

    def __getitem__(self, i):
        """An int gives (T,) tensors; a slice, list or array gives a batch."""
        if isinstance(i, (int, np.integer)):
            return {k: v[0] for k, v in self.batch([int(i)]).items()}
        if isinstance(i, slice):
            return self.batch(np.arange(self.n)[i])
        return self.batch(i)

    @property
    def lengths(self) -> np.ndarray:
        return self._lengths

    @property
    def src_starts(self) -> np.ndarray:
        """Offset in the token cache of each sequence's first text token (provenance, tests)."""
        return self._src

    def __getstate__(self):
        return {"directory": str(self.directory), "split": self.split}

    def __setstate__(self, state):
        self.__init__(state["directory"], state["split"])

    def __repr__(self) -> str:
        return f"PackedSequences({self.split}, n={self.n}, seq_len={self.seq_len}, sha256={self.sha256[:12]})"


def pack(cache: TokenCache, special: SpecialIds, config: PackingConfig, seed: int = 0,
         progress: bool = True) -> tuple[PackedSequences, PackedSequences]:
    """(train, heldout) packed sequences for this cache/config/seed: loaded if cached, else built."""
    key = short_key(FORMAT, FORMAT_VERSION, seed, special, *asdict(config).items())
    entry = cache.path / "packed" / key
    if not _complete(entry):
        with entry_lock(entry):
            if not _complete(entry):
                _build(entry, cache, special, config, seed, progress)
    return PackedSequences(entry, "train"), PackedSequences(entry, "heldout")


def _complete(entry: Path) -> bool:
    meta = read_meta(entry)
    if not meta or meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
        return False
    itemsize = np.dtype(meta["dtype"]).itemsize
    for split, info in meta.get("splits", {}).items():
        n = info["n_sequences"]
        if n == 0:
            continue
        want = {"ids": n * meta["seq_len"] * itemsize, "lengths": 4 * n, "b_start": 4 * n, "src": 8 * n}
        for arr, size in want.items():
            p = entry / f"{split}.{arr}.bin"
            if not p.is_file() or p.stat().st_size != size:
                return False
    return True


def choose_heldout(cache: TokenCache, config: PackingConfig, seed: int) -> tuple[list, list]:
    """Split the corpus into (train units, heldout units): lists of [start, end) sentence ranges.

    Held-out text is whole documents, drawn at random (seeded) until they hold
    max(heldout_fraction x tokens, heldout_min_sequences x seq_len) tokens, never more than
    heldout_max_fraction of the corpus. A single-document corpus is split at a sentence boundary.
    Both lists keep corpus order.
    """
    n_docs = cache.n_documents
    doc_tok = cache.document_token_counts()
    total = int(doc_tok.sum())
    want = max(config.heldout_fraction * total, config.heldout_min_sequences * config.seq_len)
    cap = config.heldout_max_fraction * total
    want = min(want, cap)
    ends = np.asarray(cache.document_ends)
    starts = np.concatenate([[0], ends[:-1]])
    if n_docs >= 2:
        order = np.random.default_rng(seed).permutation(n_docs)
        held = np.zeros(n_docs, bool)
        got = 0
        for d in order:
            if got >= want or held.sum() >= n_docs - 1:
                break
            if got + doc_tok[d] <= cap:
                held[d] = True
                got += int(doc_tok[d])
        if not held.any():  # every document is bigger than the cap: take the smallest
            held[int(np.argmin(doc_tok))] = True
        train = [(int(starts[d]), int(ends[d])) for d in np.flatnonzero(~held)]
        heldout = [(int(starts[d]), int(ends[d])) for d in np.flatnonzero(held)]
        return train, heldout
    # one document: held-out = its last sentences (at least one sentence stays in train)
    s0, s1 = int(starts[0]), int(ends[0])
    if s1 - s0 < 2:
        return [(s0, s1)], []
    sent_ends = np.asarray(cache.sentence_ends[s0:s1])
    cut = int(np.searchsorted(sent_ends, total - want, side="left")) + 1 + s0
    cut = min(max(cut, s0 + 1), s1 - 1)
    return [(s0, cut)], [(cut, s1)]


class _Writer:
    """Appends packed rows of one split to its files, hashing the content as it goes."""

    def __init__(self, stack: contextlib.ExitStack, entry: Path, split: str, T: int, dtype, pad: int,
                 rows: int = 4096):
        self.T, self.dtype, self.pad, self.rows = T, dtype, pad, rows
        self.fh = {}
        for arr in _ARRAYS:
            tmp = stack.enter_context(atomic_io.atomic_path(entry / f"{split}.{arr}.bin"))
            self.fh[arr] = stack.enter_context(open(tmp, "wb"))
        self.hash = {arr: hashlib.sha256() for arr in ("ids", "lengths", "b_start")}
        self._new_buffers()
        self.n = 0
        self.real_tokens = 0
        self.segment_pairs = 0

    def _new_buffers(self):
        self.ids = np.full((self.rows, self.T), self.pad, dtype=self.dtype)
        self.lengths = np.zeros(self.rows, np.int32)
        self.b_start = np.zeros(self.rows, np.int32)
        self.src = np.zeros(self.rows, np.int64)
        self.i = 0

    def add(self, tokens: np.ndarray, start: int, a: int, a_total: int, b: int, cls: int, sep: int):
        row, i = self.ids[self.i], self.i
        row[0] = cls
        row[1:1 + a] = tokens[start:start + a]
        row[1 + a] = sep
        length = a + 2
        if b:
            row[length:length + b] = tokens[start + a_total:start + a_total + b]
            row[length + b] = sep
            self.b_start[i] = length
            length += b + 1
            self.segment_pairs += 1
        else:
            self.b_start[i] = length
        self.lengths[i] = length
        self.src[i] = start
        self.real_tokens += length
        self.i += 1
        if self.i == self.rows:
            self.flush()

    def flush(self):
        k = self.i
        if k:
            for arr, buf in (("ids", self.ids), ("lengths", self.lengths), ("b_start", self.b_start),
                             ("src", self.src)):
                data = buf[:k].tobytes()
                self.fh[arr].write(data)
                if arr in self.hash:
                    self.hash[arr].update(data)
            self.n += k
        self._new_buffers()

    def sha256(self) -> str:
        h = hashlib.sha256(f"{FORMAT}:{self.T}:{np.dtype(self.dtype).name}\n".encode())
        for arr in ("ids", "lengths", "b_start"):
            h.update(self.hash[arr].hexdigest().encode())
        return h.hexdigest()


def pack_units(tokens: np.ndarray, sentence_ends: np.ndarray, units: Iterable[tuple[int, int]],
               writer: _Writer, special: SpecialIds, config: PackingConfig, rng: random.Random) -> dict:
    """Pack documents (units of [start, end) sentence ranges) into `writer`; returns counters."""
    packer = _Packer(tokens, writer, special, config, rng)
    ends = sentence_ends
    for s0, s1 in units:
        if s1 <= s0:
            continue
        prev = int(ends[s0 - 1]) if s0 > 0 else 0
        for e in np.asarray(ends[s0:s1]).tolist():
            if e - prev:
                packer.add_sentence(prev, e - prev)
            prev = e
        packer.end_document()
    return packer.stats


class _Packer:
    """The sequence being filled from one document's sentences: when it reaches its target length it is
    split into segments A and B (BERT's recipe, kept in text order) and written; with `carry_overflow` what
    did not fit starts the next sequence. Every random draw is made in the order of the original recipe."""

    def __init__(self, tokens: np.ndarray, writer: _Writer, special: SpecialIds, config: PackingConfig,
                 rng: random.Random) -> None:
        self.tokens, self.writer, self.special, self.config, self.rng = tokens, writer, special, config, rng
        self.stats = {"text_tokens": 0, "packed_text_tokens": 0, "dropped_tokens": 0, "padding_tokens": 0}
        self.target = config.seq_len
        self.items: list[list[int]] = []  # [start, length] pieces of the current document, contiguous in tokens
        self.cur = 0

    def add_sentence(self, start: int, length: int) -> None:
        self.items.append([start, length])
        self.cur += length
        self.stats["text_tokens"] += length
        while self.cur >= self.target:
            self._emit()

    def end_document(self) -> None:
        while self.cur > 0:  # the document ran out: what is left is one (padded) sequence, or more
            self._emit()

    def _emit(self) -> None:
        T, rng, items, stats = self.config.seq_len, self.rng, self.items, self.stats
        first_target = 100000 if rng.random() < self.config.one_segment_prob else (self.target - 3) // 2
        a_total = 0
        for _, ln in items:
            if a_total == 0 or a_total + ln < first_target or (a_total < first_target and rng.random() < 0.5):
                a_total += ln
            else:
                break  # B has started: every later sentence goes to B (keeps the text in order)
        b_total = self.cur - a_total
        a = min(a_total, T - 2)
        b = min(b_total, max(0, T - a - 3))
        self.writer.add(self.tokens, items[0][0], a, a_total, b, self.special.cls, self.special.sep)
        consumed = a if a < a_total else a_total + b
        stats["packed_text_tokens"] += a + b
        stats["padding_tokens"] += T - (a + 2 + (b + 1 if b else 0))
        if self.config.carry_overflow and consumed < self.cur:
            left = consumed
            while left:
                st, ln = items[0]
                if ln <= left:
                    items.pop(0)
                    left -= ln
                else:
                    items[0] = [st + left, ln - left]
                    left = 0
            self.cur -= consumed
        else:
            stats["dropped_tokens"] += self.cur - consumed
            self.items, self.cur = [], 0
        self.target = rng.randint(5, T) if rng.random() < self.config.short_seq_prob else T

def _build(entry: Path, cache: TokenCache, special: SpecialIds, config: PackingConfig, seed: int,
           progress: bool) -> None:
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "meta.json").unlink(missing_ok=True)
    remove_stale_temps(entry)  # left by a builder that was killed (SIGKILL/power loss)
    t0 = time.perf_counter()
    train_units, heldout_units = choose_heldout(cache, config, seed)
    dtype = cache.tokens.dtype
    splits = {}
    with contextlib.ExitStack() as stack:
        for i, (split, units) in enumerate((("train", train_units), ("heldout", heldout_units))):
            writer = _Writer(stack, entry, split, config.seq_len, dtype, special.pad)
            rng = random.Random(seed * 1_000_003 + i)
            stats = pack_units(cache.tokens, cache.sentence_ends, units, writer, special, config, rng)
            writer.flush()
            splits[split] = {
                "n_sequences": writer.n, "sha256": writer.sha256(), "documents": len(units),
                "real_tokens": writer.real_tokens, "two_segment_sequences": writer.segment_pairs, **stats,
            }
        if splits["train"]["n_sequences"] == 0:
            raise BenchError(f"{cache.meta.get('corpus_spec')}: the corpus is too small to give any "
                             f"training sequence")
    atomic_io.write_json(entry / "meta.json", {
        "format": FORMAT, "version": FORMAT_VERSION, "dtype": np.dtype(dtype).name,
        "seq_len": config.seq_len, "seed": seed, "config": asdict(config),
        "special": asdict(special), "token_cache": cache.key, "corpus_sha256": cache.corpus_sha256,
        "tokenizer_sha256": cache.tokenizer_sha256, "splits": splits,
        "build_seconds": round(time.perf_counter() - t0, 3),
    })
