"""Summary, headline interpolation and the noise verdict on synthetic scores."""

import math

import pytest

from electra_bench.errors import BenchError
from electra_bench.score import glue_score
from electra_bench.store import runs as results
from electra_bench.summarise import summary
from electra_bench.present.summary_text import headline_lines
from electra_bench.summarise.headline import flops_to_reach
from electra_bench.summarise.points import final_point
from electra_bench.summarise.verdict import VERDICT_NO_SEEDS, VERDICT_TOO_SMALL

TASKS = ("sst2", "rte")


def make_run(tmp_path, curves, *, seeds=(0, 1, 2), jitter=0.5, tasks=TASKS, convention="measured", run_id="r"):
    """curves: objective -> [(fraction, flops, base score)]; task scores are base +/- 5, seed adds seed*jitter."""
    rows = []
    for obj, pts in curves.items():
        for frac, flops, base in pts:
            for seed in seeds:
                for i, task in enumerate(tasks):
                    rows.append(dict(objective=obj, fraction=frac, step=int(frac * 1000), train_flops=flops,
                                     convention=convention, task=task, seed=seed, metric="accuracy",
                                     value=base + (5 if i == 0 else -5) * (len(tasks) > 1) + seed * jitter,
                                     protocol="finetune"))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny", "params": 1_000_000})
    run.append_scores(rows)
    return run


STANDARD = {
    "init": [(0, 0, 50)],
    "mlm": [(0.25, 2.5e13, 60), (0.5, 5e13, 65), (1.0, 1e14, 70)],
    "rtd": [(0.25, 2.5e13, 68), (0.5, 5e13, 72), (1.0, 1e14, 75)],
}


def test_points_medians_and_seed_spread(tmp_path):
    s = summary.build_summary(make_run(tmp_path, STANDARD))
    assert s["schema_version"] == 4 and s["flop_convention"] == "measured"
    block = s["protocols"]["finetune"]
    final_rtd = next(p for p in block["points"] if p["objective"] == "rtd" and p["fraction"] == 1.0)
    # seeds 0,1,2 add 0, 0.5, 1.0: median +0.5, range 1.0
    assert final_rtd["score"]["value"] == pytest.approx(75.5)
    assert final_rtd["score"]["per_seed"] == {"0": 75.0, "1": 75.5, "2": 76.0}
    assert final_rtd["score"]["range"] == pytest.approx(1.0)
    assert final_rtd["score"]["n_seeds"] == 3
    assert final_rtd["tasks"]["sst2"]["median"] == pytest.approx(80.5)
    assert final_rtd["tasks"]["sst2"]["primary_metric"] == "accuracy"
    # init starts both curves at 0 FLOPs
    for obj in ("mlm", "rtd"):
        assert block["curves"][obj][0]["objective"] == "init"
        assert block["curves"][obj][0]["train_flops"] == 0
    assert s["models"]["rtd"]["label"] == "RTD tiny" and s["models"]["init"]["params"] == 1_000_000


def test_headline_reached_by_log_interpolation(tmp_path):
    s = summary.build_summary(make_run(tmp_path, STANDARD))
    h = s["headline"]["rtd_reaches_mlm"]
    # target 70.5 between RTD 68.5 @2.5e13 and 72.5 @5e13: halfway in log FLOPs -> sqrt(2.5e13 * 5e13)
    expected = math.sqrt(2.5e13 * 5e13)
    assert h["reached"] and h["bound"] == "interpolated"
    assert h["flops"] == pytest.approx(expected)
    assert h["percent"] == pytest.approx(100 * expected / 1e14)
    assert "35%" in h["text"]
    back = s["headline"]["mlm_reaches_rtd"]
    assert not back["reached"] and back["percent"] is None and "does not reach" in back["text"]


def test_headline_between_init_and_first_checkpoint_is_linear_in_flops(tmp_path):
    curves = {"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 60)], "rtd": [(0.25, 2.5e13, 70), (1.0, 1e14, 75)]}
    s = summary.build_summary(make_run(tmp_path, curves))
    h = s["headline"]["rtd_reaches_mlm"]
    # target 60.5: init 50.5 -> RTD 70.5 at 2.5e13, linear in FLOPs: halfway = 1.25e13 -> 12.5%
    assert h["flops"] == pytest.approx(1.25e13)
    assert h["percent"] == pytest.approx(12.5)


def test_headline_upper_bound_without_init(tmp_path):
    curves = {"mlm": [(1.0, 1e14, 60)], "rtd": [(0.25, 2.5e13, 70), (1.0, 1e14, 75)]}
    h = summary.build_summary(make_run(tmp_path, curves))["headline"]["rtd_reaches_mlm"]
    assert h["bound"] == "at_most" and h["percent"] == pytest.approx(25.0)
    assert "at most" in h["text"]


def test_flops_to_reach_unit():
    pts = [(0.0, 50.0), (1e12, 60.0), (1e14, 80.0)]
    assert flops_to_reach(pts, 55.0) == (pytest.approx(5e11), "interpolated")
    assert flops_to_reach(pts, 70.0) == (pytest.approx(1e13), "interpolated")
    assert flops_to_reach(pts, 80.0) == (pytest.approx(1e14), "exact")
    assert flops_to_reach(pts, 90.0) == (None, "not_reached")
    assert flops_to_reach(pts, 40.0) == (0.0, "exact")
    # first crossing counts, even if the curve dips later
    assert flops_to_reach([(1e12, 50.0), (1e13, 70.0), (1e14, 60.0)], 65.0)[0] < 1e13


def test_verdict_separated(tmp_path):
    # one pre-training seed, three evaluation seeds whose offsets are the same for every objective: the
    # paired difference is exactly 5 in every replicate (eval-seeds-only fallback, no predictions stored)
    s = summary.build_summary(make_run(tmp_path, STANDARD))
    v = s["verdict"]
    assert s["protocols"]["finetune"]["statistics"]["method"] == "eval-seeds-only"
    assert v["separated"] is True and v["better"] == "rtd" and v["kind"] == "ranked"
    assert v["difference"] == pytest.approx(5.0) and v["ci"] == pytest.approx([5.0, 5.0])
    assert v["band"] == pytest.approx(1.0)  # the descriptive range stays
    assert v["beats_untrained"]["mlm"]["beats"] and v["beats_untrained"]["rtd"]["beats"]
    assert v["verdict"].startswith("RTD ahead of MLM")
    # one pre-training seed: the CI cannot hold seed noise, and the verdict says so
    assert v["verdict"].endswith("one pre-training seed, so the CI leaves out seed noise (--pretrain-seeds 2 or "
                                 "more)")


def _unpaired_noise(tmp_path, curves, noise):
    """make_run, then evaluation seed 1 of RTD moved by `noise`: a difference that varies over seeds."""
    run = make_run(tmp_path, curves)
    df = run.scores()
    df.loc[(df["objective"] == "rtd") & (df["seed"] == 1), "value"] += noise
    run.layout.scores.unlink()
    run.append_scores(df.to_dict("records"))
    return run


def test_verdict_not_resolved(tmp_path):
    curves = {"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 70)], "rtd": [(1.0, 1e14, 71)]}
    v = summary.build_summary(_unpaired_noise(tmp_path, curves, -6.0))["verdict"]
    assert v["kind"] == "not_resolved" and v["separated"] is False and v["better"] is None
    assert v["ci"][0] <= 0 <= v["ci"][1]
    assert v["verdict"] == "not resolved with 3 evaluation seeds"
    assert v["plan"]["detectable_difference"] > abs(v["difference"])


def test_verdict_budget_too_small(tmp_path):
    curves = {"init": [(0, 0, 50)], "mlm": [(1.0, 1e13, 50.5)], "rtd": [(1.0, 1e13, 51)]}
    run = make_run(tmp_path, curves, jitter=1.0)
    df = run.scores()  # scatter the trained points' evaluation seeds so no margin over init is resolved
    for obj, shift in (("mlm", -4.0), ("rtd", 4.0)):
        df.loc[(df["objective"] == obj) & (df["seed"] == 2), "value"] += shift
    run.layout.scores.unlink()
    run.append_scores(df.to_dict("records"))
    v = summary.build_summary(run)["verdict"]
    assert v["beats_untrained"]["mlm"]["beats"] is False and v["beats_untrained"]["rtd"]["beats"] is False
    assert v["verdict"] == VERDICT_TOO_SMALL


def test_verdict_needs_something_to_resample(tmp_path):
    v = summary.build_summary(make_run(tmp_path, STANDARD, seeds=(0,)))["verdict"]
    assert v["kind"] == "no_noise" and v["separated"] is False and v["ci"] is None
    assert v["verdict"] == VERDICT_NO_SEEDS


def test_glue_suite_uses_the_electra_convention(tmp_path):
    metric_of = glue_score.CONVENTIONS["electra"]
    rows = []
    for obj, frac, flops in (("init", 0, 0), ("mlm", 1.0, 1e14), ("rtd", 1.0, 1e14)):
        for seed in (0, 1):
            for i, (task, metrics) in enumerate(metric_of.items()):
                for m in metrics:
                    rows.append(dict(objective=obj, fraction=frac, step=0 if obj == "init" else 10,
                                     train_flops=flops, convention="paper", task=task, seed=seed, metric=m,
                                     value=40.0 + i + 10 * (obj != "init") + 5 * (obj == "rtd") + seed,
                                     protocol="finetune"))
    run = results.open_run(tmp_path, "g", {})
    run.append_scores(rows)
    s = summary.build_summary(run, convention="paper")
    assert s["suite"]["name"] == "GLUE" and s["suite"]["aggregate"] == "glue-electra"
    rtd = final_point(s["protocols"]["finetune"]["points"], "rtd")
    medians = {t: {m: v["median"] for m, v in rtd["tasks"][t]["metrics"].items()} for t in rtd["tasks"]}
    assert rtd["score"]["value"] == pytest.approx(glue_score.score(medians, "electra"))
    assert rtd["score"]["value"] == pytest.approx(40 + 3.5 + 15 + 0.5)


def test_flop_convention_is_chosen_and_checked(tmp_path):
    run = make_run(tmp_path, STANDARD)
    with pytest.raises(BenchError, match="no scores in the 'paper' FLOP convention"):
        summary.build_summary(run, convention="paper")
    run.append_scores([dict(objective="rtd", fraction=1.0, step=1000, train_flops=9e13, convention="paper",
                            task="sst2", seed=0, metric="accuracy", value=1.0, protocol="finetune")])
    with pytest.raises(BenchError, match="both FLOP conventions"):
        summary.build_summary(run)
    assert summary.build_summary(run, convention="measured")["flop_convention"] == "measured"


def test_empty_run_is_an_error(tmp_path):
    run = results.open_run(tmp_path, "empty", {})
    with pytest.raises(BenchError, match="no scores"):
        summary.build_summary(run)


def test_write_and_load_summary(tmp_path):
    run = make_run(tmp_path, STANDARD)
    written = summary.update_summary(run)
    loaded = results.load_run(run.path)
    assert loaded.summary()["headline"] == written["headline"]
    assert summary.load_or_build(loaded)["run_id"] == "r"
    assert any(line.startswith("Verdict:") for line in headline_lines(written))


def test_labels_and_params_from_provenance_extra(tmp_path):
    rows = [dict(objective=o, fraction=f, step=s, train_flops=fl, convention="measured", task="rt-polarity", seed=0,
                 metric="accuracy", value=v, protocol="probe")
            for o, f, s, fl, v in (("init", 0, 0, 0, 50), ("mlm", 1.0, 10, 1e12, 60), ("rtd", 1.0, 10, 1e12, 62))]
    run = results.open_run(tmp_path, "p", {"preset": "tiny"})
    run.append_scores(rows)
    run.write_provenance({"extra": {"params": {"mlm": 5_000_000, "rtd": 5_000_000}, "suite": "ebs-2"}})
    s = summary.build_summary(run)
    assert s["models"]["rtd"] == {"label": "RTD tiny", "params": 5_000_000}
    assert s["models"]["init"]["params"] == 5_000_000
    assert s["suite"]["name"] == "ebs-2" and s["main_protocol"] == "probe"


def _with_pretrain_seeds(tmp_path, offsets, run_id="ps"):
    """STANDARD's final points pre-trained with two seeds whose scores differ by `offsets[obj]`."""
    rows = []
    for obj, pts in {"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 70)], "rtd": [(1.0, 1e14, 75)]}.items():
        for frac, flops, base in pts:
            for ps in (0, 1):
                for seed in (0, 1, 2):
                    for task in TASKS:
                        rows.append(dict(objective=obj, fraction=frac, step=int(frac * 1000), train_flops=flops,
                                         convention="measured", task=task, seed=seed, metric="accuracy",
                                         value=base + ps * offsets.get(obj, 0.0) + 0.1 * seed,
                                         protocol="finetune", pretrain_seed=ps))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny"})
    run.append_scores(rows)
    return run


def test_band_is_over_pretraining_seeds(tmp_path):
    s = summary.build_summary(_with_pretrain_seeds(tmp_path, {"mlm": 2.0, "rtd": 8.0}))
    points = {p["objective"]: p for p in s["points"]} if "points" in s else {
        p["objective"]: p for p in s["protocols"]["finetune"]["points"]}
    rtd = points["rtd"]["score"]
    assert rtd["band"] == "pretrain_seeds" and rtd["n_pretrain_seeds"] == 2
    assert rtd["range"] == pytest.approx(8.0) and rtd["value"] == pytest.approx(79.0 + 0.1)
    # RTD - MLM = 79.1 - 71.1 = 8.0 with two pre-training seeds 6 apart in the difference: with 2 seeds the
    # t interval (1 degree of freedom) is far wider than 8, so not resolved although every eval seed agrees
    v = s["verdict"]
    assert v["kind"] == "not_resolved" and v["separated"] is False
    assert s["protocols"]["finetune"]["statistics"]["method"] == "seeds-only"
    assert v["ci"][0] < 0 < v["ci"][1] and v["band"] == pytest.approx(8.0)


def _log_diag(run, obj, seed, **final):
    from electra_bench.store.atomic_io import append_jsonl

    append_jsonl(run.layout.pretrain(obj, seed).log, {"step": 0, "flops": 0.0, "fraction": 0.0,
                                                    "diag/mlm_gain_nats": 0.0, "diag/token_cosine": 0.2})
    append_jsonl(run.layout.pretrain(obj, seed).log, {"step": 10, "flops": 1e14, "fraction": 1.0,
                                                    **{f"diag/{k}": v for k, v in final.items()}})


def test_a_run_that_did_not_learn_is_not_ranked(tmp_path):
    run = _with_pretrain_seeds(tmp_path, {})
    for seed in (0, 1):
        _log_diag(run, "mlm", seed, mlm_gain_nats=0.8, token_cosine=0.3)
    _log_diag(run, "rtd", 0, mlm_gain_nats=0.9, disc_auc=0.74, disc_gap_nats=0.03, token_cosine=0.3)
    _log_diag(run, "rtd", 1, mlm_gain_nats=0.9, disc_auc=0.53, disc_gap_nats=0.0, token_cosine=0.9)
    s = summary.build_summary(run)
    v = s["verdict"]
    assert v["kind"] == "not_learned" and v["better"] is None
    assert len(v["not_learned"]) == 1 and v["not_learned"][0].startswith("RTD (pre-training seed 1) did not learn")
    assert s["learning"]["mlm"]["learned"] and not s["learning"]["rtd"]["learned"]
    assert s["learning"]["rtd"]["final_mean"]["disc_auc"] == pytest.approx((0.74 + 0.53) / 2)
    assert any("did not learn" in line for line in headline_lines(s))
