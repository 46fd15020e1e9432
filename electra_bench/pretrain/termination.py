"""SIGTERM as a clean stop: what a batch scheduler sends before it kills a job.

Two behaviours, chosen by where the process is:
- `raising()` (the command line, cli/__init__.py): SIGTERM raises `Terminated` at once, as Ctrl-C raises
  KeyboardInterrupt; the CLI prints one line and exits 143.
- `deferred()` (the trainer's whole run): SIGTERM only sets a flag. The training loop reads it with
  `requested()` between steps, where every log row and checkpoint is complete, saves the resumable state
  and raises `Terminated("at step N of M")`. So a write in progress when the signal comes finishes, and
  the same command again resumes at that step, finishing identical to an undisturbed run.

A worker process of compare's pool installs neither: outside `deferred()` the default stands (the
worker dies; its parent, signalled too, says the SIGTERM line, or else reports a dead worker). Once a
process has seen SIGTERM, `deferred()` refuses to start another run in it (a pool worker would
otherwise go on to the next queued run).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

from ..errors import Terminated

_pending = False  # a SIGTERM came while deferred and has not been acted on
_seen = False  # this process has had a SIGTERM: it starts no further run


def _raise(signum, frame) -> None:
    global _seen
    _seen = True
    raise Terminated()


def _flag(signum, frame) -> None:
    global _pending, _seen
    _pending = _seen = True


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # signal.signal works only there


@contextmanager
def raising() -> Iterator[None]:
    """Inside: SIGTERM raises `Terminated`. The previous handler is restored on leaving (the CLI also
    runs inside test processes)."""
    global _seen
    if not _main_thread():
        yield
        return
    _seen = False  # a new command (tests run several in one process)
    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def deferred() -> Iterator[None]:
    """Inside: SIGTERM sets a flag for `requested()` instead of acting. Leaving normally with the flag
    set (the signal came during the last step or the final writes: the run is complete) raises
    `Terminated`, so the process still stops. Nested uses share the outer one's flag."""
    global _pending
    if not _main_thread() or signal.getsignal(signal.SIGTERM) is _flag:
        yield
        return
    if _seen:
        raise Terminated()
    _pending = False
    previous = signal.signal(signal.SIGTERM, _flag)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
    if _pending:
        _pending = False
        raise Terminated()


def requested() -> bool:
    """Whether a SIGTERM came in a `deferred()` block and the run should stop at this safe point."""
    return _pending
