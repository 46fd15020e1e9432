"""The GLUE score, in the two conventions papers use, and the plain mean for other task sets.

Input everywhere: `task_metrics` maps a task name to {metric name: value} on the 0-100 scale of
`metrics.py`. GLUE task names: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli. MNLI's metrics are
"accuracy_matched" and "accuracy_mismatched".

Conventions
-----------
`electra` -- the ELECTRA paper's GLUE dev score (Clark et al. 2020, Sec. 3.1: "Spearman correlation for
  STS, Matthews correlation for CoLA, and accuracy for the other GLUE tasks; we generally report the
  average score over all tasks"; its Tables 1-2 list exactly CoLA, SST, MRPC, STS, QQP, MNLI, QNLI, RTE):
  the unweighted mean of 8 numbers -- CoLA MCC, SST-2 accuracy, MRPC accuracy, STS-B Spearman, QQP
  accuracy, MNLI-matched accuracy, QNLI accuracy, RTE accuracy. No WNLI.

`glue` -- the GLUE leaderboard's score (Wang et al. 2019, Sec. 3.4: "a macro-average of [per-task]
  scores ... For tasks with multiple metrics (e.g., accuracy and F1), we use an unweighted average of the
  metrics as the score for the task"): the unweighted mean over the 9 tasks, each task first reduced to
  one number --
    CoLA: MCC;  SST-2: acc;  MRPC: (acc + F1)/2;  STS-B: (Pearson + Spearman)/2;  QQP: (acc + F1)/2;
    MNLI: (matched acc + mismatched acc)/2 -- ONE task, not two entries;  QNLI: acc;  RTE: acc;
    WNLI: acc.
  The diagnostic set (AX) is not part of the score. MNLI counting once (m and mm averaged) and WNLI
  counting in are checked against the published numbers: the "Avg" column of the GLUE paper's Table 4
  is reproduced to its printed precision by this rule and not by the alternatives (MNLI-m and -mm as two
  of ten entries, or WNLI left out); `tests/test_score_glue.py` pins rows of that table.

`suite_score` -- any other task set: the unweighted mean over tasks of each task's primary metric; when the
  specs name kinds (a suite's `kind`: acceptability, paraphrase, sentiment...), the mean over kinds of the mean
  over each kind's tasks, so three sentiment tasks weigh as much as one paraphrase task.

Missing tasks raise BenchError naming them; with `partial=True` the mean is over the tasks present and
the result says which were missing (`GlueScore.missing`; `score()` also warns).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..data.glue import GLUE_TASKS as GLUE_TASK_DATA
from ..errors import BenchError

GLUE_TASKS = tuple(GLUE_TASK_DATA)  # the task registry is data/glue.py's


def reported_metric(spec) -> str:
    """The number a task reports as its primary: MNLI's is the matched dev set's accuracy."""
    if len(spec.eval_splits) > 1:
        return f"{spec.primary}_{spec.eval_splits[0].split('_', 1)[-1]}"
    return spec.primary


# task -> metrics averaged into that task's number, per convention
CONVENTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    # the paper's: each of its 8 tasks' primary metric
    "electra": {n: (reported_metric(t.spec),) for n, t in GLUE_TASK_DATA.items() if t.paper},
    # the leaderboard's: two-metric tasks averaged first
    "glue": {
        "cola": ("mcc",),
        "sst2": ("accuracy",),
        "mrpc": ("accuracy", "f1"),
        "stsb": ("pearson", "spearman"),
        "qqp": ("accuracy", "f1"),
        "mnli": ("accuracy_matched", "accuracy_mismatched"),
        "qnli": ("accuracy",),
        "rte": ("accuracy",),
        "wnli": ("accuracy",),
    },
}

DESCRIPTIONS = {
    "electra": "ELECTRA paper: mean of CoLA MCC, SST-2/MRPC/QQP/MNLI-m/QNLI/RTE acc, STS-B Spearman (no WNLI)",
    "glue": "GLUE leaderboard: macro-average of 9 tasks, two-metric tasks averaged first, MNLI = mean(m, mm), WNLI in",
}

GLUE_PRIMARY = {n: reported_metric(t.spec) for n, t in GLUE_TASK_DATA.items()}


@dataclass(frozen=True)
class GlueScore:
    value: float  # NaN only when nothing at all could be scored (partial=True with no tasks)
    convention: str
    per_task: dict[str, float]  # the number each task contributed
    missing: tuple[str, ...] = field(default=())  # tasks (or task:metric) left out under partial=True

    @property
    def partial(self) -> bool:
        return bool(self.missing)


def _check_convention(convention: str) -> dict[str, tuple[str, ...]]:
    if convention not in CONVENTIONS:
        raise BenchError(f"unknown GLUE convention '{convention}': choose one of {', '.join(CONVENTIONS)}")
    return CONVENTIONS[convention]


def _task_value(task: str, metrics: Mapping[str, float] | None, needed: tuple[str, ...]) -> tuple[float | None, list[str]]:
    if metrics is None:
        return None, [task]
    absent = [f"{task}:{m}" for m in needed if m not in metrics or metrics[m] is None]
    if absent:
        return None, absent
    values = [float(metrics[m]) for m in needed]
    bad = [f"{task}:{m}" for m, v in zip(needed, values) if not math.isfinite(v)]
    if bad:
        raise BenchError(f"non-finite metric value for {', '.join(bad)}")
    return sum(values) / len(values), []


def score_detail(task_metrics: Mapping[str, Mapping[str, float]], convention: str = "electra", *,
                 partial: bool = False) -> GlueScore:
    """The GLUE score with its per-task contributions (see the module docstring for the rules)."""
    rule = _check_convention(convention)
    per_task: dict[str, float] = {}
    missing: list[str] = []
    for task, needed in rule.items():
        value, absent = _task_value(task, task_metrics.get(task), needed)
        if value is None:
            missing.extend(absent)
        else:
            per_task[task] = value
    if missing and not partial:
        raise BenchError(
            f"GLUE score ({convention} convention) needs {', '.join(missing)}, which the results lack; "
            f"score the tasks present with partial=True, or use the other convention"
        )
    value = sum(per_task.values()) / len(per_task) if per_task else float("nan")
    return GlueScore(value=value, convention=convention, per_task=per_task, missing=tuple(missing))


def score(task_metrics: Mapping[str, Mapping[str, float]], convention: str = "electra", *,
          partial: bool = False) -> float:
    """The GLUE score of `task_metrics` in `convention` ("electra" or "glue"), on the 0-100 scale."""
    detail = score_detail(task_metrics, convention, partial=partial)
    if detail.missing:
        warnings.warn(
            f"partial GLUE score ({convention}): mean over {len(detail.per_task)} task(s), "
            f"missing {', '.join(detail.missing)}",
            stacklevel=2,
        )
    return detail.value


def primary_metric(task: str, spec: Any = None, available: Mapping[str, float] | None = None) -> str:
    """The metric a task is ranked by.

    From the spec when it names one (attribute or key `primary_metric`, `primary` or `metric`, else the
    first of `metrics`); for GLUE tasks without a spec, the ELECTRA convention's metric; otherwise, when
    the task reports a single metric, that one, else the first of accuracy, mcc, spearman, pearson, f1
    it reports. A spec's metric stored per evaluation split (MNLI: "accuracy" reported as
    "accuracy_matched" / "accuracy_mismatched") resolves to the matched one.
    """
    if spec is not None:
        name = None
        for key in ("primary_metric", "primary", "metric"):
            value = getattr(spec, key, None)
            if value is None and isinstance(spec, Mapping):
                value = spec.get(key)
            if isinstance(value, str) and value:
                name = value
                break
        if name is None:
            metrics = getattr(spec, "metrics", None)
            if metrics is None and isinstance(spec, Mapping):
                metrics = spec.get("metrics")
            if isinstance(metrics, str):
                name = metrics
            elif metrics:
                name = list(metrics)[0]
        if name is not None:
            if available and name not in available and f"{name}_matched" in available:
                return f"{name}_matched"
            return name
    if task in GLUE_PRIMARY:
        return GLUE_PRIMARY[task]
    if available:
        names = list(available)
        if len(names) == 1:
            return names[0]
        for preferred in ("accuracy", "mcc", "spearman", "pearson", "f1"):
            if preferred in available:
                return preferred
        return sorted(names)[0]
    raise BenchError(f"task '{task}': no primary metric (give a task spec with primary_metric)")


def suite_score_detail(task_metrics: Mapping[str, Mapping[str, float]], task_specs: Mapping[str, Any] | None, *,
                       partial: bool = False) -> GlueScore:
    """Mean over the suite's tasks of each task's primary metric. The suite is `task_specs`' keys, or
    the tasks in `task_metrics` when no specs are given."""
    tasks = list(task_specs) if task_specs else sorted(task_metrics)
    per_task: dict[str, float] = {}
    missing: list[str] = []
    for task in tasks:
        spec = task_specs.get(task) if task_specs else None
        metrics = task_metrics.get(task)
        if metrics is None:
            missing.append(task)
            continue
        name = primary_metric(task, spec, metrics)
        value, absent = _task_value(task, metrics, (name,))
        if value is None:
            missing.extend(absent)
        else:
            per_task[task] = value
    if missing and not partial:
        raise BenchError(f"suite score needs {', '.join(missing)}, which the results lack")
    by_kind: dict[str, list[float]] = {}
    for task, value in per_task.items():
        by_kind.setdefault(task_kind(task, task_specs.get(task) if task_specs else None), []).append(value)
    means = [sum(v) / len(v) for v in by_kind.values()]
    value = sum(means) / len(means) if means else float("nan")
    return GlueScore(value=value, convention="suite", per_task=per_task, missing=tuple(missing))


def task_kind(task: str, spec: Any = None) -> str:
    """The kind a task's score is averaged in: the spec's `kind`, else the task itself (a kind of one)."""
    kind = getattr(spec, "kind", None)
    if kind is None and isinstance(spec, Mapping):
        kind = spec.get("kind")
    return kind or f"task:{task}"


def has_kinds(task_specs: Mapping[str, Any] | None) -> bool:
    return bool(task_specs) and any(not task_kind(t, s).startswith("task:") for t, s in task_specs.items())


def suite_score(task_metrics: Mapping[str, Mapping[str, float]], task_specs: Mapping[str, Any] | None, *,
                partial: bool = False) -> float:
    """Unweighted mean over tasks of each task's primary metric (0-100)."""
    detail = suite_score_detail(task_metrics, task_specs, partial=partial)
    if detail.missing:
        warnings.warn(f"partial suite score: missing {', '.join(detail.missing)}", stacklevel=2)
    return detail.value


def is_glue(tasks) -> bool:
    tasks = set(tasks)
    return bool(tasks) and tasks <= set(GLUE_TASKS)


def covers(tasks, convention: str) -> bool:
    """Whether `tasks` include every task the convention averages."""
    return set(_check_convention(convention)) <= set(tasks)
