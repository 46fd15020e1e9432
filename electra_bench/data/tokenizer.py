"""WordPiece tokenizer with BERT's uncased normalisation, on top of the Rust `tokenizers` library.

- `Tokenizer.from_vocab_file(path)`: a BERT `vocab.txt` (one token per line, id = line number - 1).
- `Tokenizer.train(texts, vocab_size)`: a new WordPiece vocab; the special tokens come first in the
  order of `special_tokens.ALL`, so their ids are `special_tokens.DEFAULT`.
- `save(dir)` / `Tokenizer.load(dir)`: `vocab.txt` + `electra_bench_tokenizer.json` (format, sha256).

Normalisation is BERT uncased: clean control characters, pad CJK characters with spaces, lowercase,
strip accents; pre-tokenisation splits on whitespace and punctuation; words over 100 characters
become [UNK]. `encode` never adds special tokens: the packer and `encode_examples` add them.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from tokenizers import Tokenizer as _RustTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

from .. import atomic_io
from ..errors import BenchError, at
from ..special_tokens import ALL, SpecialIds
from .corpus import iter_text_lines

META_FILE = "electra_bench_tokenizer.json"
VOCAB_FILE = "vocab.txt"
FORMAT = "electra-bench-wordpiece"
FORMAT_VERSION = 1
NORMALIZATION = "bert-uncased"


class Tokenizer:
    """A WordPiece tokenizer; ids are looked up in its own vocab (never assumed)."""

    def __init__(self, vocab: Sequence[str], *, source: str = "<memory>"):
        vocab = list(vocab)
        self._vocab = vocab
        self._index = {t: i for i, t in enumerate(vocab)}
        if len(self._index) != len(vocab):
            raise BenchError(f"{source}: the vocab has duplicate tokens")
        missing = [t for t in ALL if t not in self._index]
        if missing:
            raise BenchError(f"{source}: the vocab lacks the special token(s) {', '.join(missing)}; "
                             f"expected a BERT WordPiece vocab with {', '.join(ALL)}")
        self.source = source
        self._special = SpecialIds.from_vocab(self._index.__getitem__)
        tok = _RustTokenizer(models.WordPiece(vocab=dict(self._index), unk_token="[UNK]",
                                              max_input_chars_per_word=100))
        tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                    strip_accents=None, lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        self._tok = tok
        self._sha256 = hashlib.sha256(_vocab_text(vocab).encode("utf-8")).hexdigest()

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_vocab_file(cls, path: str | os.PathLike) -> "Tokenizer":
        """Read a BERT `vocab.txt`; anything else is a BenchError naming file:line."""
        path = Path(path)
        if not path.is_file():
            raise BenchError(f"{path}: no such vocab file (expected a BERT vocab.txt, one token per line)")
        vocab: list[str] = []
        first_seen: dict[str, int] = {}
        blank_at: int | None = None
        for lineno, line in iter_text_lines(path):
            token = line.strip()
            if lineno == 1:
                token = token.lstrip("\ufeff")
            if not token:
                blank_at = blank_at or lineno
                continue
            if blank_at is not None:
                raise BenchError(f"{at(path, blank_at)}: empty line inside the vocab; expected one token per line")
            if any(c.isspace() for c in token):
                hint = " (this looks like JSON, not a vocab.txt)" if vocab and vocab[0] in ("{", "[") else ""
                raise BenchError(f"{at(path, lineno)}: {token[:40]!r} is not a single token{hint}; "
                                 f"expected a BERT vocab.txt, one token per line")
            if token in first_seen:
                raise BenchError(f"{at(path, lineno)}: duplicate token {token!r} (first on line "
                                 f"{first_seen[token]}); expected a BERT vocab.txt")
            first_seen[token] = lineno
            vocab.append(token)
        if not vocab:
            raise BenchError(f"{path}: the vocab file is empty; expected a BERT vocab.txt, one token per line")
        return cls(vocab, source=str(path))

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, *, min_frequency: int = 2,
              max_chars: int | None = None) -> "Tokenizer":
        """Train a WordPiece vocab of (at most) `vocab_size` tokens on `texts` (deterministic).

        Specials come first (ids 0..4 = special_tokens.DEFAULT). A small corpus can yield fewer than
        `vocab_size` tokens: `vocab_size` of the result is the truth. `max_chars` stops reading early.
        """
        if vocab_size < len(ALL) + 1:
            raise BenchError(f"vocab_size {vocab_size} is too small (need > {len(ALL)} for the specials)")
        with tempfile.TemporaryDirectory(prefix="electra-bench-tok-") as tmp:
            spool = Path(tmp) / "texts.txt"
            n_texts = 0
            with open(spool, "w", encoding="utf-8") as f:
                for text in _capped(texts, max_chars):
                    f.write(text.replace("\n", " ").replace("\r", " ") + "\n")
                    n_texts += 1
            if n_texts == 0:
                raise BenchError("cannot train a tokenizer: no text")
            # The Rust trainer numbers the "##c" continuation characters in hash-map order, which makes
            # tie-breaking between equal-count merges (and so the vocab) vary between runs. Pass 1 finds
            # the alphabet; pass 2 fixes the ids of the "##c" tokens (sorted) by passing them as
            # specials, which makes training deterministic. They stay ordinary vocab entries.
            alphabet = _train_rust(spool, len(ALL), min_frequency, list(ALL))
            continuation = sorted(t for t in alphabet if t.startswith("##") and len(t) > 2)
            vocab = _train_rust(spool, vocab_size, min_frequency, list(ALL) + continuation)
        if vocab[: len(ALL)] != list(ALL):  # pragma: no cover - guaranteed by the trainer
            raise RuntimeError(f"trainer put specials at {vocab[:len(ALL)]}")
        return cls(vocab, source="<trained>")

    def save(self, directory: str | os.PathLike) -> Path:
        """Write `vocab.txt` and `electra_bench_tokenizer.json` into `directory` (atomically)."""
        d = Path(directory)
        atomic_io.write_text(d / VOCAB_FILE, _vocab_text(self._vocab))
        atomic_io.write_json(d / META_FILE, {
            "format": FORMAT, "version": FORMAT_VERSION, "normalization": NORMALIZATION,
            "vocab_size": self.vocab_size, "sha256": self.sha256,
            "special": {name: getattr(self.special, name) for name in ("pad", "unk", "cls", "sep", "mask")},
        })
        return d

    @classmethod
    def load(cls, directory: str | os.PathLike) -> "Tokenizer":
        """Load what `save` wrote; the vocab must match the recorded sha256."""
        d = Path(directory)
        meta_path = d / META_FILE
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BenchError(f"{meta_path}: missing; expected a tokenizer saved by electra-bench "
                             f"({VOCAB_FILE} + {META_FILE})") from None
        except (OSError, ValueError) as e:
            raise BenchError(f"{meta_path}: unreadable tokenizer metadata ({e})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise BenchError(f"{meta_path}: not an electra-bench tokenizer (format {meta.get('format')!r})"
                             if isinstance(meta, dict) else f"{meta_path}: not an electra-bench tokenizer")
        if meta.get("normalization") != NORMALIZATION:
            raise BenchError(f"{meta_path}: unsupported normalization {meta.get('normalization')!r}")
        tok = cls.from_vocab_file(d / VOCAB_FILE)
        if meta.get("sha256") != tok.sha256:
            raise BenchError(f"{d / VOCAB_FILE}: vocab does not match the sha256 recorded in {META_FILE} "
                             f"(edited after saving?)")
        tok.source = str(d)
        return tok

    @staticmethod
    def is_saved_in(directory: str | os.PathLike) -> bool:
        d = Path(directory)
        return (d / META_FILE).is_file() and (d / VOCAB_FILE).is_file()

    # -- properties -------------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    @property
    def special(self) -> SpecialIds:
        return self._special

    @property
    def sha256(self) -> str:
        """sha256 of the vocab (its vocab.txt text): identifies the tokenizer in caches and results."""
        return self._sha256

    @property
    def vocab(self) -> list[str]:
        return list(self._vocab)

    def token_to_id(self, token: str) -> int | None:
        return self._index.get(token)

    def id_to_token(self, i: int) -> str:
        return self._vocab[i]

    # -- encoding ---------------------------------------------------------------------------------

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, without special tokens."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of many texts at once (Rust, parallel, no offsets), without special tokens."""
        if not isinstance(texts, list):
            texts = list(texts)
        return [e.ids for e in self._tok.encode_batch_fast(texts, add_special_tokens=False)]

    def tokenize(self, text: str) -> list[str]:
        return self._tok.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special)

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, sha256={self.sha256[:12]}, source={self.source!r})"


def _vocab_text(vocab: Sequence[str]) -> str:
    return "".join(t + "\n" for t in vocab)


def _capped(texts: Iterable[str], max_chars: int | None) -> Iterator[str]:
    n = 0
    for t in texts:
        if max_chars is not None and n >= max_chars:
            return
        n += len(t)
        yield t


def _train_rust(spool: Path, vocab_size: int, min_frequency: int, specials: list[str]) -> list[str]:
    """One run of the Rust WordPiece trainer on a text file; the vocab in id order."""
    base = Tokenizer(list(ALL))._tok  # same normaliser / pre-tokeniser as every Tokenizer
    base.model = models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100)
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=specials, show_progress=False,
                                        continuing_subword_prefix="##")
    base.train([str(spool)], trainer=trainer)
    got = base.get_vocab(with_added_tokens=False)
    return [t for t, _ in sorted(got.items(), key=lambda kv: kv[1])]
