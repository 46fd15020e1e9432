"""The CI regression check: a run's final scores against a committed baseline (their history over
commits: history_store.py, history_trend.py, history_plot.py).

Baseline file (JSON, made by `make_baseline` / `write_baseline`):
```
{"schema_version": 1, "kind": "electra-bench-baseline", "source_run": "...", "created_utc": "...",
 "flop_convention": "measured", "protocol": "finetune", "suite": "...", "tol": 1.0,
 "config": {"preset": "tiny", "overrides": {}, "budget": "2e12", "protocol": "probe", "suite": "ebs-2",
            "flop_convention": "measured", "tasks": [...], "seeds": [0, 1], "pretrain_seeds": 2,
            "probe_pool": 1000, "probe_examples": 800, "max_eval_examples": 1000, "corpus": null, "source": null},
 "metrics": {"rtd/score": 79.1, "mlm/score": 75.0, "init/score": 50.2,
             "rtd/sst2": 85.0, ...},                  # checked: higher is better, 0-100
 "info": {"headline/rtd_reaches_mlm_percent": 35.4, ...}}   # recorded, not checked
```
`metrics` keys are `<objective>/score` (the aggregate at the objective's final checkpoint; init: the
untrained encoder), `<objective>/<task>` (that task's median primary metric there), `<objective>/margin`
(final score minus the untrained encoder's: what pre-training bought), and the pre-training learning
diagnostics at the end of the budget, mean over pre-training seeds (`<objective>/diag/mlm_gain_nats`,
`rtd/diag/disc_auc`, `rtd/diag/disc_gap_nats`, `<objective>/diag/isotropy` = 1 - mean token cosine).
All are higher-is-better; the diagnostics are bit-reproducible on CPU at a fixed budget, so a change
that stops an objective from learning fails `check` even when the downstream scores sit in the noise.

`check` compares every baseline metric with the run's: `regressed` when it dropped by more than its
tolerance, `improved` when it rose by more, `ok` otherwise, `missing` when the run lacks it (counted as
a failure), `new` for metrics only the run has (informational). The verdict is one more check
(`verdict/rtd_minus_mlm`): when the baseline ranks one objective ahead with a 95% CI excluding 0 and the
run ranks the other one ahead the same way, that is a regression (a flip beyond noise). Exit codes for the CLI: 0 all within
tolerance, 1 any regressed or missing, 2 bad input (a BenchError, e.g. a missing or malformed baseline).

Alike runs only. `config` records what makes two runs comparable (`run_config`): preset and its
overrides, budget, protocol, suite, FLOP convention, tasks, evaluation seeds, pre-training seeds, the
evaluation sizes and the data. `check` refuses (BenchError, exit 2, one line naming every difference)
when the run differs from the baseline in any of them that both record, unless
`allow_different_config=True` (then a WARNING line says what differs and the comparison goes on). A
baseline without `config` (written before it existed) gets one warning line and is compared.

`tol`: one number (absolute points on the 0-100 scale) for every metric, or a dict of
{metric key or fnmatch pattern: tolerance} with an optional "default" (else 1.0). `check(..., tol=None)`
uses the baseline's own "tol" (written by make_baseline, default 1.0).
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..store import atomic_io
from ..errors import BenchError, at
from ..summarise import summary as summary_mod
from ..summarise.points import TRAINED, final_point
from ..store.runs import RunDir
from .comparable import CONFIG_KEYS, config_differences, run_config

SCHEMA_VERSION = 1
KIND = "electra-bench-baseline"
DEFAULT_TOL = 1.0
# per-metric tolerances written into new baselines: score points for scores and margins, the
# diagnostics' own units (nats, AUC, cosine) for the diagnostics
DEFAULT_TOLS = {"default": 2.0, "*/margin": 2.0, "*/diag/mlm_gain_nats": 0.1, "*/diag/disc_auc": 0.05,
                "*/diag/disc_gap_nats": 0.02, "*/diag/isotropy": 0.1}

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = BenchError.exit_code  # 2


def score_tolerances(points: float) -> dict[str, float]:
    """DEFAULT_TOLS with `points` for the score-scale metrics (scores, per-task metrics, margins)."""
    return {**DEFAULT_TOLS, "default": float(points), "*/margin": float(points)}


def final_metrics(summary: Mapping[str, Any], protocol: str | None = None) -> tuple[dict[str, float], dict[str, Any]]:
    """(checked metrics, informational values) of a summary's final points."""
    protocol = protocol or summary["main_protocol"]
    if protocol not in summary["protocols"]:
        raise BenchError(f"run {summary.get('run_id')} has no '{protocol}' scores")
    block = summary["protocols"][protocol]
    metrics: dict[str, float] = {}
    for obj in ("init",) + TRAINED:
        point = (next((p for p in block["points"] if p["objective"] == "init"), None) if obj == "init"
                 else final_point(block["points"], obj))
        if point is None:
            continue
        if point["score"]["value"] is not None:
            metrics[f"{obj}/score"] = point["score"]["value"]
        for task, t in point["tasks"].items():
            if t.get("median") is not None:
                metrics[f"{obj}/{task}"] = t["median"]
    init_point = next((p for p in block["points"] if p["objective"] == "init"), None)
    for obj in TRAINED:
        if f"{obj}/score" in metrics and init_point is not None and init_point["score"]["value"] is not None:
            metrics[f"{obj}/margin"] = metrics[f"{obj}/score"] - init_point["score"]["value"]
        final = (summary.get("learning") or {}).get(obj, {}).get("final_mean") or {}
        keys = ("mlm_gain_nats", "disc_auc", "disc_gap_nats") if obj == "rtd" else ("mlm_gain_nats",)
        for k in keys:
            if final.get(k) is not None:
                metrics[f"{obj}/diag/{k}"] = float(final[k])
        if final.get("token_cosine") is not None:
            metrics[f"{obj}/diag/isotropy"] = 1.0 - float(final["token_cosine"])
    info: dict[str, Any] = {}
    for key, h in block["headline"].items():
        if h:
            info[f"headline/{key}_percent"] = h.get("percent")
    info["verdict"] = block["verdict"].get("verdict")
    info["verdict_kind"] = block["verdict"].get("kind")
    info["verdict_better"] = block["verdict"].get("better")
    info["verdict_difference"] = block["verdict"].get("difference")
    info["verdict_ci"] = block["verdict"].get("ci")
    for obj in TRAINED:
        fp = final_point(block["points"], obj)
        if fp is not None:
            info[f"{obj}/train_flops"] = fp["train_flops"]
    return metrics, info


def make_baseline(run: RunDir | Mapping[str, Any], *, protocol: str | None = None, task_specs=None,
                  convention: str | None = None, tol: float | Mapping[str, float] = DEFAULT_TOL) -> dict:
    """The trimmed summary committed as a baseline (see the module docstring); `tol` is stored as the
    baseline's default tolerance."""
    if isinstance(tol, Mapping):
        for key in tol:
            tolerance(tol, key)
    else:
        tolerance(tol, "*")
    summary = dict(run) if isinstance(run, Mapping) else summary_mod.load_or_build(run, task_specs, convention)
    protocol = protocol or summary["main_protocol"]
    metrics, info = final_metrics(summary, protocol)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "source_run": summary.get("run_id"),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "flop_convention": summary.get("flop_convention"),
        "protocol": protocol,
        "suite": summary.get("suite", {}).get("name"),
        "tol": tol,
        "config": run_config(summary, protocol),
        "metrics": metrics,
        "info": info,
    }


def write_baseline(run: RunDir | Mapping[str, Any], path: str | Path, **kwargs) -> dict:
    baseline = make_baseline(run, **kwargs)
    atomic_io.write_json(path, baseline)
    return baseline


def load_baseline(path: str | Path) -> dict:
    path = Path(path)
    data = atomic_io.read_json(path, "baseline", missing="file not found")
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise BenchError(f"{at(path)}: not an electra-bench baseline (make one with make_baseline)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise BenchError(f"{at(path)}: baseline schema_version {data.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    metrics = data.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise BenchError(f"{at(path)}: baseline has no metrics")
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise BenchError(f"{at(path)}: baseline metric '{k}' is not a finite number ({v!r})")
    if "config" in data and not isinstance(data["config"], dict):
        raise BenchError(f"{at(path)}: baseline 'config' is not an object")
    return data


def tolerance(tol: float | Mapping[str, float], key: str) -> float:
    """The tolerance of metric `key` under `tol` (one number, or {key or fnmatch pattern: tol, "default": tol})."""
    if isinstance(tol, Mapping):
        if key in tol:
            value = tol[key]
        else:
            value = next((v for pat, v in tol.items() if pat != "default" and fnmatch.fnmatchcase(key, pat)),
                         tol.get("default", DEFAULT_TOL))
    else:
        value = tol
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BenchError(f"tolerance for '{key}' must be a number >= 0, got {value!r}")
    return float(value)


@dataclass
class MetricCheck:
    metric: str
    old: float | None
    new: float | None
    delta: float | None
    tol: float | None
    status: str  # ok | improved | regressed | missing | new

    def to_dict(self) -> dict:
        return {"metric": self.metric, "old": self.old, "new": self.new, "delta": self.delta, "tol": self.tol,
                "status": self.status}


@dataclass
class CheckResult:
    run_id: str
    baseline: str
    checks: list[MetricCheck] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # one line each, printed under the first line
    config_differences: list[str] = field(default_factory=list)  # compared anyway (allow_different_config)

    @property
    def failures(self) -> list[MetricCheck]:
        return [c for c in self.checks if c.status in ("regressed", "missing")]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.ok else EXIT_REGRESSION

    def moved(self) -> list[MetricCheck]:
        return [c for c in self.checks if c.status != "ok"]

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "baseline": self.baseline, "ok": self.ok, "exit_code": self.exit_code,
                "warnings": list(self.warnings), "config_differences": list(self.config_differences),
                "checks": [c.to_dict() for c in self.checks], "info": self.info}

    def render(self, fmt: str = "text", verbose: bool = False) -> str:
        """`fmt` "text" (what moved) or "json"."""
        if fmt == "json":
            return self.to_json()
        if fmt != "text":
            raise BenchError(f"unknown check output format '{fmt}': choose text or json")
        return self.to_text(verbose)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_text(self, verbose: bool = False) -> str:
        def n(x):
            return "-" if x is None else f"{x:.2f}"

        rows = self.checks if verbose else self.moved()
        width = max([len(c.metric) for c in rows] + [6])
        lines = [f"check {self.run_id} against {self.baseline}: "
                 + ("OK" if self.ok else f"REGRESSION ({len(self.failures)} metric(s))")]
        lines += [f"  WARNING: {w}" for w in self.warnings]
        if rows:
            lines.append(f"  {'metric':<{width}}  {'old':>8}  {'new':>8}  {'delta':>8}  {'tol':>6}  status")
            for c in rows:
                delta = "-" if c.delta is None else f"{c.delta:+.2f}"
                lines.append(f"  {c.metric:<{width}}  {n(c.old):>8}  {n(c.new):>8}  {delta:>8}  {n(c.tol):>6}  {c.status}")
        ok = sum(c.status == "ok" for c in self.checks)
        lines.append(f"  {ok} of {len(self.checks)} metric(s) within tolerance")
        return "\n".join(lines) + "\n"


def check(run: RunDir | Mapping[str, Any], baseline_path: str | Path, tol: float | Mapping[str, float] | None = None,
          *, task_specs=None, convention: str | None = None, allow_different_config: bool = False) -> CheckResult:
    """Compare the run's final scores with the baseline file (see the module docstring). `tol` None:
    the baseline's own `tol`, else 1.0 point. A run whose config differs from the baseline's (preset,
    budget, protocol, suite, FLOP convention, tasks, seeds, ...) is refused with a BenchError naming the
    differences, unless `allow_different_config` (then it is compared, with a WARNING line)."""
    baseline = load_baseline(baseline_path)
    if tol is None:
        tol = baseline.get("tol", DEFAULT_TOL)
    if not isinstance(tol, Mapping):
        tolerance(tol, "*")  # reject a bad global tolerance up front
    summary = dict(run) if isinstance(run, Mapping) else summary_mod.load_or_build(run, task_specs, convention)
    protocol = baseline.get("protocol") or summary["main_protocol"]
    run_id = str(summary.get("run_id"))
    warnings: list[str] = []
    differences: list[str] = []
    if not isinstance(baseline.get("config"), dict):
        warnings.append(f"baseline {baseline_path} records no run config (written before baselines did): "
                        "cannot tell whether the runs are alike; comparing anyway (rewrite it with "
                        "`electra-bench baseline`)")
    else:
        run_cfg = run_config(summary, protocol if protocol in summary["protocols"] else None)
        differences = config_differences(run_cfg, baseline["config"])
        if differences and not allow_different_config:
            raise BenchError(f"run {run_id} is not comparable with baseline {baseline_path}: {'; '.join(differences)} "
                             "(compare anyway with --allow-different-config)")
        if differences:
            warnings.append(f"run and baseline differ: {'; '.join(differences)}; compared anyway "
                            "(--allow-different-config), so a status below may be the config, not a regression")
        unknown = sorted(k for k in CONFIG_KEYS if (k in run_cfg) != (k in baseline["config"]))
        if unknown:
            warnings.append(f"not compared (recorded on one side only): {', '.join(unknown)}")
    new_metrics, info = final_metrics(summary, protocol)
    result = CheckResult(run_id=run_id, baseline=str(baseline_path), info=info, warnings=warnings,
                         config_differences=differences,
                         checks=compare_metrics(new_metrics, baseline["metrics"], tol))
    result.info["baseline_info"] = baseline.get("info", {})
    flip = verdict_flip(baseline.get("info", {}), info)
    if flip is not None:
        result.checks.append(flip)
    return result


def verdict_flip(old_info: Mapping[str, Any], new_info: Mapping[str, Any]) -> MetricCheck | None:
    """The verdict as one check: a regression when baseline and run each rank one objective ahead with a
    95% CI excluding 0 (summarise/confidence.py) and they rank opposite ones: a flip beyond noise, which
    no per-metric tolerance stands for. None when the baseline records no ranked verdict."""
    if old_info.get("verdict_kind") != "ranked" or old_info.get("verdict_better") is None:
        return None
    old, new = old_info.get("verdict_difference"), new_info.get("verdict_difference")
    flipped = new_info.get("verdict_kind") == "ranked" and new_info.get("verdict_better") != old_info["verdict_better"]
    return MetricCheck("verdict/rtd_minus_mlm", old, new, None if old is None or new is None else new - old, None,
                       "regressed" if flipped else "ok")


def compare_metrics(new_metrics: Mapping[str, float], baseline_metrics: Mapping[str, float],
                    tol: float | Mapping[str, float]) -> list[MetricCheck]:
    """The per-metric rule of `check` (module docstring), on bare metric dicts: the history trend
    (ci/history_trend.py) judges every stored commit with it, so a point drawn outside the
    band is exactly what `check` fails."""
    checks = []
    for key in sorted(baseline_metrics):
        old = float(baseline_metrics[key])
        t = tolerance(tol, key)
        if key not in new_metrics:
            checks.append(MetricCheck(key, old, None, None, t, "missing"))
            continue
        new = float(new_metrics[key])
        delta = new - old
        status = "regressed" if delta < -t else "improved" if delta > t else "ok"
        checks.append(MetricCheck(key, old, new, delta, t, status))
    for key in sorted(set(new_metrics) - set(baseline_metrics)):
        checks.append(MetricCheck(key, None, float(new_metrics[key]), None, None, "new"))
    return checks
