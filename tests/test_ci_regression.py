"""The CI check: exit codes on a clean, a regressed and a bad-input comparison."""

import json

import pytest

from electra_bench.errors import BenchError
from electra_bench.ci import regression
from electra_bench.store import runs as results


def make_run(tmp_path, run_id="r1", rtd_final=75.0):
    rows = []
    curves = {"init": [(0, 0, 50)], "mlm": [(1.0, 1e14, 70)], "rtd": [(0.5, 5e13, 72), (1.0, 1e14, rtd_final)]}
    for obj, pts in curves.items():
        for frac, flops, base in pts:
            for seed in (0, 1):
                for task, off in (("sst2", 5), ("rte", -5)):
                    rows.append(dict(objective=obj, fraction=frac, step=int(frac * 100), train_flops=flops,
                                     convention="measured", task=task, seed=seed, metric="accuracy",
                                     value=base + off + 0.2 * seed, protocol="finetune"))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny", "rtd_final": rtd_final})
    run.append_scores(rows)
    return run


def test_baseline_contents(tmp_path):
    b = regression.write_baseline(make_run(tmp_path), tmp_path / "baseline.json")
    on_disk = json.loads((tmp_path / "baseline.json").read_text())
    assert on_disk["metrics"] == b["metrics"]
    assert b["kind"] == regression.KIND and b["schema_version"] == 1
    assert set(b["metrics"]) == {"init/score", "init/sst2", "init/rte", "mlm/score", "mlm/sst2", "mlm/rte",
                                 "rtd/score", "rtd/sst2", "rtd/rte", "mlm/margin", "rtd/margin"}
    assert b["metrics"]["rtd/margin"] == pytest.approx(b["metrics"]["rtd/score"] - b["metrics"]["init/score"])
    assert b["metrics"]["rtd/score"] == pytest.approx(75.1)
    assert "headline/rtd_reaches_mlm_percent" in b["info"]


def test_same_run_passes(tmp_path):
    run = make_run(tmp_path)
    regression.write_baseline(run, tmp_path / "b.json")
    res = regression.check(run, tmp_path / "b.json", tol=0.5)
    assert res.ok and res.exit_code == 0 and not res.moved()
    assert "OK" in res.to_text()


def test_regressed_run_exits_1_and_says_what_moved(tmp_path):
    regression.write_baseline(make_run(tmp_path, "good"), tmp_path / "b.json")
    bad = make_run(tmp_path, "bad", rtd_final=72.0)  # RTD final drops 3 points
    res = regression.check(bad, tmp_path / "b.json", tol={"rtd/*": 1.0, "default": 0.5})
    assert res.exit_code == 1 and not res.ok
    by_name = {c.metric: c for c in res.checks}
    c = by_name["rtd/score"]
    assert c.status == "regressed" and c.old == pytest.approx(75.1) and c.new == pytest.approx(72.1)
    assert c.delta == pytest.approx(-3.0) and c.tol == 1.0
    assert by_name["mlm/score"].status == "ok" and by_name["mlm/score"].tol == 0.5
    text = res.to_text()
    assert "REGRESSION" in text and "rtd/score" in text and "-3.00" in text
    data = json.loads(res.to_json())
    assert data["exit_code"] == 1 and any(d["status"] == "regressed" for d in data["checks"])
    # with a wide enough tolerance it passes
    assert regression.check(bad, tmp_path / "b.json", tol=5.0).exit_code == 0


def test_improvement_is_not_a_failure(tmp_path):
    regression.write_baseline(make_run(tmp_path, "old", rtd_final=72.0), tmp_path / "b.json")
    res = regression.check(make_run(tmp_path, "new"), tmp_path / "b.json", tol=1.0)
    assert res.exit_code == 0
    assert {c.metric: c.status for c in res.checks}["rtd/score"] == "improved"


def test_missing_metric_fails(tmp_path):
    run = make_run(tmp_path)
    b = regression.make_baseline(run)
    b["metrics"]["rtd/cola"] = 30.0
    (tmp_path / "b.json").write_text(json.dumps(b))
    res = regression.check(run, tmp_path / "b.json", 1.0)
    assert res.exit_code == 1
    assert {c.metric: c.status for c in res.checks}["rtd/cola"] == "missing"


def test_bad_input_is_exit_2(tmp_path):
    run = make_run(tmp_path)
    with pytest.raises(BenchError, match="baseline file not found") as e:
        regression.check(run, tmp_path / "absent.json", 1.0)
    assert e.value.exit_code == regression.EXIT_BAD_INPUT == 2
    (tmp_path / "bad.json").write_text('{\n  "metrics": {"rtd/score": 70,}\n}')
    with pytest.raises(BenchError, match=r"bad.json:2: baseline is not valid JSON"):
        regression.check(run, tmp_path / "bad.json", 1.0)
    (tmp_path / "other.json").write_text('{"metrics": {"rtd/score": 70}}')
    with pytest.raises(BenchError, match="not an electra-bench baseline"):
        regression.check(run, tmp_path / "other.json", 1.0)
    regression.write_baseline(run, tmp_path / "b.json")
    with pytest.raises(BenchError, match="tolerance"):
        regression.check(run, tmp_path / "b.json", -1.0)


def test_default_tolerance_comes_from_the_baseline(tmp_path):
    regression.write_baseline(make_run(tmp_path, "good"), tmp_path / "b.json", tol=5.0)
    bad = make_run(tmp_path, "bad", rtd_final=72.0)
    res = regression.check(bad, tmp_path / "b.json")  # tol None: the baseline's 5.0
    assert res.exit_code == 0 and all(c.tol == 5.0 for c in res.checks
                                      if c.status != "new" and not c.metric.startswith("verdict/"))
    assert regression.check(bad, tmp_path / "b.json", 1.0).exit_code == 1
    assert res.render().startswith("check bad against") and json.loads(res.render("json"))["ok"]


def make_compare_run(tmp_path, run_id, **config):
    """make_run with a compare-style config (CompareSpec.to_dict keys)."""
    run = make_run(tmp_path, run_id)
    cfg = {"preset": "tiny", "budget": "2e12", "protocol": "finetune", "seeds": 2, "pretrain_seeds": 1,
           "probe_pool": 1000, "probe_examples": 800, "max_eval_examples": 1000, "overrides": {}, **config}
    (run.path / "config.json").write_text(json.dumps(cfg))
    return results.load_run(run.path)


def test_baseline_records_what_makes_runs_comparable(tmp_path):
    b = regression.make_baseline(make_compare_run(tmp_path, "q"))
    assert b["config"] == {"preset": "tiny", "overrides": {}, "budget": "2e12", "probe_pool": 1000,
                           "probe_examples": 800, "max_eval_examples": 1000, "protocol": "finetune",
                           "suite": "GLUE subset (rte, sst2)", "flop_convention": "measured", "tasks": ["rte", "sst2"],
                           "seeds": [0, 1], "pretrain_seeds": 1}


def test_unlike_runs_are_refused_with_one_line_naming_the_differences(tmp_path):
    regression.write_baseline(make_compare_run(tmp_path, "quick"), tmp_path / "b.json")
    default = make_compare_run(tmp_path, "default", budget="1.2e13", probe_pool=3000, max_eval_examples=None)
    with pytest.raises(BenchError) as e:
        regression.check(default, tmp_path / "b.json")
    msg = str(e.value)
    assert e.value.exit_code == 2 and "\n" not in msg
    assert msg.startswith("run default is not comparable with baseline")
    assert "budget 1.2e13 (run) vs 2e12 (baseline)" in msg and "probe pool 3000 (run) vs 1000 (baseline)" in msg
    assert "max eval examples none (run) vs 1000 (baseline)" in msg and "--allow-different-config" in msg
    assert "preset" not in msg and "seeds" not in msg  # only what differs


def test_allow_different_config_compares_with_a_warning(tmp_path):
    regression.write_baseline(make_compare_run(tmp_path, "quick"), tmp_path / "b.json")
    other = make_compare_run(tmp_path, "other", preset="small", budget="1.2e13")
    res = regression.check(other, tmp_path / "b.json", allow_different_config=True)
    assert res.exit_code == 0 and res.config_differences == [
        "preset small (run) vs tiny (baseline)", "budget 1.2e13 (run) vs 2e12 (baseline)"]
    text = res.to_text()
    assert text.splitlines()[1].startswith("  WARNING: run and baseline differ: preset small (run) vs tiny")
    assert json.loads(res.to_json())["config_differences"] == res.config_differences


@pytest.mark.parametrize("change, phrase", [
    ({"protocol": "probe"}, "protocol probe (run) vs finetune (baseline)"),
    ({"overrides": {"temperature": 1.0}}, "preset overrides {temperature=1.0} (run) vs none (baseline)"),
    ({"budget": "2.0e12"}, None),  # the same budget spelled differently
])
def test_each_config_field_is_compared(tmp_path, change, phrase):
    regression.write_baseline(make_compare_run(tmp_path, "base"), tmp_path / "b.json")
    run = make_compare_run(tmp_path, "run", **change)
    if phrase is None:
        assert regression.check(run, tmp_path / "b.json").ok
        return
    with pytest.raises(BenchError, match="not comparable") as e:
        regression.check(run, tmp_path / "b.json")
    assert phrase in str(e.value)


def test_seeds_tasks_suite_and_convention_come_from_the_scores(tmp_path):
    base = regression.make_baseline(make_run(tmp_path, "base"))
    base["config"].update(tasks=["cola", "sst2"], seeds=[0, 1, 2], suite="ebs-2", flop_convention="paper")
    (tmp_path / "b.json").write_text(json.dumps(base))
    with pytest.raises(BenchError) as e:
        regression.check(make_run(tmp_path, "run"), tmp_path / "b.json")
    msg = str(e.value)
    assert "tasks (only the run has rte; only the baseline has cola)" in msg
    assert "evaluation seeds [0, 1] (run) vs [0, 1, 2] (baseline)" in msg
    assert "suite GLUE subset (rte, sst2) (run) vs ebs-2 (baseline)" in msg and "FLOP convention measured (run) vs paper" in msg


def test_an_old_baseline_without_config_warns_once_and_compares(tmp_path):
    run = make_run(tmp_path)
    b = regression.make_baseline(run)
    del b["config"]
    (tmp_path / "old.json").write_text(json.dumps(b))
    res = regression.check(run, tmp_path / "old.json")
    assert res.ok and len(res.warnings) == 1 and "records no run config" in res.warnings[0]
    assert sum("WARNING" in line for line in res.to_text().splitlines()) == 1
    (tmp_path / "bad.json").write_text(json.dumps({**b, "config": [1]}))
    with pytest.raises(BenchError, match="baseline 'config' is not an object"):
        regression.check(run, tmp_path / "bad.json")


def test_committed_quick_baseline_matches_its_run():
    """results/baselines/compare-quick.json was written from the --quick run kept in tests/fixtures/runs."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    run = results.load_run(root / "tests" / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d")
    res = regression.check(run, root / "results" / "baselines" / "compare-quick.json", tol=1e-9)
    assert res.ok and not res.warnings and not res.config_differences
    assert all(c.status == "ok" for c in res.checks)
    baseline = regression.load_baseline(root / "results" / "baselines" / "compare-quick.json")
    assert baseline["config"]["budget"] == "2e12" and baseline["info"]["headline/rtd_reaches_mlm_percent"] is None


def test_a_verdict_flipped_beyond_noise_is_a_regression(tmp_path):
    """The baseline ranks RTD ahead (CI excluding 0); a run that ranks MLM ahead the same way fails even
    with tolerances too loose for any one metric to fail."""
    regression.write_baseline(make_run(tmp_path, "good"), tmp_path / "b.json", tol=100.0)
    assert regression.load_baseline(tmp_path / "b.json")["info"]["verdict_better"] == "rtd"
    same = regression.check(make_run(tmp_path, "same"), tmp_path / "b.json")
    assert same.exit_code == 0
    assert [c.status for c in same.checks if c.metric == "verdict/rtd_minus_mlm"] == ["ok"]
    flipped = regression.check(make_run(tmp_path, "flip", rtd_final=60.0), tmp_path / "b.json")
    assert flipped.exit_code == 1
    assert [c.metric for c in flipped.failures] == ["verdict/rtd_minus_mlm"]
