"""Figures of a run, as PNG and SVG (matplotlib's Agg/SVG canvases; no display, no pyplot state).

`plot_run` writes into `<run>/plots/` (or `out_dir`):
- score_vs_flops: the aggregate score against pre-training FLOPs (log x), one line per objective with
  its band (range over pre-training seeds, else evaluation seeds), the untrained encoder as a dashed horizontal line (it sits at
  0 FLOPs, which a log axis cannot show); optionally the paper's published points.
- tasks: one panel per task, its primary metric against FLOPs, same encoding.
- learning: the pre-training runs' learning diagnostics against FLOPs (gain over unigram, discriminator
  AUC, representation collapse) with the thresholds below which a run is flagged "did not learn".
Every file is written atomically.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from ..atomic_io import atomic_path
from . import learning, paper_points
from . import summary as summary_mod
from .results import RunDir

COLORS = {"mlm": "#1f77b4", "rtd": "#d62728", "init": "#555555", "paper": "#2ca02c", "other": "#7f7f7f"}
FORMATS = ("png", "svg")
AGGREGATE_NAMES = {
    "glue-electra": "GLUE score (ELECTRA paper convention)",
    "glue-glue": "GLUE score (leaderboard convention)",
    "suite-mean": "mean of tasks' primary metrics",
}


def new_figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = (7.5, 5.0)):
    """A figure (no pyplot: no global state, no display backend needed) and its (nrows, ncols) axes."""
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def save(fig, out_dir: Path, stem: str, formats: Sequence[str] = FORMATS) -> list[Path]:
    paths = []
    for fmt in formats:
        path = Path(out_dir) / f"{stem}.{fmt}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=120, metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    return paths


def _draw_curves(ax, block: Mapping[str, Any], models: Mapping[str, Any], value_of, band_of) -> None:
    """Lines per objective (log x) and the untrained encoder as a dashed line with its band."""
    points = block["points"]
    for obj in summary_mod.TRAINED:
        own = [p for p in summary_mod.curve(points, obj) if p["objective"] == obj and p["train_flops"] > 0]
        own = [p for p in own if value_of(p) is not None]
        if not own:
            continue
        xs = [p["train_flops"] for p in own]
        ys = [value_of(p) for p in own]
        label = models.get(obj, {}).get("label", summary_mod.LABELS[obj])
        ax.plot(xs, ys, marker="o", color=COLORS[obj], label=label)
        bands = [band_of(p) for p in own]
        if all(b is not None for b in bands) and any(b[1] > b[0] for b in bands):
            ax.fill_between(xs, [b[0] for b in bands], [b[1] for b in bands], color=COLORS[obj], alpha=0.18,
                            linewidth=0, label=f"{label} band")
    init = next((p for p in points if p["objective"] == "init"), None)
    if init is not None and value_of(init) is not None:
        y = value_of(init)
        ax.axhline(y, color=COLORS["init"], linestyle="--", linewidth=1.2,
                   label=f"untrained encoder (0 FLOPs): {y:.1f}")
        band = band_of(init)
        if band is not None and band[1] > band[0]:
            ax.axhspan(band[0], band[1], color=COLORS["init"], alpha=0.08, linewidth=0)
    log_flops_axis(ax)
    ax.grid(True, which="major", alpha=0.3)


def log_flops_axis(ax) -> None:
    """Log x axis labelled at 1, 2, 3 and 5 per decade as "2e13": matplotlib's default also labels minor
    ticks with mathtext when a curve spans less than a decade, and those labels overlap."""

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:.0e}".replace("e+", "e")))
    ax.xaxis.set_minor_formatter(NullFormatter())


def _score_band(p: Mapping[str, Any]):
    s = p["score"]
    return (s["min"], s["max"]) if s.get("min") is not None and s.get("max") is not None else None


def _task_band(task: str):
    def band(p):
        t = p["tasks"].get(task)
        return (t["min"], t["max"]) if t and t.get("min") is not None else None

    return band


def _task_value(task: str):
    def value(p):
        t = p["tasks"].get(task)
        return t.get("median") if t else None

    return value


def plot_scores(summary: Mapping[str, Any], out_dir: Path, *, protocol: str | None = None,
                paper_overlay: bool = False, formats: Sequence[str] = FORMATS) -> list[Path]:
    protocol = protocol or summary["main_protocol"]
    block = summary["protocols"][protocol]
    suite = summary["suite"]["name"]
    conv = summary["flop_convention"]
    fig, axes = new_figure()
    ax = axes[0][0]
    _draw_curves(ax, block, summary["models"], lambda p: p["score"]["value"], _score_band)
    if paper_overlay:
        for obj, marker in (("rtd", "s"), ("mlm", "D")):
            pts = paper_points.small_curves()[obj]
            ax.plot([p.train_flops for p in pts], [p.glue for p in pts], linestyle=":", marker=marker,
                    color=COLORS[obj], alpha=0.6,
                    label=f"{paper_points.OVERLAY_LABEL}: {'ELECTRA' if obj == 'rtd' else 'BERT'}-Small")
    head = summary.get("protocols", {}).get(protocol, {}).get("headline", {}).get("rtd_reaches_mlm")
    title = f"{suite} score vs pre-training compute ({protocol})"
    if head and head.get("text"):
        title += "\n" + head["text"]
    ax.set_title("\n".join(textwrap.fill(line, 100) for line in title.split("\n")), fontsize=9)
    ax.set_xlabel(f"pre-training FLOPs ({conv} convention, log scale)")
    n = max((p["score"]["n_seeds"] for p in block["points"]), default=0)
    n_pre = max((p["score"].get("n_pretrain_seeds", 1) for p in block["points"]), default=1)
    agg = AGGREGATE_NAMES.get(summary["suite"]["aggregate"], summary["suite"]["aggregate"])
    how = (f"mean over {n_pre} pre-training seeds of the median of {n} evaluation seeds;\n"
           f"band = range over pre-training seeds" if n_pre > 1 else f"median of {n} evaluation seeds")
    ax.set_ylabel(f"{agg}, 0-100\n({how})", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    return save(fig, out_dir, "score_vs_flops", formats)


def plot_tasks(summary: Mapping[str, Any], out_dir: Path, *, protocol: str | None = None,
               formats: Sequence[str] = FORMATS) -> list[Path]:
    protocol = protocol or summary["main_protocol"]
    block = summary["protocols"][protocol]
    tasks = block["tasks"]
    if not tasks:
        return []
    ncols = min(3, len(tasks))
    nrows = math.ceil(len(tasks) / ncols)
    fig, axes = new_figure(nrows, ncols, size=(4.2 * ncols, 3.4 * nrows))
    for i, task in enumerate(tasks):
        ax = axes[i // ncols][i % ncols]
        _draw_curves(ax, block, summary["models"], _task_value(task), _task_band(task))
        primary = next((p["tasks"][task]["primary_metric"] for p in block["points"] if task in p["tasks"]), "")
        ax.set_title(f"{task} ({primary})", fontsize=9)
        ax.set_xlabel(f"pre-training FLOPs ({summary['flop_convention']})", fontsize=8)
        ax.set_ylabel(f"{primary}, 0-100", fontsize=8)
        if i == 0:
            ax.legend(fontsize=6, loc="best")
    for j in range(len(tasks), nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)
    fig.suptitle(f"{summary['suite']['name']}: per-task scores vs pre-training compute ({protocol}, "
                 f"median over seeds, band as in score_vs_flops)", fontsize=10)
    return save(fig, out_dir, "tasks", formats)


def plot_learning(summary: Mapping[str, Any], out_dir: Path, *, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Did pre-training learn? Three panels against FLOPs, one line per (objective, pre-training seed):
    MLM/generator gain over the unigram baseline, the discriminator's AUC, and the kept encoder's mean
    token cosine (collapse), each with its "did not learn" threshold dotted."""
    block = summary.get("learning") or {}
    runs = [(o, r) for o in summary_mod.TRAINED for r in block.get(o, {}).get("runs", []) if r["trajectory"]]
    if not runs:
        return []
    panels = [("mlm_gain_nats", "MLM / generator gain over unigram (nats)", learning.MIN_MLM_GAIN_NATS),
              ("disc_auc", "discriminator AUC (replaced vs original)", learning.MIN_DISC_AUC),
              ("token_cosine", "mean token cosine of the kept encoder", learning.MAX_TOKEN_COSINE)]
    fig, axes = new_figure(1, 3, size=(14.0, 4.0))
    convention = summary.get("flop_convention", "")
    for ax, (key, title, threshold) in zip(axes[0], panels):
        for obj, r in runs:
            pts = [(t["flops"], t[key]) for t in r["trajectory"] if t.get(key) is not None and t["flops"]]
            if not pts:
                continue
            label = f"{summary_mod.LABELS[obj]} seed {r['seed']}" + ("" if r["learned"] else " (did not learn)")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=COLORS[obj], marker=".",
                    linestyle="-" if r["seed"] == 0 else "--", linewidth=1, label=label)
        ax.axhline(threshold, color="black", linestyle=":", linewidth=1, label="threshold")
        log_flops_axis(ax)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(f"pre-training FLOPs ({convention} convention)", fontsize=8)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle("Learning diagnostics on a fixed held-out set (evaluation/learning.py)", fontsize=10)
    return save(fig, out_dir, "learning", formats)


def plot_run(run: RunDir, out_dir: str | Path | None = None, paper_overlay: bool = False, *,
             task_specs=None, convention: str | None = None, summary: Mapping[str, Any] | None = None,
             formats: Sequence[str] = FORMATS) -> list[Path]:
    """All figures of a run; returns the files written."""
    out = Path(out_dir) if out_dir is not None else run.layout.plots
    s = summary if summary is not None else summary_mod.load_or_build(run, task_specs, convention)
    paths = plot_scores(s, out, paper_overlay=paper_overlay, formats=formats)
    paths += plot_tasks(s, out, formats=formats)
    paths += plot_learning(s, out, formats=formats)
    for protocol in s["protocols"]:
        if protocol != s["main_protocol"]:
            sub = out / protocol
            paths += plot_scores(s, sub, protocol=protocol, formats=formats)
    return paths
