"""The regression plot over commits: commits in store order, the baseline's tolerance band, regressions
marked, other configs on a line of their own, and readable at its saved size (plots.text_overlaps, the
check every figure of tests/test_present_plots.py passes)."""

import xml.etree.ElementTree as ET

import pytest

from electra_bench.ci import history_plot, history_trend, regression

from electra_bench.present import plots
from history_records import BASELINE, fixture_record, history, sha


@pytest.fixture(scope="module")
def base():
    return fixture_record()


@pytest.fixture(scope="module")
def baseline():
    return regression.load_baseline(BASELINE)


def figure(records, baseline, **kw):
    return history_plot.figure_history(history_trend.judge(records, baseline), baseline, str(BASELINE), **kw)


def panel(fig, title_start):
    return next(ax for ax in fig.axes if ax.get_title().startswith(title_start))


def bottom_labels(fig):
    ax = panel(fig, "collapse")
    return [t for t in ax.get_xticklabels() if t.get_text()]


def test_commits_in_store_order_with_their_dates_above(base, baseline):
    fig = figure(history(base, 6), baseline)
    labels = bottom_labels(fig)
    assert [t.get_text() for t in labels] == [sha(i)[:7] for i in range(6)]
    assert [t.get_position()[0] for t in labels] == list(range(6))
    top = [a for a in fig.findobj(match=lambda a: type(a).__name__ == "SecondaryAxis")]
    assert [t.get_text() for t in top[0].get_xticklabels() if t.get_text()] == [f"12-0{i + 1}" for i in range(6)]
    assert "over 6 of 6 stored records" in fig._suptitle.get_text()


def test_the_baseline_and_its_tolerance_are_a_band(base, baseline):
    fig = figure(history(base, 3), baseline)
    for title, metric, flip in (("MLM: final score", "mlm/score", False), ("RTD discriminator AUC", "rtd/diag/disc_auc", False),
                                ("collapse", "mlm/diag/isotropy", True)):
        b = baseline["metrics"][metric]
        tol = regression.tolerance(baseline["tol"], metric)
        center = 1 - b if flip else b
        spans = [p.get_bbox() for p in panel(fig, title).patches]
        assert any(abs(s.y0 - (center - tol)) < 1e-9 and abs(s.y1 - (center + tol)) < 1e-9 for s in spans), title


def test_a_regression_is_marked_and_its_commit_red(base, baseline):
    fig = figure(history(base, 5, broken={3}), baseline)
    for title, metric in (("MLM: final score", "mlm/score"), ("gain over the unigram", "mlm/diag/mlm_gain_nats")):
        marks = [ln for ln in panel(fig, title).get_lines() if ln.get_marker() == "X"]
        assert len(marks) == 1 and list(marks[0].get_xdata()) == [3], title
    assert not [ln for ln in panel(fig, "RTD: final score").get_lines() if ln.get_marker() == "X"]
    colors = {t.get_text(): t.get_color() for t in bottom_labels(fig)}
    assert colors[sha(3)[:7]] == history_plot.FAIL_COLOR and colors[sha(2)[:7]] != history_plot.FAIL_COLOR


def test_another_config_is_never_joined_to_the_baselines_line(base, baseline):
    fig = figure(history(base, 6, other={2, 4}), baseline)
    for ax in fig.axes[:6]:
        for line in ax.get_lines():
            xs = set(line.get_xdata()) if len(line.get_xdata()) > 1 else set()
            assert not (xs & {2, 4} and xs - {2, 4}), (ax.get_title(), line.get_label(), xs)
    hollow = [ln for ln in panel(fig, "MLM: final score").get_lines()
              if list(ln.get_xdata()) == [2, 4] and ln.get_marker() == "o"]
    assert hollow and hollow[0].get_markerfacecolor() == "white"
    assert any("another config" in t.get_text() for t in fig.legends[0].get_texts())


def test_many_commits_keep_the_newest_labelled_and_the_labels_apart(base, baseline):
    fig = figure(history(base, 80, broken={70}), baseline, last=80)
    labels = [t.get_text() for t in bottom_labels(fig)]
    assert 5 < len(labels) < 30 and labels[-1] == sha(79)[:7]
    assert "over 80 of 80" in fig._suptitle.get_text()
    fig = figure(history(base, 80), baseline)  # the default shows the newest 30
    assert bottom_labels(fig)[-1].get_text() == sha(79)[:7] and "over 30 of 80" in fig._suptitle.get_text()


@pytest.mark.parametrize("n, kw", [
    (1, {}), (2, dict(broken={1})), (6, dict(broken={3}, other={1})), (30, dict(broken={7, 29}, other={10, 11})),
    (60, dict(broken={59}, timed=False)), (5, dict(other={0, 1, 2, 3, 4})),
])
def test_readable_at_the_saved_size(base, baseline, n, kw):
    assert plots.text_overlaps(figure(history(base, n, **kw), baseline, last=60)) == []
    assert plots.text_overlaps(figure(history(base, n, **kw), None, last=60)) == []


def test_written_as_png_and_svg(tmp_path, base, baseline):
    judged = history_trend.judge(history(base, 4, broken={2}), baseline)
    paths = history_plot.plot_history(judged, tmp_path, baseline, str(BASELINE))
    assert [p.name for p in paths] == ["history.png", "history.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ET.parse(paths[1]).getroot().tag.endswith("svg")
