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

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..store.runs import RunDir
from ..summarise import summary as summary_mod
from .figures import (AGGREGATE_NAMES, BAND_ALPHA, COLORS, DPI, FORMATS, INIT_BAND_ALPHA, fit_text, log_flops_axis,
                      new_figure, save, text_overlaps, wrap)
from .learning_plots import figure_learning, figure_pretrain_loss, plot_learning, plot_pretrain_loss
from .score_plots import figure_scores, figure_tasks, plot_scores, plot_tasks

# the figures' shared parts (figures.py) and each figure (score_plots.py, learning_plots.py), by the names
# the command line, ci/history_plot.py and the tests use
__all__ = ["AGGREGATE_NAMES", "BAND_ALPHA", "COLORS", "DPI", "FORMATS", "INIT_BAND_ALPHA", "fit_text", "log_flops_axis",
           "new_figure", "save", "text_overlaps", "wrap", "figure_learning", "figure_pretrain_loss", "plot_learning",
           "plot_pretrain_loss", "figure_scores", "figure_tasks", "plot_scores", "plot_tasks", "plot_run"]


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
