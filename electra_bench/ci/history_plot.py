"""The regression plot over commits (`electra-bench history plot`): `history.png|svg`.

x: the stored records in the order CI appended them (oldest left), labelled with the short commit id
below and the commit date above; a commit id in red failed the check on some metric (history_trend.judge).
Six panels, each with the baseline's value and tolerance as a shaded band:
- MLM's and RTD's final score with the band over pre-training seeds (capped bar) and over evaluation
  seeds (wide pale bar), and the untrained encoder's score as the reference line;
- the learning diagnostics: gain over the unigram baseline (MLM, RTD's generator), the discriminator's
  AUC, collapse (mean token cosine = 1 - the baseline's isotropy), each with its "did not learn" line;
- wall time per phase.
A point outside the tolerance is marked (X: regression, triangle: improvement). Records whose config
differs from the baseline's are drawn hollow on a line of their own, never joined to the baseline's
series. `figure_history` returns the figure (tests run plots.text_overlaps on it).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..summarise import learning

from ..present import plots

from . import regression
from .history_trend import FAIL, Judged

DEFAULT_LAST = 30
SIZE = (11.0, 8.6)  # inches; at plots.DPI 1320 px wide, about what a CI page shows at full width
FONT = 8
FAIL_COLOR = "#c00000"
OTHER_COLOR = "#8c8c8c"
WALL = {"wall_s": ("total", "#222222", "o"), "pretrain_s": ("pre-training", "#8c564b", "s"),
        "evaluate_s": ("scoring", "#9467bd", "D")}

# (title, [(metric, objective, legend label)], "did not learn" threshold, drawn as 1 - value)
PANELS = [
    ("MLM: final score (0-100)", [("mlm/score", "mlm", "MLM")], None, False),
    ("RTD: final score (0-100)", [("rtd/score", "rtd", "RTD")], None, False),
    ("gain over the unigram baseline (nats): MLM, RTD's generator",
     [("mlm/diag/mlm_gain_nats", "mlm", "MLM"), ("rtd/diag/mlm_gain_nats", "rtd", "RTD")],
     learning.MIN_MLM_GAIN_NATS, False),
    ("RTD discriminator AUC (0.5 = chance)", [("rtd/diag/disc_auc", "rtd", "RTD")], learning.MIN_DISC_AUC, False),
    ("collapse: mean token cosine (above the dotted line: collapsed)",
     [("mlm/diag/isotropy", "mlm", "MLM"), ("rtd/diag/isotropy", "rtd", "RTD")], learning.MAX_TOKEN_COSINE, True),
]


def _value(j: Judged, metric: str, flip: bool) -> float | None:
    v = j.record["metrics"].get(metric)
    return None if v is None else (1.0 - v if flip else float(v))


def _series(shown: Sequence[tuple[int, Judged]]) -> list[tuple[bool, list[tuple[int, Judged]]]]:
    """(is the baseline's series, its points): the baseline's series first, then one per other config."""
    main = [(x, j) for x, j in shown if j.in_series]
    others: dict[str, list[tuple[int, Judged]]] = {}
    for x, j in shown:
        if not j.in_series:
            others.setdefault(j.record["config_digest"], []).append((x, j))
    return ([(True, main)] if main else []) + [(False, pts) for pts in others.values()]


def _draw_metric(ax, shown, metric: str, obj: str, flip: bool, baseline) -> None:
    color = plots.COLORS[obj]
    for main, pts in _series(shown):
        xy = [(x, _value(j, metric, flip)) for x, j in pts if _value(j, metric, flip) is not None]
        if not xy:
            continue
        ax.plot([p[0] for p in xy], [p[1] for p in xy], color=color if main else OTHER_COLOR, marker="o",
                markersize=5, linewidth=1.3 if main else 1.0, linestyle="-" if main else "--",
                markerfacecolor=color if main else "white", zorder=3)
    if baseline is not None and metric in baseline["metrics"]:
        b = float(baseline["metrics"][metric])
        tol = regression.tolerance(baseline.get("tol", regression.DEFAULT_TOL), metric)
        center = 1.0 - b if flip else b
        ax.axhspan(center - tol, center + tol, color=color, alpha=0.12, linewidth=0, zorder=1)
        ax.axhline(center, color=color, linewidth=0.8, alpha=0.7, zorder=1)
    for x, j in shown:
        c = j.checks.get(metric)
        v = _value(j, metric, flip)
        if c is None or v is None:
            continue
        if c.status == "regressed":
            ax.plot([x], [v], marker="X", markersize=11, color=FAIL_COLOR, markeredgecolor="white", linestyle="",
                    zorder=5)
        elif c.status == "improved":
            ax.plot([x], [v], marker="^", markersize=10, markerfacecolor="none", markeredgecolor="#2ca02c",
                    markeredgewidth=1.5, linestyle="", zorder=5)


def _draw_bands(ax, shown, obj: str) -> None:
    """Each point's spread: over evaluation seeds (wide, pale), over pre-training seeds (capped)."""
    color = plots.COLORS[obj]
    for x, j in shown:
        band = (j.record.get("bands") or {}).get(obj) or {}
        c = color if j.in_series else OTHER_COLOR
        if band.get("eval_seeds"):
            lo, hi = band["eval_seeds"]
            ax.plot([x, x], [lo, hi], color=c, alpha=0.25, linewidth=7, solid_capstyle="butt", zorder=2)
        if band.get("pretrain_seeds"):
            lo, hi = band["pretrain_seeds"]
            ax.errorbar([x], [(lo + hi) / 2], yerr=[[(hi - lo) / 2], [(hi - lo) / 2]], color=c, capsize=3,
                        linewidth=1, linestyle="", zorder=2)


def _draw_untrained(ax, shown) -> None:
    for main, pts in _series(shown):
        xy = [(x, j.record["metrics"]["init/score"]) for x, j in pts if "init/score" in j.record["metrics"]]
        if xy:
            ax.plot([p[0] for p in xy], [p[1] for p in xy], color=plots.COLORS["init"] if main else OTHER_COLOR,
                    linestyle=(0, (4, 2)), linewidth=1.1, zorder=2)


def _draw_wall(ax, shown) -> None:
    if not any((j.record.get("timings") or {}) for _, j in shown):
        ax.text(0.5, 0.5, "no wall time recorded for these runs", transform=ax.transAxes, ha="center",
                va="center", fontsize=FONT, color="#666666")
    for main, pts in _series(shown):
        for key, (_, color, marker) in WALL.items():
            xy = [(x, j.record["timings"][key] / 60) for x, j in pts if key in (j.record.get("timings") or {})]
            if xy:
                ax.plot([p[0] for p in xy], [p[1] for p in xy], color=color if main else OTHER_COLOR, marker=marker,
                        markersize=4, linewidth=1.0, linestyle="-" if main else "--",
                        markerfacecolor=color if main else "white")
    ax.set_ylim(bottom=0)


def _tick_every(n: int, panel_width_in: float, chars: int = 8) -> int:
    """Label every k-th commit so that labels of `chars` characters never touch."""
    label_in = chars * 0.6 * FONT / 72 * 1.25
    return max(1, math.ceil(n * label_in / panel_width_in))


def _label_ticks(axes_grid, shown: Sequence[tuple[int, Judged]], panel_width_in: float) -> None:
    n = len(shown)
    k = _tick_every(n, panel_width_in)
    at = [x for x, _ in shown if (n - 1 - x) % k == 0]  # the newest commit always has its label
    by_x = dict(shown)
    for ax in axes_grid[-1]:
        ax.set_xticks(at, [by_x[x].short for x in at])
        for label, x in zip(ax.get_xticklabels(), at):
            if by_x[x].status == FAIL:
                label.set_color(FAIL_COLOR)
                label.set_fontweight("bold")
        ax.tick_params(axis="x", labelsize=FONT - 0.5)
        ax.set_xlabel("commit, in the order CI recorded it (red: the check fails)", fontsize=FONT)
    for ax in axes_grid[0]:
        top = ax.secondary_xaxis("top")
        top.set_xticks(at, [(by_x[x].record.get("date") or "")[5:10] for x in at])
        top.tick_params(labelsize=FONT - 0.5)


def _legend(fig, shown, baseline) -> None:
    entries = [(Line2D([], [], color=plots.COLORS["mlm"], marker="o", markersize=5), "MLM"),
               (Line2D([], [], color=plots.COLORS["rtd"], marker="o", markersize=5), "RTD (gain panel: its generator)"),
               (Line2D([], [], color=plots.COLORS["init"], linestyle=(0, (4, 2))), "untrained encoder (reference)")]
    if baseline is not None:
        entries.append((Patch(color="#999999", alpha=0.3), "baseline ± its tolerance"))
    entries += [(Line2D([], [], color="#666666", marker="_", markersize=8, linewidth=1),
                 "band over pre-training seeds (capped)"),
                (Line2D([], [], color="#666666", alpha=0.3, linewidth=7), "band over evaluation seeds (pale)"),
                (Line2D([], [], color="black", linestyle=":"), "\"did not learn\" threshold")]
    if baseline is not None:
        entries += [(Line2D([], [], marker="X", markersize=9, color=FAIL_COLOR, linestyle=""),
                     "outside tolerance: regression"),
                    (Line2D([], [], marker="^", markersize=8, markerfacecolor="none", markeredgecolor="#2ca02c",
                            linestyle=""), "outside tolerance: improvement")]
    if any(not j.in_series for _, j in shown):
        entries.append((Line2D([], [], color=OTHER_COLOR, marker="o", markerfacecolor="white", linestyle="--"),
                        "another config: own line, not compared"))
    entries += [(Line2D([], [], color=c, marker=m, markersize=4), f"wall: {name}") for name, c, m in WALL.values()]
    fig.legend([h for h, _ in entries], [lab for _, lab in entries], loc="outside lower center", ncols=4,
               fontsize=FONT, frameon=False)


def _title(judged: Sequence[Judged], shown, baseline, baseline_path: str | None) -> str:
    newest = judged[-1]
    cfg = (baseline or {}).get("config") or newest.record["config"]
    what = ", ".join(str(x) for x in (cfg.get("preset"), f"budget {cfg.get('budget')}" if cfg.get("budget") else None,
                                      cfg.get("protocol"), cfg.get("suite"),
                                      f"{cfg.get('pretrain_seeds')} pre-training x {len(cfg.get('seeds') or [])} "
                                      f"evaluation seeds" if cfg.get("pretrain_seeds") else None) if x)
    first = (f"Regression history over {len(shown)} of {len(judged)} stored records ({what})")
    if baseline is not None:
        fails = sum(1 for _, j in shown if j.status == FAIL)
        second = (f"baseline {baseline_path} (run {baseline.get('source_run')}); newest {newest.short}: "
                  f"{newest.status}; {fails} shown record(s) fail the check")
    else:
        second = "no baseline given: nothing judged"
    return f"{first}\n{second}"


def figure_history(judged: Sequence[Judged], baseline: Mapping[str, Any] | None = None,
                   baseline_path: str | None = None, *, last: int = DEFAULT_LAST) -> Figure:
    """The figure of the module docstring, for the newest `last` records."""
    if not judged:
        raise ValueError("no records to plot")
    start = max(0, len(judged) - last) if last > 0 else 0
    shown = [(x, j) for x, j in enumerate(judged[start:])]
    fig, axes = plots.new_figure(3, 2, size=SIZE, sharex=True)
    flat = [ax for row in axes for ax in row]
    for ax, (title, metrics, threshold, flip) in zip(flat, PANELS):
        for metric, obj, _ in metrics:
            if metric.endswith("/score"):
                _draw_bands(ax, shown, obj)
                _draw_untrained(ax, shown)
            _draw_metric(ax, shown, metric, obj, flip, baseline)
        if threshold is not None:
            ax.axhline(threshold, color="black", linestyle=":", linewidth=1)
        ax.set_title(title, fontsize=FONT + 0.5)
    _draw_wall(flat[5], shown)
    flat[5].set_title("wall time of the run (minutes; load average in `history show`)", fontsize=FONT + 0.5)
    for ax in flat:
        ax.grid(True, alpha=0.3)
        ax.tick_params(axis="y", labelsize=FONT)
        ax.set_xlim(-0.6, len(shown) - 0.4)
    _label_ticks(axes, shown, SIZE[0] / 2 - 0.9)
    _legend(fig, shown, baseline)
    # wrapped to the figure: the baseline's path is as long as the checkout's (a deep CI workspace cut it off)
    fig.suptitle(plots.fit_text(_title(judged, shown, baseline, baseline_path), fig.get_figwidth(), FONT + 1.5),
                 fontsize=FONT + 1.5)
    return fig


def plot_history(judged: Sequence[Judged], out_dir: str | Path, baseline: Mapping[str, Any] | None = None,
                 baseline_path: str | None = None, *, last: int = DEFAULT_LAST,
                 formats: Sequence[str] = plots.FORMATS) -> list[Path]:
    return plots.save(figure_history(judged, baseline, baseline_path, last=last), Path(out_dir), "history", formats)
