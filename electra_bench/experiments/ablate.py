"""`electra-bench ablate`: the ELECTRA paper's efficiency analysis (section 3.2, Table 5) as one command.

Every chosen objective (default: Table 5's five: ELECTRA, All-Tokens MLM, Replace MLM, ELECTRA 15%,
BERT) is pre-trained on the same encoder to one FLOP budget and its final checkpoint scored, with the
untrained encoder for reference; the table puts the paper's GLUE dev scores (base size) beside ours.
What separates the rows is the paper's explanation of RTD's efficiency: ELECTRA 15% vs ELECTRA is
learning from all positions vs the masked 15%; Replace MLM vs BERT is the [MASK] mismatch between
pre-training and fine-tuning; All-Tokens MLM closes most of the gap by predicting every token.

It is compare's job graph (experiments/graph.py: `CompareSpec` with `objectives`, `experiment`,
`run_experiments`), scoring only each run's last checkpoint. The run lives in
results/ablate-<preset>-<digest>/ (layout.RunLayout); its table is `ablation.json`, rendered as
report.txt / report.md and drawn as plots/ablation.png (present/ablation_table.py; `electra-bench report RUN`
renders it again in any format). compare's Table 1, curves and verdict are written for mlm vs rtd and
are not made here.
"""

from __future__ import annotations

from pathlib import Path

from ..store import atomic_io
from ..score import glue_score
from ..flops import step_flops
from ..present.ablation_table import TABLE5, plot_ablation, render_table, table_rows, title_of
from .compare import plan_only, record_invocation
from .graph import experiment, run_experiments
from .spec import CompareSpec

ABLATE_DEFAULT_PRETRAIN_SEEDS = 1  # five objectives: one pre-training run each unless asked for more


def resolve_spec(*, objectives=None, pretrain_seeds=None, **compare_options) -> CompareSpec:
    """compare's spec with `objectives` (default: all of Table 5, in its order)."""
    chosen = tuple(objectives) if objectives else tuple(o for o, _, _ in TABLE5)
    return CompareSpec.resolve(objectives=chosen, pretrain_seeds=pretrain_seeds or ABLATE_DEFAULT_PRETRAIN_SEEDS,
                               **compare_options)


def flops_per_step(preset, objectives: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """FLOPs of one training step of each objective, in both conventions."""
    return {o: {c: step_flops(preset.for_objective(o), o, c).flops_per_step for c in ("paper", "measured")}
            for o in objectives}


def run_ablate(spec: CompareSpec, root: str | Path, run_id: str | None, quiet: bool = False,
               width: int = 120) -> tuple[dict, str]:
    """Pre-train every objective of `spec` to its budget, score the final checkpoints, write the table
    (ablation.json, report.txt / report.md) and its figure (plots/ablation.png, .svg); return the table and
    its text rendering at `width` columns."""
    with experiment(spec, root, run_id or spec.run_id("ablate"), quiet) as exp:
        run_experiments(spec, [(exp, {"final_only": True})], exp.run.layout.root / "cluster", quiet)
        work = record_invocation(exp)
        run = exp.run
        task_specs = {t.spec.name: t.spec for t in exp.tasks}
        flops = flops_per_step(exp.preset, spec.objectives)
        rows = table_rows(run.scores(), task_specs, spec.objectives, flops)
        suite = "GLUE score" if glue_score.is_glue(list(task_specs)) else "suite mean"
        result = {"run_id": run.run_id, "preset": exp.preset.name, "budget_flops": exp.budget,
                  "flop_convention": spec.convention, "protocol": spec.protocol, "tasks": list(task_specs),
                  "aggregate": suite, "rows": rows, **work}
        atomic_io.write_json(run.layout.ablation, result)
        title = title_of(result)
        rendered = render_table(rows, title, width=width)
        atomic_io.write_text(run.layout.report_txt, render_table(rows, title))
        atomic_io.write_text(run.layout.report_md, render_table(rows, title, "md"))
        plot_ablation(result, run.layout.plots)
    return result, rendered


def plan_ablate(spec: CompareSpec, root: str | Path, run_id: str | None = None, n_devices: int | None = None) -> dict:
    """--dry-run: the ablation's graph and sizing (compare.plan_only, final checkpoints only)."""
    return plan_only(spec, root, run_id or spec.run_id("ablate"), n_devices, final_only=True)
