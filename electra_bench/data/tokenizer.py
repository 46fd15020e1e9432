"""WordPiece tokenizer with BERT's uncased normalisation, on top of the Rust `tokenizers` library.

- `Tokenizer.from_vocab_file(path)`: a BERT `vocab.txt` (one token per line, id = line number - 1).
- `Tokenizer.train(texts, vocab_size)`: a new WordPiece vocab; the special tokens come first in the
  order of `special_tokens.ALL`, so their ids are `special_tokens.DEFAULT`.
- `save(dir)` / `Tokenizer.load(dir)`: `vocab.txt` + `electra_bench_tokenizer.json` (format, sha256).
- `save_hf(dir)` / `Tokenizer.from_hf(dir)`: the files transformers' `AutoTokenizer` reads
  (`tokenizer.json`, `vocab.txt`, `tokenizer_config.json`, `special_tokens_map.json`), both ways.

Normalisation is BERT's: clean control characters, pad CJK characters with spaces, lowercase and
strip accents (uncased, every tokenizer we train; `lowercase=False` for an imported cased model);
pre-tokenisation splits on whitespace and punctuation; words over 100 characters become [UNK].
`encode` never adds special tokens: the packer and `encode_examples` add them.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from tokenizers import Tokenizer as _RustTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

from ..store import atomic_io
from ..errors import BenchError, at
from ..special_tokens import ALL, SpecialIds
from .corpus import iter_text_lines

META_FILE = "electra_bench_tokenizer.json"
VOCAB_FILE = "vocab.txt"
FORMAT = "electra-bench-wordpiece"
FORMAT_VERSION = 1
NORMALIZATION = "bert-uncased"
CASED_NORMALIZATION = "bert-cased"


class Tokenizer:
    """A WordPiece tokenizer; ids are looked up in its own vocab (never assumed)."""

    def __init__(self, vocab: Sequence[str], *, source: str = "<memory>", lowercase: bool = True):
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
        # strip_accents=None: accents are stripped exactly when lower-casing, as BERT's tokenizer does
        tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                    strip_accents=None, lowercase=lowercase)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece(prefix="##")
        self._tok = tok
        self.lowercase = lowercase
        # an uncased tokenizer is identified by its vocab alone (every cache key and result made before
        # cased ones existed keeps its hash); a cased one adds its normalisation
        identity = _vocab_text(vocab) + ("" if lowercase else f"normalization={CASED_NORMALIZATION}\n")
        self._sha256 = hashlib.sha256(identity.encode("utf-8")).hexdigest()

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_vocab_file(cls, path: str | os.PathLike, *, lowercase: bool = True) -> "Tokenizer":
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
        return cls(vocab, source=str(path), lowercase=lowercase)

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
            "format": FORMAT, "version": FORMAT_VERSION,
            "normalization": NORMALIZATION if self.lowercase else CASED_NORMALIZATION,
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
        if meta.get("normalization") not in (NORMALIZATION, CASED_NORMALIZATION):
            raise BenchError(f"{meta_path}: unsupported normalization {meta.get('normalization')!r}")
        tok = cls.from_vocab_file(d / VOCAB_FILE, lowercase=meta["normalization"] == NORMALIZATION)
        if meta.get("sha256") != tok.sha256:
            raise BenchError(f"{d / VOCAB_FILE}: vocab does not match the sha256 recorded in {META_FILE} "
                             f"(edited after saving?)")
        tok.source = str(d)
        return tok

    def save_hf(self, directory: str | os.PathLike, *, model_max_length: int, tokenizer_class: str) -> list[Path]:
        """The files transformers' `AutoTokenizer.from_pretrained(directory)` reads, written atomically:
        `tokenizer.json` (this tokenizer, plus BERT's post-processor, so that transformers adds [CLS]/[SEP]
        as `encode_examples` does), `vocab.txt`, `tokenizer_config.json`, `special_tokens_map.json`."""
        d = Path(directory)
        tok = _RustTokenizer.from_str(self._tok.to_str())
        cls_, sep = self.id_to_token(self.special.cls), self.id_to_token(self.special.sep)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls_}:0 $A:0 {sep}:0", pair=f"{cls_}:0 $A:0 {sep}:0 $B:1 {sep}:1",
            special_tokens=[(cls_, self.special.cls), (sep, self.special.sep)])
        specials = {f"{name}_token": self.id_to_token(getattr(self.special, name))
                    for name in ("unk", "sep", "pad", "cls", "mask")}
        written = [d / "tokenizer.json", d / VOCAB_FILE, d / "tokenizer_config.json", d / "special_tokens_map.json"]
        atomic_io.write_text(written[0], tok.to_str(pretty=True))
        atomic_io.write_text(written[1], _vocab_text(self._vocab))
        atomic_io.write_json(written[2], {
            "tokenizer_class": tokenizer_class, "do_lower_case": self.lowercase, "strip_accents": None,
            "tokenize_chinese_chars": True, "model_max_length": model_max_length,
            "clean_up_tokenization_spaces": True, **specials})
        atomic_io.write_json(written[3], specials)
        return written

    @classmethod
    def from_hf(cls, directory: str | os.PathLike) -> "Tokenizer":
        """The WordPiece tokenizer of a transformers model folder: the vocab inside `tokenizer.json` (else
        `vocab.txt`), lower-cased as `tokenizer_config.json` says (`do_lower_case`, default True as
        BERT's tokenizer), else as tokenizer.json's normaliser says. Anything that is not a BERT-style
        WordPiece tokenizer is refused in one line."""
        d = Path(directory)
        config = _read_json_if_present(d / "tokenizer_config.json")
        tok_json = _read_json_if_present(d / "tokenizer.json")
        lowercase = config.get("do_lower_case")
        if tok_json:
            model = tok_json.get("model") or {}
            if model.get("type") not in (None, "WordPiece"):
                raise BenchError(f"{d / 'tokenizer.json'}: a {model.get('type')} tokenizer, not WordPiece: "
                                 f"electra-bench reads BERT/ELECTRA WordPiece tokenizers only")
            norm = tok_json.get("normalizer") or {}
            if lowercase is None and norm.get("type") == "BertNormalizer":
                lowercase = norm.get("lowercase")
        lowercase = True if lowercase is None else bool(lowercase)
        # tokenizer.json first: it is what transformers' (fast) tokenizers read when both files are there
        if tok_json and isinstance((tok_json.get("model") or {}).get("vocab"), dict):
            ordered = sorted(tok_json["model"]["vocab"].items(), key=lambda kv: kv[1])
            if [i for _, i in ordered] != list(range(len(ordered))):
                raise BenchError(f"{d / 'tokenizer.json'}: the WordPiece vocab's ids are not 0..{len(ordered) - 1}")
            tok = cls([t for t, _ in ordered], source=str(d / "tokenizer.json"), lowercase=lowercase)
        elif (d / VOCAB_FILE).is_file():
            tok = cls.from_vocab_file(d / VOCAB_FILE, lowercase=lowercase)
        else:
            raise BenchError(f"{d}: no tokenizer (expected vocab.txt or a WordPiece tokenizer.json)")
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

    def encode_words(self, texts: Sequence[str]) -> list[tuple[list[int], list[int]]]:
        """(token ids, index of the word each token belongs to) per text, without special tokens; words
        are the pre-tokenizer's units (whitespace- and punctuation-separated), so the pieces of one word
        share an index (what the zero-shot reading's whole-word masking needs)."""
        if not isinstance(texts, list):
            texts = list(texts)
        return [(e.ids, [-1 if w is None else w for w in e.word_ids])
                for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def tokenize(self, text: str) -> list[str]:
        return self._tok.encode(text, add_special_tokens=False).tokens

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special)

    def __repr__(self) -> str:
        return f"Tokenizer(vocab_size={self.vocab_size}, sha256={self.sha256[:12]}, source={self.source!r})"


def _read_json_if_present(path: Path) -> dict:
    """A JSON object file's content, {} when absent; malformed is a BenchError naming file:line."""
    return atomic_io.read_json(path, path.name, object_only=True) if path.is_file() else {}


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
