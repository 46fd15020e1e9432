"""A generator-size sweep's table and figure (`electra-bench sweep` writes them; `electra-bench report`
renders a finished sweep again): sweep.json's rows as a terminal/Markdown/CSV/LaTeX table (`render_sweep`)
and plots/generator_size.png|svg (`figure_sweep`: score vs generator size, and score vs pre-training FLOPs).

Module level imports stay light (no torch, no matplotlib until a figure is drawn)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import BenchError, at
from ..store.layout import RunLayout
from ..store.atomic_io import read_json
from .text_formats import FORMATS, latex_table, markdown_table


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
        return f"**{title}**\n\n" + markdown_table(head, body)
    if fmt == "latex":
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
    result = read_json(path, "sweep.json")
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

    from . import plots

    rows = result["rows"]
    gens = sorted((r for r in rows if r["objective"] == "rtd" and r["score"] is not None),
                  key=lambda r: r["generator_fraction"])
    bert = next((r for r in rows if r["objective"] == "mlm" and r["score"] is not None), None)
    init = next((r for r in rows if r["objective"] == "init" and r["score"] is not None), None)
    fig, axes = plots.new_figure(1, 2, size=(11.0, 5.6))
    left, right = axes[0]
    cmap = colormaps["viridis"]
    color = {r["point"]: cmap(0.85 * i / max(1, len(gens) - 1)) for i, r in enumerate(gens)}
    _size_panel(left, result, gens, bert, init, color)
    _flops_panel(right, result["flop_convention"], gens, bert, init, color)
    lo = min(a.get_ylim()[0] for a in (left, right))
    hi = max(a.get_ylim()[1] for a in (left, right))
    for a in (left, right):
        a.set_ylim(lo, hi)
    left.set_ylabel(f"{result['aggregate']}\n(final checkpoint; band: {band_phrase(gens)})", fontsize=8.5)
    _legend(fig, gens, bert, init, color)
    fig.suptitle(plots.wrap(
        f"Generator size, {result['preset']} preset (discriminator hidden {result['discriminator_hidden']}), "
        f"{result['protocol']} protocol. Every run gets the same budget, {result['budget_flops']:.2g} FLOPs "
        f"({result['flop_convention']} convention): a bigger generator costs more FLOPs per step, so it takes "
        f"fewer steps.", 150),
        fontsize=9.5, x=0.01, ha="left")
    return fig


def _size_panel(ax, result, gens, bert, init, color) -> None:
    """Score at the budget against generator size; BERT and the untrained encoder as horizontal lines."""
    from . import plots

    xs = [r["generator_fraction"] for r in gens]
    if gens:
        ax.plot(xs, [r["score"] for r in gens], color=plots.COLORS["rtd"], marker="o", zorder=3)
        if all(r["min"] is not None for r in gens) and any(r["max"] > r["min"] for r in gens):
            ax.fill_between(xs, [r["min"] for r in gens], [r["max"] for r in gens], color=plots.COLORS["rtd"],
                            alpha=plots.BAND_ALPHA, linewidth=0)
        for r in gens:
            ax.plot([r["generator_fraction"]], [r["score"]], marker="o", color=color[r["point"]], zorder=4)
    if bert is not None:
        ax.axhline(bert["score"], color=plots.COLORS["mlm"], linestyle="--", linewidth=1.3, zorder=2)
    if init is not None:
        ax.axhline(init["score"], color=plots.COLORS["init"], linestyle=":", linewidth=1.2, zorder=2)
    kept: list[float] = []
    for x in sorted(xs):  # labels at the sizes, where they do not crowd each other
        if not kept or x - kept[-1] >= 0.09 * max(1.0, max(xs)):
            kept.append(x)
    hidden = {r["generator_fraction"]: r["generator_hidden"] for r in gens}
    ax.set_xticks(kept, [f"{x:.3g}\n({hidden[x]})" for x in kept], fontsize=8)
    ax.set_xlim(0, max([1.0] + xs) * 1.05)
    ax.set_xlabel(f"generator hidden size / discriminator's ({result['discriminator_hidden']});\n"
                  f"in brackets: the generator's hidden size", fontsize=9)
    ax.set_title("score at the budget vs generator size", fontsize=9.5, loc="left")
    ax.grid(True, alpha=0.3)


def _flops_panel(ax, conv: str, gens, bert, init, color) -> None:
    """The compute-adjusted view: every run's score against pre-training FLOPs at its checkpoints."""
    from . import plots

    flops_at: list[float] = []
    for r in gens + ([bert] if bert is not None else []):
        pts = [c for c in r["curve"] if c["score"] is not None and c["train_flops"] > 0]
        if not pts:
            continue
        x = [c["train_flops"] for c in pts]
        flops_at += x
        is_bert = r["objective"] == "mlm"
        ax.plot(x, [c["score"] for c in pts], marker="s" if is_bert else "o",
                linestyle="--" if is_bert else "-", color=plots.COLORS["mlm"] if is_bert else color[r["point"]],
                zorder=3)
    if init is not None:
        ax.axhline(init["score"], color=plots.COLORS["init"], linestyle=":", linewidth=1.2, zorder=2)
    if flops_at:
        plots.log_flops_axis(ax, flops_at)
    ax.set_xlabel(f"pre-training FLOPs ({conv} convention, log scale)", fontsize=9)
    ax.set_title("compute-adjusted: score vs pre-training FLOPs (checkpoints)", fontsize=9.5, loc="left")
    ax.grid(True, which="major", alpha=0.3)


def _legend(fig, gens, bert, init, color) -> None:
    from matplotlib.lines import Line2D

    from . import plots

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


def band_phrase(rows) -> str:
    n_pre = max((r["n_pretrain_seeds"] for r in rows), default=1)
    n_eval = max((r["n_eval_seeds"] for r in rows), default=1)
    if n_pre > 1:
        return f"range over {n_pre} pre-training seeds"
    return f"range over {n_eval} evaluation seeds" if n_eval > 1 else "none, one seed"


def plot_sweep(result: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    from . import plots

    return plots.save(figure_sweep(result), Path(out_dir), "generator_size")


def render_runs(paths: Sequence[str], fmt: str = "table", width: int | None = None) -> str:
    """`electra-bench report` on finished sweeps: each one's table, in the order given."""
    return "\n".join(render_sweep(load_sweep(p), fmt, width).rstrip("\n") for p in paths) + "\n"
