"""`electra-bench ablate`: the ELECTRA paper's efficiency analysis (section 3.2, Table 5) as one command.

Every chosen objective (default: Table 5's five: ELECTRA, All-Tokens MLM, Replace MLM, ELECTRA 15%,
BERT) is pre-trained on the same encoder to one FLOP budget and its final checkpoint scored, with the
untrained encoder for reference; the table puts the paper's GLUE dev scores (base size) beside ours.
What separates the rows is the paper's explanation of RTD's efficiency: ELECTRA 15% vs ELECTRA is
learning from all positions vs the masked 15%; Replace MLM vs BERT is the [MASK] mismatch between
pre-training and fine-tuning; All-Tokens MLM closes most of the gap by predicting every token.

It is compare's machinery (experiments/compare.py: `CompareSpec` with `objectives`, `experiment`,
`pretrain_phase`, `score_phase`), scoring only each run's last checkpoint. The run lives in
results/ablate-<preset>-<digest>/ (layout.RunLayout); its table is `ablation.json` (`table_rows`)
and report.txt / report.md. The compare report and plots (reporting/) are written for mlm vs rtd and
are not made here.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from .. import atomic_io
from ..evaluation import glue_score
from ..flops import step_flops
from .compare import CompareSpec, experiment, pretrain_phase, record_invocation, score_phase

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
ABLATE_DEFAULT_PRETRAIN_SEEDS = 1  # five objectives: one pre-training run each unless asked for more


def resolve_spec(*, objectives=None, pretrain_seeds=None, **compare_options) -> CompareSpec:
    """compare's spec with `objectives` (default: all of Table 5, in its order)."""
    chosen = tuple(objectives) if objectives else tuple(o for o, _, _ in TABLE5)
    return CompareSpec.resolve(objectives=chosen, pretrain_seeds=pretrain_seeds or ABLATE_DEFAULT_PRETRAIN_SEEDS,
                               **compare_options)


def _aggregate(rows, task_specs) -> float | None:
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
        per_pretrain = [v for _, r in rows.groupby("pretrain_seed") if (v := _aggregate(r, task_specs)) is not None]
        spread = per_pretrain if len(per_pretrain) > 1 else [
            v for _, r in rows.groupby("seed") if (v := _aggregate(r, task_specs)) is not None]
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


def _num(x, fmt="{:.1f}", signed=False) -> str:
    if x is None:
        return "-"
    return ("{:+.1f}" if signed else fmt).format(x)


def render_table(rows: list[dict], title: str, fmt: str = "table", width: int | None = None) -> str:
    """Table 5's layout, the paper's column beside ours: "table" (text) or "md"."""
    head = ["Model", "GLUE dev (paper, Base)", "vs BERT", "ours", "band", "vs BERT", "train FLOPs"]
    body = [[r["model"], _num(r["paper_glue"]), _num(r["paper_vs_bert"], signed=True), _num(r["score"]),
             f"[{_num(r['min'])}, {_num(r['max'])}]" if r["min"] is not None else "-",
             _num(r["ours_vs_bert"], signed=True), f"{r['train_flops']:.2g}" if r["train_flops"] else "0"]
            for r in rows]
    if fmt == "md":
        lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(b) + " |" for b in body])
    t = Table(title=title)
    for i, h in enumerate(head):
        t.add_column(h, justify="left" if i == 0 else "right")
    for b in body:
        t.add_row(*b)
    console = Console(width=width or 120, record=True, file=io.StringIO())
    console.print(t)
    return console.export_text()


def flops_per_step(preset, objectives: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """FLOPs of one training step of each objective, in both conventions."""
    return {o: {c: step_flops(preset.for_objective(o), o, c).flops_per_step for c in ("paper", "measured")}
            for o in objectives}


def run_ablate(spec: CompareSpec, root: str | Path, run_id: str | None, quiet: bool = False) -> tuple[dict, str]:
    """Pre-train every objective of `spec` to its budget, score the final checkpoints, write and return
    the table (JSON) and its text rendering."""
    with experiment(spec, root, run_id or spec.run_id("ablate"), quiet) as exp:
        pretrain_phase(exp, quiet)
        score_phase(exp, quiet, final_only=True)
        work = record_invocation(exp)
        run = exp.run
        task_specs = {t.spec.name: t.spec for t in exp.tasks}
        flops = flops_per_step(exp.preset, spec.objectives)
        rows = table_rows(run.scores(), task_specs, spec.objectives, flops)
        suite = "GLUE score" if glue_score.is_glue(list(task_specs)) else "suite mean"
        title = (f"Table 5 (efficiency analysis): {exp.preset.name}, budget {exp.budget:.2g} FLOPs "
                 f"({spec.convention}), {spec.protocol}; ours = {suite} at the final checkpoint")
        result = {"run_id": run.run_id, "budget_flops": exp.budget, "flop_convention": spec.convention,
                  "protocol": spec.protocol, "tasks": list(task_specs), "aggregate": suite, "rows": rows, **work}
        atomic_io.write_json(run.layout.ablation, result)
        rendered = render_table(rows, title)
        atomic_io.write_text(run.layout.report_txt, rendered)
        atomic_io.write_text(run.layout.report_md, render_table(rows, title, "md") + "\n")
    return result, rendered
