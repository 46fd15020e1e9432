"""An ablation run's Table 5 (the ELECTRA paper's efficiency analysis): rows, renderings, figure.

`table_rows` turns an ablation run's scores into one row per objective (Table 5's order) plus the
untrained encoder: our aggregate score at the final checkpoint with its band, the paper's GLUE dev score
(base size), and both relative to BERT. The rows, with the run's budget and convention, are the run's
`ablation.json` (experiments/ablate.py writes it); everything here renders from that dict, so
`electra-bench report` can re-render a finished run as a terminal table, Markdown, CSV or LaTeX.

`figure_ablation` puts the two columns side by side: the paper's scores (left) and ours (right), each
on its own zoomed axis with BERT's score as the reference line, since a CPU budget's scores and the
paper's base-size GLUE scores live on different scales and only the differences from BERT compare.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from rich.console import Console
from rich.table import Table

from ..errors import BenchError
from ..score import glue_score
from ..store.layout import RunLayout
from . import plots
from .text_formats import FORMATS, latex_table, markdown_table
from ..store.atomic_io import read_json

# Table 5's rows in its order, with the paper's GLUE dev score (base-size models, Clark et al. 2020)
TABLE5 = (
    ("rtd", "ELECTRA", 85.0),
    ("alltokens-mlm", "All-Tokens MLM", 84.3),
    ("replace-mlm", "Replace MLM", 82.4),
    ("rtd-15", "ELECTRA 15%", 82.4),
    ("mlm", "BERT", 82.2),
)
LABELS = {o: label for o, label, _ in TABLE5}
PAPER_SCORE = {o: score for o, _, score in TABLE5}
HEADER = ["Model", "GLUE dev (paper, Base)", "vs BERT", "ours", "band", "vs BERT", "train FLOPs"]


def aggregate_score(rows, task_specs) -> float | None:
    """The suite's score from these rows' per-(task, metric) medians over evaluation seeds: the GLUE
    score when the tasks are a full GLUE convention, else the mean of each task's primary metric."""
    medians: dict[str, dict[str, float]] = {}
    for (task, metric), v in rows.groupby(["task", "metric"])["value"].median().items():
        medians.setdefault(task, {})[metric] = float(v)
    tasks = list(task_specs)
    if glue_score.is_glue(tasks) and glue_score.covers(tasks, "electra"):
        detail = glue_score.score_detail(medians, "electra", partial=True)
    else:
        detail = glue_score.suite_score_detail(medians, task_specs, partial=True)
    return None if detail.missing or math.isnan(detail.value) else float(detail.value)


def table_rows(scores, task_specs, objectives: tuple[str, ...], flops: dict[str, dict[str, float]]) -> list[dict]:
    """One row per objective (Table 5's order, then any other) and the untrained encoder: our score at
    the final checkpoint (mean over pre-training seeds of the aggregate; band: its range over
    pre-training seeds, or over evaluation seeds with one), the paper's, and both relative to BERT."""
    ordered = [o for o, _, _ in TABLE5 if o in objectives] + [o for o in objectives if o not in LABELS]
    out = []
    for o in ordered + ["init"]:
        rows = scores[scores["objective"] == o]
        if rows.empty:
            continue
        rows = rows[rows["fraction"] == rows["fraction"].max()]
        per_pretrain = [v for _, r in rows.groupby("pretrain_seed") if (v := aggregate_score(r, task_specs)) is not None]
        spread = per_pretrain if len(per_pretrain) > 1 else [
            v for _, r in rows.groupby("seed") if (v := aggregate_score(r, task_specs)) is not None]
        out.append({
            "objective": o,
            "model": LABELS.get(o, "untrained" if o == "init" else o),
            "paper_glue": PAPER_SCORE.get(o),
            "score": float(np.mean(per_pretrain)) if per_pretrain else None,
            "min": min(spread) if spread else None,
            "max": max(spread) if spread else None,
            "n_pretrain_seeds": len(per_pretrain),
            "train_flops": float(rows["train_flops"].median()),
            "flops_per_step": flops.get(o, {}),
        })
    bert = next((r for r in out if r["objective"] == "mlm"), None)
    for r in out:
        r["paper_vs_bert"] = (r["paper_glue"] - PAPER_SCORE["mlm"]) if r["paper_glue"] is not None else None
        r["ours_vs_bert"] = (r["score"] - bert["score"]) if (bert and bert["score"] is not None
                                                            and r["score"] is not None) else None
    return out


def title_of(result: Mapping[str, Any]) -> str:
    return (f"Table 5 (efficiency analysis): {result.get('preset', '?')}, budget {result['budget_flops']:.2g} "
            f"FLOPs ({result['flop_convention']}), {result['protocol']}; ours = {result['aggregate']} at the "
            f"final checkpoint")


def _num(x, signed=False) -> str:
    return "-" if x is None else ("{:+.1f}" if signed else "{:.1f}").format(x)


def _body(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [[r["model"], _num(r["paper_glue"]), _num(r["paper_vs_bert"], signed=True), _num(r["score"]),
             f"[{_num(r['min'])}, {_num(r['max'])}]" if r["min"] is not None else "-",
             _num(r["ours_vs_bert"], signed=True), f"{r['train_flops']:.2g}" if r["train_flops"] else "0"]
            for r in rows]


def _csv(rows: Sequence[Mapping[str, Any]]) -> str:
    cols = ["objective", "model", "paper_glue", "paper_vs_bert", "score", "min", "max", "ours_vs_bert",
            "n_pretrain_seeds", "train_flops"]
    frame = pd.DataFrame([{c: r.get(c) for c in cols}
                          | {f"flops_per_step_{k}": v for k, v in (r.get("flops_per_step") or {}).items()}
                          for r in rows])
    return frame.to_csv(index=False)


def render_table(rows: Sequence[Mapping[str, Any]], title: str, fmt: str = "table", width: int | None = None) -> str:
    """Table 5's layout, the paper's column beside ours, as "table" (text), "md", "csv" or "latex"."""
    if fmt not in FORMATS:
        raise BenchError(f"unknown report format '{fmt}': choose one of {', '.join(FORMATS)}")
    if fmt == "csv":
        return _csv(rows)
    body = _body(rows)
    if fmt == "md":
        return f"**{title}**\n\n" + markdown_table(HEADER, body) + "\n"
    if fmt == "latex":
        return latex_table(HEADER, body, [title]) + "\n"
    t = Table(title=title)
    for i, h in enumerate(HEADER):
        t.add_column(h, justify="left" if i == 0 else "right")
    for b in body:
        t.add_row(*b)
    console = Console(width=width or 120, record=True, file=io.StringIO(), color_system=None)
    console.print(t)
    return console.export_text()


def load_ablation(run_dir: str | Path) -> dict:
    """An ablation run's ablation.json (one `error:` line when it is missing or not Table 5's dict)."""
    path = RunLayout(run_dir).ablation
    result = read_json(path, "ablation table")
    if not isinstance(result, dict) or not isinstance(result.get("rows"), list) or any(
            k not in result for k in ("budget_flops", "flop_convention", "protocol", "aggregate")):
        raise BenchError(f"{path}: not an ablation table (needs rows, budget_flops, flop_convention, protocol, "
                         f"aggregate)")
    return result


def render_runs(run_dirs: Sequence[str | Path], fmt: str = "table", width: int | None = None) -> str:
    """Finished ablation runs' tables, one after the other (CSV: one table with a run_id column)."""
    results = [load_ablation(d) for d in run_dirs]
    if fmt == "csv":
        frames = [pd.read_csv(io.StringIO(_csv(r["rows"]))).assign(run_id=r.get("run_id")) for r in results]
        return pd.concat(frames, ignore_index=True).to_csv(index=False)
    return "\n".join(render_table(r["rows"], title_of(r), fmt, width) for r in results)


# -- figure ---------------------------------------------------------------------------------------------

def figure_ablation(result: Mapping[str, Any]):
    """Paper (left) and ours (right), one row per objective in Table 5's order, BERT's score as the
    reference line on each side; ours has its band as an error bar and the untrained encoder dashed."""
    rows = [r for r in result["rows"] if r["objective"] != "init"]
    init = next((r for r in result["rows"] if r["objective"] == "init"), None)
    labels = [r["model"] for r in rows]
    ys = np.arange(len(rows))[::-1]
    fig, axes = plots.new_figure(1, 2, size=(9.0, 0.5 * len(rows) + 3.2), sharey=True)
    paper, ours = axes[0]
    bert = next((r for r in rows if r["objective"] == "mlm"), None)

    known = [(y, r) for y, r in zip(ys, rows) if r["paper_glue"] is not None]
    paper.plot([r["paper_glue"] for _, r in known], [y for y, _ in known], "o", color=plots.COLORS["paper"])
    paper.axvline(PAPER_SCORE["mlm"], color=plots.COLORS["mlm"], linestyle="-", linewidth=1)
    paper.set_title("paper: ELECTRA Base, GLUE dev", fontsize=9)
    paper.set_xlabel("GLUE dev score (zoomed; line: BERT)", fontsize=8.5)

    scored = [(y, r) for y, r in zip(ys, rows) if r["score"] is not None]
    for y, r in scored:
        color = plots.COLORS.get(r["objective"], plots.COLORS["other"])
        err = None
        if r["min"] is not None:
            # the score is the aggregate of medians, the band the range of each evaluation seed's aggregate:
            # with one pre-training seed the score can lie outside its band, and the bar then starts at it
            err = [[max(0.0, r["score"] - r["min"])], [max(0.0, r["max"] - r["score"])]]
        ours.errorbar([r["score"]], [y], xerr=err, fmt="o", color=color, capsize=3)
    if bert is not None and bert["score"] is not None:
        ours.axvline(bert["score"], color=plots.COLORS["mlm"], linestyle="-", linewidth=1)
    if init is not None and init["score"] is not None:
        ours.axvline(init["score"], color=plots.COLORS["init"], linestyle="--", linewidth=1)
    ours.set_title(f"ours: {result.get('preset', '?')}, {result['budget_flops']:.2g} FLOPs each", fontsize=9)
    what = "line: BERT" + ("; dashed: untrained encoder" if init is not None and init["score"] is not None else "")
    ours.set_xlabel(f"{result['aggregate']} (bars: band; {what})", fontsize=8.5)

    paper.set_yticks(ys, labels, fontsize=8.5)
    paper.set_ylim(-0.6, len(rows) - 0.4)
    for ax in (paper, ours):
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(plots.fit_text(title_of(result), 9.0, 9), fontsize=9)
    return fig


def plot_ablation(result: Mapping[str, Any], out_dir: str | Path,
                  formats: Sequence[str] = plots.FORMATS) -> list[Path]:
    return plots.save(figure_ablation(result), Path(out_dir), "ablation", formats)
