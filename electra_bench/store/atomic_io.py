"""Atomic file writes: a reader never sees a half-written result, cache or checkpoint.

Everything is written to a temporary file in the destination directory, flushed, fsynced and renamed
over the target (rename is atomic on POSIX within one file system).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from ..errors import BenchError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# mkstemp creates files 0600; results are shared, so a finished file gets the mode any new file of
# this process gets (0666 minus the umask), as the append-only logs do.
FILE_MODE = 0o666 & ~_umask()


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to `path`; on success rename it over `path` (with the umask's file
    mode), on error delete it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp_path, FILE_MODE)
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=json_default) + "\n")


def append_jsonl(path: str | Path, row: dict) -> None:
    """Append one line. A crash can leave a trailing partial line; the next append first drops it (and
    says so on stderr), so complete lines are never glued to a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    repair_torn_tail(path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row, sort_keys=True, default=json_default) + "\n")


def repair_torn_tail(path: str | Path) -> int:
    """Truncate an append-only file after its last complete line; returns the bytes dropped."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        back = min(size, 1 << 20)
        f.seek(size - back)
        tail = f.read(back)
        cut = tail.rfind(b"\n")
        keep = size - back + cut + 1 if cut >= 0 else (0 if back == size else size)
        if keep == size:
            return 0
        f.truncate(keep)
    print(f"warning: {path}: dropped a torn last line ({size - keep} bytes) left by an interrupted write",
          file=sys.stderr)
    return size - keep


def jsonl_rows(path: str | Path, what: str = "JSON line", on_torn=None) -> Iterator[tuple[int, object]]:
    """(line number, parsed value) for every non-empty line of a JSONL file, in file order, so that a
    caller validating each row reports the first bad line of either kind. A torn last line (no newline
    after it: an append cut short by a crash) is skipped, after `on_torn(line number)` when given; any
    other malformed line is a BenchError naming file:line and `what`; unreadable text is one too."""
    from ..errors import at

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"{at(path)}: cannot read {what}s ({e})") from None
    lines = text.split("\n")
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) and not text.endswith("\n"):
                if on_torn is not None:
                    on_torn(i)
                continue
            raise BenchError(f"{at(path, i)}: malformed {what}") from None
        yield i, row


def read_jsonl(path: str | Path) -> list[dict]:
    """Read a JSONL file (jsonl_rows: a torn last line skipped, any other malformed line an error)."""
    return [row for _, row in jsonl_rows(path)]


def read_json(path: str | Path, what: str, *, missing: str = "not found", object_only: bool = False) -> Any:
    """A JSON file's content; a missing, unreadable or malformed file (or, with `object_only`, anything but a
    JSON object) is one BenchError naming file:line and `what`."""
    from ..errors import at

    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{at(path)}: {what} {missing}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchError(f"{at(path, e.lineno)}: {what} is not valid JSON ({e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"{at(path)}: cannot read {what} ({e})") from None
    if object_only and not isinstance(data, dict):
        raise BenchError(f"{at(path)}: {what} is not a JSON object")
    return data


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def remove_stale_temp_files(directory: str | Path) -> int:
    """Delete the temp files of atomic writes (`.<name>.*.tmp`) under `directory`: what a process
    killed mid-write leaves. Only for a directory this process holds the lock of. Returns the count."""
    n = 0
    for p in Path(directory).rglob(".*.tmp"):
        if p.is_file():
            p.unlink(missing_ok=True)
            n += 1
    return n
