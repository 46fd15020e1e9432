"""The trend CI publishes: every record judged like `check` judges its run, the Markdown a job page or PR
comment shows (a regression is FAIL with the metric named), CSV and JSON of the whole trend."""

import csv
import io
import json

import pytest

from electra_bench.errors import BenchError
from electra_bench.ci import history_store, history_trend, regression
from electra_bench.store import runs as results
from history_records import BASELINE, FIXTURE_RUN, break_mlm, fixture_record, history, sha


@pytest.fixture(scope="module")
def base():
    return fixture_record()


@pytest.fixture(scope="module")
def baseline():
    return regression.load_baseline(BASELINE)


def md(records, baseline, **kw):
    return history_trend.markdown(history_trend.judge(records, baseline), baseline, str(BASELINE), **kw)


def rows_of(text, metric):
    return [line for line in text.splitlines() if f"`{metric}` |" in line]


def make_run(tmp_path, run_id, rtd_final):
    rows = []
    for obj, frac, flops, v in (("init", 0, 0, 50), ("mlm", 1.0, 1e14, 70), ("rtd", 1.0, 1e14, rtd_final)):
        for seed in (0, 1):
            for task, off in (("sst2", 5), ("rte", -5)):
                rows.append(dict(objective=obj, fraction=frac, step=int(frac * 100), train_flops=flops,
                                 convention="measured", task=task, seed=seed, metric="accuracy",
                                 value=v + off + 0.2 * seed, protocol="finetune"))
    run = results.open_run(tmp_path, run_id, {"preset": "tiny", "budget": "1e14"})
    run.append_scores(rows)
    return run


def test_a_record_fails_exactly_when_check_fails_its_run(tmp_path):
    good, bad = make_run(tmp_path, "good", 75.0), make_run(tmp_path, "bad", 71.0)
    regression.write_baseline(good, tmp_path / "b.json", tol=regression.score_tolerances(2.0))
    baseline = regression.load_baseline(tmp_path / "b.json")
    records = [history_store.record_from_run(r, commit=c, cwd=tmp_path, environ={}) for r, c in ((good, "a"), (bad, "b"))]
    judged = history_trend.judge(records, baseline)
    assert [j.status for j in judged] == [history_trend.PASS, history_trend.FAIL]
    check = regression.check(bad, tmp_path / "b.json")
    assert check.exit_code == 1
    assert sorted(c.metric for c in judged[1].failures) == sorted(c.metric for c in check.failures) \
        == ["rtd/margin", "rtd/rte", "rtd/score", "rtd/sst2"]


def test_markdown_shows_a_regression_as_fail_with_the_metric_named(base, baseline):
    text = md(history(base, 5, broken={4}), baseline, plot_urls=["https://ci.example/history.png"])
    lines = text.splitlines()
    assert lines[0] == "### electra-bench regression: FAIL"
    assert f"`{sha(4)[:7]}`" in lines[2] and "results/baselines/compare-quick.json" in lines[2]
    failing = next(line for line in lines if line.startswith("**"))
    assert "`mlm/diag/mlm_gain_nats` 0.010 (baseline 0.443, tolerance 0.1)" in failing
    assert "`mlm/score` 33.09 (baseline 36.09, tolerance 2)" in failing and "of 26 metric(s)" in failing
    (gain,) = rows_of(text, "mlm/diag/mlm_gain_nats")
    assert "| 0.010 | -0.433 | **FAIL** |" in gain
    (rtd,) = rows_of(text, "rtd/score")
    assert "| pass |" in rtd and "FAIL" not in rtd
    header = next(line for line in lines if line.startswith("| metric"))
    assert header.count("`") == 2 * 5  # this commit and the 4 before it, newest first
    assert header.index(sha(3)[:7]) < header.index(sha(0)[:7])
    assert "[history.png](https://ci.example/history.png)" in text
    assert "Wall time" in text and "4.0 min (pre-training 2.5" in text


def test_markdown_after_a_fix_passes_and_keeps_the_failed_commit_in_view(base, baseline):
    text = md(history(base, 6, broken={3}), baseline, last=3)
    assert text.startswith("### electra-bench regression: PASS")
    assert "All 26 metrics within tolerance." in text
    (gain,) = rows_of(text, "mlm/diag/mlm_gain_nats")
    assert gain.count("**FAIL**") == 1 and gain.endswith("| 0.010 **FAIL** | 0.443 |")  # columns 4, 3, 2


def test_a_failing_per_task_metric_is_counted_in_the_collapsed_block(base, baseline):
    records = history(base, 2)
    records[-1]["metrics"]["rtd/word-scramble"] -= 5
    text = md(records, baseline)
    assert "**1 of 26 metric(s) outside tolerance:** `rtd/word-scramble`" in text
    assert "<summary>per-task metrics (15; 1 FAIL)</summary>" in text


def test_another_config_is_not_compared_and_kept_apart(base, baseline):
    records = history(base, 4, other={3})
    judged = history_trend.judge(records, baseline)
    assert [j.status for j in judged] == ["pass", "pass", "pass", "other config"]
    assert [j.in_series for j in judged] == [True, True, True, False]
    text = md(records, baseline)
    assert text.startswith("### electra-bench regression: NOT COMPARED")
    assert "Not compared: budget 4e12 (run) vs 2e12 (baseline)." in text
    assert "0 previous record(s)" in text  # nothing of the baseline's series is shown as its history
    text = md(history(base, 4, other={1}), baseline)
    assert text.startswith("### electra-bench regression: PASS") and "2 previous record(s)" in text
    assert "1 record(s) with another config are kept apart, not compared" in text


def test_without_a_baseline_nothing_passes_or_fails(base):
    judged = history_trend.judge(history(base, 3, broken={2}), None)
    assert {j.status for j in judged} == {history_trend.UNJUDGED}
    text = history_trend.markdown(judged, None, None)
    assert text.startswith("### electra-bench regression: no baseline given") and "FAIL" not in text
    assert "| metric | `" in text


def test_csv_and_json_hold_the_whole_trend(base, baseline):
    records = history(base, 7, broken={2}, other={5})
    judged = history_trend.judge(records, baseline)
    rows = list(csv.DictReader(io.StringIO(history_trend.to_csv(judged))))
    assert [r["commit"] for r in rows] == [sha(i) for i in range(7)]
    assert [r["status"] for r in rows] == ["pass", "pass", "FAIL", "pass", "pass", "other config", "pass"]
    assert rows[2]["failures"] == "mlm/diag/mlm_gain_nats;mlm/margin;mlm/score"
    assert float(rows[2]["mlm/diag/mlm_gain_nats"]) == 0.01 and float(rows[0]["wall_s"]) == 240.0
    assert rows[0]["mlm/band_pretrain_seeds_min"] and rows[5]["in_series"] == "False"
    data = json.loads(history_trend.to_json(judged, baseline, str(BASELINE)))
    assert data["baseline"]["config_digest"] == records[0]["config_digest"]
    assert [r["failures"] for r in data["records"]][2] == ["mlm/diag/mlm_gain_nats", "mlm/margin", "mlm/score"]
    assert data["records"][5]["config_differences"] == ["budget 4e12 (run) vs 2e12 (baseline)"]
    assert history_trend.render(judged, baseline, str(BASELINE), "csv") == history_trend.to_csv(judged)
    with pytest.raises(BenchError, match="unknown history format"):
        history_trend.render(judged, baseline, str(BASELINE), "xml")


def test_the_committed_baseline_and_a_run_directory_are_inputs(tmp_path, base):
    records, got, path = history_trend.gather(None, [str(BASELINE), str(FIXTURE_RUN)])
    assert path == str(BASELINE) and got["source_run"] == FIXTURE_RUN.name
    assert [r["run_id"] for r in records] == [FIXTURE_RUN.name]
    store = tmp_path / "s.jsonl"
    history_store.append(store, history(base, 1)[0])
    records, _, _ = history_trend.gather(store, [str(FIXTURE_RUN)], BASELINE)
    assert [r["run_id"] for r in records] == ["ci-0", FIXTURE_RUN.name]  # the store's, then the runs given
    other = tmp_path / "other.json"
    other.write_text(BASELINE.read_text())
    with pytest.raises(BenchError, match="two baselines given"):
        history_trend.gather(store, [str(other)], BASELINE)
    with pytest.raises(BenchError, match="no history records"):
        history_trend.gather(None, [str(BASELINE)])
    with pytest.raises(BenchError, match="no such run directory"):
        history_trend.gather(None, [str(tmp_path / "absent")])
