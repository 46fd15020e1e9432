"""The trend over commits: every stored record judged against the baseline, and the summaries a CI job
publishes (`electra-bench history show --format md|csv|json`).

Judging. A record whose config differs from the baseline's (regression.config_differences) is "other
config": never compared, never joined to the baseline's series. Every other record is compared metric by
metric with `regression.compare_metrics`, the rule `check` applies, under the baseline's tolerances: a
record "FAIL"s exactly when `check` on its run would exit 1. Without a baseline the newest record's config
is the series and nothing passes or fails.

Markdown (a job summary or a pull-request comment): the newest record against the baseline and the last
N records of its series before it, one row per metric with pass/FAIL, the regressed metrics named at the
top, wall times and load, and links to the plots. CSV: one row per record, every metric a column. JSON:
the records with their judgement.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import BenchError
from . import history_store, regression
from ..store.runs import load_compare_run

PASS, FAIL, OTHER, UNJUDGED = "pass", "FAIL", "other config", "no baseline"
# the metrics a reader looks at first, in this order; per-task metrics follow in a collapsed block
HEADLINE_METRICS = ("mlm/score", "rtd/score", "init/score", "mlm/margin", "rtd/margin", "mlm/diag/mlm_gain_nats",
                    "rtd/diag/mlm_gain_nats", "rtd/diag/disc_auc", "rtd/diag/disc_gap_nats", "mlm/diag/isotropy",
                    "rtd/diag/isotropy")
LABELS = {"mlm/score": "MLM score", "rtd/score": "RTD score", "init/score": "untrained encoder score",
          "mlm/margin": "MLM - untrained", "rtd/margin": "RTD - untrained",
          "mlm/diag/mlm_gain_nats": "MLM gain over unigram (nats)",
          "rtd/diag/mlm_gain_nats": "RTD generator gain over unigram (nats)",
          "rtd/diag/disc_auc": "RTD discriminator AUC", "rtd/diag/disc_gap_nats": "RTD discriminator gain (nats)",
          "mlm/diag/isotropy": "MLM isotropy (1 - token cosine)", "rtd/diag/isotropy": "RTD isotropy (1 - token cosine)"}
DEFAULT_LAST = 5


@dataclass
class Judged:
    """One record and what the baseline says of it."""
    index: int  # position in the store (0: oldest)
    record: dict
    status: str  # PASS | FAIL | OTHER | UNJUDGED
    checks: dict[str, regression.MetricCheck] = field(default_factory=dict)
    differences: list[str] = field(default_factory=list)  # config vs the baseline's (OTHER)
    in_series: bool = True  # drawn on the baseline's (or, without one, the newest record's) line

    @property
    def failures(self) -> list[regression.MetricCheck]:
        return [c for c in self.checks.values() if c.status in ("regressed", "missing")]

    @property
    def short(self) -> str:
        return short_commit(self.record["commit"])


def short_commit(commit: str) -> str:
    return commit[:7] if len(commit) >= 40 and all(c in "0123456789abcdef" for c in commit.lower()) else commit[:12]


def gather(store: str | Path | None, runs: Sequence[str | Path] = (), baseline: str | Path | None = None
           ) -> tuple[list[dict], dict | None, str | None]:
    """(records, baseline, baseline path) from a store and/or run directories (recorded in memory, in the
    order given, after the store's) and a baseline file. An input that is a file is taken as the
    baseline, so `history plot results/baselines/compare-quick.json RUN` draws the committed baseline."""
    records = history_store.read(store) if store is not None else []
    for item in runs:
        if Path(item).is_file():
            if baseline is not None and Path(baseline) != Path(item):
                raise BenchError(f"two baselines given ({baseline} and {item}): draw one at a time")
            baseline = item
        else:
            records.append(history_store.record_from_run(load_compare_run(item)))
    if not records:
        raise BenchError("no history records to show: give --store FILE (made by `electra-bench history add`) "
                         "or run directories")
    base = regression.load_baseline(baseline) if baseline is not None else None
    return records, base, None if baseline is None else str(baseline)


def judge(records: Sequence[Mapping[str, Any]], baseline: Mapping[str, Any] | None) -> list[Judged]:
    """Every record judged against the baseline (module docstring)."""
    out = []
    newest = records[-1]["config_digest"] if records else None
    for i, rec in enumerate(records):
        if baseline is None:
            out.append(Judged(i, dict(rec), UNJUDGED, in_series=rec["config_digest"] == newest))
            continue
        differences = (regression.config_differences(rec["config"], baseline["config"])
                       if isinstance(baseline.get("config"), Mapping) else [])
        if differences:
            out.append(Judged(i, dict(rec), OTHER, differences=differences, in_series=False))
            continue
        checks = regression.compare_metrics(rec["metrics"], baseline["metrics"],
                                            baseline.get("tol", regression.DEFAULT_TOL))
        judged = Judged(i, dict(rec), PASS, checks={c.metric: c for c in checks})
        judged.status = FAIL if judged.failures else PASS
        out.append(judged)
    return out


def _fmt(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if "/diag/" in metric else f"{value:.2f}"


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def _load_5m(rec: Mapping[str, Any]) -> str:
    """The 5-minute load average when it was taken within 15 minutes of the run's end (else it says
    nothing about the run)."""
    load = rec.get("load") or {}
    after = load.get("minutes_after_run")
    return "-" if after is None or after > 15 or load.get("avg_5m") is None else f"{load['avg_5m']:.2f}"


def _metric_order(keys) -> list[str]:
    head = [k for k in HEADLINE_METRICS if k in keys]
    return head + sorted(k for k in keys if k not in HEADLINE_METRICS)


def _cell(j: Judged, metric: str) -> str:
    c = j.checks.get(metric)
    value = j.record["metrics"].get(metric)
    text = _fmt(metric, value)
    if c is not None and c.status in ("regressed", "missing"):
        text += " **FAIL**"
    return text


def _status_cell(c: regression.MetricCheck | None) -> str:
    if c is None:
        return "-"
    return {"ok": "pass", "improved": "pass (improved)", "regressed": "**FAIL**", "missing": "**FAIL** (missing)",
            "new": "new"}[c.status]


def _describe(j: Judged) -> str:
    rec = j.record
    parts = [f"branch `{rec['branch']}`" if rec.get("branch") else None, (rec.get("date") or "")[:16].replace("T", " "),
             f"run `{rec['run_id']}`"]
    return f"`{j.short}` (" + ", ".join(p for p in parts if p) + ")"


def markdown(judged: Sequence[Judged], baseline: Mapping[str, Any] | None, baseline_path: str | None, *,
             last: int = DEFAULT_LAST, plot_urls: Sequence[str] = ()) -> str:
    """The newest record vs the baseline vs the last `last` records of its series (module docstring)."""
    this = judged[-1]
    series = [j for j in judged[:-1] if (j.in_series if this.in_series else
                                         j.record["config_digest"] == this.record["config_digest"])]
    previous = list(reversed(series[-last:])) if last > 0 else []  # newest first, next to this commit
    verdict = {PASS: "PASS", FAIL: "FAIL", OTHER: "NOT COMPARED (config differs from the baseline's)",
               UNJUDGED: "no baseline given"}[this.status]
    lines = [f"### electra-bench regression: {verdict}", ""]
    if baseline is not None:
        src = baseline.get("source_run") or "?"
        lines.append(f"{_describe(this)} against the baseline `{baseline_path}` (from run `{src}`; tolerances: "
                     f"{_tol_phrase(baseline)}), with the {len(previous)} previous record(s) of its series.")
    else:
        lines.append(f"{_describe(this)} with the {len(previous)} previous record(s) of its config.")
    lines.append("")
    if this.record.get("note"):
        lines += [f"Note: {this.record['note']}", ""]
    if this.status == FAIL:
        named = ", ".join(f"`{c.metric}` {_fmt(c.metric, c.new)} (baseline {_fmt(c.metric, c.old)}, "
                          f"tolerance {c.tol:g})" if c.new is not None else f"`{c.metric}` missing"
                          for c in this.failures)
        lines += [f"**{len(this.failures)} of {len(this.checks) - _n_new(this)} metric(s) outside tolerance:** "
                  f"{named}.", ""]
    elif this.status == OTHER:
        lines += [f"Not compared: {'; '.join(this.differences)}.", ""]
    elif this.status == PASS:
        lines += [f"All {len(this.checks) - _n_new(this)} metrics within tolerance.", ""]
    keys = set(this.record["metrics"]) | (set(baseline["metrics"]) if baseline is not None and this.in_series else set())
    ordered = _metric_order(keys)
    head = [k for k in ordered if k in HEADLINE_METRICS]
    rest = [k for k in ordered if k not in HEADLINE_METRICS]
    lines += _table(this, previous, head, baseline if this.in_series else None)
    if rest:
        failing = sum(1 for k in rest if this.checks.get(k) is not None and this.checks[k].status in ("regressed", "missing"))
        counts = f"{len(rest)}; {failing} FAIL" if this.checks else f"{len(rest)}"
        lines += ["", f"<details><summary>per-task metrics ({counts})</summary>", ""]
        lines += _table(this, previous, rest, baseline if this.in_series else None)
        lines += ["", "</details>"]
    lines += ["", _timing_line(this, previous)]
    others = [j for j in judged if not j.in_series and j.record["config_digest"] != this.record["config_digest"]]
    if others:
        by_digest = {j.record["config_digest"]: j for j in others}  # the newest of each config
        what = "; ".join(f"{d}: {', '.join(j.differences) or 'another config than the newest record'}"
                         for d, j in sorted(by_digest.items()))
        lines.append(f"{len(others)} record(s) with another config are kept apart, not compared ({what}).")
    if plot_urls:
        lines.append("Plots: " + ", ".join(f"[{Path(u).name or u}]({u})" for u in plot_urls))
    return "\n".join(lines) + "\n"


def _n_new(j: Judged) -> int:
    return sum(1 for c in j.checks.values() if c.status == "new")


def _tol_phrase(baseline: Mapping[str, Any]) -> str:
    tol = baseline.get("tol", regression.DEFAULT_TOL)
    if not isinstance(tol, Mapping):
        return f"{tol:g} for every metric"
    default = tol.get("default", regression.DEFAULT_TOL)
    own = ", ".join(f"{k.removeprefix('*/diag/').removeprefix('*/')} {v:g}" for k, v in sorted(tol.items())
                    if k != "default")
    return f"{default:g} score points" + (f"; {own}" if own else "")


def _table(this: Judged, previous: Sequence[Judged], metrics: Sequence[str], baseline) -> list[str]:
    header = ["metric"] + (["baseline (tol)"] if baseline is not None else []) + [f"`{this.short}` (this)"]
    header += (["delta", "status"] if baseline is not None else []) + [f"`{p.short}`" for p in previous]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for m in metrics:
        name = f"{LABELS[m]} `{m}`" if m in LABELS else f"`{m}`"
        cells = [name]
        c = this.checks.get(m)
        if baseline is not None:
            old = baseline["metrics"].get(m)
            tol = regression.tolerance(baseline.get("tol", regression.DEFAULT_TOL), m) if old is not None else None
            cells.append("-" if old is None else f"{_fmt(m, old)} (±{tol:g})")
        cells.append(_fmt(m, this.record["metrics"].get(m)))
        if baseline is not None:
            cells += ["-" if c is None or c.delta is None else f"{c.delta:+.3f}" if "/diag/" in m else f"{c.delta:+.2f}",
                      _status_cell(c)]
        cells += [_cell(p, m) for p in previous]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _timing_line(this: Judged, previous: Sequence[Judged]) -> str:
    def one(j: Judged) -> str:
        t = j.record.get("timings") or {}
        if not t:
            return f"`{j.short}` not recorded"
        return (f"`{j.short}` {_minutes(t.get('wall_s'))} min (pre-training {_minutes(t.get('pretrain_s'))}, "
                f"scoring {_minutes(t.get('evaluate_s'))}; load {_load_5m(j.record)})")

    machine = this.record.get("machine") or {}
    where = ", ".join(str(x) for x in (f"{machine.get('cpu_count')}-core {machine.get('cpu_model')}"
                                      if machine.get("cpu_model") else None,
                                      f"torch {machine['torch']}" if machine.get("torch") else None) if x)
    return (f"Wall time (minutes; load = 5-minute load average right after the run): "
            + "; ".join(one(j) for j in [this, *previous]) + (f". Machine: {where}." if where else "."))


# -- machine-readable trend ----------------------------------------------------------------------------

def trend_rows(judged: Sequence[Judged]) -> list[dict]:
    """One flat row per record (the CSV's rows)."""
    metrics = _metric_order({k for j in judged for k in j.record["metrics"]})
    rows = []
    for j in judged:
        rec = j.record
        row: dict[str, Any] = {
            "index": j.index, "commit": rec["commit"], "short": j.short, "parent": rec.get("parent"),
            "branch": rec.get("branch"), "date": rec.get("date"), "recorded_utc": rec.get("recorded_utc"),
            "run_id": rec["run_id"], "note": rec.get("note"), "config_digest": rec["config_digest"],
            "in_series": j.in_series, "status": j.status, "failures": ";".join(c.metric for c in j.failures),
        }
        row.update({m: rec["metrics"].get(m) for m in metrics})
        for obj, band in sorted((rec.get("bands") or {}).items()):
            for kind in ("pretrain_seeds", "eval_seeds"):
                pair = band.get(kind) or [None, None]
                row[f"{obj}/band_{kind}_min"], row[f"{obj}/band_{kind}_max"] = pair
        t = rec.get("timings") or {}
        row.update({k: t.get(k) for k in ("wall_s",) + history_store.TIMING_KEYS})
        load = rec.get("load") or {}
        row.update({"load_5m": load.get("avg_5m"), "load_minutes_after_run": load.get("minutes_after_run"),
                    "cpu_model": (rec.get("machine") or {}).get("cpu_model"),
                    "cpu_count": (rec.get("machine") or {}).get("cpu_count")})
        rows.append(row)
    return rows


def to_csv(judged: Sequence[Judged]) -> str:
    rows = trend_rows(judged)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: "" if r.get(k) is None else r[k] for k in columns})
    return buf.getvalue()


def to_json(judged: Sequence[Judged], baseline: Mapping[str, Any] | None, baseline_path: str | None) -> str:
    out = {
        "kind": "electra-bench-history-trend", "schema_version": 1,
        "baseline": None if baseline is None else {
            "path": baseline_path, "source_run": baseline.get("source_run"), "config": baseline.get("config"),
            "config_digest": history_store.config_digest(baseline.get("config") or {}),
            "metrics": baseline["metrics"], "tol": baseline.get("tol")},
        "records": [{**j.record, "index": j.index, "status": j.status, "in_series": j.in_series,
                     "config_differences": j.differences, "failures": [c.metric for c in j.failures],
                     "checks": [c.to_dict() for c in j.checks.values()]} for j in judged],
    }
    return json.dumps(out, indent=2, sort_keys=True) + "\n"


FORMATS = ("md", "csv", "json")


def render(judged: Sequence[Judged], baseline, baseline_path, fmt: str, *, last: int = DEFAULT_LAST,
           plot_urls: Sequence[str] = ()) -> str:
    if fmt == "md":
        return markdown(judged, baseline, baseline_path, last=last, plot_urls=plot_urls)
    if fmt == "csv":
        return to_csv(judged)
    if fmt == "json":
        return to_json(judged, baseline, baseline_path)
    raise BenchError(f"unknown history format '{fmt}': choose {', '.join(FORMATS)}")
