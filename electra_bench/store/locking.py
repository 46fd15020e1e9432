"""One writer per directory: an exclusive, non-blocking `flock` on `<dir>/.lock`, holding the pid
(`DirectoryLock`); and writers taking turns on one shared append-only file (`exclusive_file`).

The lock file is removed when the holder releases it, so a finished run leaves no `.lock` behind. A
process that opened the file just before it was removed would lock a deleted inode; it notices (the
path no longer names the inode it holds) and tries again on the new file, so two holders are never
possible. A lock left by a killed process is released by the OS; its file is simply reused.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import BenchError, at

LOCK_NAME = ".lock"


class DirectoryLock:
    def __init__(self, directory: str | Path, what: str):
        self.path = Path(directory) / LOCK_NAME
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> "DirectoryLock":
        for _ in range(100):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise BenchError(f"{at(self.path)}: cannot lock ({e.strerror})") from None
                raise BenchError(f"{self.what} is being written by another process (pid {self._holder()}); "
                                 f"wait for it or choose another directory") from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self._fd = fd
                return self
            os.close(fd)  # the file was removed by the previous holder between our open and lock
        raise BenchError(f"{at(self.path)}: could not take the lock")

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still holding it: see the module docstring
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _holder(self) -> str:
        try:
            return self.path.read_text().strip() or "unknown"
        except OSError:
            return "unknown"

    def __enter__(self) -> "DirectoryLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


@contextmanager
def exclusive_file(path: str | Path, what: str, timeout_s: float = 120.0) -> Iterator[int]:
    """An exclusive `flock` on the file `path` itself (created if absent), waited for up to `timeout_s`:
    for a file that many processes append to, such as a CI history store, where a second writer should
    wait its turn instead of failing as a second writer of a run does. The file is never removed, so the
    lock is always on the inode the next writer opens. Yields a descriptor opened for appending."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise BenchError(f"{at(path)}: cannot lock ({e.strerror})") from None
                if time.monotonic() >= deadline:
                    raise BenchError(f"{what} stayed locked by another process for {timeout_s:.0f} s; "
                                     "try again when it has finished") from None
                time.sleep(0.05)
        try:
            yield fd
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
