"""The pre-training figures of a run (plots.py says what each shows): learning, the learning diagnostics
against FLOPs with their thresholds; pretrain_loss, the held-out losses in nats against their baselines."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from matplotlib.lines import Line2D

from ..summarise import learning
from ..summarise.points import LABELS, TRAINED
from .figures import COLORS, FORMATS, log_flops_axis, new_figure, save


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
