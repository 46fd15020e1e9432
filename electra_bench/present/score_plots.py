"""The score figures of a run (plots.py says what each shows): score_vs_flops, the aggregate score against
pre-training FLOPs with CIs, crossovers, references and the headline in its title; tasks, one panel per task."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator

from . import paper_points
from ..summarise.points import LABELS, TRAINED, curve
from .summary_text import headline_lines, seeds_phrase
from ..units import fmt_flops
from .figures import (AGGREGATE_NAMES, BAND_ALPHA, COLORS, FORMATS, INIT_BAND_ALPHA, fit_text, log_flops_axis, new_figure,
                      save, wrap)


def _legend_handles(block: Mapping[str, Any], models: Mapping[str, Any], value_of, band_of, *,
                    with_value: bool = True):
    """(handles, labels) for the curves _draw_curves draws: one entry per objective (line over its band)
    and one for the untrained encoder (dashed line over its grey band; `with_value`: its score in the
    label)."""
    handles, labels = [], []
    points = block["points"]
    for obj in TRAINED:
        own = [p for p in points if p["objective"] == obj and value_of(p) is not None]
        if not own:
            continue
        line = Line2D([], [], color=COLORS[obj], marker="o")
        has_band = any((b := band_of(p)) is not None and b[1] > b[0] for p in own)
        handles.append((Patch(color=COLORS[obj], alpha=BAND_ALPHA, linewidth=0), line) if has_band else line)
        labels.append(models.get(obj, {}).get("label", LABELS[obj]))
    init = next((p for p in points if p["objective"] == "init"), None)
    if init is not None and value_of(init) is not None:
        line = Line2D([], [], color=COLORS["init"], linestyle="--", linewidth=1.2)
        band = band_of(init)
        has_band = band is not None and band[1] > band[0]
        handles.append((Patch(color=COLORS["init"], alpha=INIT_BAND_ALPHA * 2, linewidth=0), line) if has_band
                       else line)
        value = f": {value_of(init):.1f}" if with_value else ""
        labels.append(f"untrained encoder{value} (at 0 FLOPs, drawn across" + (", grey: its band)" if has_band else ")"))
    return handles, labels


def _draw_curves(ax, block: Mapping[str, Any], models: Mapping[str, Any], value_of, band_of) -> list[float]:
    """Lines per objective (log x) with their bands, and the untrained encoder as a dashed line with its
    grey band; returns the FLOPs of the points drawn."""
    points = block["points"]
    xs_all: list[float] = []
    for obj in TRAINED:
        own = [p for p in curve(points, obj) if p["objective"] == obj and p["train_flops"] > 0]
        own = [p for p in own if value_of(p) is not None]
        if not own:
            continue
        xs = [p["train_flops"] for p in own]
        ys = [value_of(p) for p in own]
        xs_all += xs
        label = models.get(obj, {}).get("label", LABELS[obj])
        ax.plot(xs, ys, marker="o", color=COLORS[obj], label=label, zorder=3)
        bands = [band_of(p) for p in own]
        if len(own) == 1 and bands[0] is not None and bands[0][1] > bands[0][0]:  # no area to shade: a bar
            # centred on the band, not the point: a mean over seeds can lie outside a bootstrap percentile CI
            lo, hi = bands[0]
            ax.errorbar(xs, [(lo + hi) / 2], yerr=[(hi - lo) / 2], fmt="none", ecolor=COLORS[obj], capsize=4, zorder=3)
        elif all(b is not None for b in bands) and any(b[1] > b[0] for b in bands):
            ax.fill_between(xs, [b[0] for b in bands], [b[1] for b in bands], color=COLORS[obj], alpha=BAND_ALPHA,
                            linewidth=0, label=f"{label} band")
    init = next((p for p in points if p["objective"] == "init"), None)
    if init is not None and value_of(init) is not None:
        y = value_of(init)
        ax.axhline(y, color=COLORS["init"], linestyle="--", linewidth=1.2, label="untrained encoder", zorder=2)
        band = band_of(init)
        if band is not None and band[1] > band[0]:
            ax.axhspan(band[0], band[1], color=COLORS["init"], alpha=INIT_BAND_ALPHA, linewidth=0,
                       label="untrained encoder band")
    log_flops_axis(ax, xs_all)
    ax.grid(True, which="major", alpha=0.3)
    return xs_all


def _score_band_of(block: Mapping[str, Any]):
    """The score figure's band: each point's 95% CI (summarise/confidence.py) when the run has them, else
    its range over seeds; and the words for the legend (None: the range's own)."""
    stats = block.get("statistics") or {}
    cis = {(q["objective"], round(q["fraction"], 4)): q["ci"] for q in stats.get("points", [])}
    if not cis:
        return _score_band, None
    return (lambda p: tuple(cis[(p["objective"], round(p["fraction"], 4))])
            if (p["objective"], round(p["fraction"], 4)) in cis else None), \
        f"its 95% CI ({stats['method']}, {stats['n_boot']} replicates)"


def _score_band(p: Mapping[str, Any]):
    s = p["score"]
    return (s["min"], s["max"]) if s.get("min") is not None and s.get("max") is not None else None


def _task_band_of(block: Mapping[str, Any], task: str):
    """A task panel's band, as the score figure's: each point's 95% CI of the task's score when the run
    has statistics, else the range over every run; and the words for the legend."""
    stats = block.get("statistics") or {}
    cis = {(q["objective"], round(q["fraction"], 4)): q["per_task"][task]["ci"] for q in stats.get("points", [])
           if task in (q.get("per_task") or {})}
    if cis:
        return (lambda p: tuple(cis[(p["objective"], round(p["fraction"], 4))])
                if (p["objective"], round(p["fraction"], 4)) in cis else None), \
            f"95% CI ({stats['method']}, {stats['n_boot']} replicates)"

    def band(p):
        t = p["tasks"].get(task)
        return (t["min"], t["max"]) if t and t.get("min") is not None else None

    return band, "range over every run"


def _task_value(task: str):
    def value(p):
        t = p["tasks"].get(task)
        return t.get("mean") if t else None

    return value


def _seeds_phrase(block: Mapping[str, Any]) -> tuple[str, str]:
    """(how a point's value is made, what its band is over), from the points' seed counts."""
    n = max((p["score"]["n_seeds"] for p in block["points"]), default=0)
    n_pre = max((p["score"].get("n_pretrain_seeds", 1) for p in block["points"]), default=1)
    over = f"range over the {n_pre} pre-training seeds" if n_pre > 1 else f"range over the {n} evaluation seeds"
    return seeds_phrase(block), over


# how each reported crossover is marked: (colour, line style)
CROSSOVER_STYLES = {"rtd_over_mlm": (COLORS["rtd"], "-."), "rtd_over_untrained": (COLORS["init"], ":")}
CROSSOVER_NAMES = {"mlm": "MLM", "rtd": "RTD", "init": "the untrained encoder"}


def _draw_crossovers(ax, block: Mapping[str, Any]) -> tuple[list, list[str]]:
    """Each reported crossover that holds (summarise/crossover.crossover_from_ci): a vertical line at the
    first checkpoint from which the 95% CI of the difference stays above 0, over a light span back to the
    checkpoint before it (the crossover lies between); returns legend handles and labels, which go under
    the axes where they cannot cover data or each other."""
    handles, labels = [], []
    for key in CROSSOVER_STYLES:
        c = (block.get("crossover") or {}).get(key)
        if not c or c.get("status") != "crossed" or c.get("from_flops") is None:
            continue
        color, style = CROSSOVER_STYLES[key]
        line = ax.axvline(c["from_flops"], color=color, linestyle=style, linewidth=1.4, zorder=2.5, gid="crossover")
        label = (f"crossover: {CROSSOVER_NAMES[c['objective']]} ahead of {CROSSOVER_NAMES[c['reference']]} "
                 f"(95% CI above 0)\nfrom {fmt_flops(c['from_flops'])} FLOPs on")
        handle = line
        if c.get("after_flops"):
            span = ax.axvspan(c["after_flops"], c["from_flops"], color=color, alpha=0.08, linewidth=0,
                              gid="crossover_range")
            handle = (span, line)
            label += f" (shaded: it lies after {fmt_flops(c['after_flops'])})"
        handles.append(handle)
        labels.append(label)
    return handles, labels


def _zoom_note(ax) -> str:
    lo, hi = ax.get_ylim()
    return f"y axis zoomed: {lo:.1f} to {hi:.1f} of the 0-100 scale" if (hi - lo) < 50 else "0-100 scale"


REFERENCE_MARKERS = ("*", "P", "X", "h", "v", "^")


def _draw_references(ax, block: Mapping[str, Any], handles: list, labels: list) -> None:
    """External checkpoints (summarise/references.py) as black markers at their stated FLOPs, with their
    band; a reference without stated FLOPs is in the table only. The x axis grows to include them."""
    refs = [p for p in block.get("references", []) if p.get("train_flops") and p["score"]["value"] is not None]
    for i, p in enumerate(refs):
        s = p["score"]
        err = None
        if s.get("min") is not None and s.get("max") is not None:
            err = [[s["value"] - s["min"]], [s["max"] - s["value"]]]
        h = ax.errorbar([p["train_flops"]], [s["value"]], yerr=err, fmt=REFERENCE_MARKERS[i % len(REFERENCE_MARKERS)],
                        color="black", markersize=9, capsize=3, zorder=4)
        handles.append(h)
        labels.append(f"{p['label']} (reference, {p['train_flops']:.2g} FLOPs as stated): {s['value']:.1f}")
    if refs:
        xs = [x for line in ax.get_lines() for x in line.get_xdata() if x > 0]
        log_flops_axis(ax, xs + [p["train_flops"] for p in refs])


def figure_scores(summary: Mapping[str, Any], *, protocol: str | None = None, paper_overlay: bool = False):
    """The score_vs_flops figure (see the module docstring)."""
    protocol = protocol or summary["main_protocol"]
    block = summary["protocols"][protocol]
    suite = summary["suite"]["name"]
    conv = summary["flop_convention"]
    fig, axes = new_figure(size=(8.0, 6.4))
    ax = axes[0][0]
    band_of, band_words = _score_band_of(block)
    _draw_curves(ax, block, summary["models"], lambda p: p["score"]["value"], band_of)
    handles, labels = _legend_handles(block, summary["models"], lambda p: p["score"]["value"], band_of)
    cross_handles, cross_labels = _draw_crossovers(ax, block)
    handles += cross_handles
    labels += cross_labels
    if paper_overlay:
        for obj, marker in (("rtd", "s"), ("mlm", "D")):
            pts = paper_points.small_curves()[obj]
            (line,) = ax.plot([p.train_flops for p in pts], [p.glue for p in pts], linestyle=":", marker=marker,
                              color=COLORS[obj], alpha=0.6)
            handles.append(line)
            labels.append(f"{paper_points.OVERLAY_LABEL}: {'ELECTRA' if obj == 'rtd' else 'BERT'}-Small")
        log_flops_axis(ax)  # the overlay spans decades: checkpoint ticks would crowd
    _draw_references(ax, block, handles, labels)
    title = [f"{suite} score vs pre-training compute ({protocol} protocol)"]
    reach = ("RTD reaches", "MLM reaches", "RTD does not reach", "MLM does not reach", "The untrained")
    one_checkpoint = all(len({round(p["fraction"], 4) for p in block["points"] if p["objective"] == obj}) <= 1
                         for obj in TRAINED)
    if one_checkpoint:
        # a reading scored at the untrained encoder and the final checkpoint only: a share of compute would
        # be the straight line from the untrained encoder, which nothing measured
        title.append("One checkpoint per objective: no share of compute to reach the other's score")
        reach = ()
    title += [line for line in headline_lines(summary, protocol)
              if line.startswith(reach + ("Crossover", "Verdict"))]
    ax.set_title(wrap("\n".join(title), 105), fontsize=8.5, loc="left")
    at = "; ticks at the checkpoints" if isinstance(ax.xaxis.get_major_locator(), FixedLocator) else ""
    ax.set_xlabel(f"pre-training FLOPs ({conv} convention, log scale{at})", fontsize=9)
    how, band = _seeds_phrase(block)
    band = band_words or band
    agg = AGGREGATE_NAMES.get(summary["suite"]["aggregate"], summary["suite"]["aggregate"])
    ax.set_ylabel(f"{agg}\n({how})\n{_zoom_note(ax)}", fontsize=8.5)
    init = next((p for p in block["points"] if p["objective"] == "init"), None)
    if init is not None and init["score"]["value"] is not None:
        y0 = init["score"]["value"]
        right = ax.secondary_yaxis("right", functions=(lambda y: y - y0, lambda d: d + y0))
        right.set_ylabel("points above the untrained encoder", fontsize=8.5)
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=8, frameon=False,
               handler_map={tuple: HandlerTuple(ndivide=1)},
               title=(f"points: score at the final checkpoint; bars: {band}" if one_checkpoint else
                      f"lines: score at each checkpoint; shaded: {band}"), title_fontsize=8)
    return fig


def plot_scores(summary: Mapping[str, Any], out_dir: Path, *, protocol: str | None = None,
                paper_overlay: bool = False, formats: Sequence[str] = FORMATS) -> list[Path]:
    return save(figure_scores(summary, protocol=protocol, paper_overlay=paper_overlay), out_dir, "score_vs_flops",
                formats)


def figure_tasks(summary: Mapping[str, Any], *, protocol: str | None = None):
    """The tasks figure: one panel per task; the legend in the grid's empty slot, else under the grid."""
    protocol = protocol or summary["main_protocol"]
    block = summary["protocols"][protocol]
    tasks = block["tasks"]
    if not tasks:
        return None
    ncols = min(3, len(tasks))
    nrows = math.ceil(len(tasks) / ncols)
    fig, axes = new_figure(nrows, ncols, size=(4.4 * ncols, 3.5 * nrows + 0.9))
    handles, labels = [], []
    band_words = None
    for i, task in enumerate(tasks):
        ax = axes[i // ncols][i % ncols]
        band_of, band_words = _task_band_of(block, task)
        _draw_curves(ax, block, summary["models"], _task_value(task), band_of)
        primary = next((p["tasks"][task]["primary_metric"] for p in block["points"] if task in p["tasks"]), "")
        ax.set_title(f"{task} ({primary})", fontsize=9)
        ax.set_xlabel(f"pre-training FLOPs ({summary['flop_convention']})", fontsize=8)
        ax.set_ylabel(f"{primary} (0-100 scale, zoomed)", fontsize=8)
        ax.tick_params(labelsize=8)
        if not handles:
            handles, labels = _legend_handles(block, summary["models"], _task_value(task), band_of,
                                              with_value=False)
    legend_kw = dict(fontsize=8, handler_map={tuple: HandlerTuple(ndivide=1)}, title_fontsize=8)
    spare = [axes[j // ncols][j % ncols] for j in range(len(tasks), nrows * ncols)]
    for ax in spare:
        ax.set_axis_off()
    note = f"lines: {seeds_phrase(block)}\nshaded: {band_words}"
    if spare:
        spare[0].legend(handles, labels, loc="center", title=note, frameon=False, **legend_kw)
    else:
        fig.legend(handles, labels, loc="outside lower center", ncols=1 if ncols == 1 else 3, frameon=False,
                   title=fit_text(note.replace("\n", "; "), fig.get_figwidth(), 8), **legend_kw)
    fig.suptitle(fit_text(f"{summary['suite']['name']}: each task's primary metric vs pre-training compute ({protocol} "
                      "protocol); each panel's y axis is zoomed to its own range", fig.get_figwidth(), 10), fontsize=10)
    return fig


def plot_tasks(summary: Mapping[str, Any], out_dir: Path, *, protocol: str | None = None,
               formats: Sequence[str] = FORMATS) -> list[Path]:
    fig = figure_tasks(summary, protocol=protocol)
    return [] if fig is None else save(fig, out_dir, "tasks", formats)
