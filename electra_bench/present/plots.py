"""Figures of a run, as PNG and SVG (matplotlib's Agg/SVG canvases; no display, no pyplot state).

`plot_run` writes into `<run>/plots/` (or `out_dir`):
- score_vs_flops: the aggregate score against pre-training FLOPs (log x, ticks at the checkpoints), one
  line per objective with its shaded 95% CI (summarise/confidence.py; the range over seeds for a summary
  without statistics), the untrained encoder as a dashed horizontal line with its grey band (it sits at 0
  FLOPs, which a log axis cannot show); each crossover that holds as a vertical line at the first
  checkpoint from which the CI of the difference stays above 0, labelled in the legend; the title carries
  both headline sentences, the crossover lines and the verdict; the left axis says which part of the 0-100 scale it shows, the right axis the
  difference from the untrained encoder; optionally the paper's published points.
- tasks: one panel per task, its primary metric against FLOPs (the same score definition), same encoding:
  each point's 95% CI of the task's score shaded (the range over runs without statistics); the legend
  takes the grid's empty slot (else it sits under the grid).
- learning: the pre-training runs' learning diagnostics against FLOPs (gain over unigram, discriminator
  AUC, representation collapse) with the thresholds below which a run is flagged "did not learn".
- pretrain_loss: what those diagnostics are made of, in nats on the held-out set: MLM's masked-token loss
  against the unigram baseline, RTD's generator loss against the same baseline, and RTD's discriminator
  loss against its base rate (the entropy of a constant guess). The RTD training loss (generator + 50 x
  discriminator) is not drawn: it mixes the two scales and says nothing about either.
Every file is written atomically. `text_overlaps(fig)` lists overlapping text, a legend over data and
text outside the figure; tests/test_present_plots.py runs it on every figure.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend_handler import HandlerTuple
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from ..store.atomic_io import atomic_path
from ..summarise import learning
from . import paper_points
from ..summarise import summary as summary_mod
from ..summarise.points import LABELS, TRAINED, curve
from .summary_text import headline_lines, seeds_phrase
from ..store.runs import RunDir
from ..units import fmt_flops

COLORS = {"mlm": "#1f77b4", "rtd": "#d62728", "init": "#555555", "paper": "#2ca02c", "other": "#7f7f7f"}
FORMATS = ("png", "svg")
DPI = 120
BAND_ALPHA = 0.18
INIT_BAND_ALPHA = 0.10
AGGREGATE_NAMES = {
    "glue-electra": "GLUE score (ELECTRA paper convention)",
    "glue-glue": "GLUE score (leaderboard convention)",
    "suite-mean": "mean of tasks' primary metrics",
}


def new_figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = (7.5, 5.0), **subplot_kw):
    """A figure (no pyplot: no global state, no display backend needed) and its (nrows, ncols) axes."""
    fig = Figure(figsize=size, layout="constrained", dpi=DPI)
    axes = fig.subplots(nrows, ncols, squeeze=False, **subplot_kw)
    return fig, axes


def save(fig, out_dir: Path, stem: str, formats: Sequence[str] = FORMATS) -> list[Path]:
    paths = []
    for fmt in formats:
        path = Path(out_dir) / f"{stem}.{fmt}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=fmt, dpi=DPI, metadata={"Date": None} if fmt == "svg" else None)
        paths.append(path)
    return paths


def wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


def fit_text(text: str, width_in: float, fontsize: float) -> str:
    """`text` wrapped to `width_in` inches at `fontsize` points (DejaVu Sans averages about 0.6 em)."""
    return wrap(text, max(20, int(width_in * 72 / (0.6 * fontsize)) - 4))


# -- the overlap check ---------------------------------------------------------------------------------

def _text_boxes(fig, renderer) -> list[tuple[str, Any]]:
    """(description, display-space bbox) of every drawn, non-empty text of the figure: tick labels
    inside their axis' view, titles, axis labels, free text, and each legend as one box."""
    boxes = []

    def add(what: str, artist) -> None:
        bb = artist.get_window_extent(renderer)
        if bb.width > 0 and bb.height > 0:
            boxes.append((what, bb))

    def shown(t) -> bool:
        return t.get_visible() and (t.axes is None or t.axes.get_visible())

    # Axes and their secondary axes (which are not Axes subclasses)
    all_axes = fig.findobj(match=lambda a: hasattr(a, "xaxis") and hasattr(a, "yaxis"))
    skip = set()
    legends = list(fig.legends) + [ax.get_legend() for ax in all_axes
                                   if hasattr(ax, "get_legend") and ax.get_legend() is not None]
    for leg in legends:
        skip.update(id(t) for t in leg.findobj(match=Text))
        if leg.get_visible():
            add("legend" + (f" of {leg.axes.get_title()!r}" if leg.axes is not None else " of the figure"), leg)
    for ax in all_axes:
        name = (ax.get_title() if hasattr(ax, "get_title") else "") or ax.get_label() or "axes"
        for axis, which in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for label in (tick.label1, tick.label2):
                    skip.add(id(label))
                    loc = tick.get_loc()
                    inside = loc is not None and lo - 1e-9 * abs(hi - lo) <= loc <= hi + 1e-9 * abs(hi - lo)
                    if (inside and ax.get_visible() and tick.get_visible() and label.get_visible()
                            and label.get_text().strip()):
                        add(f"{which} tick label {label.get_text()!r} of {name!r}", label)
    for t in fig.findobj(match=Text, include_self=False):
        if id(t) in skip or not t.get_text().strip() or not shown(t):
            continue
        title = t.axes.get_title() if t.axes is not None and hasattr(t.axes, "get_title") else ""
        owner = f" of {title!r}" if title and title != t.get_text() else ""
        add(f"text {t.get_text()[:40]!r}{owner}", t)
    return boxes


def _canvas_renderer(fig):
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def text_overlaps(fig, pad: float = 0.5) -> list[str]:
    """What a reader cannot read on this figure, as drawn at its saved size: two texts (tick labels,
    titles, axis labels, legends) whose boxes overlap by more than `pad` pixels each way, a data marker
    under a legend drawn inside its axes, and text cut off by the figure's edge. Empty: clean."""
    renderer = _canvas_renderer(fig)
    boxes = _text_boxes(fig, renderer)
    problems = []
    for (a, ba), (b, bb) in itertools.combinations(boxes, 2):
        w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
        h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
        if w > pad and h > pad:
            problems.append(f"{a} overlaps {b}")
    fb = fig.bbox
    for what, bb in boxes:
        if bb.x0 < fb.x0 - 1 or bb.y0 < fb.y0 - 1 or bb.x1 > fb.x1 + 1 or bb.y1 > fb.y1 + 1:
            problems.append(f"{what} is cut off by the figure's edge")
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not leg.get_visible() or not ax.get_visible():
            continue
        lb = leg.get_window_extent(renderer)
        for line in ax.get_lines():
            if line.get_marker() in (None, "None", "", " ") or not line.get_visible():
                continue
            for x, y in line.get_transform().transform(line.get_xydata()):
                if lb.x0 <= x <= lb.x1 and lb.y0 <= y <= lb.y1:
                    problems.append(f"legend of {ax.get_title()!r} covers a data point of {line.get_label()!r}")
                    break
    return problems


# -- axes ----------------------------------------------------------------------------------------------

def _fmt_flops_tick(x: float) -> str:
    mantissa, exp = f"{x:.1e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exp)}"


def log_flops_axis(ax, at: Iterable[float] | None = None) -> None:
    """Log x axis labelled "2e13" style; call it after plotting. `at`: label exactly these FLOPs (the
    checkpoints) when they are few and far enough apart on the axis; otherwise (and without `at`) 1, 2,
    3 and 5 per decade over up to 1.5 decades of data, 1 and 3 up to 3 decades, then decades only.
    No minor labels: matplotlib's default labels minor ticks with mathtext when a curve spans less than
    a decade, and those labels overlap."""
    ax.set_xscale("log")
    ticks = sorted(x for x in set(at or ()) if x > 0)
    kept: list[float] = []
    for x in ticks:  # checkpoints of both objectives sit within a fraction of a percent of each other
        if not kept or math.log10(x / kept[-1]) > 0.02:
            kept.append(x)
    span = math.log10(kept[-1] / kept[0]) if len(kept) > 1 else 0.0
    gaps = [math.log10(b / a) for a, b in zip(kept, kept[1:])]
    if kept and len(kept) <= 6 and (not gaps or min(gaps) >= span / 6):
        ax.xaxis.set_major_locator(FixedLocator(kept))
    else:
        # fewer labels per decade the more decades the data span (a paper overlay spans six)
        lo, hi = ax.dataLim.intervalx
        decades = math.log10(hi / lo) if lo > 0 and hi > lo else 0.0
        subs = (1.0, 2.0, 3.0, 5.0) if decades <= 1.5 else (1.0, 3.0) if decades <= 3 else (1.0,)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=8))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: _fmt_flops_tick(x)))
    ax.xaxis.set_minor_locator(NullLocator() if kept and len(kept) <= 6 else LogLocator(base=10, subs="auto"))
    ax.xaxis.set_minor_formatter(NullFormatter())


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
        if all(b is not None for b in bands) and any(b[1] > b[0] for b in bands):
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
    """Each reported crossover that holds (reporting/confidence.crossover_from_ci): a vertical line at the
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
    title += [line for line in headline_lines(summary, protocol)
              if line.startswith(("RTD reaches", "MLM reaches", "RTD does not reach", "MLM does not reach",
                                  "The untrained", "Crossover", "Verdict"))]
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
               title=f"lines: score at each checkpoint; shaded: {band}", title_fontsize=8)
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


def _learning_runs(summary: Mapping[str, Any]) -> list[tuple[str, dict]]:
    block = summary.get("learning") or {}
    return [(o, r) for o in TRAINED for r in block.get(o, {}).get("runs", []) if r["trajectory"]]


def _run_style(obj: str, r: Mapping[str, Any]) -> dict:
    label = f"{LABELS[obj]} seed {r['seed']}" + ("" if r["learned"] is not False else " (did not learn)")
    return dict(color=COLORS[obj], marker=".", markersize=4, linewidth=1,
                linestyle="-" if r["seed"] == 0 else "--", label=label)


def _trajectory(r: Mapping[str, Any], key: str) -> tuple[list[float], list[float]]:
    """(FLOPs, values) of one diagnostic; the step-0 row (0 FLOPs) cannot sit on a log axis."""
    pts = [(t["flops"], t[key]) for t in r["trajectory"] if t.get(key) is not None and t.get("flops")]
    return [p[0] for p in pts], [p[1] for p in pts]


def _figure_legend(fig, axes_row, rows_of: Sequence[Sequence[str]] | None = None) -> None:
    """One legend under the panels with every distinct label drawn in them, laid out in rows: `rows_of`
    lists label prefixes per row (the rest go in a last row); default one row."""
    seen: dict[str, Any] = {}
    for ax in axes_row:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    rows: list[list[str]] = []
    left = list(seen)
    for prefixes in rows_of or ():
        row = [lab for lab in left if lab.startswith(tuple(prefixes))]
        left = [lab for lab in left if lab not in row]
        if row:
            rows.append(row)
    if left:
        rows.append(left)
    ncols = max(len(r) for r in rows)
    blank = Line2D([], [], alpha=0)
    # a legend fills column by column: pad every row to ncols so each row reads left to right
    grid = [[(seen[lab], lab) for lab in r] + [(blank, "")] * (ncols - len(r)) for r in rows]
    entries = [grid[r][c] for c in range(ncols) for r in range(len(grid))]
    fig.legend([h for h, _ in entries], [lab for _, lab in entries], loc="outside lower center", ncols=ncols,
               fontsize=8, frameon=False)


def figure_learning(summary: Mapping[str, Any]):
    """Did pre-training learn? Three panels against FLOPs, one line per (objective, pre-training seed):
    MLM/generator gain over the unigram baseline, the discriminator's AUC, and the kept encoder's mean
    token cosine (collapse), each with its "did not learn" threshold dotted."""
    runs = _learning_runs(summary)
    if not runs:
        return None
    panels = [("mlm_gain_nats", "MLM / generator: gain over the unigram baseline (nats)\n"
                                "a run ending below the dotted line did not learn", learning.MIN_MLM_GAIN_NATS),
              ("disc_auc_replaceable", "discriminator AUC {over} (0.5 = chance)\n"
                                       "a run ending below the dotted line did not learn", learning.MIN_DISC_AUC),
              ("token_cosine", "mean token cosine of the kept encoder (collapse)\n"
                               "a run ending above the dotted line collapsed", learning.MAX_TOKEN_COSINE)]
    fig, axes = new_figure(1, 3, size=(14.0, 4.6))
    convention = summary.get("flop_convention", "")
    for ax, (key, title, threshold) in zip(axes[0], panels):
        over = "over replaceable tokens"
        for obj, r in runs:
            xs, ys = _trajectory(r, key)
            if not xs and key == "disc_auc_replaceable":  # a log written before that figure existed
                (xs, ys), over = _trajectory(r, "disc_auc"), "over all tokens, [CLS]/[SEP] too"
            if xs:
                ax.plot(xs, ys, **_run_style(obj, r))
        title = title.format(over=over)
        ax.axhline(threshold, color="black", linestyle=":", linewidth=1, label="\"did not learn\" threshold")
        log_flops_axis(ax)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(f"pre-training FLOPs ({convention} convention)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(True, alpha=0.3)
    _figure_legend(fig, axes[0])
    fig.suptitle("Learning diagnostics on a fixed held-out set (pretrain/diagnostics.py; thresholds in "
                 "summarise/learning.py)", fontsize=10)
    return fig


def plot_learning(summary: Mapping[str, Any], out_dir: Path, *, formats: Sequence[str] = FORMATS) -> list[Path]:
    fig = figure_learning(summary)
    return [] if fig is None else save(fig, out_dir, "learning", formats)


def _final_mean(runs: list[tuple[str, dict]], obj: str, key: str) -> float | None:
    vals = [r["final"][key] for o, r in runs if o == obj and r.get("final") and r["final"].get(key) is not None]
    return sum(vals) / len(vals) if vals else None


def figure_pretrain_loss(summary: Mapping[str, Any]):
    """Held-out losses in nats against their no-learning baselines: MLM's masked-token loss vs the
    unigram baseline, RTD's generator loss vs the same baseline, RTD's discriminator loss vs its base
    rate. None when no run logged the losses."""
    runs = _learning_runs(summary)
    if not any(t.get("mlm_loss") is not None for _, r in runs for t in r["trajectory"]):
        return None
    fig, axes = new_figure(1, 3, size=(14.0, 4.8))
    axes[0][1].sharey(axes[0][0])  # both are masked-token cross-entropies against the same baseline
    convention = summary.get("flop_convention", "")
    panels = [
        ("mlm", "mlm_loss", "unigram_loss", "MLM: masked-token loss", "unigram baseline (token frequencies only)",
         "mlm_gain_nats", "below the unigram baseline"),
        ("rtd", "mlm_loss", "unigram_loss", "RTD's generator: masked-token loss",
         "unigram baseline (token frequencies only)", "mlm_gain_nats", "below the unigram baseline"),
        ("rtd", "disc_loss", "disc_base_rate_loss", "RTD's discriminator: replaced-or-original loss",
         "base rate: entropy of the replaced share (a constant guess)", "disc_gap_nats", "below the base rate"),
    ]
    for ax, (obj, key, base_key, title, base_label, gap_key, gap_words) in zip(axes[0], panels):
        drawn = False
        for o, r in runs:
            if o != obj:
                continue
            xs, ys = _trajectory(r, key)
            if not xs:
                continue
            drawn = True
            ax.plot(xs, ys, **_run_style(o, r))
            bx, by = _trajectory(r, base_key)
            if bx:
                ax.plot(bx, by, color="black", linestyle=":", linewidth=1.2, label=base_label)
        gap = _final_mean(runs, obj, gap_key)
        if gap is not None:
            title += f"\nat the end: {gap:.3g} nats {gap_words} (mean over seeds)"
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("cross-entropy on held-out tokens (nats)", fontsize=8)
        ax.set_xlabel(f"pre-training FLOPs ({convention} convention)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(True, alpha=0.3)
        log_flops_axis(ax)
        if not drawn:
            ax.text(0.5, 0.5, f"no {LABELS[obj]} diagnostics logged", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9, color="#777777")
    _figure_legend(fig, axes[0], rows_of=[("MLM", "RTD")])
    fig.suptitle("Pre-training losses on the held-out set against what a model that learned nothing scores "
                 "(lower is better; the RTD training loss, generator + 50 x discriminator, is not drawn)",
                 fontsize=10)
    return fig


def plot_pretrain_loss(summary: Mapping[str, Any], out_dir: Path, *, formats: Sequence[str] = FORMATS) -> list[Path]:
    fig = figure_pretrain_loss(summary)
    return [] if fig is None else save(fig, out_dir, "pretrain_loss", formats)


def plot_run(run: RunDir, out_dir: str | Path | None = None, paper_overlay: bool = False, *,
             task_specs=None, convention: str | None = None, summary: Mapping[str, Any] | None = None,
             formats: Sequence[str] = FORMATS) -> list[Path]:
    """All figures of a run; returns the files written."""
    out = Path(out_dir) if out_dir is not None else run.layout.plots
    s = summary if summary is not None else summary_mod.load_or_build(run, task_specs, convention)
    paths = plot_scores(s, out, paper_overlay=paper_overlay, formats=formats)
    paths += plot_tasks(s, out, formats=formats)
    paths += plot_learning(s, out, formats=formats)
    paths += plot_pretrain_loss(s, out, formats=formats)
    for protocol in s["protocols"]:
        if protocol != s["main_protocol"]:
            sub = out / protocol
            paths += plot_scores(s, sub, protocol=protocol, formats=formats)
    return paths
