"""What every figure of electra-bench shares: colours, sizes and formats, a figure without pyplot state, its
atomic save, text that fits, the overlap check tests run on every figure (`text_overlaps`), the log FLOPs
axis. The figures themselves: score_plots.py (score and tasks), learning_plots.py (learning, pre-training
loss), ci/history_plot.py (the history over commits)."""

from __future__ import annotations

import itertools
import math
import textwrap
from pathlib import Path
from typing import Any, Iterable, Sequence

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from ..store.atomic_io import atomic_path

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
    lo, hi = ax.dataLim.intervalx
    if len(kept) == 1 and lo > 0 and math.log10(hi / lo) <= 0.02:
        # one checkpoint (a reading scored at the final checkpoint only): left to autoscale, the axis would
        # zoom into the fraction of a percent between the objectives' FLOPs and draw them far apart
        ax.set_xlim(kept[0] / 2, kept[0] * 2)
