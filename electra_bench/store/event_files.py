"""TensorBoard event files: scalars written with the tensorboard package's own writer, when that optional
package is installed (`pip install 'electra-bench[tensorboard]'`). Without it `available()` is False and
nothing is written; nothing fails either way. torch.utils.tensorboard is not used: it is the same writer
behind torch's import.

TensorBoard's step is an int64. Series drawn against FLOPs use FLOPs / `FLOPS_PER_STEP_UNIT` rounded (MFLOPs:
exact to a millionth of a tiny step, and room for 9.2e24 FLOPs), under tags that say so (`vs_MFLOPs/...`).

The event files are a view of what the run stores (log.jsonl, scores): `replace` writes a directory's anew,
so a resumed or rescored run never shows a point twice.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Iterable

FLOPS_PER_STEP_UNIT = 1e6
FLOPS_AXIS = "vs_MFLOPs"  # prefix of the tags whose step is FLOPs / FLOPS_PER_STEP_UNIT
_INT64_MAX = 2**63 - 1


def available() -> bool:
    try:
        import tensorboard.summary.writer.event_file_writer  # noqa: F401
    except ImportError:
        return False
    return True


def flops_step(flops: float) -> int | None:
    """The step of a point at `flops` on a FLOPs axis, or None past what an int64 holds."""
    step = round(float(flops) / FLOPS_PER_STEP_UNIT)
    return step if 0 <= step <= _INT64_MAX else None


class ScalarWriter:
    """Scalars into one new event file in `directory` (created); every `add` reaches the disk by `flush`."""

    def __init__(self, directory: str | Path):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._writer = EventFileWriter(str(directory), max_queue_size=1000, flush_secs=10)

    def add(self, tag: str, value: float, step: int, wall_time: float | None = None) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        self._writer.add_event(Event(wall_time=time.time() if wall_time is None else wall_time, step=int(step),
                                     summary=Summary(value=[Summary.Value(tag=tag, simple_value=float(value))])))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


def clear(directory: str | Path) -> None:
    """Remove a directory of event files (before it is written anew)."""
    shutil.rmtree(directory, ignore_errors=True)


def replace(directory: str | Path, points: Iterable[tuple[str, int, float]]) -> bool:
    """The directory's event files become exactly these (tag, step, value) points; False (and nothing
    touched) without the tensorboard package."""
    if not available():
        return False
    clear(directory)
    writer = ScalarWriter(directory)
    try:
        for tag, step, value in points:
            writer.add(tag, value, step)
    finally:
        writer.close()
    return True
