"""The embedded default suite: a small pre-training corpus plus a few classification tasks.

Layout (built by scripts/build_suite.py into electra_bench/assets/suite/):

    suite.json            {"name", "version", "corpus": "corpus.txt.xz", "tasks": [TaskEntry, ...]}
    corpus.txt.xz         UTF-8 prose, one sentence/paragraph per line, blank line between documents
    <task>/train.tsv.gz   header row, tab-separated, no quoting: "sentence" (or "sentence1", "sentence2"),
    <task>/dev.tsv.gz     then "label"

TaskEntry = {"name", "text_fields", "labels" (list of label strings, or null for regression),
"regression", "metrics", "primary", "description", "source", "license", optional "kind", optional
"minimal_pairs"}. A minimal-pairs task (``"minimal_pairs": true``; ebs-3's pairs-* tasks) has only
<task>/dev.tsv.gz with the columns sentence_good, sentence_bad, paradigm, labels null and metrics
["accuracy"]: it is read zero-shot (does the encoder prefer the good sentence), not by a probe. When the tasks
name kinds, the suite score is the mean over kinds of the mean over each kind's tasks (ebs-3), so no kind
holds more than its share; without kinds (ebs-2) every task is its own kind: the mean over tasks.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import BenchError

METRICS = ("accuracy", "mcc", "f1", "spearman", "pearson")


# The embedded suites by name -> their folder under assets/. ebs-2 is what a run without a task source has
# always meant (its folder keeps the old name, so every committed run still resolves); ebs-3 reads ebs-2's
# pre-training corpus, so an encoder pre-trained for one is the same encoder for the other.
SUITES = {"ebs-2": "suite", "ebs-3": "ebs-3"}
LEGACY_SUITE = "ebs-2"  # a run config with no task source (source None) was scored on this one


def suite_dir(name: str | None = None) -> Path:
    """Where an embedded suite lives (inside the installed package); None: LEGACY_SUITE."""
    name = name or LEGACY_SUITE
    if name not in SUITES:
        raise BenchError(f"unknown suite '{name}': the embedded suites are {', '.join(SUITES)}")
    return Path(__file__).resolve().parent.parent / "assets" / SUITES[name]


def is_suite_name(source) -> bool:
    return source is not None and str(source) in SUITES


@dataclass(frozen=True)
class SuiteTask:
    name: str
    text_fields: tuple[str, ...]
    labels: tuple[str, ...] | None
    regression: bool
    metrics: tuple[str, ...]
    primary: str
    description: str = ""
    source: str = ""
    license: str = ""
    kind: str | None = None  # GLUE's kind of task (acceptability, paraphrase, ...); the score is a mean over kinds
    # minimal pairs (BLiMP kind): dev.tsv.gz only, columns sentence_good, sentence_bad, paradigm; scored zero-shot
    # (does the encoder's own head prefer the good sentence), never by a probe or fine-tuning
    minimal_pairs: bool = False


@dataclass(frozen=True)
class Suite:
    path: Path  # the suite directory
    name: str
    version: int
    corpus: Path
    tasks: tuple[SuiteTask, ...]

    def task_dir(self, name: str) -> Path:
        return self.path / name


def is_suite_dir(path: str | os.PathLike) -> bool:
    return (Path(path) / "suite.json").is_file()


def load_suite(path: str | os.PathLike | None = None) -> Suite:
    """Read and validate suite.json (`path`: a directory, or an embedded suite's name; None: LEGACY_SUITE)."""
    d = Path(path) if path is not None and not is_suite_name(path) else suite_dir(path and str(path))
    f = d / "suite.json"
    if not f.is_file():
        if path is None or is_suite_name(path):
            raise BenchError(f"{f}: the embedded suite is not installed (build it with scripts/build_suite.py, "
                             f"or pass a corpus / task directory explicitly)")
        raise BenchError(f"{f}: missing; expected a suite directory with suite.json")
    try:
        raw = json.loads(f.read_text(encoding="utf-8"))
    except ValueError as e:
        raise BenchError(f"{f}:{getattr(e, 'lineno', '?')}: invalid JSON ({e})") from None
    if not isinstance(raw, dict):
        raise BenchError(f"{f}: expected a JSON object with name, version, corpus, tasks")
    for key in ("name", "version", "corpus", "tasks"):
        if key not in raw:
            raise BenchError(f"{f}: missing key '{key}' (expected name, version, corpus, tasks)")
    if not isinstance(raw["tasks"], list):
        raise BenchError(f"{f}: 'tasks' must be a list of task entries")
    tasks = []
    seen = set()
    for i, t in enumerate(raw["tasks"]):
        tasks.append(_task(f, i, t))
        if tasks[-1].name in seen:
            raise BenchError(f"{f}: task #{i} duplicates the name '{tasks[-1].name}'")
        seen.add(tasks[-1].name)
    return Suite(path=d, name=str(raw["name"]), version=int(raw["version"]), corpus=(d / str(raw["corpus"])).resolve(),
                 tasks=tuple(tasks))


def _task(f: Path, i: int, t) -> SuiteTask:
    where = f"{f}: task #{i}"
    if not isinstance(t, dict):
        raise BenchError(f"{where}: expected an object")
    for key in ("name", "text_fields", "labels", "regression", "metrics", "primary"):
        if key not in t:
            raise BenchError(f"{where}: missing key '{key}'")
    name = t["name"]
    where = f"{f}: task '{name}'"
    fields = t["text_fields"]
    if not isinstance(fields, list) or len(fields) not in (1, 2) or not all(isinstance(x, str) for x in fields):
        raise BenchError(f"{where}: text_fields must be a list of 1 or 2 column names")
    regression = bool(t["regression"])
    labels = t["labels"]
    minimal_pairs = t.get("minimal_pairs", False)
    if not isinstance(minimal_pairs, bool):
        raise BenchError(f"{where}: minimal_pairs must be true or false (or absent)")
    if minimal_pairs:
        if len(fields) != 2 or labels is not None or regression or t["metrics"] != ["accuracy"] \
                or t["primary"] != "accuracy":
            raise BenchError(f"{where}: a minimal-pairs task has 2 text_fields (good, bad), labels null, regression "
                             f"false and metrics [\"accuracy\"]")
        return SuiteTask(name=str(name), text_fields=tuple(fields), labels=None, regression=False,
                         metrics=("accuracy",), primary="accuracy", description=str(t.get("description", "")),
                         source=str(t.get("source", "")), license=str(t.get("license", "")),
                         kind=_kind(where, t.get("kind")), minimal_pairs=True)
    if regression and labels is not None:
        raise BenchError(f"{where}: a regression task has labels null")
    if not regression and (not isinstance(labels, list) or len(labels) < 2):
        raise BenchError(f"{where}: labels must list at least 2 class label strings")
    metrics = t["metrics"]
    if not isinstance(metrics, list) or not metrics or any(m not in METRICS for m in metrics):
        raise BenchError(f"{where}: metrics must be a non-empty list from {', '.join(METRICS)}")
    if t["primary"] not in metrics:
        raise BenchError(f"{where}: primary '{t['primary']}' is not one of its metrics")
    return SuiteTask(name=str(name), text_fields=tuple(fields),
                     labels=None if labels is None else tuple(str(x) for x in labels), regression=regression,
                     metrics=tuple(metrics), primary=t["primary"], description=str(t.get("description", "")),
                     source=str(t.get("source", "")), license=str(t.get("license", "")),
                     kind=_kind(where, t.get("kind")))


def _kind(where: str, kind) -> str | None:
    if kind is not None and (not isinstance(kind, str) or not kind.strip()):
        raise BenchError(f"{where}: kind must be a non-empty string (or absent)")
    return kind
