"""Tokenize a corpus once into memory-mapped arrays, reused by every later run.

Entry: `<cache>/tokens/<key>/` with key = sha256(format, corpus content sha256, tokenizer sha256)[:24]:

- `tokens.bin`     every token id of the corpus in order, no specials (uint16 if vocab <= 65535, else uint32)
- `sentences.bin`  int64, the end offset (into tokens) of each sentence (= non-empty line)
- `documents.bin`  int64, the end index (into sentences) of each document
- `meta.json`      counts, dtype, the full hashes; written last, so an entry without it is incomplete

Lines that tokenize to nothing and documents left empty are dropped (counted in meta.json).
The corpus is read as a stream and tokenized in chunks of about `chunk_bytes` of text with the Rust
batch API; arrays are appended to files as they go, so memory does not grow with the corpus. Every file
is written to a temp file and renamed (atomic_io.atomic_path): an interrupted build (Ctrl-C included)
leaves nothing half-written, and the next run rebuilds it.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from ..store import atomic_io
from ..errors import BenchError
from .cache import HashMemo, cache_root, entry_lock, read_meta, remove_stale_temps, short_key
from .corpus import Corpus, open_corpus
from .tokenizer import Tokenizer

FORMAT = "electra-bench-token-cache"
FORMAT_VERSION = 1
FILES = ("tokens.bin", "sentences.bin", "documents.bin")


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 65535 else np.uint32)


@dataclass
class TokenCache:
    """A tokenized corpus, memory-mapped (read-only)."""

    path: Path
    meta: dict
    tokens: np.ndarray  # (n_tokens,) uint16/uint32
    sentence_ends: np.ndarray  # (n_sentences,) int64, end offset into tokens
    document_ends: np.ndarray  # (n_documents,) int64, end index into sentences
    hit: bool = False  # True when loaded from an existing entry
    build_seconds: float = 0.0
    _starts: np.ndarray | None = field(default=None, repr=False)

    @property
    def key(self) -> str:
        return self.path.name

    @property
    def corpus_sha256(self) -> str:
        return self.meta["corpus_sha256"]

    @property
    def tokenizer_sha256(self) -> str:
        return self.meta["tokenizer_sha256"]

    @property
    def n_tokens(self) -> int:
        return int(self.meta["n_tokens"])

    @property
    def n_sentences(self) -> int:
        return int(self.meta["n_sentences"])

    @property
    def n_documents(self) -> int:
        return int(self.meta["n_documents"])

    def document_sentences(self, d: int) -> tuple[int, int]:
        """[start, end) sentence indices of document d."""
        return (int(self.document_ends[d - 1]) if d > 0 else 0), int(self.document_ends[d])

    def sentence_tokens(self, s: int) -> tuple[int, int]:
        """[start, end) token offsets of sentence s."""
        return (int(self.sentence_ends[s - 1]) if s > 0 else 0), int(self.sentence_ends[s])

    def document_token_counts(self) -> np.ndarray:
        """Tokens per document, (n_documents,) int64."""
        ends_tok = np.asarray(self.sentence_ends)[np.asarray(self.document_ends) - 1]
        return np.diff(ends_tok, prepend=0)


def open_token_cache(entry: Path) -> TokenCache | None:
    """The entry if it is complete and consistent, else None."""
    meta = read_meta(entry)
    if not meta or meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
        return None
    try:
        dtype = np.dtype(meta["dtype"])
        sizes = {"tokens.bin": meta["n_tokens"] * dtype.itemsize, "sentences.bin": meta["n_sentences"] * 8,
                 "documents.bin": meta["n_documents"] * 8}
        if any((entry / f).stat().st_size != n for f, n in sizes.items()) or meta["n_tokens"] == 0:
            return None
        return TokenCache(
            path=entry, meta=meta,
            tokens=np.memmap(entry / "tokens.bin", dtype=dtype, mode="r", shape=(meta["n_tokens"],)),
            sentence_ends=np.memmap(entry / "sentences.bin", dtype=np.int64, mode="r",
                                    shape=(meta["n_sentences"],)),
            document_ends=np.memmap(entry / "documents.bin", dtype=np.int64, mode="r",
                                    shape=(meta["n_documents"],)),
            hit=True,
        )
    except (OSError, KeyError, TypeError, ValueError):
        return None


def build_token_cache(corpus: Corpus | str, tokenizer: Tokenizer, *, cache_dir=None, progress: bool = True,
                      chunk_bytes: int = 1 << 21, corpus_sha256: str | None = None,
                      on_chunk: Callable[[int], None] | None = None) -> TokenCache:
    """The token cache of `corpus` under `tokenizer`: loaded if present, else built (once) and saved.

    `on_chunk(n_chunks_done)` is a test hook called after each chunk is written.
    """
    if not isinstance(corpus, Corpus):
        corpus = open_corpus(corpus)
    root = cache_root(cache_dir)
    if corpus_sha256 is None:
        memo = HashMemo(root)
        corpus_sha256 = corpus.sha256(memo)
        memo.save()
    key = short_key(FORMAT, FORMAT_VERSION, corpus_sha256, tokenizer.sha256)
    entry = root / "tokens" / key
    cached = open_token_cache(entry)
    if cached is not None:
        return cached
    with entry_lock(entry):
        cached = open_token_cache(entry)  # built by another process while we waited?
        if cached is not None:
            return cached
        t0 = time.perf_counter()
        _build(entry, corpus, corpus_sha256, tokenizer, progress, chunk_bytes, on_chunk)
        built = open_token_cache(entry)
        if built is None:  # pragma: no cover - only if the file system lies
            raise BenchError(f"{entry}: token cache unreadable right after writing it")
        built.hit = False
        built.build_seconds = time.perf_counter() - t0
        return built


def _build(entry: Path, corpus: Corpus, corpus_sha: str, tokenizer: Tokenizer, progress: bool,
           chunk_bytes: int, on_chunk) -> None:
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "meta.json").unlink(missing_ok=True)  # an old/incomplete entry is invalid from now on
    remove_stale_temps(entry)  # left by a builder that was killed (SIGKILL/power loss)
    dtype = token_dtype(tokenizer.vocab_size)
    total_bytes = corpus.total_bytes
    bar = _progress_bar(progress and total_bytes > 0, f"tokenizing {_short(corpus.spec)}", total_bytes)
    with contextlib.ExitStack() as stack:
        prog, task = stack.enter_context(bar)
        tmp = {name: stack.enter_context(atomic_io.atomic_path(entry / name)) for name in FILES}
        writer = _ChunkWriter({name: stack.enter_context(open(tmp[name], "wb")) for name in FILES},
                              tokenizer, dtype, chunk_bytes, on_chunk)
        for line in corpus.lines(lambda done: prog.update(task, completed=done)):
            writer.add(line)
        writer.finish()
        stats = writer.stats
        if stats["n_tokens"] == 0:
            raise BenchError(f"{corpus.spec}: the corpus tokenizes to no tokens at all "
                             f"({stats['n_lines']} non-empty lines)")
        prog.update(task, completed=total_bytes)
    atomic_io.write_json(entry / "meta.json", {
        "format": FORMAT, "version": FORMAT_VERSION, "dtype": dtype.name,
        "corpus_spec": corpus.spec, "corpus_sha256": corpus_sha,
        "corpus_files": len(corpus.files), "corpus_bytes": total_bytes,
        "tokenizer_sha256": tokenizer.sha256, "vocab_size": tokenizer.vocab_size,
        "created_unix": int(time.time()), **stats,
    })


class _ChunkWriter:
    """Streams a corpus's lines into the cache files: lines are tokenized in chunks of about `chunk_bytes`
    (one `encode_batch` call each); an empty line ends a document. Empty sentences and documents are
    dropped and counted in `stats`."""

    def __init__(self, files: dict, tokenizer: Tokenizer, dtype, chunk_bytes: int, on_chunk) -> None:
        self.files, self.tokenizer, self.dtype = files, tokenizer, dtype
        self.chunk_bytes, self.on_chunk = chunk_bytes, on_chunk
        self.stats = {"n_tokens": 0, "n_sentences": 0, "n_documents": 0, "n_lines": 0, "dropped_empty_lines": 0,
                      "dropped_empty_documents": 0, "text_chars": 0, "unk_tokens": 0}
        self.lines: list[str] = []
        self.boundaries: list[int] = []  # document ends, as a number of lines into `lines`
        self.size = 0
        self.last_doc_end = 0  # in sentences
        self.n_chunks = 0

    def add(self, line: str) -> None:
        if not line:
            self.boundaries.append(len(self.lines))
            return
        self.lines.append(line)
        self.size += len(line)
        self.stats["n_lines"] += 1
        self.stats["text_chars"] += len(line)
        if self.size >= self.chunk_bytes:
            self.flush()

    def finish(self) -> None:
        self.boundaries.append(len(self.lines))  # the last document ends with the corpus
        self.flush()

    def flush(self) -> None:
        stats = self.stats
        if self.lines:
            ids = self.tokenizer.encode_batch(self.lines)
            lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
            n = int(lengths.sum())
            flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=self.dtype, count=n)
            keep = lengths > 0
            ends = stats["n_tokens"] + np.cumsum(lengths[keep])
            self.files["tokens.bin"].write(flat.tobytes())
            self.files["sentences.bin"].write(ends.astype(np.int64).tobytes())
            kept_before = np.concatenate([[0], np.cumsum(keep)])  # kept sentences among the first i lines
            doc_ends = [stats["n_sentences"] + int(kept_before[b]) for b in self.boundaries]
            stats["unk_tokens"] += int(np.count_nonzero(flat == self.tokenizer.special.unk))
            stats["n_tokens"] += n
            stats["n_sentences"] += int(keep.sum())
            stats["dropped_empty_lines"] += int((~keep).sum())
        else:
            doc_ends = [stats["n_sentences"]] * len(self.boundaries)
        for d in doc_ends:
            if d > self.last_doc_end:
                self.files["documents.bin"].write(np.int64(d).tobytes())
                stats["n_documents"] += 1
                self.last_doc_end = d
            else:
                stats["dropped_empty_documents"] += 1
        self.lines, self.boundaries, self.size = [], [], 0
        self.n_chunks += 1
        if self.on_chunk is not None:
            self.on_chunk(self.n_chunks)


@contextlib.contextmanager
def _progress_bar(enabled: bool, description: str, total: int):
    """(Progress, task id) — a rich bytes progress bar on stderr, or an inert one when disabled."""
    prog = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    TimeRemainingColumn(), console=Console(stderr=True), transient=True,
                    disable=not enabled or not sys.stderr.isatty())
    with prog:
        yield prog, prog.add_task(description, total=max(total, 1))


def _short(spec: str, n: int = 40) -> str:
    return spec if len(spec) <= n else "…" + spec[-(n - 1):]
