"""The CI check: exit codes on a clean, a regressed and a bad-input comparison."""

import json

import pytest

from electra_bench.errors import BenchError
from electra_bench.reporting import regression, results


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
    assert res.exit_code == 0 and all(c.tol == 5.0 for c in res.checks if c.status != "new")
    assert regression.check(bad, tmp_path / "b.json", 1.0).exit_code == 1
    assert res.render().startswith("check bad against") and json.loads(res.render("json"))["ok"]
