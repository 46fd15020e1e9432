"""The one exception type users see.

Anything the user can fix (a missing file, a malformed line, an unknown preset, a budget too small)
is raised as `BenchError` with a message that names the problem and where it is (`file:line`).
The CLI prints it as a single line and exits non-zero, without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class BenchError(Exception):
    """A problem with the user's input or environment, reported as one line."""

    exit_code = 2


def at(path: str | Path, line: int | None = None) -> str:
    """`file:line` (or just `file`) for error messages."""
    return f"{path}:{line}" if line is not None else str(path)
