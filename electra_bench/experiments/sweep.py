"""`electra-bench sweep`: the ELECTRA paper's generator-size sweep (Figure 3, left) as one command.

Each generator size is one ELECTRA (objective rtd) pre-training run of the same discriminator to the
same FLOP budget, with the preset's `generator_size` set to that size; BERT (objective mlm) is
pre-trained to the same budget for reference, and the untrained encoder is scored once. The paper's
Figure 3 left trains every size for the same number of steps; here every point gets the same FLOPs
(the benchmark's premise), so a bigger generator, which costs more FLOPs per step, takes fewer steps.
Every checkpoint is scored (compare's convention), so the compute-adjusted view (score against
pre-training FLOPs, one curve per generator size, like the paper's Figure 3 right) comes from the
same runs.

It is compare's machinery (experiments/compare.py): one compare-layout run per point under
results/sweep-<preset>-<digest>/points/ (layout.RunLayout), each with its config, provenance, history
and scores, so a rerun of the same command resumes every point's pre-training and skips every score
already stored. The pre-training runs of all points share one worker pool, as do their scorings. The
sweep directory itself is a run (config.json, provenance.json, history.jsonl, .lock) whose table is
`sweep.json` (`sweep_rows`), with report.txt / report.md and plots/generator_size.png|svg, rendered by present/sweep_table.py (which
`electra-bench report` uses too).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..store import atomic_io
from ..choices import OBJECTIVES
from ..data.task_sources import load_tasks
from ..errors import BenchError
from ..score import glue_score
from ..flops import step_flops
from ..store.layout import RunLayout
from ..store import provenance
from ..present.ablation_table import aggregate_score
from ..store.runs import open_run
from ..present.sweep_table import plot_sweep, render_sweep
from ..pretrain import run as runner
from . import target
from .compare import graph_report, record_invocation, sized_tasks, work_done
from .graph import build_jobs, experiment, parallelism, run_experiments
from .spec import CompareSpec, budget_of, default_parallelism, suite_name
from .work import prepare

# The paper's Figure 3 (left): generator hidden as a fraction of the discriminator's
PAPER_SIZES = (0.125, 0.25, 0.5, 0.75, 1.0)
SWEEP_DEFAULT_PRETRAIN_SEEDS = 1  # six pre-training runs at the default: one each unless asked for more
SIZES_OPTION = "--generator-sizes"
BERT_POINT = "bert"


# -- the list of sizes ---------------------------------------------------------------------------------

def parse_sizes(text: str | Sequence[float] | None) -> tuple[float, ...]:
    """`0.125,0.25,0.5` -> (0.125, 0.25, 0.5); the paper's sizes when empty. Each is a fraction of the
    discriminator's hidden size (<= 1) or an absolute hidden size (an integer > 1); no duplicates."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return PAPER_SIZES
    items = [s.strip() for s in text.split(",")] if isinstance(text, str) else list(text)
    sizes = []
    for item in items:
        if item == "":
            raise BenchError(f"{SIZES_OPTION}: empty entry in '{text}' (comma-separated sizes like 0.25,0.5)")
        try:
            v = float(item)
        except (TypeError, ValueError):
            raise BenchError(f"{SIZES_OPTION}: '{item}' is not a number (fractions like 0.25, or hidden sizes "
                             f"like 64)") from None
        if not math.isfinite(v) or v <= 0:
            raise BenchError(f"{SIZES_OPTION}: sizes must be positive, got '{item}'")
        if v > 1 and not v.is_integer():
            raise BenchError(f"{SIZES_OPTION}: '{item}' is above 1, so an absolute hidden size, which must be a "
                             f"whole number (a fraction of the discriminator's is at most 1)")
        sizes.append(v)
    dup = sorted({v for v in sizes if sizes.count(v) > 1})
    if dup:
        raise BenchError(f"{SIZES_OPTION}: {', '.join(f'{v:g}' for v in dup)} named twice")
    return tuple(sizes)


def point_name(size: float) -> str:
    return f"gen-{size:g}"


def generator_hidden(discriminator_hidden: int, size: float) -> int:
    """The generator's hidden size for `size` (model.generator_config's rule)."""
    return int(size) if size > 1 else max(1, int(round(discriminator_hidden * size)))


# -- the spec ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepSpec:
    """compare's spec for what every point shares (objectives: mlm for the reference, rtd for the
    points) and the generator sizes."""

    base: CompareSpec
    generator_sizes: tuple[float, ...] = PAPER_SIZES

    def to_dict(self) -> dict:
        return {**self.base.to_dict(), "generator_sizes": list(self.generator_sizes)}

    def run_id(self) -> str:
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        mode = "-quick" if self.base.quick else "-long" if self.base.long else ""
        return f"sweep-{self.base.preset}{mode}-{digest}"

    def points(self) -> list[tuple[str, float | None, CompareSpec]]:
        """(name, generator size or None, the point's compare spec): one rtd run per size, then BERT."""
        ov = {k: v for k, v in self.base.overrides if k != "generator_size"}
        out = [(point_name(g), g, dataclasses.replace(
            self.base, objectives=("rtd",), overrides=tuple(sorted({**ov, "generator_size": g}.items()))))
               for g in self.generator_sizes]
        out.append((BERT_POINT, None, dataclasses.replace(self.base, objectives=("mlm",),
                                                          overrides=tuple(sorted(ov.items())))))
        return out


def resolve_spec(*, generator_sizes=None, pretrain_seeds=None, jobs=None, threads=None, overrides=None,
                 **compare_options) -> SweepSpec:
    """Check the sizes and the overrides (before anything is created) and resolve compare's spec."""
    if overrides is not None:
        if overrides.get("generator_size") is not None:
            raise BenchError(f"--generator-size sets one generator; a sweep takes its sizes from {SIZES_OPTION} "
                             f"(e.g. {SIZES_OPTION} 0.25,0.5)")
        if overrides.get("uniform_generator"):
            raise BenchError("--uniform-generator has no generator model to size: a sweep needs a learned generator")
        if overrides.get("untied_generator") is False:
            raise BenchError("--tied-generator makes the generator the discriminator itself: a sweep needs an "
                             "untied generator")
    sizes = parse_sizes(generator_sizes)
    base = CompareSpec.resolve(objectives=OBJECTIVES, pretrain_seeds=pretrain_seeds or SWEEP_DEFAULT_PRETRAIN_SEEDS,
                               jobs=jobs, threads=threads, overrides=overrides, **compare_options)
    p = base.resolved_preset().for_objective("rtd")
    if p.model.uniform_generator or not p.model.untied_generator:
        raise BenchError(f"preset {p.name} has no separate learned generator to size")
    hidden = p.model.encoder.hidden_size
    seen: dict[int, float] = {}
    for g in sizes:
        h = generator_hidden(hidden, g)
        if h in seen:
            raise BenchError(f"{SIZES_OPTION}: {seen[h]:g} and {g:g} are the same generator (hidden {h} of the "
                             f"discriminator's {hidden})")
        seen[h] = g
    # parallelism over every pre-training run of the sweep, not compare's two objectives
    auto_jobs, auto_threads = default_parallelism((len(sizes) + 1) * base.pretrain_seeds)
    if base.device not in ("auto", "cpu"):
        auto_jobs, auto_threads = 1, auto_threads * auto_jobs
    base = dataclasses.replace(base, jobs=jobs or auto_jobs, threads=threads or auto_threads)
    spec = SweepSpec(base, sizes)
    for _, _, ps in spec.points():
        ps.resolved_preset()  # every point's preset is valid
    return spec


# -- the table -----------------------------------------------------------------------------------------

def _point_scores(scores, task_specs, objective: str) -> tuple[dict | None, list[dict]]:
    """(the final checkpoint's score, the curve over checkpoints) of `objective` in one point's scores:
    the mean over pre-training seeds of the aggregate (band: its range over pre-training seeds, or over
    evaluation seeds with one)."""
    rows = scores[scores["objective"] == objective]
    curve = []
    for fraction, at_f in sorted(rows.groupby("fraction"), key=lambda kv: kv[0]):
        per_pretrain = [v for _, r in at_f.groupby("pretrain_seed") if (v := aggregate_score(r, task_specs)) is not None]
        spread = per_pretrain if len(per_pretrain) > 1 else [
            v for _, r in at_f.groupby("seed") if (v := aggregate_score(r, task_specs)) is not None]
        curve.append({
            "fraction": float(fraction), "step": int(at_f["step"].median()),
            "train_flops": float(at_f["train_flops"].median()),
            "score": float(np.mean(per_pretrain)) if per_pretrain else None,
            "min": min(spread) if spread else None, "max": max(spread) if spread else None,
            "n_pretrain_seeds": len(per_pretrain), "n_eval_seeds": int(at_f["seed"].nunique()),
        })
    return (curve[-1] if curve else None), curve


def flops_per_step(preset, objective: str) -> dict[str, float]:
    return {c: step_flops(preset.for_objective(objective), objective, c).flops_per_step for c in ("paper", "measured")}


def sweep_rows(points: Sequence[Mapping[str, Any]], task_specs) -> list[dict]:
    """One row per generator size (in the order given), then BERT and the untrained encoder.

    `points`: dicts with name, generator_size (None for BERT), objective, preset (the point's, with the
    data's vocabulary), scores (the point's score rows). The untrained encoder's row is read from the
    point that scored it (BERT's)."""
    out = []
    for pt in points:
        p = pt["preset"].for_objective(pt["objective"])
        d_hidden = p.model.encoder.hidden_size
        entries = [(pt["objective"], pt["objective"])]
        if pt["objective"] == "mlm":
            entries.append(("init", "init"))
        for objective, kind in entries:
            final, curve = _point_scores(pt["scores"], task_specs, objective)
            if final is None:
                continue
            g = pt["generator_size"] if kind == "rtd" else None
            g_hidden = p.model.generator.hidden_size if kind == "rtd" else None
            out.append({
                "point": pt["name"],
                "objective": objective,
                "model": (f"ELECTRA, generator {g:g}" if kind == "rtd" else "BERT" if kind == "mlm" else "untrained"),
                "generator_size": g,
                "generator_fraction": (g_hidden / d_hidden) if g_hidden is not None else None,
                "generator_hidden": g_hidden,
                "discriminator_hidden": d_hidden,
                "steps": final["step"],
                "score": final["score"],
                "min": final["min"],
                "max": final["max"],
                "n_pretrain_seeds": final["n_pretrain_seeds"],
                "n_eval_seeds": final["n_eval_seeds"],
                "train_flops": final["train_flops"],
                "flops_per_step": flops_per_step(p, objective) if objective != "init" else {},
                "curve": curve if objective != "init" else [],
            })
    bert = next((r for r in out if r["objective"] == "mlm"), None)
    for r in out:
        r["vs_bert"] = (r["score"] - bert["score"]) if (bert and bert["score"] is not None
                                                        and r["score"] is not None) else None
    return out


# -- the command ---------------------------------------------------------------------------------------

def _points(spec: SweepSpec, data_vocab: int, budget: float) -> list[tuple]:
    """(name, size, the point's spec, its preset with the data's vocabulary, its plans) for every point;
    a budget below one step of a point names that point."""
    base, out = spec.base, []
    for name, g, ps in spec.points():
        if base.budget.strip().endswith("%"):  # a share of the preset's own schedule: the same FLOPs for all
            ps = dataclasses.replace(ps, budget=repr(budget))
        pp = runner.with_vocab(ps.resolved_preset(), data_vocab)
        try:
            plans = {o: runner.plan(pp, o, budget, base.convention) for o in ps.objectives}  # >= one step each
        except BenchError as e:
            raise BenchError(f"{'BERT' if g is None else f'generator size {g:g}'}: {e}") from None
        out.append((name, g, ps, pp, plans))
    return out


def run_sweep(spec: SweepSpec, root: str | Path, run_id: str | None = None, quiet: bool = False,
              width: int | None = None) -> tuple[dict, str]:
    """Pre-train every point of `spec` to its budget (resuming what is there), score every checkpoint,
    write and return sweep.json's table and its text rendering. Every point's jobs are one graph."""
    t0 = time.perf_counter()
    base = spec.base
    run_id = run_id or spec.run_id()
    # everything that can fail on the input, before any directory exists
    tasks = load_tasks(base.source, list(base.tasks) if base.tasks else None)
    for _, _, ps in spec.points():
        target.resolve(ps).check_memory(ps)
    data, p, resolved, _ = prepare(dataclasses.replace(base, objectives=("mlm",)), quiet)
    budget, note = resolved.flops, resolved.note
    if note and not quiet:
        print(note, file=sys.stderr)
    points = _points(spec, data.tokenizer.vocab_size, budget)
    del data

    with open_run(root, run_id, spec.to_dict()) as run, ExitStack() as stack:
        info = provenance.collect(
            seeds={"pretrain": list(range(base.pretrain_seeds)), "eval": list(range(base.seeds)), "data_packing": 0},
            convention=base.convention, data_hashes={},
            extra={"preset": p.to_dict(), "budget_flops": budget, "generator_sizes": list(spec.generator_sizes),
                   "points": {name: f"points/{name}" for name, *_ in points}, "suite": suite_name(base, tasks),
                   "parallelism": parallelism(base), "tasks": [t.spec.name for t in tasks]},
        )
        if run.provenance() is None:
            run.write_provenance(info)
        exps = [(name, g, stack.enter_context(experiment(ps, run.layout.points, name, quiet=True)))
                for name, g, ps, _, _ in points]
        timings = {"prepare_s": time.perf_counter() - t0}
        # one graph: every point's runs (the untrained encoder scored once, with BERT), ids prefixed by point
        run_experiments(base, [(exp, {"prefix": f"{name}/", "include_init": name == BERT_POINT})
                               for name, _, exp in exps], run.layout.root / "cluster", quiet)
        timings["pretrain_s"] = exps[0][2].timings.get("pretrain_s", 0.0)
        timings["evaluate_s"] = exps[0][2].timings.get("evaluate_s", 0.0)

        new_scores = 0
        for _, _, exp in exps:
            new_scores += len(exp.run.scores()) - exp.n_scores_before
            record_invocation(exp)
        atomic_io.append_jsonl(run.layout.history, {
            "started_utc": info["created_utc"], "wall_s": time.perf_counter() - t0, "timings": timings,
            "new_scores": new_scores, "command_line": info["command_line"], "git": info["git"],
            "versions": info["versions"], "parallelism": parallelism(base),
        })
        work = work_done(atomic_io.read_jsonl(run.layout.history))

        result, rendered = _write_result(run, spec, p, budget, tasks, points, exps, work, width)
    return result, rendered


def _write_result(run, spec: SweepSpec, p, budget: float, tasks, points, exps, work: dict,
                  width: int | None) -> tuple[dict, str]:
    """sweep.json's table from every point's scores, written with its text, Markdown and plot."""
    base = spec.base
    task_specs = {tk.spec.name: tk.spec for tk in tasks}
    rows = sweep_rows([{"name": name, "generator_size": g, "objective": ps.objectives[0], "preset": pp,
                        "scores": exp.run.scores()}
                       for (name, g, ps, pp, _), (_, _, exp) in zip(points, exps)], task_specs)
    suite = "GLUE score" if glue_score.is_glue(list(task_specs)) else "suite mean"
    result = {"run_id": run.run_id, "preset": p.name, "discriminator_hidden": p.model.encoder.hidden_size,
              "budget_flops": budget, "flop_convention": base.convention, "protocol": base.protocol,
              "tasks": list(task_specs), "aggregate": suite, "generator_sizes": list(spec.generator_sizes),
              "points": {name: f"points/{name}" for name, *_ in points}, "rows": rows, **work}
    atomic_io.write_json(run.layout.sweep, result)
    rendered = render_sweep(result, "table", width)
    atomic_io.write_text(run.layout.report_txt, render_sweep(result, "table", 120))
    atomic_io.write_text(run.layout.report_md, render_sweep(result, "md") + "\n")
    plot_sweep(result, run.layout.plots)
    return result, rendered


def plan_sweep(spec: SweepSpec, root: str | Path, run_id: str | None = None, n_devices: int | None = None) -> dict:
    """--dry-run: every point's jobs as one graph, sized (no data is prepared: the preset's vocabulary)."""
    base = spec.base
    p = base.resolved_preset()
    budget = budget_of(base, p).flops
    tasks, note = sized_tasks(base)
    layout = RunLayout(Path(root) / (run_id or spec.run_id()))
    jobs, rates = [], {}
    where = target.resolve(base)
    for name, _, ps, pp, plans in _points(spec, p.model.encoder.vocab_size, budget):
        jobs += build_jobs(ps, plans, tasks, pp, RunLayout(layout.points / name), None, prefix=f"{name}/",
                           include_init=name == BERT_POINT)
        rates.update({f"{name}/pretrain/{o}": where.pretrain_rate(pp.for_objective(o), o, plans[o], base.gpus_per_run)
                      for o in plans})
    jobs.sort(key=lambda j: j.kind != "pretrain")
    return {**graph_report(base, jobs, n_devices, where, rates), "note": note}
