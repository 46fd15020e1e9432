"""Pre-training text: where it is, how it is split into documents and lines, and streaming it.

A corpus is given as
- a file (plain, or compressed `.gz` / `.xz` / `.bz2`, recognised by their magic bytes),
- a directory (every non-hidden file below it, recursively, in sorted relative-path order),
- a glob (`data/*.txt.gz`, `**` allowed), or
- `hf:<dataset>[:<config>]`: the `train` split of a Hugging Face dataset already in the local cache
  (needs the `hf` extra; read offline, never downloaded here).

Text is UTF-8 with one sentence or paragraph per line. Documents are separated by blank lines
(whitespace-only lines count as blank) and every file starts a new document, exactly as the official
ELECTRA `build_pretraining_dataset.py` reads its corpus. Everything is streamed line by line: memory
does not grow with the size of the corpus. Lines longer than 1 MiB are cut into pieces at a space.
"""

from __future__ import annotations

import bz2
import glob as globlib
import gzip
import hashlib
import lzma
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterator

from ..store.atomic_io import sha256_file
from ..errors import BenchError, at

MAX_LINE_BYTES = 1 << 20
EXPECTED = "expected UTF-8 text, one sentence or paragraph per line, blank lines between documents"
_HASH_FORMAT = "electra-bench-corpus-v1"

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bz2"))


@dataclass(frozen=True)
class Corpus:
    """A resolved corpus: its files in reading order (or a cached HF dataset)."""

    spec: str
    files: tuple[Path, ...] = ()
    hf_name: str | None = None
    hf_config: str | None = None

    @property
    def is_hf(self) -> bool:
        return self.hf_name is not None

    @property
    def total_bytes(self) -> int:
        """Bytes on disk (compressed size for compressed files); 0 for an HF dataset."""
        return sum(p.stat().st_size for p in self.files)

    def sha256(self, memo=None) -> str:
        """Content hash: the files' bytes in reading order (independent of their names and location)."""
        h = hashlib.sha256(_HASH_FORMAT.encode() + b"\n")
        if self.is_hf:
            ds = _hf_dataset(self.hf_name, self.hf_config)
            h.update(f"hf:{self.hf_name}:{self.hf_config}:{getattr(ds, '_fingerprint', '')}\n".encode())
            return h.hexdigest()
        for p in self.files:
            digest = memo.sha256(p) if memo is not None else sha256_file(p)
            h.update(f"{digest}\n".encode())
        return h.hexdigest()

    def lines(self, progress: Callable[[int], None] | None = None) -> Iterator[str]:
        """Stripped non-empty lines, with "" marking each document boundary.

        "" is never first, never last and never repeated. `progress(bytes_done)` is called about every
        MiB with the on-disk bytes consumed so far. Raises BenchError on unreadable input, and at the end
        if the corpus held no text at all.
        """
        pending, any_text = False, False
        for line in self._raw_lines(progress):
            if line:
                if pending and any_text:
                    yield ""
                pending, any_text = False, True
                yield line
            else:
                pending = True
        if not any_text:
            where = self.spec if not self.files or len(self.files) > 1 else str(self.files[0])
            raise BenchError(f"{where}: the corpus holds no text ({len(self.files)} file(s), all empty or "
                             f"blank); {EXPECTED}")

    def documents(self) -> Iterator[list[str]]:
        """Documents as lists of lines (convenience for small corpora; a document is held in memory)."""
        doc: list[str] = []
        for line in self.lines():
            if line:
                doc.append(line)
            else:
                yield doc
                doc = []
        if doc:
            yield doc

    def texts(self, progress: Callable[[int], None] | None = None) -> Iterator[str]:
        """Non-empty lines only (for tokenizer training)."""
        return (line for line in self.lines(progress) if line)

    # -- internals -------------------------------------------------------------------------------

    def _raw_lines(self, progress: Callable[[int], None] | None) -> Iterator[str]:
        """Stripped lines, "" for blank lines and at the end of every file (document boundary)."""
        if self.is_hf:
            yield from _hf_lines(self.hf_name, self.hf_config)
            return
        done = 0
        for path in self.files:
            yield from _file_lines(path, progress, done)
            yield ""
            done += path.stat().st_size
            if progress is not None:
                progress(done)


def open_corpus(spec: str | os.PathLike) -> Corpus:
    """Resolve a corpus spec (file, directory, glob, `hf:name[:config]`) without reading it."""
    s = str(spec)
    if s.startswith("hf:"):
        rest = s[3:]
        if not rest:
            raise BenchError(f"{s}: expected hf:<dataset>[:<config>]")
        name, _, config = rest.partition(":")
        return Corpus(spec=s, hf_name=name, hf_config=config or None)
    path = Path(s).expanduser()
    if path.is_file():
        return Corpus(spec=s, files=(path,))
    if path.is_dir():
        files = _dir_files(path)
        if not files:
            raise BenchError(f"{path}: the directory holds no (non-hidden) files; {EXPECTED}")
        return Corpus(spec=s, files=tuple(files))
    if any(c in s for c in "*?["):
        files: list[Path] = []
        for m in sorted(globlib.glob(os.path.expanduser(s), recursive=True)):
            p = Path(m)
            if p.is_file():
                files.append(p)
            elif p.is_dir():
                files.extend(_dir_files(p))
        files = list(dict.fromkeys(files))
        if not files:
            raise BenchError(f"{s}: no file matches this glob; {EXPECTED}")
        return Corpus(spec=s, files=tuple(files))
    if path.exists():
        raise BenchError(f"{path}: not a regular file or directory; {EXPECTED}")
    raise BenchError(f"{path}: no such file or directory (expected a text file, a directory, a glob "
                     f"or hf:<dataset>[:<config>])")


def _dir_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if not name.startswith("."):
                p = Path(dirpath) / name
                if p.is_file():
                    out.append(p)
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def compression_of(path: Path) -> str | None:
    """'gzip' / 'xz' / 'bz2' from the file's magic bytes, or None for plain text."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError as e:
        raise BenchError(f"{path}: cannot read ({e.strerror})") from None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return None


def open_binary(path: Path) -> tuple[IO[bytes], IO[bytes], str | None]:
    """(raw file, decompressed stream, compression kind) for a possibly compressed file."""
    kind = compression_of(path)
    raw = open(path, "rb")
    if kind == "gzip":
        stream: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb")
    elif kind == "xz":
        stream = lzma.LZMAFile(raw, mode="rb")
    elif kind == "bz2":
        stream = bz2.BZ2File(raw, mode="rb")
    else:
        stream = raw
    return raw, stream, kind


def iter_text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, decoded line without its newline) for a (possibly compressed) UTF-8 text file.

    Raises BenchError naming file:line (and the byte offset) for non-UTF-8 or binary content.
    Used by the corpus reader and the task-file readers.
    """
    for lineno, _, text in _decoded_lines(path, None, 0, split_long=False):
        yield lineno, text


def _file_lines(path: Path, progress, done: int) -> Iterator[str]:
    first = True
    for _, _, text in _decoded_lines(path, progress, done, split_long=True):
        if first:
            text = text.lstrip("\ufeff")
            first = False
        yield text.strip()


def _decoded_lines(path: Path, progress, done: int, split_long: bool) -> Iterator[tuple[int, int, str]]:
    """(line number, byte offset in the decompressed stream, decoded text) for each line (or piece)."""
    try:
        raw, stream, kind = open_binary(path)
    except OSError as e:
        raise BenchError(f"{path}: cannot open ({e.strerror})") from None
    lineno, pos, next_report, carry = 1, 0, 1 << 20, b""
    try:
        with raw, stream:
            while True:
                try:
                    chunk = stream.readline(max(1, MAX_LINE_BYTES - len(carry))) if split_long else stream.readline()
                except (OSError, EOFError, lzma.LZMAError, zlib.error) as e:
                    raise BenchError(f"{path}: corrupt or truncated {kind or 'file'} "
                                     f"({e}) near line {lineno}; {EXPECTED}") from None
                if not chunk and not carry:
                    break
                piece = carry + chunk
                carry = b""
                ends_line = piece.endswith(b"\n") or not chunk
                if not ends_line and split_long and len(piece) >= MAX_LINE_BYTES:
                    cut = piece.rfind(b" ")
                    if cut <= 0:  # no space: cut at a UTF-8 character boundary
                        cut = _char_boundary(piece)
                    piece, carry = piece[:cut], piece[cut:]
                if b"\x00" in piece:
                    off = pos + piece.index(b"\x00")
                    raise BenchError(f"{at(path, lineno)}: NUL byte at byte offset {off}: this looks like a "
                                     f"binary file; {EXPECTED}")
                try:
                    text = piece.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise BenchError(f"{at(path, lineno)}: invalid UTF-8 byte 0x{piece[e.start]:02x} at byte "
                                     f"offset {pos + e.start}{' (decompressed)' if kind else ''}; "
                                     f"{EXPECTED}") from None
                yield lineno, pos, text.rstrip("\r\n")
                pos += len(piece)
                if ends_line:
                    lineno += 1
                if progress is not None and pos >= next_report:
                    next_report = pos + (1 << 20)
                    try:
                        progress(done + raw.tell())
                    except (OSError, ValueError):
                        pass
                if not chunk:
                    break
    except BenchError:
        raise
    except OSError as e:
        raise BenchError(f"{path}: read error ({e.strerror or e})") from None


def _char_boundary(piece: bytes) -> int:
    """The largest cut <= len(piece) that does not split a UTF-8 character (and is > 0)."""
    i = len(piece) - 1
    while i > 0 and (piece[i] & 0xC0) == 0x80:
        i -= 1
    lead = piece[i]
    need = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    cut = len(piece) if len(piece) - i >= need else i
    return cut if cut > 0 else len(piece)


# -- Hugging Face datasets (optional) -------------------------------------------------------------


def require_datasets():
    """Import HF `datasets` in offline mode, or explain how to install it."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    try:
        import datasets  # type: ignore  # optional (the `hf` extra), imported only for hf: corpora
    except ImportError:
        raise BenchError("hf: sources need the Hugging Face `datasets` package: "
                         "pip install 'electra-bench[hf]' (or pip install datasets)") from None
    try:
        datasets.config.HF_DATASETS_OFFLINE = True
    except AttributeError:  # pragma: no cover
        pass
    return datasets


def _hf_dataset(name: str, config: str | None, split: str = "train"):
    datasets = require_datasets()
    try:
        return datasets.load_dataset(name, config, split=split)
    except Exception as e:  # noqa: BLE001 - datasets raises many types
        raise BenchError(f"hf:{name}{':' + config if config else ''}: not available from the local HF cache "
                         f"({type(e).__name__}: {e}); download it once with datasets.load_dataset") from None


def _hf_lines(name: str, config: str | None) -> Iterator[str]:
    ds = _hf_dataset(name, config)
    features = getattr(ds, "features", {}) or {}
    column = "text" if "text" in features else next(
        (k for k, v in features.items() if getattr(v, "dtype", None) in ("string", "large_string")), None)
    if column is None:
        raise BenchError(f"hf:{name}: no text column (expected a 'text' column or any string column)")
    for row in ds:
        for line in str(row[column] or "").split("\n"):
            yield line.strip()
        yield ""
