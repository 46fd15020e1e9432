"""The run directory: one directory per run, scores in long format, everything written atomically.

```
results/<run_id>/
  config.json       resolved config (the dict the caller passes); a rerun with the same config reuses the run
  provenance.json   provenance.collect(...)
  scores.jsonl      one row per (objective, pretrain_seed, fraction, task, seed, metric, protocol) -- SCORE_FIELDS
  summary.json      summary.build_summary(...), schema_version 2
  pretrain/<objective>/seed-<k>/   pre-training seed k (log.jsonl, checkpoints/, done.json: pretrain/trainer.py)
  plots/*.png|svg
  .lock             flock'ed by the one process writing the run; holds its pid
```

`open_run` takes an exclusive, non-blocking `fcntl.flock` on `.lock` for the lifetime of the returned
`RunDir` (use it as a context manager); a second writer gets a BenchError naming the holder's pid.
`load_run` opens a run read-only, without the lock.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import secrets
from pathlib import Path
from typing import Any, Iterable, Mapping

import pandas as pd

from . import atomic_io
from .atomic_io import remove_stale_temp_files
from ..errors import BenchError, at
from .layout import RunLayout
from .locking import DirectoryLock
from .score_rows import SCORE_FIELDS, ScoreRow


_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def _normalise(obj: Any) -> Any:
    """The JSON form of a config (tuples become lists, Paths strings), for writing and comparing."""
    return json.loads(json.dumps(obj, sort_keys=True, default=atomic_io.json_default))


def _diff_keys(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += _diff_keys(a.get(k, _MISSING), b.get(k, _MISSING), f"{prefix}.{k}" if prefix else str(k))
        return out
    return [] if a == b else [prefix or "<root>"]


_MISSING = object()


def new_run_id(prefix: str = "run", root: str | Path | None = None) -> str:
    """A fresh run id: `<prefix>-<UTC yyyymmddThhmmssZ>-<6 hex>`.

    Unique across processes with overwhelming probability; with `root` it is also reserved: the run
    directory is created atomically (mkdir), retrying on the (astronomically rare) collision, so two
    processes creating runs at the same moment always get distinct ids.
    """
    if not _SAFE_ID.match(prefix) or len(prefix) > 100:
        raise BenchError(f"run id prefix '{prefix}' must be letters, digits, '.', '_' or '-'")
    for _ in range(100):
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        run_id = f"{prefix}-{stamp}-{secrets.token_hex(3)}"
        if root is None:
            return run_id
        root_path = Path(root)
        root_path.mkdir(parents=True, exist_ok=True)
        try:
            (root_path / run_id).mkdir()
            return run_id
        except FileExistsError:
            continue
    raise BenchError(f"could not reserve a new run id under {root}")


class RunDir:
    """One run's directory. Writable (and locked) when made by `open_run`, read-only from `load_run`."""

    def __init__(self, path: Path, *, writable: bool, lock: DirectoryLock | None = None):
        self.path = Path(path)
        self.layout = RunLayout(self.path)
        self.run_id = self.path.name
        self.writable = writable
        self._lock = lock
        self._scores: pd.DataFrame | None = None

    # -- lifetime ---------------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the lock (a no-op for read-only runs). The RunDir becomes read-only."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        self.writable = False

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; the OS releases flocks on exit anyway
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r}, {'writable' if self.writable else 'read-only'})"

    def _require_writable(self, what: str) -> None:
        if not self.writable:
            raise BenchError(f"run {self.run_id} is open read-only: cannot {what} (open it with open_run)")

    # -- files ------------------------------------------------------------------------------------------
    @property
    def config(self) -> dict:
        return atomic_io.read_json(self.layout.config, "run config")

    def pretrain_seeds(self, objective: str) -> list[int]:
        """The pre-training seeds that have a log for `objective`."""
        root = self.layout.pretrain_root(objective)
        if not root.is_dir():
            return []
        found = [int(p.name[5:]) for p in root.glob("seed-*") if p.name[5:].isdigit()]
        return sorted(s for s in found if self.layout.pretrain(objective, s).log.is_file())

    def provenance(self) -> dict | None:
        path = self.layout.provenance
        return atomic_io.read_json(path, "provenance") if path.exists() else None

    def write_provenance(self, provenance: Mapping[str, Any]) -> None:
        self._require_writable("write provenance")
        atomic_io.write_json(self.layout.provenance, dict(provenance))

    def summary(self) -> dict | None:
        """summary.json, or None when it has not been written yet."""
        path = self.layout.summary
        if not path.exists():
            return None
        data = atomic_io.read_json(path, "summary")
        if not isinstance(data, dict) or "schema_version" not in data:
            raise BenchError(f"{at(path)}: not a run summary (no schema_version)")
        return data

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        self._require_writable("write the summary")
        if "schema_version" not in summary:
            raise BenchError("a summary needs a schema_version (build it with summary.build_summary)")
        atomic_io.write_json(self.layout.summary, dict(summary))

    # -- scores -----------------------------------------------------------------------------------------
    def append_scores(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Validate all rows, then append them to scores.jsonl. Returns how many were written."""
        self._require_writable("append scores")
        rows = list(rows)
        clean = [r if isinstance(r, ScoreRow) else ScoreRow.from_json(r, f"score row {i}") for i, r in enumerate(rows)]
        path = self.layout.scores
        for row in clean:
            atomic_io.append_jsonl(path, row.to_json())
        self._scores = None
        return len(clean)

    def store_scored(self, result) -> int:
        """A scoring job's result (experiments/work.score_job): its per-example predictions first, then its
        score rows, so a stored row's predictions exist. A plain list of rows is stored as rows."""
        if isinstance(result, Mapping):
            from .predictions import PredictionStore

            self._require_writable("store predictions")
            store = PredictionStore(self.path)
            for objective, pretrain_seed, fraction, preds in result.get("predictions", ()):
                store.write(objective, pretrain_seed, fraction, preds)
            result = result["rows"]
        return self.append_scores(result)

    def scores(self) -> pd.DataFrame:
        """All score rows as a DataFrame with the SCORE_FIELDS columns (empty when there are none).

        A torn last line (a crash mid-append) is skipped; any other malformed line is a BenchError
        naming file:line.
        """
        if self._scores is None:
            self._scores = self._read_scores()
        return self._scores.copy()

    def _read_scores(self) -> pd.DataFrame:
        path = self.layout.scores
        rows = [ScoreRow.from_json(raw, at(path, i)).to_json()
                for i, raw in atomic_io.jsonl_rows(path, "score line")] if path.exists() else []
        df = pd.DataFrame(rows, columns=list(SCORE_FIELDS))
        return df.astype({"fraction": float, "step": "int64", "train_flops": float, "seed": "int64", "value": float,
                          "pretrain_seed": "int64"})

    def has_score(self, objective: str, fraction: float, task: str, seed: int, protocol: str = "finetune",
                  pretrain_seed: int = 0) -> bool:
        """Whether a score for this (objective, pretrain_seed, fraction, task, seed, protocol) is stored."""
        df = self.scores()
        if df.empty:
            return False
        hit = (
            (df["objective"] == objective)
            & (df["pretrain_seed"] == int(pretrain_seed))
            & (df["task"] == task)
            & (df["seed"] == int(seed))
            & (df["protocol"] == protocol)
            & ((df["fraction"] - float(fraction)).abs() <= 1e-9 * max(1.0, abs(float(fraction))))
        )
        return bool(hit.any())

    def pretrain_log(self, objective: str, seed: int = 0) -> pd.DataFrame:
        """The trainer's log for `objective` and pre-training `seed` (empty DataFrame when absent)."""
        path = self.layout.pretrain(objective, seed).log
        if not path.exists():
            return pd.DataFrame()
        return pd.DataFrame(atomic_io.read_jsonl(path))


def open_run(root: str | Path, run_id: str, config: Mapping[str, Any], *, create: bool = True) -> RunDir:
    """Open `root/run_id` for writing, holding its lock until `.close()` / the `with` block ends.

    A new run directory is created atomically and config.json written. An existing run is reused when
    its config.json equals `config` (so a rerun skips finished parts, see `RunDir.has_score`), or differs
    only by asking for more pre-training seeds or more readings (the run is extended: config.json records
    what it now holds);
    any other difference is a BenchError naming the differing keys. `create=False` requires the run to exist.
    """
    if not isinstance(run_id, str) or not _SAFE_ID.match(run_id):
        raise BenchError(f"invalid run id {run_id!r}: letters, digits, '.', '_' or '-', not starting with '.'")
    if not isinstance(config, Mapping):
        raise BenchError(f"run config must be a dict, got {type(config).__name__}")
    try:
        wanted = _normalise(dict(config))
    except (TypeError, ValueError) as e:
        raise BenchError(f"run config is not JSON-serialisable: {e}") from None
    root = Path(root)
    run_path = root / run_id
    if create:
        root.mkdir(parents=True, exist_ok=True)
        try:
            run_path.mkdir()
        except FileExistsError:
            if not run_path.is_dir():
                raise BenchError(f"{at(run_path)}: exists and is not a directory") from None
    elif not run_path.is_dir():
        raise BenchError(f"{at(run_path)}: no such run")
    lock = DirectoryLock(run_path, f"run {run_id}").acquire()
    remove_stale_temp_files(run_path)  # left by a process killed mid-write; this one owns the run now
    run = RunDir(run_path, writable=True, lock=lock)
    try:
        config_path = run.layout.config
        if config_path.exists():
            stored = atomic_io.read_json(config_path, "run config")
            if _extends(stored, wanted):  # the same run with more pre-training seeds or readings: extend it
                atomic_io.write_json(config_path, wanted)
            elif stored != wanted:
                keys = _diff_keys(stored, wanted)
                shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
                raise BenchError(
                    f"run {run_id} exists with a different config (differs in {shown}); "
                    f"use a new run id or the same config"
                )
        else:
            atomic_io.write_json(config_path, wanted)
    except BaseException:
        run.close()
        raise
    return run


def _extends(stored: Any, wanted: Any) -> bool:
    """Whether `wanted` is `stored` with more pre-training seeds (compare's `pretrain_seeds`) and/or more
    readings (`readings`, the protocols after the first), and nothing else changed: resuming such a run
    pre-trains and scores what it lacks and keeps every score it has."""
    if not (isinstance(stored, dict) and isinstance(wanted, dict)) or stored == wanted:
        return False
    a, b = stored.get("pretrain_seeds"), wanted.get("pretrain_seeds")
    if a != b and not (isinstance(a, int) and isinstance(b, int) and b > a):
        return False
    had, want = stored.get("readings", []), wanted.get("readings", [])
    if not (isinstance(had, list) and isinstance(want, list) and want[: len(had)] == had):
        return False
    rest = lambda d: {k: v for k, v in d.items() if k not in ("pretrain_seeds", "readings")}  # noqa: E731
    return rest(stored) == rest(wanted)


def runs_with_fewer_seeds(root: str | Path, config: Mapping[str, Any]) -> list[str]:
    """Run ids under `root` whose config is `config` with fewer pre-training seeds or readings: what
    `--run-id` would extend (a run's default id hashes both, so more of either alone names a new run)."""
    wanted = _normalise(dict(config))
    out = []
    for path in sorted(Path(root).glob("*/config.json")):
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if _extends(stored, wanted):
            out.append(path.parent.name)
    return out


def load_run(path: str | Path) -> RunDir:
    """Open an existing run read-only (no lock). A missing directory or an unreadable/invalid
    config.json is a BenchError naming the file."""
    path = Path(path)
    if not path.is_dir():
        raise BenchError(f"{at(path)}: no such run directory")
    config_path = RunLayout(path).config
    if not config_path.is_file():
        raise BenchError(f"{at(path)}: not a run directory ({_what_it_holds(path)})")
    config = atomic_io.read_json(config_path, "run config")
    if not isinstance(config, dict):
        raise BenchError(f"{at(config_path)}: run config must be a JSON object")
    return RunDir(path, writable=False)


def _what_it_holds(path: Path, shown: int = 5) -> str:
    """For a directory given where a run is expected: the runs it holds (`results/`, say), or that it has
    no config.json."""
    runs = sorted(p.parent.name for p in path.glob(f"*/{RunLayout(path).config.name}"))
    if not runs:
        return f"no {RunLayout(path).config.name}"
    more = f" and {len(runs) - shown} more" if len(runs) > shown else ""
    return f"it holds runs: {', '.join(runs[:shown])}{more}; name one, e.g. {path / runs[0]}"


def load_compare_run(path: str | Path) -> RunDir:
    """`load_run` for what summarises MLM vs RTD (report, check, baseline, history): an ablation run
    carries its own Table 5 instead, a generator-size sweep its sweep.json; each is refused with a
    pointer to it."""
    run = load_run(path)
    if run.layout.sweep.is_file() or run.layout.points.is_dir():
        raise BenchError(f"{path} is a generator-size sweep: its table is {run.layout.report_txt} (and "
                         f"{run.layout.sweep.name}, {run.layout.report_md.name}, plots/); this command reads compare runs")
    if run.layout.ablation.is_file():
        raise BenchError(f"{path} is an ablation run: this command reads compare runs (`electra-bench report "
                         f"{path}` renders its Table 5)")
    return run
