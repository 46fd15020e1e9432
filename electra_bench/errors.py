"""The exceptions users see, each as one line from the CLI.

Anything the user can fix (a missing file, a malformed line, an unknown preset, a budget too small)
is raised as `BenchError` with a message that names the problem and where it is (`file:line`).
The CLI prints it as a single line and exits non-zero, without a traceback. `Terminated` is a stop
asked for from outside (SIGTERM, pretrain/termination.py), not a problem.
"""

from __future__ import annotations

from pathlib import Path


class BenchError(Exception):
    """A problem with the user's input or environment, reported as one line."""

    exit_code = 2


class Terminated(BaseException):
    """SIGTERM, turned into a stop (pretrain/termination.py). A BaseException like KeyboardInterrupt, so
    no `except Exception` swallows it on its way to the CLI, which prints str() and exits 143 (128 +
    SIGTERM, what a shell reports for a process the signal ended). `where`: "at step N of M" when the
    trainer stopped between steps, else empty. Pickles (a worker process sends it to its parent)."""

    exit_code = 143

    def __init__(self, where: str = ""):
        super().__init__(where)
        self.where = where

    def __str__(self) -> str:
        at_ = f" {self.where}" if self.where else ""
        return f"stopped by SIGTERM{at_}; run the same command again to resume"


def at(path: str | Path, line: int | None = None) -> str:
    """`file:line` (or just `file`) for error messages."""
    return f"{path}:{line}" if line is not None else str(path)
