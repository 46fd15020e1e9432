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
`sweep.json` (`sweep_rows`), with report.txt / report.md (`render_sweep`) and
plots/generator_size.png|svg (`figure_sweep`).

Module level imports stay light (no torch): `load_sweep` and `render_sweep` are for `electra-bench
report`.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import math
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .. import atomic_io
from ..errors import BenchError, at
from ..layout import RunLayout

if TYPE_CHECKING:
    from .compare import CompareSpec

# The paper's Figure 3 (left): generator hidden as a fraction of the discriminator's
PAPER_SIZES = (0.125, 0.25, 0.5, 0.75, 1.0)
SWEEP_DEFAULT_PRETRAIN_SEEDS = 1  # six pre-training runs at the default: one each unless asked for more
SIZES_OPTION = "--generator-sizes"
BERT_POINT = "bert"
FORMATS = ("table", "md", "csv", "latex")


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

    base: "CompareSpec"
    generator_sizes: tuple[float, ...] = PAPER_SIZES

    def to_dict(self) -> dict:
        return {**self.base.to_dict(), "generator_sizes": list(self.generator_sizes)}

    def run_id(self) -> str:
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        mode = "-quick" if self.base.quick else "-long" if self.base.long else ""
        return f"sweep-{self.base.preset}{mode}-{digest}"

    def points(self) -> list[tuple[str, float | None, "CompareSpec"]]:
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
    from ..choices import OBJECTIVES
    from .compare import CompareSpec, default_parallelism

    if overrides is not None:
        if overrides.generator_size is not None:
            raise BenchError(f"--generator-size sets one generator; a sweep takes its sizes from {SIZES_OPTION} "
                             f"(e.g. {SIZES_OPTION} 0.25,0.5)")
        if overrides.uniform_generator:
            raise BenchError("--uniform-generator has no generator model to size: a sweep needs a learned generator")
        if overrides.untied_generator is False:
            raise BenchError("--tied-generator makes the generator the discriminator itself: a sweep needs an "
                             "untied generator")
    sizes = parse_sizes(generator_sizes)
    base = CompareSpec.resolve(objectives=OBJECTIVES, pretrain_seeds=pretrain_seeds or SWEEP_DEFAULT_PRETRAIN_SEEDS,
                               jobs=jobs, threads=threads, overrides=overrides, **compare_options)
    p = base.resolved_preset().for_objective("rtd")
    if p.uniform_generator or not p.untied_generator:
        raise BenchError(f"preset {p.name} has no separate learned generator to size")
    hidden = p.encoder.hidden_size
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
    import numpy as np

    from ..reporting.ablation import aggregate_score

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
    from ..flops import step_flops

    return {c: step_flops(preset.for_objective(objective), objective, c).flops_per_step for c in ("paper", "measured")}


def sweep_rows(points: Sequence[Mapping[str, Any]], task_specs) -> list[dict]:
    """One row per generator size (in the order given), then BERT and the untrained encoder.

    `points`: dicts with name, generator_size (None for BERT), objective, preset (the point's, with the
    data's vocabulary), scores (the point's score rows). The untrained encoder's row is read from the
    point that scored it (BERT's)."""
    out = []
    for pt in points:
        p = pt["preset"].for_objective(pt["objective"])
        d_hidden = p.encoder.hidden_size
        entries = [(pt["objective"], pt["objective"])]
        if pt["objective"] == "mlm":
            entries.append(("init", "init"))
        for objective, kind in entries:
            final, curve = _point_scores(pt["scores"], task_specs, objective)
            if final is None:
                continue
            g = pt["generator_size"] if kind == "rtd" else None
            g_hidden = p.generator.hidden_size if kind == "rtd" else None
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


# -- rendering -----------------------------------------------------------------------------------------

def _num(x, fmt="{:.1f}", signed=False) -> str:
    if x is None:
        return "-"
    return ("{:+.1f}" if signed else fmt).format(x)


def _title(result: Mapping[str, Any]) -> str:
    return (f"Generator size (ELECTRA Figure 3): {result['preset']}, discriminator hidden "
            f"{result['discriminator_hidden']}, every run to {result['budget_flops']:.2g} FLOPs "
            f"({result['flop_convention']}), {result['protocol']}; "
            f"score = {result['aggregate']} at the final checkpoint")


def _table(result: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    conv = result["flop_convention"]
    # short headers (the FLOP convention is in the title): the terminal table fits 120 columns
    head = ["Model", "generator", "hidden", "steps", "FLOPs/step", "train FLOPs", "score", "band", "vs BERT"]
    body = []
    for r in result["rows"]:
        frac = r["generator_fraction"]
        body.append([
            r["model"],
            "-" if frac is None else f"{frac:.3g}",
            "-" if r["generator_hidden"] is None else str(r["generator_hidden"]),
            str(r["steps"]) if r["objective"] != "init" else "0",
            f"{r['flops_per_step'][conv]:.3g}" if r["flops_per_step"] else "-",
            f"{r['train_flops']:.3g}" if r["train_flops"] else "0",
            _num(r["score"]),
            f"[{_num(r['min'])}, {_num(r['max'])}]" if r["min"] is not None else "-",
            _num(r["vs_bert"], signed=True),
        ])
    return head, body


def render_sweep(result: Mapping[str, Any], fmt: str = "table", width: int | None = None) -> str:
    """sweep.json's table as a terminal table ("table"), Markdown ("md"), CSV ("csv": every field of the
    rows, one FLOPs/step column per convention) or LaTeX ("latex", booktabs)."""
    if fmt not in FORMATS:
        raise BenchError(f"unknown format '{fmt}': choose one of {', '.join(FORMATS)}")
    title = _title(result)
    if fmt == "csv":
        buf = io.StringIO()
        fields = ["point", "model", "objective", "generator_size", "generator_fraction", "generator_hidden",
                  "discriminator_hidden", "steps", "flops_per_step_paper", "flops_per_step_measured", "train_flops",
                  "score", "min", "max", "vs_bert", "n_pretrain_seeds", "n_eval_seeds"]
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
        w.writeheader()
        for r in result["rows"]:
            w.writerow({**{k: ("" if r.get(k) is None else r.get(k)) for k in fields},
                        "flops_per_step_paper": r["flops_per_step"].get("paper", ""),
                        "flops_per_step_measured": r["flops_per_step"].get("measured", "")})
        return buf.getvalue()
    head, body = _table(result)
    if fmt == "md":
        lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return "\n".join(lines + ["| " + " | ".join(b) + " |" for b in body])
    if fmt == "latex":
        from ..reporting.text_formats import latex_table

        return latex_table(head, body, [title]) + "\n"
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for i, h in enumerate(head):
        t.add_column(h, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for b in body:
        t.add_row(*b)
    console = Console(width=width or 120, record=True, file=io.StringIO())
    console.print(t)
    return console.export_text()


def load_sweep(run_dir: str | Path) -> dict:
    """A sweep run's sweep.json; a missing or unreadable one is a one-line BenchError."""
    path = RunLayout(run_dir).sweep
    if not path.is_file():
        raise BenchError(f"{at(path)}: not found: {run_dir} is not a finished generator-size sweep "
                         f"(electra-bench sweep writes it)")
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchError(f"{at(path, e.lineno)}: sweep.json is not valid JSON ({e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"{at(path)}: cannot read sweep.json ({e})") from None
    need = ("rows", "preset", "budget_flops", "flop_convention", "protocol", "aggregate", "discriminator_hidden")
    missing = [k for k in need if not isinstance(result, dict) or k not in result]
    if missing:
        raise BenchError(f"{at(path)}: sweep.json lacks {', '.join(missing)} (written by another version?)")
    return result


# -- the plot ------------------------------------------------------------------------------------------

def figure_sweep(result: Mapping[str, Any]):
    """Two panels: left, the score at the budget against the generator's size (a fraction of the
    discriminator's hidden size), BERT and the untrained encoder as horizontal lines; right, the
    compute-adjusted view: every run's score against pre-training FLOPs at its checkpoints."""
    from matplotlib import colormaps
    from matplotlib.lines import Line2D

    from ..reporting import plots

    rows = result["rows"]
    gens = sorted((r for r in rows if r["objective"] == "rtd" and r["score"] is not None),
                  key=lambda r: r["generator_fraction"])
    bert = next((r for r in rows if r["objective"] == "mlm" and r["score"] is not None), None)
    init = next((r for r in rows if r["objective"] == "init" and r["score"] is not None), None)
    conv = result["flop_convention"]
    fig, axes = plots.new_figure(1, 2, size=(11.0, 5.6))
    left, right = axes[0]
    cmap = colormaps["viridis"]
    color = {r["point"]: cmap(0.85 * i / max(1, len(gens) - 1)) for i, r in enumerate(gens)}

    def hlines(ax):
        if bert is not None:
            ax.axhline(bert["score"], color=plots.COLORS["mlm"], linestyle="--", linewidth=1.3, zorder=2)
        if init is not None:
            ax.axhline(init["score"], color=plots.COLORS["init"], linestyle=":", linewidth=1.2, zorder=2)

    # left: score vs generator size
    xs = [r["generator_fraction"] for r in gens]
    if gens:
        left.plot(xs, [r["score"] for r in gens], color=plots.COLORS["rtd"], marker="o", zorder=3)
        if all(r["min"] is not None for r in gens) and any(r["max"] > r["min"] for r in gens):
            left.fill_between(xs, [r["min"] for r in gens], [r["max"] for r in gens], color=plots.COLORS["rtd"],
                              alpha=plots.BAND_ALPHA, linewidth=0)
        for r in gens:
            left.plot([r["generator_fraction"]], [r["score"]], marker="o", color=color[r["point"]], zorder=4)
    hlines(left)
    kept: list[float] = []
    for x in sorted(xs):  # labels at the sizes, where they do not crowd each other
        if not kept or x - kept[-1] >= 0.09 * max(1.0, max(xs)):
            kept.append(x)
    hidden = {r["generator_fraction"]: r["generator_hidden"] for r in gens}
    left.set_xticks(kept, [f"{x:.3g}\n({hidden[x]})" for x in kept], fontsize=8)
    left.set_xlim(0, max([1.0] + xs) * 1.05)
    left.set_xlabel(f"generator hidden size / discriminator's ({result['discriminator_hidden']});\n"
                    f"in brackets: the generator's hidden size", fontsize=9)
    left.set_title("score at the budget vs generator size", fontsize=9.5, loc="left")
    left.grid(True, alpha=0.3)

    # right: the compute-adjusted view, score vs pre-training FLOPs
    flops_at: list[float] = []
    for r in gens + ([bert] if bert is not None else []):
        pts = [c for c in r["curve"] if c["score"] is not None and c["train_flops"] > 0]
        if not pts:
            continue
        x = [c["train_flops"] for c in pts]
        flops_at += x
        is_bert = r["objective"] == "mlm"
        right.plot(x, [c["score"] for c in pts], marker="s" if is_bert else "o",
                   linestyle="--" if is_bert else "-", color=plots.COLORS["mlm"] if is_bert else color[r["point"]],
                   zorder=3)
    if init is not None:
        right.axhline(init["score"], color=plots.COLORS["init"], linestyle=":", linewidth=1.2, zorder=2)
    if flops_at:
        plots.log_flops_axis(right, flops_at)
    right.set_xlabel(f"pre-training FLOPs ({conv} convention, log scale)", fontsize=9)
    right.set_title("compute-adjusted: score vs pre-training FLOPs (checkpoints)", fontsize=9.5, loc="left")
    right.grid(True, which="major", alpha=0.3)
    lo = min(a.get_ylim()[0] for a in (left, right))
    hi = max(a.get_ylim()[1] for a in (left, right))
    for a in (left, right):
        a.set_ylim(lo, hi)
    left.set_ylabel(f"{result['aggregate']}\n(final checkpoint; band: {_band_phrase(gens)})", fontsize=8.5)

    handles = [Line2D([], [], color=color[r["point"]], marker="o") for r in gens]
    labels = [f"ELECTRA, generator {r['generator_fraction']:.3g} (hidden {r['generator_hidden']}): "
              f"{r['steps']} steps" for r in gens]
    if bert is not None:
        handles.append(Line2D([], [], color=plots.COLORS["mlm"], linestyle="--", marker="s"))
        labels.append(f"BERT (MLM): {bert['score']:.1f} at the budget, {bert['steps']} steps")
    if init is not None:
        handles.append(Line2D([], [], color=plots.COLORS["init"], linestyle=":"))
        labels.append(f"untrained encoder: {init['score']:.1f}")
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    fig.suptitle(plots._wrap(
        f"Generator size, {result['preset']} preset (discriminator hidden {result['discriminator_hidden']}), "
        f"{result['protocol']} protocol. Every run gets the same budget, {result['budget_flops']:.2g} FLOPs "
        f"({conv} convention): a bigger generator costs more FLOPs per step, so it takes fewer steps.", 150),
        fontsize=9.5, x=0.01, ha="left")
    return fig


def _band_phrase(rows) -> str:
    n_pre = max((r["n_pretrain_seeds"] for r in rows), default=1)
    n_eval = max((r["n_eval_seeds"] for r in rows), default=1)
    if n_pre > 1:
        return f"range over {n_pre} pre-training seeds"
    return f"range over {n_eval} evaluation seeds" if n_eval > 1 else "none, one seed"


def plot_sweep(result: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    from ..reporting import plots

    return plots.save(figure_sweep(result), Path(out_dir), "generator_size")


# -- the command ---------------------------------------------------------------------------------------

def run_sweep(spec: SweepSpec, root: str | Path, run_id: str | None = None, quiet: bool = False,
              width: int | None = None) -> tuple[dict, str]:
    """Pre-train every point of `spec` to its budget (resuming what is there), score every checkpoint,
    write and return sweep.json's table and its text rendering."""
    import sys

    from ..data.task_sources import load_tasks
    from ..evaluation import glue_score
    from ..reporting import provenance
    from ..reporting.results import open_run
    from ..training import run as runner
    from ..training.progress import PhaseProgress
    from .compare import (
        PretrainMonitor, pretrain_job, suite_name, work_done, experiment, prepare, record_invocation, run_jobs,
        score_calls,
    )

    t0 = time.perf_counter()
    base = spec.base
    run_id = run_id or spec.run_id()
    # everything that can fail on the input, before any directory exists
    tasks = load_tasks(base.source, list(base.tasks) if base.tasks else None)
    for _, _, ps in spec.points():
        runner.check_memory(ps.resolved_preset(), ps.objectives, ps.device, "auto")
    data, p, budget, _ = prepare(dataclasses.replace(base, objectives=("mlm",)), quiet)
    note = runner.budget_note(p, budget, base.convention)
    if note and not quiet:
        print(note, file=sys.stderr)
    points = []
    for name, g, ps in spec.points():
        if base.budget.strip().endswith("%"):  # a share of the preset's own schedule: the same FLOPs for all
            ps = dataclasses.replace(ps, budget=repr(budget))
        pp = runner.with_vocab(ps.resolved_preset(), data.tokenizer.vocab_size)
        try:
            plans = {o: runner.plan(pp, o, budget, base.convention) for o in ps.objectives}  # >= one step each
        except BenchError as e:
            raise BenchError(f"{'BERT' if g is None else f'generator size {g:g}'}: {e}") from None
        points.append((name, g, ps, pp, plans))
    del data

    with open_run(root, run_id, spec.to_dict()) as run, ExitStack() as stack:
        info = provenance.collect(
            seeds={"pretrain": list(range(base.pretrain_seeds)), "eval": list(range(base.seeds)), "data_packing": 0},
            convention=base.convention, data_hashes={},
            extra={"preset": p.to_dict(), "budget_flops": budget, "generator_sizes": list(spec.generator_sizes),
                   "points": {name: f"points/{name}" for name, *_ in points}, "suite": suite_name(base, tasks),
                   "parallelism": {"jobs": base.jobs, "threads": base.threads},
                   "tasks": [t.spec.name for t in tasks]},
        )
        if run.provenance() is None:
            run.write_provenance(info)
        exps = [(name, g, stack.enter_context(experiment(ps, run.layout.points, name, quiet=True)))
                for name, g, ps, _, _ in points]
        timings = {"prepare_s": time.perf_counter() - t0}

        # pre-training: every point's runs in one pool
        t = time.perf_counter()
        calls, owners, monitored = [], [], {}
        for name, _, exp in exps:
            for s in range(base.pretrain_seeds):
                for o, plan in exp.plans.items():
                    layout = exp.run.layout.pretrain(o, s)
                    calls.append((pretrain_job, exp.spec, o, s, str(layout.root), quiet or base.jobs > 1))
                    owners.append(exp)
                    monitored[f"{name} s{s}"] = (layout.log, plan.total_steps, exp.budget)
        monitor = PretrainMonitor(monitored, quiet or base.jobs <= 1)
        done_pre = iter(owners)

        def pretrained(r):
            next(done_pre).timings[f"pretrain_{r[0]}_seed{r[1]}_s"] = r[2]

        with monitor.phase:
            run_jobs(base.jobs, calls, pretrained, monitor.poll)
            monitor.poll()
        timings["pretrain_s"] = time.perf_counter() - t

        # scoring: every point's checkpoints, the untrained encoder once (with BERT)
        t = time.perf_counter()
        calls, owners = [], []
        for name, _, exp in exps:
            for c in score_calls(exp, include_init=name == BERT_POINT):
                calls.append(c)
                owners.append(exp)
        scoring = PhaseProgress(quiet)
        total = sum(len(todo[pt[0]]) for *_, pts, todo in calls for pt in pts) * base.seeds
        scoring.add("scoring", total)
        done_score = iter(owners)
        progress = {"units": 0, "encoders": 0}
        n_encoders = sum(len(c[4]) for c in calls)

        def store(rows):
            next(done_score).run.append_scores(rows)
            progress["units"] += len({(r["objective"], r["pretrain_seed"], r["fraction"], r["task"], r["seed"])
                                      for r in rows})
            progress["encoders"] += len({(r["objective"], r["pretrain_seed"], r["fraction"]) for r in rows})
            scoring.update("scoring", progress["units"], f"{progress['encoders']}/{n_encoders} encoders x "
                                                         f"{len(tasks)} tasks x {base.seeds} seeds ({base.protocol})")

        with scoring:
            run_jobs(base.jobs, calls, store)
        timings["evaluate_s"] = time.perf_counter() - t

        new_scores = 0
        for _, _, exp in exps:
            new_scores += len(exp.run.scores()) - exp.n_scores_before
            record_invocation(exp)
        atomic_io.append_jsonl(run.layout.history, {
            "started_utc": info["created_utc"], "wall_s": time.perf_counter() - t0, "timings": timings,
            "new_scores": new_scores, "command_line": info["command_line"], "git": info["git"],
            "versions": info["versions"], "parallelism": {"jobs": base.jobs, "threads": base.threads},
        })
        work = work_done(atomic_io.read_jsonl(run.layout.history))

        task_specs = {tk.spec.name: tk.spec for tk in tasks}
        rows = sweep_rows([{"name": name, "generator_size": g, "objective": ps.objectives[0], "preset": pp,
                            "scores": exp.run.scores()}
                           for (name, g, ps, pp, _), (_, _, exp) in zip(points, exps)], task_specs)
        suite = "GLUE score" if glue_score.is_glue(list(task_specs)) else "suite mean"
        result = {"run_id": run.run_id, "preset": p.name, "discriminator_hidden": p.encoder.hidden_size,
                  "budget_flops": budget, "flop_convention": base.convention, "protocol": base.protocol,
                  "tasks": list(task_specs), "aggregate": suite, "generator_sizes": list(spec.generator_sizes),
                  "points": {name: f"points/{name}" for name, *_ in points}, "rows": rows, **work}
        atomic_io.write_json(run.layout.sweep, result)
        rendered = render_sweep(result, "table", width)
        atomic_io.write_text(run.layout.report_txt, render_sweep(result, "table", 120))
        atomic_io.write_text(run.layout.report_md, render_sweep(result, "md") + "\n")
        plot_sweep(result, run.layout.plots)
    return result, rendered
