"""Where derived data lives, and the small helpers every cache entry uses.

Root: the `cache_dir` argument, else `$ELECTRA_BENCH_CACHE`, else `~/.cache/electra-bench`.
Every entry is a directory named by a content key; its `meta.json` is written last (atomically), so an
entry without `meta.json` is incomplete and is rebuilt, and a reader never sees a half-written file
(every file goes through `atomic_io.atomic_path`: temp file + fsync + rename, deleted on any exception,
Ctrl-C included).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Iterator

from ..store import atomic_io
from ..errors import BenchError

ENV_VAR = "ELECTRA_BENCH_CACHE"


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache root: argument > $ELECTRA_BENCH_CACHE > ~/.cache/electra-bench (created if missing)."""
    if cache_dir is not None:
        root = Path(cache_dir)
    elif os.environ.get(ENV_VAR):
        root = Path(os.environ[ENV_VAR])
    else:
        root = Path.home() / ".cache" / "electra-bench"
    root = root.expanduser()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BenchError(f"{root}: cannot create the cache directory ({e.strerror}); "
                         f"set {ENV_VAR} or pass a writable cache dir") from None
    return root


def short_key(*parts: object, n: int = 24) -> str:
    """A short hex key from any number of strings/numbers (for directory names)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:n]


def read_meta(entry: Path) -> dict | None:
    """The entry's meta.json, or None if the entry is absent/incomplete/unreadable."""
    try:
        with open(entry / "meta.json", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def entry_lock(entry: Path) -> Iterator[None]:
    """Serialise builders of one entry across processes (advisory flock; no-op where unsupported).

    Only saves duplicate work: correctness comes from atomic renames, not from the lock.
    """
    entry.parent.mkdir(parents=True, exist_ok=True)
    lock_path = entry.parent / f".{entry.name}.lock"
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    with open(lock_path, "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        except OSError:  # pragma: no cover - e.g. a file system without locks
            pass
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def remove_stale_temps(entry: Path) -> None:
    """Delete temp files a killed builder left in `entry` (call only while holding its entry_lock)."""
    if entry.is_dir():
        for p in entry.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                p.unlink()


class HashMemo:
    """sha256 of files, memoised by (absolute path, size, mtime_ns, inode) in `<root>/file_hashes.json`.

    Saves re-reading a large corpus on every cache hit. A file rewritten with the same size within
    the same nanosecond-stamped mtime would be missed; delete the memo (or the cache) to force rehashing.
    """

    def __init__(self, root: Path | None):
        self.path = root / "file_hashes.json" if root is not None else None
        self._memo: dict[str, str] = {}
        self._dirty = False
        if self.path is not None:
            try:
                with open(self.path, encoding="utf-8") as f:
                    data = json.load(f)
                if isinstance(data, dict):
                    self._memo = {k: v for k, v in data.items() if isinstance(v, str)}
            except (OSError, ValueError):
                pass

    def sha256(self, path: Path) -> str:
        st = path.stat()
        key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{st.st_ino}"
        if key not in self._memo:
            self._memo[key] = atomic_io.sha256_file(path)
            self._dirty = True
        return self._memo[key]

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        # keep the memo small: only the most recent 10,000 entries
        items = list(self._memo.items())[-10000:]
        with contextlib.suppress(OSError):
            atomic_io.write_json(self.path, dict(items))
        self._dirty = False
