"""The paper's Table 1 layout for one or more runs, as a terminal table, Markdown, CSV or LaTeX.

One row per point (untrained encoder, then each objective's checkpoints by compute): Model, Train FLOPs,
Params, fraction of the budget trained, Score (summarise/points.SCORE_DEFINITION: each run's suite score averaged
over evaluation seeds, then over pre-training seeds; +- half the range over pre-training seeds, or over
evaluation seeds with one), its 95% CI, then each task's primary metric, averaged the same way. After the
table: the headline sentences and the verdict of each run (CSV carries the numbers only, as columns, so it
stays one parseable table).

Summaries come from each run's summary.json when present (else they are built from scores.jsonl).
"""

from __future__ import annotations

import io
import math
from typing import Any, Mapping, Sequence

import pandas as pd
from rich.console import Console
from rich.table import Table

from ..errors import BenchError
from ..summarise import summary as summary_mod
from ..summarise.points import LABELS, SCORE_DEFINITION
from .summary_text import headline_lines, learning_lines, seeds_phrase
from ..store.layout import RunLayout
from . import ablation_table as ablation, sweep_table as sweep
from .next_step import next_step_lines
from .readings import readings_lines
from ..summarise import confidence
from ..store.runs import RunDir, load_compare_run
from ..units import fmt_flops
from .text_formats import FORMATS, latex_table, markdown_table


# column headers for GLUE tasks in the human-readable formats (CSV keeps the task ids)
TASK_NAMES = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qqp": "QQP", "mnli": "MNLI",
              "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI"}


def _num(x: float | None, digits: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _params(n: int | None) -> str:
    if n is None:
        return "-"
    if n >= 1e9:
        return f"{n / 1e9:.1f}B"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    if n >= 1e3:
        return f"{n / 1e3:.0f}K"
    return str(n)


def _trained(point: Mapping[str, Any]) -> str:
    if point["objective"] == "init":
        return "0%"
    if point["objective"] == "reference":
        return "stated"
    p = 100 * point["fraction"]
    return f"{p:.3g}%"


def _score_text(score: Mapping[str, Any], with_seeds: bool = True) -> str:
    value = score.get("value")
    if value is None:
        return "-"
    text = f"{value:.1f}"
    if score.get("range") is not None:
        text += f" ± {score['range'] / 2:.1f}"
    if with_seeds and score.get("band") == "pretrain_seeds":
        text += f" ({score.get('n_pretrain_seeds')} pre-train × {score.get('n_seeds', 0)} eval seeds)"
    elif with_seeds:
        text += f" (n={score.get('n_seeds', 0)})"
    if score.get("missing_tasks"):
        text += " partial"
    return text


def _summaries(runs: Sequence[RunDir | Mapping[str, Any]], task_specs, convention) -> list[dict]:
    out = []
    for run in runs:
        if isinstance(run, Mapping):
            out.append(dict(run))
        else:
            out.append(summary_mod.load_or_build(run, task_specs, convention))
    if not out:
        raise BenchError("no runs to report")
    return out


def _records(summaries: list[dict], protocol: str | None) -> tuple[list[dict], list[str]]:
    """Long-ish records (one per point) and the union of task names, in first-seen order."""
    records: list[dict] = []
    tasks: list[str] = []
    for s in summaries:
        proto = protocol or s["main_protocol"]
        if proto not in s["protocols"]:
            continue
        block = s["protocols"][proto]
        for t in block["tasks"]:
            if t not in tasks:
                tasks.append(t)
        cis = {(q["objective"], round(q["fraction"], 4)): q["ci"]
               for q in (block.get("statistics") or {}).get("points", [])}
        for p in block["points"]:
            model = s["models"].get(p["objective"], {})
            records.append({
                "run_id": s["run_id"],
                "protocol": proto,
                "suite": s["suite"]["name"],
                "aggregate": s["suite"]["aggregate"],
                "flop_convention": s["flop_convention"],
                "objective": p["objective"],
                "model": model.get("label", LABELS[p["objective"]]),
                "params": model.get("params"),
                "fraction": p["fraction"],
                "step": p["step"],
                "train_flops": p["train_flops"],
                "score": p["score"],
                "tasks": {t: v.get("mean") for t, v in p["tasks"].items()},
                "point": p,
                "ci": cis.get((p["objective"], round(p["fraction"], 4))),
            })
        for p in block.get("references", []):  # external checkpoints, at the FLOPs the user stated
            records.append({
                "run_id": s["run_id"], "protocol": proto, "suite": s["suite"]["name"],
                "aggregate": s["suite"]["aggregate"], "flop_convention": "stated", "objective": "reference",
                "model": f"{p['label']} (reference)", "params": p.get("params"), "fraction": None, "step": None,
                "train_flops": p["train_flops"], "score": p["score"],
                "tasks": {t: v.get("mean") for t, v in p["tasks"].items()}, "point": p,
            })
    if not records:
        raise BenchError(f"no scores for protocol '{protocol}' in these runs")
    return records, tasks


def dataframe(runs: Sequence[RunDir | Mapping[str, Any]], *, protocol: str | None = None, task_specs=None,
              convention: str | None = None) -> pd.DataFrame:
    """The machine-readable table behind every format (what CSV writes)."""
    records, tasks = _records(_summaries(runs, task_specs, convention), protocol)
    rows = []
    for r in records:
        sc = r["score"]
        row = {
            "run_id": r["run_id"], "protocol": r["protocol"], "suite": r["suite"], "aggregate": r["aggregate"],
            "flop_convention": r["flop_convention"], "model": r["model"], "objective": r["objective"],
            "train_flops": r["train_flops"], "params": r["params"], "fraction": r["fraction"], "step": r["step"],
            "score": sc.get("value"), "score_min": sc.get("min"), "score_max": sc.get("max"),
            "score_std": sc.get("std"), "n_seeds": sc.get("n_seeds"),
            "score_ci_low": (r.get("ci") or [None, None])[0], "score_ci_high": (r.get("ci") or [None, None])[1],
        }
        for t in tasks:
            row[t] = r["tasks"].get(t)
        rows.append(row)
    return pd.DataFrame(rows)


def _display_rows(records: list[dict], tasks: list[str], with_run: bool,
                  seeds_in_cell: bool = True) -> tuple[list[str], list[list[str]]]:
    header = (["Run"] if with_run else []) + ["Model", "Train FLOPs", "Params", "Trained", "Score", "95% CI"] + [
        TASK_NAMES.get(t, t) for t in tasks]
    rows = []
    for r in records:
        row = ([r["run_id"]] if with_run else []) + [
            r["model"], fmt_flops(r["train_flops"]), _params(r["params"]), _trained(r["point"]),
            _score_text(r["score"], seeds_in_cell), _ci_text(r.get("ci")),
        ] + [_num(r["tasks"].get(t)) for t in tasks]
        rows.append(row)
    return header, rows


def _ci_text(ci) -> str:
    return "-" if not ci else f"[{ci[0]:.1f}, {ci[1]:.1f}]"


def difference_lines(summary: Mapping[str, Any], protocol: str | None = None) -> list[str]:
    """RTD - MLM at every shared checkpoint, with its 95% CI, p-value and P(RTD > MLM) (confidence.py)."""
    stats = summary["protocols"][protocol or summary["main_protocol"]].get("statistics") or {}
    out = []
    for d in stats.get("differences", []):
        out.append(f"At {100 * d['fraction']:.3g}% of the budget ({fmt_flops(d['train_flops'])} FLOPs): "
                   f"{confidence.difference_text(d, unit=stats.get('unit', 'pre-training seeds'))}"
                   + ("" if d["resolved"] else " (not resolved)"))
    return out


def _notes(summaries: list[dict], protocol: str | None, with_run: bool) -> list[str]:
    lines = []
    for s in summaries:
        proto = protocol or s["main_protocol"]
        if proto not in s["protocols"]:
            continue
        prefix = f"[{s['run_id']}] " if with_run else ""
        lines += [prefix + line for line in learning_lines(s)]
        lines += [prefix + line for line in headline_lines(s, proto)]
        lines += [prefix + line for line in difference_lines(s, proto)]
        if proto == s["main_protocol"]:
            lines += [prefix + line for line in readings_lines(s)]
    s0 = summaries[0]
    block0 = s0["protocols"].get(protocol or s0["main_protocol"], {})
    how = seeds_phrase(block0) if block0.get("points") else SCORE_DEFINITION
    lines.append(
        f"Score: {s0['suite']['name']} ({s0['suite']['description']}), {protocol or s0['main_protocol']} protocol, "
        f"0-100, {how} (the task columns: each task's primary metric, the same mean); ± half the band (the "
        f"range over pre-training seeds when there are several, else over evaluation seeds); train FLOPs in "
        f"the {s0['flop_convention']} convention."
    )
    st = s0["protocols"].get(protocol or s0["main_protocol"], {}).get("statistics") or {}
    if st.get("method") not in (None, "none"):
        lines.append(f"95% CI: {st['method']} ({st['n_boot']} replicates, seed {st['seed']}, "
                     f"{'paired' if st.get('paired') else 'unpaired'} pre-training seeds; the wider of the paired t over "
                     f"seeds and the Welch t over seeds and the example noise they share; docs/results.md).")
    refs = [p for s in summaries for p in s["protocols"].get(protocol or s["main_protocol"], {}).get("references", [])]
    if refs:
        lines.append("References: external checkpoints scored here with the same suite, protocol and evaluation "
                     "seeds, at the training FLOPs their labels state (the user's figure, in the user's "
                     "convention; not counted here): " + "; ".join(f"{p['label']} = {p['source']}" for p in refs) + ".")
    return lines


def rich_table(runs: Sequence[RunDir | Mapping[str, Any]], *, protocol: str | None = None, task_specs=None,
               convention: str | None = None):
    """A rich.table.Table (for printing to a terminal) and the note lines under it."""
    summaries = _summaries(runs, task_specs, convention)
    records, tasks = _records(summaries, protocol)
    with_run = len({r["run_id"] for r in records}) > 1
    header, rows = _display_rows(records, tasks, with_run, seeds_in_cell=False)
    s0 = summaries[0]
    table = Table(title=f"{s0['suite']['name']}: score vs pre-training compute ({s0['flop_convention']} FLOPs)")
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i <= (1 if with_run else 0) else "right")
    for row in rows:
        table.add_row(*row)
    return table, _notes(summaries, protocol, with_run) + [_seed_note(records)] + _next_step(summaries, protocol)


def _compact_tables(records: list[dict], tasks: list[str], with_run: bool, title: str) -> list[Table]:
    """The same numbers for a narrow terminal: the score table without the per-task columns, then the tasks as rows at each objective's last checkpoint and the
    untrained encoder (every point's per-task values stay in report.md and --format md/csv)."""
    main = Table(title=title)
    for h in (["Run"] if with_run else []) + ["Model", "Train FLOPs", "Trained", "Score", "95% CI"]:
        main.add_column(h, justify="left" if h in ("Run", "Model") else "right")
    for r in records:
        main.add_row(*([r["run_id"]] if with_run else []), r["model"], fmt_flops(r["train_flops"]),
                     _trained(r["point"]), _score_text(r["score"], with_seeds=False), _ci_text(r.get("ci")))
    last: dict[tuple[str, str], dict] = {}
    for r in records:  # records are ordered by compute within an objective: the last one wins
        last[(r["run_id"], r["objective"])] = r
    columns = list(last.values())
    per_task = Table(title="per task (primary metric, the score's mean) at the last checkpoint")
    per_task.add_column("Task")
    for r in columns:
        per_task.add_column((f"{r['run_id']} " if with_run else "") + r["model"], justify="right")
    for t in tasks:
        per_task.add_row(TASK_NAMES.get(t, t), *[_num(r["tasks"].get(t)) for r in columns])
    return [main, per_task]


def _next_step(summaries: list[dict], protocol: str | None) -> list[str]:
    """The last lines of a single run's report whose verdict does not rank: what would (next_step.py)."""
    if len(summaries) != 1 or (protocol and protocol != summaries[0]["main_protocol"]):
        return []
    return next_step_lines(summaries[0])


def _seed_note(records: list[dict]) -> str:
    counts = sorted({(r["score"].get("n_pretrain_seeds") if r["score"].get("band") == "pretrain_seeds" else 1,
                      r["score"].get("n_seeds", 0)) for r in records if r["score"].get("value") is not None})
    return "Seeds per score: " + ", ".join(f"{p} pre-training × {e} evaluation" for p, e in counts) + "."


def render(runs: Sequence[RunDir | Mapping[str, Any]], fmt: str = "table", *, protocol: str | None = None,
           task_specs=None, convention: str | None = None, width: int = 160) -> str:
    """The report as text. `fmt`: "table" (rich, plain text, laid out to fit `width` columns: the full
    table when it fits, else the compact pair), "md", "csv" or "latex". Runs may also be given as
    summary dicts."""
    if fmt not in FORMATS:
        raise BenchError(f"unknown report format '{fmt}': choose one of {', '.join(FORMATS)}")
    if fmt == "csv":
        return dataframe(runs, protocol=protocol, task_specs=task_specs, convention=convention).to_csv(index=False)
    if fmt == "table":
        table, notes = rich_table(runs, protocol=protocol, task_specs=task_specs, convention=convention)
        console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
        tables = [table]
        if Console(file=io.StringIO(), width=10_000).measure(table).maximum > width:  # unwrapped width
            summaries = _summaries(runs, task_specs, convention)
            records, tasks = _records(summaries, protocol)
            with_run = len({r["run_id"] for r in records}) > 1
            tables = _compact_tables(records, tasks, with_run, str(table.title))
        for t in tables:
            console.print(t)
        for n in notes:  # a command ("$ ...") is printed whole, to be copied
            console.print(n, highlight=False, markup=False, soft_wrap=n.startswith("$ "))
        return console.file.getvalue()
    summaries = _summaries(runs, task_specs, convention)
    records, tasks = _records(summaries, protocol)
    with_run = len({r["run_id"] for r in records}) > 1
    header, rows = _display_rows(records, tasks, with_run)
    notes = _notes(summaries, protocol, with_run) + _next_step(summaries, protocol)
    if fmt == "md":
        return markdown_table(header, rows) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    return latex_table(header, rows, notes) + "\n"


def render_runs(paths: Sequence[str], fmt: str = "table", width: int = 160) -> str:
    """`electra-bench report`: compare runs in Table 1's layout (`render`), ablation runs in Table 5's
    (present/ablation_table.py), finished generator-size sweeps in theirs (present/sweep_table.py); one kind per
    call, since the tables share no columns."""
    kinds = {p: _kind(p) for p in paths}
    first = paths[0]
    other = next((p for p in paths if kinds[p] != kinds[first]), None)
    if other is not None:
        raise BenchError(f"{first} is {kinds[first]} and {other} {kinds[other]}: report one kind at a time")
    if kinds[first] == "an ablation run":
        return ablation.render_runs(paths, fmt, width)
    if kinds[first] == "a generator-size sweep":
        return sweep.render_runs(paths, fmt, width)
    return render([load_compare_run(p) for p in paths], fmt, width=width)


def _kind(path: str) -> str:
    layout = RunLayout(path)
    if layout.ablation.is_file():
        return "an ablation run"
    if layout.sweep.is_file():
        return "a generator-size sweep"
    return "a compare run"  # anything else is read as one, and refused by load_compare_run in one line


def report_json(paths: Sequence[str]) -> list[dict]:
    """`report --json`: per run, the table's rows and the run's statements (compare runs: headline, verdict,
    crossover, statistics); an ablation run's or a sweep's own JSON table."""
    out = []
    for path in paths:
        kind = _kind(path)
        layout = RunLayout(path)
        if kind == "an ablation run":
            out.append({"run_id": layout.root.name, "kind": "ablation", **_read(layout.ablation)})
            continue
        if kind == "a generator-size sweep":
            out.append({"run_id": layout.root.name, "kind": "sweep", **_read(layout.sweep)})
            continue
        s = summary_mod.load_or_build(load_compare_run(path))
        block = s["protocols"][s["main_protocol"]]
        rows = dataframe([s]).astype(object).where(lambda d: d.notna(), None).to_dict("records")
        out.append({"run_id": s["run_id"], "kind": "compare", "protocol": s["main_protocol"], "rows": rows,
                    "headline": block["headline"], "verdict": block["verdict"], "crossover": block["crossover"],
                    "statistics": block.get("statistics"), "learning": s.get("learning")})
    return out


def _read(path) -> dict:
    import json

    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BenchError(f"{path}: cannot read ({e})") from None
