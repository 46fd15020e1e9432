"""`electra-bench data inspect PATH`: what a corpus, a task directory or the embedded suite holds.

`inspect_path(path)` returns a JSON-ready dict with stable snake_case keys (documented in
docs/data.md); `render_inspect(info)` turns it into rich tables for humans.
"""

from __future__ import annotations

import json
import os
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from rich.console import Group
from rich.table import Table

from ..errors import BenchError
from . import glue
from .corpus import compression_of, open_corpus
from .suite import SUITES, is_suite_dir, is_suite_name, load_suite
from .task_sources import load_suite_tasks, load_tasks

_MAX_LISTED_FILES = 50


def inspect_path(path: str | os.PathLike | None, *, tokenizer=None) -> dict[str, Any]:
    """Describe a corpus, a task source (GLUE dir, HF parquet dir, suite dir, hf:glue) or the suite.

    `path` None or "suite" = the embedded suite. Corpus lengths are in whitespace words, or in
    WordPiece tokens when a `tokenizer` is given.
    """
    if path is None or str(path) == "suite" or is_suite_name(path):
        return _suite_info(load_suite(str(path) if is_suite_name(path) else None), tokenizer)
    s = str(path)
    if s.startswith("hf:"):
        if s[3:].split("/")[-1].lower() == "glue":
            return _tasks_info(s, "hf_datasets", load_tasks(s))
        return corpus_info(s, tokenizer)
    p = Path(s).expanduser()
    if p.is_dir():
        if is_suite_dir(p):
            return _suite_info(load_suite(p), tokenizer)
        try:
            layout, dirs = glue.detect_layout(p)
        except BenchError:
            return corpus_info(s, tokenizer)
        names = [n for n in glue.GLUE_TASKS if n in dirs]
        return _tasks_info(str(p), layout, glue.load_glue_dir(p, names))
    return corpus_info(s, tokenizer)


def stats(values, digits: int = 1) -> dict[str, float | int]:
    """{"count", "mean", "p50", "p90", "p99", "max"} of a sequence of numbers (zeros when empty)."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {"count": int(a.size), "mean": round(float(a.mean()), digits), "p50": round(float(p50), digits),
            "p90": round(float(p90), digits), "p99": round(float(p99), digits), "max": round(float(a.max()), digits)}


def corpus_info(spec: str | os.PathLike, tokenizer=None, chunk_lines: int = 4096) -> dict[str, Any]:
    """Stream a corpus once and count files, bytes, documents, sentences, tokens and length percentiles."""
    c = open_corpus(spec)
    counter = _LengthCounter(tokenizer, chunk_lines)
    for line in c.lines():
        counter.add(line)
    counter.finish()
    files = [str(f) for f in c.files]
    return {
        "kind": "corpus",
        "path": str(spec),
        "files": len(files),
        "file_list": files[:_MAX_LISTED_FILES],
        "compressed_files": sum(1 for f in c.files if compression_of(f)),
        "bytes": c.total_bytes,
        "text_bytes": counter.text_bytes,
        "documents": len(counter.doc_tokens),
        "sentences": len(counter.sent_len),
        "tokens": int(sum(counter.doc_tokens)),
        "token_unit": "wordpiece" if tokenizer is not None else "words",
        "sentence_length": stats(counter.sent_len),
        "document_length": stats(counter.doc_tokens),
        "document_sentences": stats(counter.doc_sents),
    }


class _LengthCounter:
    """Sentence and document lengths of a stream of lines (an empty line ends a document), counted in
    chunks of `chunk_lines` (one `encode_batch` call each) in tokens, or in words without a tokenizer."""

    def __init__(self, tokenizer, chunk_lines: int) -> None:
        self.tokenizer, self.chunk_lines = tokenizer, chunk_lines
        self.sent_len, self.doc_tokens, self.doc_sents = array("I"), array("Q"), array("I")
        self.cur_tokens = self.cur_sents = 0
        self.text_bytes = 0
        self.pending: list[str] = []  # lines and "" boundaries, in order

    def add(self, line: str) -> None:
        self.pending.append(line)
        if line:
            self.text_bytes += len(line.encode("utf-8")) + 1
        if len(self.pending) >= self.chunk_lines:
            self.flush()

    def finish(self) -> None:
        self.flush()
        self._close_doc()

    def flush(self) -> None:
        lines = [x for x in self.pending if x]
        if self.tokenizer is None:
            counts = iter([len(x.split()) for x in lines])
        else:
            counts = iter([len(ids) for ids in self.tokenizer.encode_batch(lines)])
        for x in self.pending:
            if x:
                n = next(counts)
                self.sent_len.append(n)
                self.cur_tokens += n
                self.cur_sents += 1
            else:
                self._close_doc()
        self.pending.clear()

    def _close_doc(self) -> None:
        if self.cur_sents:
            self.doc_tokens.append(self.cur_tokens)
            self.doc_sents.append(self.cur_sents)
        self.cur_tokens = self.cur_sents = 0


def _task_info(td) -> dict[str, Any]:
    spec = td.spec
    splits = {}
    for split, examples in td.splits.items():
        lengths = [len(e.text_a.split()) + (len(e.text_b.split()) if e.text_b else 0) for e in examples]
        labeled = [e.label for e in examples if e.label is not None]
        info: dict[str, Any] = {"examples": len(examples), "labeled": len(labeled),
                                "length_words": stats(lengths), "label_counts": None, "label_balance": None,
                                "score": None}
        if labeled and not spec.regression:
            counts = {lab: 0 for lab in spec.labels}
            for x in labeled:
                counts[spec.labels[x]] += 1
            info["label_counts"] = counts
            info["label_balance"] = {k: round(v / len(labeled), 4) for k, v in counts.items()}
        elif labeled:
            a = np.asarray(labeled, dtype=np.float64)
            info["score"] = {"mean": round(float(a.mean()), 3), "std": round(float(a.std()), 3),
                             "min": round(float(a.min()), 3), "max": round(float(a.max()), 3)}
        splits[split] = info
    return {"name": spec.name, "text_fields": list(spec.text_fields),
            "labels": list(spec.labels) if spec.labels is not None else None, "regression": spec.regression,
            "metrics": list(spec.metrics), "primary": spec.primary, "eval_splits": list(spec.eval_splits),
            "source": td.source, "splits": splits, "minimal_pairs": spec.minimal_pairs}


def _tasks_info(path: str, layout: str, tasks) -> dict[str, Any]:
    return {"kind": "tasks", "path": path, "layout": layout, "tasks": [_task_info(t) for t in tasks]}


def _suite_info(suite, tokenizer) -> dict[str, Any]:
    return {"kind": "suite", "path": str(suite.path), "name": suite.name, "version": suite.version,
            "corpus": corpus_info(str(suite.corpus), tokenizer),
            "tasks": [_task_info(t) for t in load_suite_tasks(suite, None)]}


# -- rendering ------------------------------------------------------------------------------------


def render_inspect(info: dict[str, Any]):
    """A rich renderable (tables) for `inspect_path`'s dict."""
    parts = []
    if info["kind"] == "suite":
        parts.append(f"[bold]suite[/bold] {info['name']} v{info['version']}  ({info['path']})")
        parts.append(_corpus_table(info["corpus"]))
        parts.append(_tasks_table(info["tasks"]))
    elif info["kind"] == "corpus":
        parts.append(_corpus_table(info))
    else:
        parts.append(f"[bold]tasks[/bold] ({info['layout']}) {info['path']}")
        parts.append(_tasks_table(info["tasks"]))
    return Group(*parts)


def _corpus_table(c: dict):
    t = Table(title=f"corpus {c['path']}", show_header=True, header_style="bold")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    rows = [("files", f"{c['files']:,}" + (f" ({c['compressed_files']} compressed)" if c["compressed_files"] else "")),
            ("bytes on disk", _bytes(c["bytes"])), ("text bytes", _bytes(c["text_bytes"])),
            ("documents", f"{c['documents']:,}"), ("sentences (lines)", f"{c['sentences']:,}"),
            (f"tokens ({c['token_unit']})", f"{c['tokens']:,}")]
    for label, key in (("sentence length", "sentence_length"), ("document length", "document_length"),
                       ("sentences / document", "document_sentences")):
        s = c[key]
        rows.append((f"{label} p50/p90/p99/max", f"{s['p50']:g} / {s['p90']:g} / {s['p99']:g} / {s['max']:g}"))
    for r in rows:
        t.add_row(*r)
    return t


def _tasks_table(tasks: list[dict]):
    t = Table(title="tasks", show_header=True, header_style="bold")
    for col, just in (("task", "left"), ("split", "left"), ("examples", "right"), ("labels", "left"),
                      ("words p50/p90/p99", "right"), ("metrics", "left")):
        t.add_column(col, justify=just)
    for task in tasks:
        first = True
        for split, s in task["splits"].items():
            if task.get("minimal_pairs"):
                labels = "minimal pairs (good/bad)"
            elif s["label_balance"]:
                labels = " ".join(f"{k}:{v:.0%}" for k, v in s["label_balance"].items())
            elif s["score"]:
                labels = f"score {s['score']['mean']:.2f}±{s['score']['std']:.2f}"
            else:
                labels = "unlabeled"
            lw = s["length_words"]
            t.add_row(task["name"] if first else "", split, f"{s['examples']:,}", labels,
                      f"{lw['p50']:g} / {lw['p90']:g} / {lw['p99']:g}",
                      ", ".join(task["metrics"]) if first else "")
            first = False
    return t


def _bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


def suites_info() -> list[dict[str, Any]]:
    """`electra-bench suites`: every embedded suite with its tasks, their kinds, metrics and sizes (read from
    suite.json only: nothing is tokenised). A suite not built here says so instead of its tasks."""
    out = []
    for name in SUITES:
        try:
            suite = load_suite(name)
        except BenchError as e:
            out.append({"name": name, "installed": False, "error": str(e)})
            continue
        raw = {t["name"]: t for t in json.loads((suite.path / "suite.json").read_text(encoding="utf-8"))["tasks"]}
        kinds = [t.kind or t.name for t in suite.tasks]
        out.append({"name": suite.name, "installed": True, "version": suite.version, "path": str(suite.path),
                    "score": "mean over kinds of the mean over each kind's tasks" if any(t.kind for t in suite.tasks)
                    else "mean over tasks",
                    "kinds": sorted(set(kinds), key=kinds.index),
                    "tasks": [{"name": t.name, "kind": t.kind, "primary": t.primary, "pair": len(t.text_fields) == 2,
                               "regression": t.regression, "sizes": raw[t.name].get("sizes"),
                               "derived": raw[t.name].get("derived"), "minimal_pairs": t.minimal_pairs}
                              for t in suite.tasks]})
    return out


def render_suites(info: list[dict[str, Any]]) -> Table:
    table = Table(title="Embedded suites (docs/suite.md)")
    for col in ("suite", "kind", "task", "primary", "train", "dev"):
        table.add_column(col, justify="right" if col in ("train", "dev") else "left")
    for s in info:
        if not s["installed"]:
            table.add_row(s["name"], "-", f"not built here: {s['error']}", "", "", "")
            continue
        for i, t in enumerate(s["tasks"]):
            sizes = t["sizes"] or {}
            note = " (minimal pairs, zero-shot)" if t.get("minimal_pairs") else " (derived)" if t["derived"] else ""
            table.add_row(f"{s['name']} (v{s['version']}; {s['score']})" if i == 0 else "", t["kind"] or "-",
                          t["name"] + note, t["primary"],
                          "-" if t.get("minimal_pairs") else str(sizes.get("train", "?")), str(sizes.get("dev", "?")))
    return table
