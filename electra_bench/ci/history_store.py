"""The CI history store: one compact JSON line per CI run, appended by `electra-bench history add RUN
--store FILE`, read by the trend plot and the Markdown/CSV/JSON summaries (history_trend.py,
history_plot.py). A record needs nothing of the run afterwards (no checkpoints, no scores file), so the
store alone can be committed or kept as a CI cache/artifact: about 3 KB a record.

Record (schema_version 1; docs/results.md lists every field):
```
{"kind": "electra-bench-history", "schema_version": 1,
 "commit": "<full sha>", "parent": "<sha>" | null, "branch": "main" | null, "date": "<commit date, ISO>",
 "recorded_utc": "...", "run_id": "...", "run_key": "<16 hex>", "note": "..." | null,
 "config": {run_config}, "config_digest": "<12 hex>", "protocol": "probe", "suite": "ebs-2",
 "metrics": {what `check` compares: "<obj>/score", "<obj>/<task>", "<obj>/margin", "<obj>/diag/..."},
 "bands": {"<obj>": {"band": "pretrain_seeds"|"eval_seeds", "min", "max",
                     "pretrain_seeds": [min, max] | null, "eval_seeds": [min, max] | null,
                     "n_pretrain_seeds", "n_eval_seeds"}},
 "learned": {"mlm": bool | null, "rtd": ...}, "verdict_kind": "...", "verdict": "...",
 "timings": {"wall_s", "prepare_s", "pretrain_s", "evaluate_s"},      # what the run's work cost
 "machine": {"cpu_model", "cpu_count", "gpu_count", "gpus", "torch", "python"},
 "load": {"avg_1m", "avg_5m", "avg_15m", "minutes_after_run"} | null}
```
`load` is the machine's load average when the record was added; `minutes_after_run` says how long
after the run ended that was (null when the run records no end), so a reader can tell whether it
describes the run (a CI job adds the record right after its compare) or a later session.

Appending is safe with several CI jobs on one store: each takes an exclusive lock on the file
(locking.exclusive_file), drops a torn last line left by a killed writer, and writes its record in one
write() of one line. Reading skips a torn last line with a warning; any other malformed line is an
error naming file:line. The same run added twice for the same commit is recorded once (`run_key`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any, Mapping

from ..store import atomic_io, locking
from ..errors import BenchError, at
from ..store import commit_info
from . import regression
from ..summarise import summary as summary_mod
from ..summarise.points import TRAINED, final_point
from ..store.runs import RunDir

KIND = "electra-bench-history"
SCHEMA_VERSION = 1
TIMING_KEYS = ("prepare_s", "pretrain_s", "evaluate_s")
# a record is only read back when it has these, with these types
REQUIRED = {"commit": str, "config": dict, "config_digest": str, "metrics": dict, "run_id": str}


def _canonical(cfg: Mapping[str, Any]) -> dict:
    """The config as compared (regression.config_differences): budgets as numbers, tasks unordered."""
    out = dict(cfg)
    if "budget" in out:
        try:
            out["budget"] = float(out["budget"])
        except (TypeError, ValueError):
            out["budget"] = str(out["budget"]).strip()
    if isinstance(out.get("tasks"), list):
        out["tasks"] = sorted(out["tasks"])
    return out


def config_digest(cfg: Mapping[str, Any]) -> str:
    """12 hex digits naming a run config; equal for configs `check` treats as alike when both record the
    same fields (`2e12` and `2.0e12` give one digest)."""
    text = json.dumps(_canonical(cfg), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _pair(values) -> list[float] | None:
    values = [float(v) for v in values]
    return [min(values), max(values)] if values else None


def _bands(summary: Mapping[str, Any], protocol: str) -> dict:
    block = summary["protocols"][protocol]
    out = {}
    for obj in ("init",) + TRAINED:
        point = (next((p for p in block["points"] if p["objective"] == "init"), None) if obj == "init"
                 else final_point(block["points"], obj))
        if point is None:
            continue
        s = point["score"]
        out[obj] = {"band": s.get("band"), "min": s.get("min"), "max": s.get("max"),
                    "pretrain_seeds": _pair(s.get("per_pretrain_seed", {}).values()),
                    "eval_seeds": _pair(s.get("per_seed", {}).values()),
                    "n_pretrain_seeds": s.get("n_pretrain_seeds"), "n_eval_seeds": s.get("n_seeds")}
    return out


def _timings(run: RunDir, summary: Mapping[str, Any]) -> tuple[dict, _dt.datetime | None]:
    """Seconds per phase summed over the run's invocations (what compare writes into summary.json), and
    when its last invocation ended (from history.jsonl; None without one)."""
    rows = atomic_io.read_jsonl(run.layout.history) if run.layout.history.is_file() else []
    timings: dict[str, float] = {}
    if isinstance(summary.get("timings"), Mapping) and summary.get("wall_s") is not None:
        timings = {k: float(summary["timings"][k]) for k in TIMING_KEYS if k in summary["timings"]}
        timings["wall_s"] = float(summary["wall_s"])
    elif rows:  # a summary rebuilt from scores.jsonl has no timings; the invocations still say them
        for row in rows:
            for k in TIMING_KEYS:
                if k in row.get("timings", {}):
                    timings[k] = timings.get(k, 0.0) + float(row["timings"][k])
        timings["wall_s"] = sum(float(r.get("wall_s", 0.0)) for r in rows)
    ended = None
    if rows and isinstance(rows[-1].get("started_utc"), str):
        start = commit_info.parse_date(rows[-1]["started_utc"])
        if start is not None:
            ended = start + _dt.timedelta(seconds=float(rows[-1].get("wall_s", 0.0)))
    return timings, ended


def _machine(provenance: Mapping[str, Any]) -> dict:
    hw = provenance.get("hardware") if isinstance(provenance.get("hardware"), Mapping) else {}
    versions = provenance.get("versions") if isinstance(provenance.get("versions"), Mapping) else {}
    return {"cpu_model": hw.get("cpu_model"), "cpu_count": hw.get("cpu_count"), "gpu_count": hw.get("gpu_count"),
            "gpus": hw.get("gpus"), "torch": versions.get("torch"), "python": versions.get("python")}


def _load(now: _dt.datetime, ended: _dt.datetime | None) -> dict | None:
    try:
        one, five, fifteen = os.getloadavg()
    except (OSError, AttributeError):  # not every platform has a load average
        return None
    after = None if ended is None else round(max(0.0, (now - ended).total_seconds()) / 60, 1)
    return {"avg_1m": round(one, 2), "avg_5m": round(five, 2), "avg_15m": round(fifteen, 2), "minutes_after_run": after}


def run_key(commit: str, run_id: str, run_started: Any, metrics: Mapping[str, float]) -> str:
    """What makes a record the same as another: the commit, the run and its numbers."""
    text = json.dumps([commit, run_id, run_started, dict(sorted(metrics.items()))], default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record_from_run(run: RunDir, *, commit: str | None = None, parent: str | None = None, branch: str | None = None,
                    date: str | None = None, note: str | None = None, cwd: str | Path = ".",
                    environ: Mapping[str, str] | None = None) -> dict:
    """The store's record of a compare run (module docstring); commit fields by commit_info.resolve."""
    summary = summary_mod.load_or_build(run)
    protocol = summary["main_protocol"]
    metrics, info = regression.final_metrics(summary, protocol)
    try:
        provenance = run.provenance() or {}
    except BenchError:
        provenance = {}
    git = provenance.get("git") if isinstance(provenance.get("git"), Mapping) else {}
    fields = commit_info.resolve(commit=commit, parent=parent, branch=branch, date=date, run_commit=git.get("commit"),
                                 cwd=cwd, environ=environ)
    if date is not None and commit_info.parse_date(date) is None:
        raise BenchError(f"--date {date!r} is not an ISO 8601 date (e.g. 2026-12-04 or 2026-12-04T10:00:00+00:00)")
    now = _dt.datetime.now(_dt.timezone.utc)
    started = provenance.get("created_utc")
    timings, ended = _timings(run, summary)
    cfg = regression.run_config(summary, protocol)
    learning = summary.get("learning") or {}
    return {
        "kind": KIND, "schema_version": SCHEMA_VERSION,
        **fields,
        "date": fields["date"] or started or now.isoformat(timespec="seconds"),
        "dirty": git.get("dirty"),
        "recorded_utc": now.isoformat(timespec="seconds"),
        "run_id": run.run_id, "run_started_utc": started,
        "run_key": run_key(fields["commit"], run.run_id, started, metrics),
        "note": note,
        "config": cfg, "config_digest": config_digest(cfg), "protocol": protocol,
        "suite": summary.get("suite", {}).get("name"),
        "metrics": metrics, "bands": _bands(summary, protocol),
        "learned": {o: learning[o].get("learned") for o in TRAINED if isinstance(learning.get(o), Mapping)},
        "verdict_kind": info.get("verdict_kind"), "verdict": info.get("verdict"),
        "timings": timings, "machine": _machine(provenance), "load": _load(now, ended),
    }


def _validate(record: Any, where: str) -> dict:
    if not isinstance(record, dict) or record.get("kind") != KIND:
        raise BenchError(f"{where}: not an electra-bench history record (write them with `electra-bench history add`)")
    if record.get("schema_version") != SCHEMA_VERSION:
        raise BenchError(f"{where}: history record schema_version {record.get('schema_version')!r}, "
                         f"expected {SCHEMA_VERSION}")
    for key, kind in REQUIRED.items():
        if not isinstance(record.get(key), kind):
            raise BenchError(f"{where}: history record has no valid '{key}'")
    for k, v in record["metrics"].items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise BenchError(f"{where}: history metric '{k}' is not a finite number ({v!r})")
    return record


def read(store: str | Path) -> list[dict]:
    """The store's records in the order they were appended. A torn last line (an append cut short) is
    skipped with a warning; any other malformed line or record is a BenchError naming file:line."""
    path = Path(store)
    if not path.is_file():
        raise BenchError(f"{at(path)}: history store not found (start one with `electra-bench history add RUN "
                         f"--store {path}`)")
    def torn(i: int) -> None:
        warnings.warn(f"{at(path, i)}: skipped a torn last line (an interrupted append)", stacklevel=3)

    records = [_validate(raw, at(path, i)) for i, raw in atomic_io.jsonl_rows(path, "history line (not JSON)", torn)]
    return records


def append(store: str | Path, record: Mapping[str, Any], *, timeout_s: float = 120.0) -> bool:
    """Append `record` as one line, holding the store's lock (waited for up to `timeout_s`); False
    (nothing written) when a record with its run_key is already there."""
    record = _validate(dict(record), "record to append")
    line = (json.dumps(record, sort_keys=True, default=atomic_io.json_default) + "\n").encode("utf-8")
    path = Path(store)
    with locking.exclusive_file(path, f"history store {path}", timeout_s) as fd:
        atomic_io.repair_torn_tail(path)  # under the lock no writer is mid-line: a partial line is a dead one
        if record.get("run_key") and any(r.get("run_key") == record["run_key"] for r in _read_quietly(path)):
            return False
        view = memoryview(line)
        while view:  # one write() for a line this size; the loop only guards against a short write
            view = view[os.write(fd, view):]
        os.fsync(fd)
    return True


def _read_quietly(path: Path) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read(path)
