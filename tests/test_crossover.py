"""The crossover (reporting/crossover.py, docs/results.md "Crossover") on constructed score tables: a
crossing, a touch of the band edge, no crossing, a crossing back, a crossing back and again, objectives
whose checkpoints sit at different FLOPs, the seed range, and the committed --quick run's report.

Every table has one task, two evaluation seeds with equal values and two pre-training seeds, so a point's
score is the mean of its two pre-training seeds' values and its band their difference; the values are
small integers, so every difference and margin below is exact."""

import json
import math
import shutil
from pathlib import Path

import pytest

from electra_bench.reporting import crossover, plots, report, results, summary

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"
F1, F2, F4 = 1e13, 2e13, 4e13  # checkpoints at 1/4, 1/2 and all of a 4e13 budget
MLM = [(0.25, F1, (60, 62)), (0.5, F2, (62, 64)), (1.0, F4, (64, 66))]  # 61, 63, 65; band 2


def make_run(tmp_path, curves, run_id="r", eval_seeds=(0, 1)):
    """curves: objective -> [(fraction, flops, (pre-training seed 0 value, seed 1 value))]; the
    untrained encoder scores 50 with both seeds unless given."""
    curves = {"init": [(0, 0, (50, 50))], **curves}
    rows = []
    for obj, pts in curves.items():
        for frac, flops, per_seed in pts:
            for ps, value in enumerate(per_seed):
                for seed in eval_seeds:
                    rows.append(dict(objective=obj, fraction=frac, step=int(frac * 1000), train_flops=flops,
                                     convention="measured", task="sentiment", seed=seed, metric="accuracy",
                                     value=float(value), protocol="probe", pretrain_seed=ps))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny"})
    run.append_scores(rows)
    return run


def build(tmp_path, curves):
    s = summary.build_summary(make_run(tmp_path, curves))
    assert summary.invariant_violations(s) == []
    assert summary.invariant_violations(json.loads(json.dumps(s))) == []
    return s


def between(fa, fb, t):
    """t of the way from fa to fb in log FLOPs."""
    return math.exp(math.log(fa) + t * (math.log(fb) - math.log(fa)))


def test_crossing_is_interpolated_in_log_flops_with_a_range_over_seeds(tmp_path):
    # RTD 59, 63, 69 against MLM 61, 63, 65: RTD - MLM = -2, 0, +4, band 2 -> margin -4, -2, +2
    rtd = [(0.25, F1, (58, 60)), (0.5, F2, (62, 64)), (1.0, F4, (68, 70))]
    mlm = MLM[:2] + [(1.0, F4, (65, 65))]  # MLM ends at 65 with band 0: the threshold stays RTD's 2
    s = build(tmp_path, {"mlm": mlm, "rtd": rtd})
    c = s["crossover"]["rtd_over_mlm"]
    assert c["status"] == "crossed" and c["reached"] and c["stays_ahead"] and c["bound"] == "interpolated"
    assert c["flops"] == pytest.approx(between(F2, F4, 0.5))  # margin -2 -> +2: halfway
    assert c["first_flops"] == c["flops"] and c["ahead_intervals"] == [[c["flops"], None]]
    assert [p["margin"] for p in c["difference_curve"]] == [0.0, -4.0, -2.0, 2.0]  # 0 FLOPs first
    # per pre-training seed, same threshold: seed 0 RTD - MLM = 0 then +3 (margin -2 -> +1), seed 1 0 then
    # +5 (-2 -> +3)
    assert c["seeds"] == "pretrain_seeds"
    assert c["per_seed_flops"]["0"] == pytest.approx(between(F2, F4, 2 / 3))
    assert c["per_seed_flops"]["1"] == pytest.approx(between(F2, F4, 2 / 5))
    assert c["flops_low"] == pytest.approx(between(F2, F4, 2 / 5))
    assert c["flops_high"] == pytest.approx(between(F2, F4, 2 / 3))
    assert c["text"] == ("Crossover: RTD passes MLM beyond the band at 2.8e13 FLOPs [2.6e13, 3.2e13 over "
                         "pre-training seeds] (measured convention) and stays ahead (up to 4.0e13 FLOPs)")
    assert c["text"] in summary.headline_lines(s)
    # the other way round MLM - RTD = +2 at the first checkpoint: the band's edge, not beyond it
    back = s["crossover"]["mlm_over_rtd"]
    assert back["status"] == "touched" and back["flops"] is None and back["flops_low"] is None


def test_touching_the_band_edge_is_not_a_crossover(tmp_path):
    # RTD - MLM = -2, 0, +2 with band 2: the margin reaches 0 at the end and no further
    rtd = [(0.25, F1, (58, 60)), (0.5, F2, (62, 64)), (1.0, F4, (66, 68))]
    s = build(tmp_path, {"mlm": MLM, "rtd": rtd})
    c = s["crossover"]["rtd_over_mlm"]
    assert c["difference_curve"][-1]["margin"] == 0.0
    assert c["status"] == "touched" and not c["reached"] and not c["stays_ahead"]
    assert c["flops"] is None and c["first_flops"] is None and c["ahead_intervals"] == []
    assert c["text"] == ("Crossover: RTD reaches the edge of MLM's band but not beyond: not reached within the "
                         "run (up to 4.0e13 FLOPs)")
    assert s["verdict"]["exceeds_band"] is False  # the verdict's strict rule says the same at the end


def test_never_crossing_says_not_reached_up_to_the_end_of_the_run(tmp_path):
    rtd = [(0.25, F1, (56, 58)), (0.5, F2, (58, 60)), (1.0, F4, (62, 64))]
    s = build(tmp_path, {"mlm": MLM, "rtd": rtd})
    c = s["crossover"]["rtd_over_mlm"]
    assert c["status"] == "never" and not c["reached"] and c["flops"] is None
    assert c["max_flops"] == F4
    assert c["per_seed_flops"] == {"0": None, "1": None}
    assert c["text"] == ("Crossover: RTD does not pass MLM beyond the band: not reached within the run "
                         "(up to 4.0e13 FLOPs)")


def test_crossing_back_is_not_staying_ahead(tmp_path):
    # RTD - MLM = -2, +4, 0: margin -4, +2, -2; ahead from 2/3 of the way to F2 to halfway to F4
    rtd = [(0.25, F1, (58, 60)), (0.5, F2, (66, 68)), (1.0, F4, (64, 66))]
    s = build(tmp_path, {"mlm": MLM, "rtd": rtd})
    c = s["crossover"]["rtd_over_mlm"]
    assert c["status"] == "crossed_back" and c["reached"] and not c["stays_ahead"]
    assert c["flops"] is None and c["bound"] is None and c["flops_low"] is None
    start, end = c["ahead_intervals"][0]
    assert start == pytest.approx(between(F1, F2, 2 / 3)) and end == pytest.approx(between(F2, F4, 0.5))
    assert c["first_flops"] == start
    assert c["text"] == ("Crossover: RTD passed MLM beyond the band at 1.6e13 FLOPs but fell back by 2.8e13: "
                         "not reached within the run (up to 4.0e13 FLOPs)")


def test_after_crossing_back_the_last_crossing_that_holds_is_reported(tmp_path):
    F8 = 8e13
    mlm = [(0.125, F1, (60, 62)), (0.25, F2, (62, 64)), (0.5, F4, (64, 66)), (1.0, F8, (66, 68))]
    # RTD - MLM = +4, 0, +4, +6 with band 2: margin +2, -2, +2, +4
    rtd = [(0.125, F1, (64, 66)), (0.25, F2, (62, 64)), (0.5, F4, (68, 70)), (1.0, F8, (72, 74))]
    s = build(tmp_path, {"mlm": mlm, "rtd": rtd})
    c = s["crossover"]["rtd_over_mlm"]
    assert c["status"] == "crossed" and c["stays_ahead"]
    assert len(c["ahead_intervals"]) == 2
    # the first stretch starts between the untrained encoder and the first checkpoint: "at most" F1
    assert c["ahead_intervals"][0] == [F1, pytest.approx(between(F1, F2, 0.5))]
    assert c["first_flops"] == F1
    assert c["flops"] == pytest.approx(between(F2, F4, 0.5)) and c["bound"] == "interpolated"


def test_ahead_by_the_first_checkpoint_is_an_upper_bound(tmp_path):
    """Between the untrained encoder (0 FLOPs) and the first checkpoint nothing was measured: the
    crossover is 'at most' the first checkpoint, not a place the interpolation picks."""
    s = build(tmp_path, {"mlm": MLM, "rtd": MLM})
    c = s["crossover"]["rtd_over_untrained"]  # 61 against 50 with band 2 at the first checkpoint
    assert c["status"] == "crossed" and c["bound"] == "at_most" and c["flops"] == F1
    assert c["text"] == ("Crossover: RTD is ahead of the untrained encoder beyond the band by the first checkpoint "
                         "(at most 1.0e13 FLOPs, measured convention) "
                         "and stays ahead (up to 4.0e13 FLOPs)")
    # identical curves: neither passes the other
    assert s["crossover"]["rtd_over_mlm"]["status"] == "never"


def test_rtd_first_beats_the_untrained_encoder(tmp_path):
    # RTD 51, 53, 57 against the untrained encoder's 50 (band 0); RTD's band 2: margin -1, +1, +5
    rtd = [(0.25, F1, (50, 52)), (0.5, F2, (52, 54)), (1.0, F4, (56, 58))]
    s = build(tmp_path, {"mlm": MLM, "rtd": rtd})
    c = s["crossover"]["rtd_over_untrained"]
    assert c["status"] == "crossed" and c["flops"] == pytest.approx(between(F1, F2, 0.5))
    assert c["text"].startswith("Crossover: RTD passes the untrained encoder beyond the band at 1.4e13 FLOPs")
    assert c["text"] in summary.headline_lines(s)
    assert s["verdict"]["beats_untrained"]["rtd"]["beats"] is True


def test_checkpoints_at_different_flops_are_compared_on_the_union_grid(tmp_path):
    """RTD's plan checkpoints at 1.5e13 and 3e13, MLM's at 1e13, 2e13 and 4e13: RTD is interpolated at
    MLM's checkpoints, MLM at RTD's, and the comparison ends where RTD's curve ends."""
    mlm = [(0.25, F1, (59, 61)), (0.5, F2, (59, 61)), (1.0, F4, (59, 61))]  # flat 60, band 2
    rtd = [(0.375, 1.5e13, (59, 61)), (0.75, 3e13, (63, 65))]  # 60 -> 64, band 2
    s = build(tmp_path, {"mlm": mlm, "rtd": rtd})
    c = s["crossover"]["rtd_over_mlm"]
    assert [p["flops"] for p in c["difference_curve"]] == [0.0, F1, 1.5e13, F2, 3e13]
    assert c["max_flops"] == 3e13
    assert [(p["fraction"], p["reference_fraction"]) for p in c["difference_curve"][1:]] == [
        (None, 0.25), (0.375, None), (None, 0.5), (0.75, None)]
    # RTD is linear in log FLOPs from 1.5e13 (margin -2) to 3e13 (+2): ahead from halfway
    assert c["flops"] == pytest.approx(1.5e13 * math.sqrt(2))


def test_the_same_checkpoint_of_both_plans_is_one_grid_point(tmp_path):
    """The plans round the budget to whole steps of different sizes, so the objectives' checkpoints at one
    budget fraction differ by a few FLOPs: one grid point, each side its own checkpoint's score, so the
    end of the curve judges what the verdict judges."""
    rtd = [(0.25, 1.01 * F1, (58, 60)), (0.5, 1.004 * F2, (62, 64)), (1.0, 1.002 * F4, (68, 70))]
    s = build(tmp_path, {"mlm": MLM, "rtd": rtd})
    c = s["crossover"]["rtd_over_mlm"]
    grid = c["difference_curve"]
    assert [p["flops"] for p in grid] == pytest.approx([0, math.sqrt(1.01) * F1, math.sqrt(1.004) * F2,
                                                        math.sqrt(1.002) * F4])
    assert all(p["fraction"] == p["reference_fraction"] for p in grid)
    assert [p["difference"] for p in grid] == [0.0, -2.0, 0.0, 4.0]
    assert c["stays_ahead"] is True and s["verdict"]["kind"] == "ranked" and s["verdict"]["better"] == "rtd"


def test_a_summary_whose_crossover_contradicts_the_verdict_is_caught(tmp_path):
    rtd = [(0.25, F1, (58, 60)), (0.5, F2, (62, 64)), (1.0, F4, (66, 68))]  # the touching case
    s = build(tmp_path, {"mlm": MLM, "rtd": rtd})
    bad = json.loads(json.dumps(s))
    c = bad["protocols"]["probe"]["crossover"]["rtd_over_mlm"]
    c.update(status="crossed", stays_ahead=True, reached=True, flops=3e13, first_flops=3e13, bound="interpolated")
    found = "\n".join(summary.invariant_violations(bad))
    assert "top-level crossover is not the main protocol's" in found
    assert "crossover.rtd_over_mlm: crossed but not ahead at the end" in found
    assert "disagrees with the verdict at the final checkpoints" in found
    del bad["protocols"]["probe"]["crossover"]
    assert any("crossover needs exactly the keys" in v for v in summary.invariant_violations(bad))


def test_no_band_and_no_scores(tmp_path):
    one_seed = {"init": [(0, 0, (50,))], "mlm": [(1.0, F4, (60,))], "rtd": [(1.0, F4, (70,))]}
    # one pre-training seed, one evaluation seed: no band, so no judgement (the verdict's "no_noise")
    s = summary.build_summary(make_run(tmp_path, one_seed, eval_seeds=(0,)))
    c = s["crossover"]["rtd_over_mlm"]
    assert s["verdict"]["kind"] == "no_noise"
    assert c["status"] == "no_band" and c["flops"] is None and c["difference_curve"][-1]["threshold"] is None
    assert c["text"] == "Crossover: RTD vs MLM not judged: no band (needs >= 2 seeds per point)"
    assert summary.invariant_violations(s) == []
    only_mlm = summary.build_summary(make_run(tmp_path / "b", {"mlm": MLM}))
    c = only_mlm["crossover"]["rtd_over_mlm"]
    assert c["status"] == "incomplete" and c["difference_curve"] == [] and c["max_flops"] is None
    assert not any(line.startswith("Crossover: RTD") for line in summary.headline_lines(only_mlm))
    assert summary.invariant_violations(only_mlm) == []


def test_the_crossover_is_on_the_score_plot_without_overlaps(tmp_path):
    rtd = [(0.25, F1, (50, 52)), (0.5, F2, (62, 64)), (1.0, F4, (68, 70))]
    mlm = MLM[:2] + [(1.0, F4, (65, 65))]
    s = build(tmp_path, {"mlm": mlm, "rtd": rtd})
    fig = plots.figure_scores(s)
    assert plots.text_overlaps(fig) == []
    title = "".join(fig.axes[0].get_title(loc="left").split())  # wrapped: compare without white space
    for line in crossover.lines(s["protocols"]["probe"]):
        assert "".join(line.split()) in title
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(lab.startswith("crossover: RTD passes MLM") for lab in labels)
    assert any(lab.startswith("crossover: RTD passes the untrained encoder") for lab in labels)
    ax = fig.axes[0]
    xs = sorted(line.get_xdata()[0] for line in ax.get_lines() if line.get_gid() == "crossover")
    assert xs == pytest.approx(sorted(s["crossover"][k]["flops"] for k in ("rtd_over_mlm", "rtd_over_untrained")))
    # each range over seeds is a span under its line
    spans = sorted((p.get_x(), p.get_x() + p.get_width()) for p in ax.patches if p.get_gid() == "crossover_range")
    ranges = sorted((s["crossover"][k]["flops_low"], s["crossover"][k]["flops_high"])
                    for k in ("rtd_over_mlm", "rtd_over_untrained"))
    assert len(spans) == 2 and [pytest.approx(r) for r in ranges] == spans



def test_fixture_run_report_carries_the_crossover():
    """The committed --quick run: neither crossing happens within its 2e12 FLOPs, and every report
    format and the JSON say so."""
    run = results.load_run(FIXTURE_RUN)
    s = summary.build_summary(run)
    for key in crossover.PAIRS:
        c = s["crossover"][key]
        assert set(c) >= {"reached", "stays_ahead", "flops", "flops_low", "flops_high", "per_seed_flops",
                          "band_rule", "max_flops", "difference_curve", "status", "text"}
    c = s["crossover"]["rtd_over_mlm"]
    assert c["status"] == "never" and c["max_flops"] == pytest.approx(math.sqrt(1996015312320.0 * 1998151022400.0))
    expected = ["Crossover: RTD does not pass MLM beyond the band: not reached within the run (up to 2.0e12 FLOPs)",
                "Crossover: RTD does not pass the untrained encoder beyond the band: not reached within the run "
                "(up to 2.0e12 FLOPs)"]
    md = report.render([run], "md")
    table = report.render([run], "table", width=400)
    for line in expected:
        assert f"- {line}\n" in md
        assert line in table
    assert json.loads(json.dumps(s))["crossover"] == s["crossover"]


def test_a_stored_summary_without_the_crossover_is_rebuilt(tmp_path):
    """summary.json files written before the crossover existed (results/long-cpu) are rebuilt from
    scores.jsonl when read, so their reports carry the crossover lines too."""
    run_dir = tmp_path / FIXTURE_RUN.name
    shutil.copytree(FIXTURE_RUN, run_dir)
    old = json.loads(json.dumps(summary.build_summary(results.load_run(run_dir))))
    del old["crossover"]
    for block in old["protocols"].values():
        del block["crossover"]
    (run_dir / "summary.json").write_text(json.dumps(old))
    assert summary.load_or_build(results.load_run(run_dir))["crossover"]["rtd_over_mlm"]["status"] == "never"
    assert "Crossover: RTD does not pass MLM" in report.render([results.load_run(run_dir)], "md")
