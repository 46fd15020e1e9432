"""A pre-training run's log.jsonl, mirrored as TensorBoard scalars in the run's `tensorboard/` directory
(event_files.py; only with the optional tensorboard package, else nothing happens).

Every numeric field of a row is a series twice: against the step (`train/loss`, `diag/disc_auc`,
`schedule/lr`, `speed/tokens_per_s`, ...) and against the row's FLOPs (`vs_MFLOPs/train/loss`, ...; step =
FLOPs / 1e6), so that runs of different objectives line up at equal compute. The trainer calls `mirror`
right after it appends a row to the log, and nowhere else.

The log is the record; the event file is rebuilt from it whenever it may differ: on the first row a process
mirrors (a fresh or resumed run: the log then holds every row so far, the step-0 diagnostics included), and
on a row whose step is not after the last one mirrored (a resume in the same process after the log was
cut back). So a run stopped and resumed any number of times shows each step once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..store import atomic_io, event_files
from ..store.layout import PretrainLayout

_AXES = ("step", "flops", "fraction")  # what locates a row: not series of their own
_GROUP = {"lr": "schedule", "temperature": "schedule", "tokens_per_s": "speed", "mfu": "speed"}


def tag(key: str) -> str:
    """A log field's tag against steps: `diag/*` as it is, the rest under train/, schedule/ or speed/."""
    return key if "/" in key else f"{_GROUP.get(key, 'train')}/{key}"


def points(row: dict) -> list[tuple[str, int, float]]:
    """(tag, step, value) of every numeric field of a log row, against steps and against FLOPs."""
    out = []
    flops_step = event_files.flops_step(row.get("flops", 0.0))
    for key, value in row.items():
        if key in _AXES or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        out.append((tag(key), int(row["step"]), float(value)))
        if flops_step is not None:
            out.append((f"{event_files.FLOPS_AXIS}/{tag(key)}", flops_step, float(value)))
    return out


@dataclass
class _Mirror:
    writer: event_files.ScalarWriter
    last_step: int


_open: dict[str, _Mirror] = {}  # this process's event files, by run directory


def mirror(out: PretrainLayout, row: dict) -> None:
    """Add `row`, just appended to `out.log`, to the run's event file (see the module docstring)."""
    if not event_files.available():
        return
    key = str(out.root.resolve())
    state = _open.get(key)
    if state is None or row["step"] <= state.last_step:
        if state is not None:
            state.writer.close()
        event_files.clear(out.tensorboard)
        state = _open[key] = _Mirror(event_files.ScalarWriter(out.tensorboard), -1)
        rows = atomic_io.read_jsonl(out.log)  # ends with `row`
    else:
        rows = [row]
    for r in rows:
        for t, step, value in points(r):
            state.writer.add(t, value, step)
        state.last_step = max(state.last_step, int(r["step"]))
    state.writer.flush()  # a kill loses nothing the log has
    if row.get("fraction", 0.0) >= 1.0:  # the run's last row: nothing more comes
        state.writer.close()
        del _open[key]
