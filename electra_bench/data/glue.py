"""GLUE: the task registry and loaders for its three distributions.

1. The official directory written by `download_glue_data.py` (tab-separated, read with quoting off:
   QQP and MNLI rows hold unbalanced `"` that break CSV quoting):

   CoLA  CoLA/   train/dev: NO header, 4 fields (source, label, original mark, sentence);
                 test: header index, sentence
   SST-2 SST-2/  sentence, label (0/1); test: index, sentence
   MRPC  MRPC/   Quality, #1 ID, #2 ID, #1 String, #2 String (the header may carry a BOM);
                 test: index, #1 ID, #2 ID, #1 String, #2 String
   STS-B STS-B/  index, genre, filename, year, old_index, source1, source2, sentence1, sentence2,
                 score (a 0-5 float); test: no score
   QQP   QQP/    id, qid1, qid2, question1, question2, is_duplicate; test: id, question1, question2
   MNLI  MNLI/   index, promptID, pairID, genre, 4 parse columns, sentence1, sentence2, label1
                 [label2..5 on dev], gold_label; test_matched / test_mismatched without labels
   QNLI  QNLI/   index, question, sentence, label (entailment / not_entailment)
   RTE   RTE/    index, sentence1, sentence2, label (entailment / not_entailment)
   WNLI  WNLI/   index, sentence1, sentence2, label (0/1)
   Test files (no labels) are loaded as split "test" when present.

   MNLI's dev sets are dev_matched.tsv and dev_mismatched.tsv. MRPC without train.tsv/dev.tsv is
   rebuilt from msr_paraphrase_train.txt + dev_ids.tsv exactly as download_glue_data.py does.
2. The HF hub parquet layout of nyu-mll/glue: `<config>/<split>-NNNNN-of-NNNNN.parquet` (also
   `<config>/<split>/NNNN.parquet` and `<config>/glue-<split>.parquet`), splits train / validation /
   test (MNLI: validation_matched, validation_mismatched, test_matched, test_mismatched); labels are
   class indices in the order of `labels` below (-1 on test). Needs pyarrow (the `parquet` extra).
3. `hf:glue`: the HF `datasets` cache, offline (the `hf` extra).

Label orders follow the HF dataset (so its class indices are ours): MNLI entailment, neutral,
contradiction; QNLI/RTE entailment, not_entailment; the binary tasks 0, 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..errors import BenchError
from .corpus import require_datasets
from .tasks import Example, TaskData, TaskSpec, TsvFile, convert_label, normalize_name, read_tsv_examples, select

ACC = ("accuracy",)


@dataclass(frozen=True)
class GlueTask:
    spec: TaskSpec
    directory: str  # the official directory name
    display: str  # the paper's name
    text_cols: tuple  # train/dev column names (ints: no header)
    label_col: str | int
    header: bool = True
    n_fields: int | None = None  # fixed field count when there is no header
    dev_files: dict = field(default_factory=lambda: {"dev": "dev.tsv"})
    test_files: dict = field(default_factory=lambda: {"test": "test.tsv"})
    test_text_cols: tuple | None = None  # when the test file names its text columns differently
    hf_text_cols: tuple = ()
    hf_splits: dict = field(default_factory=lambda: {"train": "train", "dev": "validation", "test": "test"})
    paper: bool = True  # one of the 8 tasks of the ELECTRA paper's GLUE score


def _spec(name, fields, labels, metrics=ACC, primary="accuracy", regression=False, eval_splits=("dev",)):
    return TaskSpec(name=name, text_fields=fields, labels=labels, regression=regression, metrics=metrics,
                    primary=primary, eval_splits=eval_splits)


BINARY = ("0", "1")
NLI2 = ("entailment", "not_entailment")

GLUE_TASKS: dict[str, GlueTask] = {t.spec.name: t for t in (
    GlueTask(_spec("cola", ("sentence",), BINARY, ("mcc",), "mcc"), "CoLA", "CoLA",
             text_cols=(3,), label_col=1, header=False, n_fields=4, test_text_cols=("sentence",),
             hf_text_cols=("sentence",)),
    GlueTask(_spec("sst2", ("sentence",), BINARY), "SST-2", "SST-2", text_cols=("sentence",), label_col="label",
             hf_text_cols=("sentence",)),
    GlueTask(_spec("mrpc", ("sentence1", "sentence2"), BINARY, ("accuracy", "f1")), "MRPC", "MRPC",
             text_cols=("#1 String", "#2 String"), label_col="Quality", hf_text_cols=("sentence1", "sentence2")),
    GlueTask(_spec("stsb", ("sentence1", "sentence2"), None, ("spearman", "pearson"), "spearman",
                   regression=True), "STS-B", "STS-B",
             text_cols=("sentence1", "sentence2"), label_col="score", hf_text_cols=("sentence1", "sentence2")),
    GlueTask(_spec("qqp", ("question1", "question2"), BINARY, ("accuracy", "f1")), "QQP", "QQP",
             text_cols=("question1", "question2"), label_col="is_duplicate", hf_text_cols=("question1", "question2")),
    GlueTask(_spec("mnli", ("premise", "hypothesis"), ("entailment", "neutral", "contradiction"),
                   eval_splits=("dev_matched", "dev_mismatched")), "MNLI", "MNLI",
             text_cols=("sentence1", "sentence2"), label_col="gold_label",
             dev_files={"dev_matched": "dev_matched.tsv", "dev_mismatched": "dev_mismatched.tsv"},
             test_files={"test_matched": "test_matched.tsv", "test_mismatched": "test_mismatched.tsv"},
             hf_text_cols=("premise", "hypothesis"),
             hf_splits={"train": "train", "dev_matched": "validation_matched",
                        "dev_mismatched": "validation_mismatched", "test_matched": "test_matched",
                        "test_mismatched": "test_mismatched"}),
    GlueTask(_spec("qnli", ("question", "sentence"), NLI2), "QNLI", "QNLI", text_cols=("question", "sentence"),
             label_col="label", hf_text_cols=("question", "sentence")),
    GlueTask(_spec("rte", ("sentence1", "sentence2"), NLI2), "RTE", "RTE", text_cols=("sentence1", "sentence2"),
             label_col="label", hf_text_cols=("sentence1", "sentence2")),
    GlueTask(_spec("wnli", ("sentence1", "sentence2"), BINARY), "WNLI", "WNLI",
             text_cols=("sentence1", "sentence2"), label_col="label", hf_text_cols=("sentence1", "sentence2"),
             paper=False),
)}

PAPER_TASKS = tuple(n for n, t in GLUE_TASKS.items() if t.paper)
_BY_NORM = {normalize_name(t.directory): n for n, t in GLUE_TASKS.items()} | {n: n for n in GLUE_TASKS}
STS_RANGE = (0.0, 5.0)


def glue_task(name: str) -> GlueTask | None:
    n = _BY_NORM.get(normalize_name(name))
    return GLUE_TASKS[n] if n else None


# -- layout detection -----------------------------------------------------------------------------


def _task_dirs(root: Path) -> dict[str, Path]:
    """GLUE task name -> its directory under root (case/punctuation-insensitive directory names)."""
    out = {}
    for child in sorted(root.iterdir()) if root.is_dir() else ():
        if child.is_dir():
            t = glue_task(child.name)
            if t is not None and t.spec.name not in out:
                out[t.spec.name] = child
    return out


def _is_parquet_task_dir(d: Path) -> bool:
    return any(d.glob("*.parquet")) or any(d.glob("*/*.parquet"))


def detect_layout(path: Path) -> tuple[str, dict[str, Path]]:
    """('glue' | 'hf_parquet', {task: dir}) for a GLUE root, or a single task's directory."""
    dirs = _task_dirs(path)
    single = glue_task(path.name)
    if not dirs and single is not None:
        dirs = {single.spec.name: path}
    if not dirs:
        known = ", ".join(t.directory for t in GLUE_TASKS.values())
        raise BenchError(f"{path}: not a task directory: no suite.json and no GLUE task directory "
                         f"({known}, or their HF names cola, sst2, ...)")
    parquet = [n for n, d in dirs.items() if _is_parquet_task_dir(d)]
    layout = "hf_parquet" if parquet and len(parquet) >= len(dirs) - len(parquet) else "glue"
    return layout, dirs


def load_glue_dir(path: Path, names: Sequence[str] | None) -> list[TaskData]:
    layout, dirs = detect_layout(path)
    available = [n for n in GLUE_TASKS if n in dirs]
    if names is None:
        chosen = [n for n in available if GLUE_TASKS[n].paper] or available
    else:
        for n in names:
            t = glue_task(n)
            if t is None:
                raise BenchError(f"{path}: unknown GLUE task '{n}' (GLUE tasks: "
                                 f"{', '.join(t.display for t in GLUE_TASKS.values())})")
            if t.spec.name not in dirs:
                raise BenchError(f"{path / t.directory}: missing task directory for {t.display} "
                                 f"(found: {', '.join(GLUE_TASKS[a].directory for a in available) or 'none'})")
        chosen = select(available, names, str(path))
    loader = _load_parquet_task if layout == "hf_parquet" else _load_official_task
    return [loader(GLUE_TASKS[n], dirs[n]) for n in chosen]


# -- the official TSV distribution ----------------------------------------------------------------


def _load_official_task(task: GlueTask, d: Path) -> TaskData:
    spec = task.spec
    score_range = STS_RANGE if spec.regression else None
    splits: dict[str, list[Example]] = {}
    if task.spec.name == "mrpc" and not (d / "train.tsv").is_file() and (d / "msr_paraphrase_train.txt").is_file():
        splits.update(_mrpc_from_msr(task, d))
    else:
        for split, fname in {"train": "train.tsv", **task.dev_files}.items():
            splits[split] = read_tsv_examples(spec, d / fname, text_cols=task.text_cols, label_col=task.label_col,
                                              header=task.header, n_fields=task.n_fields, score_range=score_range)
    for split, fname in task.test_files.items():
        f = d / fname
        if f.is_file():
            splits[split] = read_tsv_examples(spec, f, text_cols=task.test_text_cols or task.text_cols,
                                              label_col=None)
    return TaskData(spec=spec, splits=splits, source=str(d))


def _mrpc_from_msr(task: GlueTask, d: Path) -> dict[str, list[Example]]:
    """train/dev from msr_paraphrase_train.txt + dev_ids.tsv (as download_glue_data.py splits them)."""
    ids_file = d / "dev_ids.tsv"
    if not (d / "dev.tsv").is_file() and not ids_file.is_file():
        raise BenchError(f"{ids_file}: missing; MRPC's dev split is the pairs listed in dev_ids.tsv "
                         f"(or provide train.tsv and dev.tsv)")
    src = d / "msr_paraphrase_train.txt"
    if (d / "dev.tsv").is_file():
        dev = read_tsv_examples(task.spec, d / "dev.tsv", text_cols=task.text_cols, label_col=task.label_col)
        return {"train": read_tsv_examples(task.spec, src, text_cols=task.text_cols, label_col=task.label_col),
                "dev": dev}
    dev_ids = set()
    ids = TsvFile(ids_file, header=False, n_fields=2)
    for _, fields in ids.rows():
        dev_ids.add((fields[0].strip(), fields[1].strip()))
    f = TsvFile(src)
    id1, id2 = f.column("#1 ID"), f.column("#2 ID")
    in_dev = lambda fields: (fields[id1], fields[id2]) in dev_ids  # noqa: E731
    kw = dict(text_cols=task.text_cols, label_col=task.label_col)
    return {"train": read_tsv_examples(task.spec, src, keep=lambda r: not in_dev(r), **kw),
            "dev": read_tsv_examples(task.spec, src, keep=in_dev, **kw)}


# -- HF parquet -----------------------------------------------------------------------------------


def _parquet_files(d: Path, hf_split: str) -> list[Path]:
    pats = (f"{hf_split}-*.parquet", f"{hf_split}.parquet", f"{hf_split}/*.parquet", f"*-{hf_split}.parquet")
    files: list[Path] = []
    for p in pats:
        files.extend(sorted(d.glob(p)))
    return list(dict.fromkeys(files))


def _read_parquet(path: Path, columns: list[str]) -> dict[str, list]:
    try:
        import pyarrow.parquet as pq  # optional (the `parquet` extra), only for parquet layouts
    except ImportError:
        raise BenchError(f"{path}: reading parquet needs pyarrow: pip install 'electra-bench[parquet]' "
                         f"(or pip install pyarrow)") from None
    try:
        schema = pq.read_schema(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid / OSError
        raise BenchError(f"{path}: not a readable parquet file ({e})") from None
    missing = [c for c in columns if c not in schema.names]
    if missing:
        raise BenchError(f"{path}: no column '{missing[0]}' (columns: {', '.join(schema.names)})")
    return pq.read_table(path, columns=columns).to_pydict()


def rows_to_examples(spec: TaskSpec, cols: dict[str, list], text_cols: Sequence[str], where, labeled: bool,
                     class_names: Sequence[str] | None = None) -> list[Example]:
    """Examples from columns of HF-style rows (label = class index, -1 = unlabeled, float for STS-B).

    `where(i)` names row i in error messages."""
    texts = [cols[c] for c in text_cols]
    labels = cols.get("label") if labeled else None
    if class_names is not None and spec.labels is not None and len(class_names) != len(spec.labels):
        raise BenchError(f"{where(None)}: {len(class_names)} classes {list(class_names)}, expected "
                         f"{len(spec.labels)} for {spec.name}")
    out = []
    n = len(texts[0])
    for i in range(n):
        label = None
        if labels is not None:
            raw = labels[i]
            if raw is None or (not spec.regression and raw == -1):
                label = None
            elif spec.regression:
                label = convert_label(spec, raw, where(i))
                if not (STS_RANGE[0] <= label <= STS_RANGE[1]):
                    raise BenchError(f"{where(i)}: score {raw!r} is outside [0, 5] (task {spec.name})")
            else:
                if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw < len(spec.labels):
                    raise BenchError(f"{where(i)}: label {raw!r} is not a class index in 0..{len(spec.labels) - 1} "
                                     f"({', '.join(spec.labels)}) for task {spec.name}")
                label = raw
        a = texts[0][i]
        b = texts[1][i] if len(texts) > 1 else None
        if a is None or (len(texts) > 1 and b is None):
            raise BenchError(f"{where(i)}: missing text (null) for task {spec.name}")
        out.append(Example(str(a), None if b is None else str(b), label))
    return out


def _load_parquet_task(task: GlueTask, d: Path) -> TaskData:
    spec = task.spec
    splits: dict[str, list[Example]] = {}
    for split, hf_split in task.hf_splits.items():
        files = _parquet_files(d, hf_split)
        is_test = split.startswith("test")
        if not files:
            if is_test:
                continue
            raise BenchError(f"{d / (hf_split + '-00000-of-00001.parquet')}: missing {split} split of "
                             f"{task.display} (expected {hf_split}-*.parquet)")
        examples: list[Example] = []
        for f in files:
            cols = _read_parquet(f, list(task.hf_text_cols) + ([] if is_test and not _has_label(f) else ["label"]))
            examples += rows_to_examples(spec, cols, task.hf_text_cols, _row_namer(str(f)),
                                         labeled="label" in cols)
        if not examples:
            raise BenchError(f"{files[0]}: no examples (an empty split); expected at least one row")
        splits[split] = examples
    return TaskData(spec=spec, splits=splits, source=str(d))


def _row_namer(where: str):
    """where(i) -> "<where>: row i" (0-based row of the file), where(None) -> "<where>"."""
    return lambda i: where if i is None else f"{where}: row {i}"


def _has_label(f: Path) -> bool:
    import pyarrow.parquet as pq  # optional (the `parquet` extra)

    return "label" in pq.read_schema(f).names


# -- HF datasets (hf:glue) ------------------------------------------------------------------------


def load_hf_datasets(source: str, names: Sequence[str] | None) -> list[TaskData]:

    repo = source[3:] or "glue"
    if normalize_name(repo.split("/")[-1]) != "glue":
        raise BenchError(f"{source}: only hf:glue (or hf:nyu-mll/glue) is supported as a task source")
    datasets = require_datasets()
    chosen = [n for n in GLUE_TASKS if GLUE_TASKS[n].paper] if names is None else []
    for n in names or ():
        t = glue_task(n)
        if t is None:
            raise BenchError(f"{source}: unknown GLUE task '{n}'")
        chosen.append(t.spec.name)
    out = []
    for n in dict.fromkeys(chosen):
        task = GLUE_TASKS[n]
        splits = {}
        for split, hf_split in task.hf_splits.items():
            try:
                ds = datasets.load_dataset(repo, n, split=hf_split)
            except Exception as e:  # noqa: BLE001
                raise BenchError(f"{source}/{n}/{hf_split}: not available from the local HF cache "
                                 f"({type(e).__name__}: {e})") from None
            cols = {c: ds[c] for c in list(task.hf_text_cols) + ["label"]}
            names_ = getattr(ds.features.get("label"), "names", None)
            splits[split] = rows_to_examples(task.spec, cols, task.hf_text_cols,
                                             _row_namer(f"{source}/{n}/{hf_split}"), labeled=True,
                                             class_names=names_)
        out.append(TaskData(spec=task.spec, splits=splits, source=f"{source}/{n}"))
    return out
