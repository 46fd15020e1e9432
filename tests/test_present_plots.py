"""Plot files are written and valid (PNG magic bytes, SVG parses as XML), and every figure is readable at
the size it is saved: no two texts overlap (tick labels, titles, axis labels, legends), no legend sits on
a data point, nothing is cut off by the figure's edge (plots.text_overlaps); the check itself fails on a
figure made to overlap."""

import os
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from matplotlib.ticker import LogFormatterSciNotation

from electra_bench.store.atomic_io import append_jsonl
from electra_bench.ci import history_plot, history_trend
from electra_bench.present import plots
from electra_bench.store import runs as results
from electra_bench.summarise import summary

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"
STEMS = ("score_vs_flops", "tasks", "learning", "pretrain_loss")


def _diag(i, n, obj):
    """Diagnostics of a run that learns a bit more at every row (held-out losses and their baselines)."""
    t = i / n
    d = {"diag/mlm_gain_nats": 0.5 * t, "diag/token_cosine": 0.2 + 0.1 * t, "diag/mlm_loss": 6.3 - 0.5 * t,
         "diag/unigram_loss": 6.3}
    if obj == "rtd":
        d.update({"diag/disc_auc": 0.6 + 0.2 * t, "diag/disc_loss": 0.40 - 0.05 * t, "diag/disc_base_rate_loss": 0.40,
                  "diag/disc_gap_nats": 0.05 * t})
    return d


def make_run(tmp_path, run_id="r1", *, tasks=("sst2", "rte", "cola"), fractions=(0.5, 1.0), budget=1e14,
             pretrain_seeds=(0,), scores=None, logs=True):
    rows = []
    scores = scores or {"mlm": (65, 70), "rtd": (72, 75)}
    curves = {"init": [(0, 0, 50)]}
    for obj, (lo, hi) in scores.items():
        curves[obj] = [(f, f * budget, lo + (hi - lo) * i / max(1, len(fractions) - 1)) for i, f in enumerate(fractions)]
    for obj, pts in curves.items():
        for frac, flops, base in pts:
            for ps in pretrain_seeds:
                for seed in (0, 1):
                    for k, task in enumerate(tasks):
                        rows.append(dict(objective=obj, fraction=frac, step=int(frac * 100), train_flops=flops,
                                         convention="measured", task=task, seed=seed, pretrain_seed=ps,
                                         metric="mcc" if task == "cola" else "accuracy",
                                         value=base + 5 * (k % 3 - 1) + seed + 0.5 * ps, protocol="finetune"))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny"})
    run.append_scores(rows)
    if logs:
        for obj in ("mlm", "rtd"):
            for ps in pretrain_seeds:
                for i in range(1, 20):
                    diag = _diag(i, 20, obj) if i % 5 == 0 else {}
                    append_jsonl(run.layout.pretrain(obj, ps).log,
                                 {"step": i, "flops": i * budget / 20, "fraction": i / 20, "lr": 1e-3,
                                  "loss": 8.0 / i ** 0.5, "tokens_per_s": 1.0, "elapsed_s": i, **diag})
    return run


def assert_valid(paths):
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == PNG_MAGIC
        else:
            root = ET.parse(p).getroot()
            assert root.tag.endswith("svg")


def figures(s, paper_overlay=False):
    out = {"score_vs_flops": plots.figure_scores(s, paper_overlay=paper_overlay), "tasks": plots.figure_tasks(s),
           "learning": plots.figure_learning(s), "pretrain_loss": plots.figure_pretrain_loss(s)}
    return {k: f for k, f in out.items() if f is not None}


def assert_readable(s, **kw):
    for name, fig in figures(s, **kw).items():
        assert plots.text_overlaps(fig) == [], name


def test_plot_run_writes_png_and_svg(tmp_path):
    run = make_run(tmp_path)
    paths = plots.plot_run(run, paper_overlay=True)
    names = sorted(p.name for p in paths)
    assert names == sorted(f"{stem}.{ext}" for stem in STEMS for ext in ("png", "svg"))
    assert all(p.parent == run.path / "plots" for p in paths)
    assert_valid(paths)
    svg = (run.path / "plots" / "score_vs_flops.svg").read_text()
    assert "untrained" in svg and "paper (GLUE dev, paper FLOP convention)" in svg
    assert "measured convention" in svg


def test_plot_without_pretrain_logs_or_init(tmp_path):
    run = make_run(tmp_path, logs=False)
    paths = plots.plot_run(results.load_run(run.path), tmp_path / "out")
    assert {p.stem for p in paths} == {"score_vs_flops", "tasks"}
    assert_valid(paths)


def test_history_plot_of_run_directories(tmp_path):
    """`history plot RUN RUN`: runs recorded on the fly, in the order given (tests/test_ci_history_plot.py
    tests the figure itself)."""
    runs = []
    for i, stamp in enumerate(("2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00")):
        run = make_run(tmp_path, f"r{i}")
        run.write_provenance({"created_utc": stamp, "git": {"commit": f"commit{i}", "dirty": False}})
        runs.append(run)
    records, baseline, _ = history_trend.gather(None, [str(r.path) for r in runs])
    assert [r["commit"] for r in records] == ["commit0", "commit1"] and baseline is None
    paths = history_plot.plot_history(history_trend.judge(records, None), tmp_path / "hist")
    assert [p.name for p in paths] == ["history.png", "history.svg"]
    assert_valid(paths)


# -- what the figures say ------------------------------------------------------------------------------

def _texts(fig):
    return [t.get_text() for t in fig.findobj(match=lambda a: hasattr(a, "get_text") and hasattr(a, "get_position"))]


def test_score_plot_title_legend_and_axes_say_what_they_show(tmp_path):
    s = summary.build_summary(make_run(tmp_path, pretrain_seeds=(0, 1)))
    fig = plots.figure_scores(s)
    ax = fig.axes[0]
    title = ax.get_title(loc="left")
    for h in s["headline"].values():
        assert h["text"] in title.replace("\n", " ")
    assert "Verdict: " + s["verdict"]["verdict"] in title.replace("\n", " ")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(lab.startswith("untrained encoder: ") and "grey: its band" in lab for lab in labels)
    # the shaded band is each point's 95% CI, and drawn at it
    assert "its 95% CI (seeds-only, 1000 replicates)" in fig.legends[0].get_title().get_text()
    rtd = next(q for q in s["protocols"][s["main_protocol"]]["statistics"]["points"] if q["arm"] == "rtd@1.0000")
    bands = [c for c in ax.collections if type(c).__name__ in ("FillBetweenPolyCollection", "PolyCollection")]
    ys = [v for c in bands for path in c.get_paths() for v in path.vertices[:, 1]]
    assert any(abs(y - rtd["ci"][0]) < 1e-9 for y in ys) and any(abs(y - rtd["ci"][1]) < 1e-9 for y in ys)
    assert "y axis zoomed:" in ax.get_ylabel() and "of the 0-100 scale" in ax.get_ylabel()
    right = [a for a in fig.findobj(match=lambda a: type(a).__name__ == "SecondaryAxis")]
    assert right and right[0].get_ylabel() == "points above the untrained encoder"
    # ticks at the checkpoints, none of them mathtext minor labels
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == ["5e13", "1e14"]


def test_one_checkpoint_per_objective_is_drawn_at_its_flops_without_a_share_of_compute(tmp_path):
    """A reading scored at the final checkpoint only (compare's readings after the first): the two
    objectives' points, a fraction of a percent apart in FLOPs, sit together on an axis that spans a factor
    of 4, and the title gives no share of compute (it would be the straight line from the untrained encoder)."""
    s = summary.build_summary(make_run(tmp_path, fractions=(1.0,)))
    assert "RTD reaches" in s["headline"]["rtd_reaches_mlm"]["text"]  # the summary interpolates from init...
    fig = plots.figure_scores(s)
    title = fig.axes[0].get_title(loc="left").replace("\n", " ")
    assert "reaches" not in title and "no share of compute" in title  # ...the figure does not print it
    assert "Verdict" in title
    lo, hi = fig.axes[0].get_xlim()
    assert lo == pytest.approx(5e13) and hi == pytest.approx(2e14)
    # each point's interval as a bar, since a single point has no area to shade
    assert fig.legends[0].get_title().get_text().startswith("points: score at the final checkpoint; bars: its 95% CI")
    rtd = next(q for q in s["protocols"][s["main_protocol"]]["statistics"]["points"] if q["arm"] == "rtd@1.0000")
    bars = [c for c in fig.axes[0].collections if type(c).__name__ == "LineCollection"]
    ends = sorted(v for c in bars for seg in c.get_segments() for v in seg[:, 1])
    assert any(abs(y - rtd["ci"][0]) < 1e-9 for y in ends) and any(abs(y - rtd["ci"][1]) < 1e-9 for y in ends)
    # a mean over seeds can lie outside a percentile CI (seeds missing from the statistics): still its bar
    value = next(p for p in s["protocols"][s["main_protocol"]]["points"] if p["objective"] == "rtd")["score"]["value"]
    rtd["ci"] = [value + 1.0, value + 3.0]
    bars = [c for c in plots.figure_scores(s).axes[0].collections if type(c).__name__ == "LineCollection"]
    ends = sorted(v for c in bars for seg in c.get_segments() for v in seg[:, 1])
    assert any(abs(y - (value + 1.0)) < 1e-9 for y in ends) and any(abs(y - (value + 3.0)) < 1e-9 for y in ends)
    # the objectives' FLOPs as compare measures them: 1.19999698e14 and 1.2e14
    fig2, axes = plots.new_figure()
    ax = axes[0][0]
    ax.plot([1.19999698e14, 1.2e14], [70.9, 59.5], "o")
    plots.log_flops_axis(ax, [1.19999698e14, 1.2e14])
    lo, hi = ax.get_xlim()
    assert hi / lo == pytest.approx(4.0, rel=1e-3)
    assert plots.text_overlaps(fig) == []


def test_tasks_legend_takes_the_empty_slot_else_sits_under_the_grid(tmp_path):
    five = summary.build_summary(make_run(tmp_path, "five", tasks=("sst2", "rte", "cola", "mrpc", "qnli")))
    fig = plots.figure_tasks(five)
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 5 and all(ax.get_legend() is None for ax in panels)
    spare = [ax for ax in fig.axes if not ax.axison]
    assert len(spare) == 1 and spare[0].get_legend() is not None and not fig.legends
    three = summary.build_summary(make_run(tmp_path, "three"))
    fig = plots.figure_tasks(three)
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1


def test_pretrain_loss_panels_show_the_baselines(tmp_path):
    s = summary.build_summary(make_run(tmp_path))
    fig = plots.figure_pretrain_loss(s)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("MLM: masked-token loss") and "below the unigram baseline" in titles[0]
    assert titles[1].startswith("RTD's generator") and titles[2].startswith("RTD's discriminator")
    assert "nats below the base rate" in titles[2]
    assert all(ax.get_ylabel() == "cross-entropy on held-out tokens (nats)" for ax in fig.axes)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "unigram baseline (token frequencies only)" in legend
    assert any(t.startswith("base rate") for t in legend)
    assert plots.figure_pretrain_loss(summary.build_summary(make_run(tmp_path, "nologs", logs=False))) is None


# -- readable at the saved size ------------------------------------------------------------------------

def test_the_overlap_check_finds_overlaps():
    fig, axes = plots.new_figure(size=(4, 3))
    ax = axes[0][0]
    ax.plot([1, 2, 3], [1, 2, 3], marker="o", label="data")
    ax.set_xticks([1, 1.02, 3], ["a long tick label", "another long label", "3"])
    ax.legend(loc="center")  # on the point (2, 2)
    fig.suptitle("a title")
    fig.text(0.5, 0.98, "a text over the title", ha="center", va="top")
    fig.text(0.98, 0.5, "a text running past the right edge")
    found = "\n".join(plots.text_overlaps(fig))
    assert "x tick label 'a long tick label'" in found and "overlaps x tick label 'another long label'" in found
    assert "covers a data point of 'data'" in found
    assert "'a text over the title'" in found and "'a title'" in found
    assert "'a text running past the right edge' is cut off by the figure's edge" in found
    # and the same figure cleaned up passes
    fig, axes = plots.new_figure(size=(4, 3))
    axes[0][0].plot([1, 2, 3], [1, 2, 3], marker="o", label="data")
    axes[0][0].legend(loc="upper left")
    assert plots.text_overlaps(fig) == []


def test_matplotlibs_default_log_axis_would_fail_the_check():
    """The reported tasks.png problem: a curve spanning less than a decade gets mathtext minor labels."""
    fig, axes = plots.new_figure(size=(4.4, 3.5))
    ax = axes[0][0]
    ax.plot([5e11, 1e12, 2e12], [1, 2, 3], marker="o")
    ax.set_xscale("log")
    ax.set_xlim(4.5e11, 2.2e12)
    ax.xaxis.set_minor_formatter(LogFormatterSciNotation(labelOnlyBase=False, minor_thresholds=(10, 10)))
    assert any("tick label" in p for p in plots.text_overlaps(fig))
    plots.log_flops_axis(ax, [5e11, 1e12, 2e12])
    assert plots.text_overlaps(fig) == []


@pytest.mark.parametrize("variant", [
    dict(),
    dict(tasks=("sst2", "rte", "cola", "mrpc", "qnli")),
    dict(tasks=("sst2",), fractions=(1.0,)),
    dict(fractions=(0.125, 0.25, 0.5, 1.0), budget=6e13, pretrain_seeds=(0, 1)),
    dict(fractions=(0.9, 0.95, 1.0), budget=2e12),  # checkpoints close together
    dict(fractions=(0.001, 0.01, 0.1, 1.0), budget=1e18),  # three decades
    dict(scores={"mlm": (50.2, 50.1), "rtd": (49.9, 50.3)}),  # everything within noise of init
    dict(scores={"mlm": (60, 70)}),  # RTD missing
])
def test_every_figure_is_readable_on_synthetic_runs(tmp_path, variant):
    s = summary.build_summary(make_run(tmp_path, **variant))
    assert_readable(s)
    assert plots.text_overlaps(plots.figure_scores(s, paper_overlay=True)) == []


@pytest.mark.parametrize("seed", range(6))
def test_every_figure_is_readable_on_random_flop_ranges(tmp_path, seed):
    rng = random.Random(seed)
    n = rng.randint(1, 5)
    decades = rng.uniform(0.05, 4.0)
    budget = 10 ** rng.uniform(11, 19)
    fractions = sorted({round(10 ** (-decades * i / max(1, n - 1)), 6) for i in range(n)})
    s = summary.build_summary(make_run(tmp_path, fractions=tuple(fractions), budget=budget,
                                       tasks=tuple(["sst2", "rte", "cola", "mrpc", "qnli", "qqp"][:rng.randint(1, 6)])))
    assert_readable(s)


def stored_runs():
    root = Path(__file__).resolve().parents[1]
    paths = [FIXTURE_RUN, root / "results" / "long-cpu", root / "results" / "longer-cpu"]
    paths += [Path(p) for p in os.environ.get("ELECTRA_BENCH_STORED_RUNS", "").split(os.pathsep) if p]
    return [p for p in paths if (p / "scores.jsonl").is_file()]


@pytest.mark.parametrize("path", stored_runs(), ids=lambda p: p.name)
def test_every_figure_is_readable_on_stored_real_runs(path):
    s = summary.build_summary(results.load_run(path))
    figs = figures(s)
    assert set(figs) >= {"score_vs_flops", "tasks"}
    for name, fig in figs.items():
        assert plots.text_overlaps(fig) == [], name
