"""Fine-tuning tasks as data: specs, examples, the TSV reader and label conversion. Loading a task
source (the suite, GLUE layouts, hf:glue) is task_sources.py's job.

Labels: an int index into `spec.labels` for classification, a float for regression, None when the
split is unlabeled (GLUE test sets).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from ..errors import BenchError, at
from .corpus import iter_text_lines


@dataclass(frozen=True)
class TaskSpec:
    name: str
    text_fields: tuple[str, ...]
    labels: tuple[str, ...] | None  # class label strings; None for regression
    regression: bool
    metrics: tuple[str, ...]
    primary: str
    eval_splits: tuple[str, ...] = ("dev",)  # MNLI: ("dev_matched", "dev_mismatched")
    kind: str | None = None  # the suite's kind (sentiment, paraphrase...): its score averages kinds, then tasks
    minimal_pairs: bool = False  # (good, bad) sentence pairs read zero-shot: dev only, text_a good, text_b bad, no label

    @property
    def num_labels(self) -> int:
        """Output width of the classifier: 1 for regression."""
        return 1 if self.regression else len(self.labels or ())

    @property
    def pair(self) -> bool:
        return len(self.text_fields) == 2


@dataclass
class Example:
    text_a: str
    text_b: str | None
    label: float | int | None  # int = index into spec.labels; float for regression; None = unlabeled


@dataclass
class TaskData:
    spec: TaskSpec
    splits: dict[str, list[Example]]  # "train", "dev" (MNLI: "dev_matched", "dev_mismatched"), "test"...
    source: str  # where it was read from (a path, or hf:...)

    @property
    def name(self) -> str:
        return self.spec.name


def normalize_name(name: str) -> str:
    """Task names compare case- and punctuation-insensitively: 'SST-2' == 'sst2', 'STS-B' == 'stsb'."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def select(available: Sequence[str], names: Sequence[str] | None, where: str) -> list[str]:
    """The available names that `names` asks for (all when None), in the order asked."""
    if names is None:
        return list(available)
    by_norm = {normalize_name(n): n for n in available}
    out = []
    for n in names:
        key = normalize_name(n)
        if key not in by_norm:
            raise BenchError(f"{where}: no task '{n}' (available: {', '.join(available) or 'none'})")
        if by_norm[key] not in out:
            out.append(by_norm[key])
    return out




# -- TSV reading (tab-separated, no quoting: quotes are ordinary characters) ------------------------


class TsvFile:
    """A tab-separated file read as plain `line.split("\\t")` (csv.QUOTE_NONE semantics).

    `header=True`: the first line names the columns; `header=None`: no header, `n_fields` columns.
    Rows with a different number of fields are a BenchError naming file:line. Empty lines are skipped.
    """

    def __init__(self, path: Path, header: bool = True, n_fields: int | None = None):
        self.path = Path(path)
        if not self.path.is_file():
            raise BenchError(f"{self.path}: missing file")
        self._lines = iter_text_lines(self.path)
        self.columns: list[str] | None = None
        self.n_fields = n_fields
        if header:
            first = next(self._lines, None)
            if first is None:
                raise BenchError(f"{at(self.path, 1)}: empty file; expected a header row")
            self.columns = first[1].lstrip("\ufeff").split("\t")
            self.n_fields = len(self.columns)

    def column(self, name: str | int) -> int:
        if isinstance(name, int):
            return name
        if self.columns is None or name not in self.columns:
            cols = ", ".join(self.columns or [])
            raise BenchError(f"{at(self.path, 1)}: no column '{name}' (columns: {cols})")
        return self.columns.index(name)

    def rows(self) -> Iterator[tuple[int, list[str]]]:
        for lineno, line in self._lines:
            if not line:
                continue
            fields = line.split("\t")
            if self.n_fields is not None and len(fields) != self.n_fields:
                what = f" ({', '.join(self.columns)})" if self.columns else ""
                raise BenchError(f"{at(self.path, lineno)}: {len(fields)} tab-separated fields, expected "
                                 f"{self.n_fields}{what}")
            yield lineno, fields


def convert_label(spec: TaskSpec, raw, where: str):
    """A raw label (string or number) -> int index / float; BenchError naming `where` if invalid."""
    if spec.regression:
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise BenchError(f"{where}: score {raw!r} is not a number (task {spec.name} expects a float "
                             f"similarity score)") from None
        if not math.isfinite(value):
            raise BenchError(f"{where}: score {raw!r} is not finite (task {spec.name})")
        return value
    labels = spec.labels or ()
    key = str(raw).strip()
    if key in labels:
        return labels.index(key)
    raise BenchError(f"{where}: label {raw!r} is not one of {', '.join(labels)} (task {spec.name})")


def read_tsv_examples(spec: TaskSpec, path: Path, *, text_cols: Sequence[str | int], label_col: str | int | None,
                      header: bool = True, n_fields: int | None = None, optional_label: bool = False,
                      keep=None, score_range: tuple[float, float] | None = None) -> list[Example]:
    """Examples from a TSV file. `label_col=None`: unlabeled. `optional_label`: use the label column
    when present. `keep(fields)`: a row filter. `score_range`: valid range of regression scores."""
    f = TsvFile(path, header=header, n_fields=n_fields)
    text_idx = [f.column(c) for c in text_cols]
    label_idx = None
    if label_col is not None:
        if optional_label and (f.columns is None or label_col not in f.columns):
            label_idx = None
        else:
            label_idx = f.column(label_col)
    out = []
    for lineno, fields in f.rows():
        if keep is not None and not keep(fields):
            continue
        label = None
        if label_idx is not None:
            label = convert_label(spec, fields[label_idx], at(path, lineno))
            if score_range is not None and not (score_range[0] <= label <= score_range[1]):
                raise BenchError(f"{at(path, lineno)}: score {fields[label_idx]!r} is outside "
                                 f"[{score_range[0]:g}, {score_range[1]:g}] (task {spec.name})")
        a = fields[text_idx[0]]
        b = fields[text_idx[1]] if len(text_idx) > 1 else None
        out.append(Example(a, b, label))
    if not out:
        raise BenchError(f"{path}: no examples (an empty split); expected at least one row")
    return out
