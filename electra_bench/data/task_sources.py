"""`load_tasks` for every supported source of fine-tuning tasks.

Sources:
- None: the embedded suite a run without a source has always meant (ebs-2, electra_bench/assets/suite);
- an embedded suite's name (`ebs-2`, `ebs-3`; data/suite.py SUITES);
- a suite directory (holds suite.json);
- an official GLUE directory as written by download_glue_data.py (CoLA/, SST-2/, ... ; see glue.py),
  or one task's directory from it (e.g. glue_data/RTE);
- a directory in the HF hub parquet layout of nyu-mll/glue (cola/train-*.parquet, ...);
- `hf:glue` (or `hf:nyu-mll/glue`): the HF `datasets` cache, offline (needs the `hf` extra).

Labels: an int index into `spec.labels` for classification, a float for regression, None when the
split is unlabeled (GLUE test sets).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from ..errors import BenchError, at
from . import glue
from .suite import is_suite_dir, is_suite_name, load_suite
from .tasks import Example, TaskData, TaskSpec, TsvFile, read_tsv_examples, select

PAIR_COLUMNS = ("sentence_good", "sentence_bad", "paradigm")  # a minimal-pairs task's dev.tsv.gz


def check_source(source: str | os.PathLike) -> Path:
    """The directory a local `source` names, or one line saying why there is none (without reading it: the
    command line asks before anything heavy is imported)."""
    path = Path(source).expanduser()
    if not path.exists():
        raise BenchError(f"{path}: no such directory (expected a GLUE directory, an HF parquet GLUE "
                         f"directory, a suite directory, or hf:glue)")
    if not path.is_dir():
        raise BenchError(f"{path}: not a directory (expected a GLUE directory, an HF parquet GLUE "
                         f"directory, a suite directory, or hf:glue)")
    return path


def load_tasks(source: str | os.PathLike | None, names: Sequence[str] | None = None) -> list[TaskData]:
    """Load fine-tuning tasks from `source` (see the module docstring); `names` selects some of them."""
    if source is None or str(source) == "suite":
        return load_suite_tasks(load_suite(None), names)
    if is_suite_name(source):
        return load_suite_tasks(load_suite(str(source)), names)
    s = str(source)
    if s.startswith("hf:"):
        return glue.load_hf_datasets(s, names)
    path = check_source(s)
    if is_suite_dir(path):
        return load_suite_tasks(load_suite(path), names)
    return glue.load_glue_dir(path, names)


# -- the suite ------------------------------------------------------------------------------------


def load_suite_tasks(suite, names: Sequence[str] | None) -> list[TaskData]:
    chosen = select([t.name for t in suite.tasks], names, str(suite.path / "suite.json"))
    out = []
    for t in suite.tasks:
        if t.name not in chosen:
            continue
        spec = TaskSpec(name=t.name, text_fields=t.text_fields, labels=t.labels, regression=t.regression,
                        metrics=t.metrics, primary=t.primary, kind=t.kind, minimal_pairs=t.minimal_pairs)
        if t.minimal_pairs:
            f = _first_existing(suite.task_dir(t.name), ("dev.tsv.gz", "dev.tsv"))
            if f is None:
                raise BenchError(f"{suite.task_dir(t.name) / 'dev.tsv.gz'}: missing dev split of minimal-pairs "
                                 f"task '{t.name}'")
            out.append(TaskData(spec=spec, splits={"dev": read_minimal_pairs(f, t.text_fields)},
                                source=str(suite.task_dir(t.name))))
            continue
        splits = {}
        for split in ("train", "dev", "test"):
            f = _first_existing(suite.task_dir(t.name), (f"{split}.tsv.gz", f"{split}.tsv"))
            if f is None:
                if split == "test":
                    continue
                raise BenchError(f"{suite.task_dir(t.name) / (split + '.tsv.gz')}: missing {split} split of "
                                 f"task '{t.name}'")
            splits[split] = read_tsv_examples(spec, f, text_cols=t.text_fields,
                                              label_col="label",
                                              optional_label=split == "test")
        out.append(TaskData(spec=spec, splits=splits, source=str(suite.task_dir(t.name))))
    out.sort(key=lambda td: chosen.index(td.spec.name))
    return out


def read_minimal_pairs(path: Path, text_fields=PAIR_COLUMNS[:2]) -> list[Example]:
    """A minimal-pairs file (header sentence_good, sentence_bad, paradigm) as Example(text_a=good,
    text_b=bad, label=None); a malformed row is one line naming file:line."""
    f = TsvFile(path)
    for col in (*text_fields, PAIR_COLUMNS[2]):
        f.column(col)
    good, bad, paradigm = f.column(text_fields[0]), f.column(text_fields[1]), f.column(PAIR_COLUMNS[2])
    out = []
    for lineno, fields in f.rows():
        if not fields[good].strip() or not fields[bad].strip():
            raise BenchError(f"{at(path, lineno)}: an empty sentence (a minimal pair needs a good and a bad one)")
        if fields[good] == fields[bad]:
            raise BenchError(f"{at(path, lineno)}: the good and the bad sentence are the same")
        if not fields[paradigm].strip():
            raise BenchError(f"{at(path, lineno)}: an empty paradigm (e.g. is/are:sg)")
        out.append(Example(fields[good], fields[bad], None))
    if not out:
        raise BenchError(f"{path}: no minimal pairs (an empty split); expected at least one row")
    return out


def _first_existing(d: Path, names: Sequence[str]) -> Path | None:
    for n in names:
        if (d / n).is_file():
            return d / n
    return None
