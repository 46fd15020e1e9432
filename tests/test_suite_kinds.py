"""Issue 38: a suite's tasks name GLUE's kinds and the suite score is the mean over kinds, so three sentiment
tasks weigh as much as one paraphrase task; embedded suites are chosen by name (--suite), and ebs-2 stays what
a run without a task source means."""

import json
import subprocess
import sys

import pytest

from electra_bench.data import suite as suite_mod
from electra_bench.data.task_sources import load_tasks
from electra_bench.errors import BenchError
from electra_bench.score import glue_score
from test_data_glue import SUITE_TASKS, write_suite

KINDS = {"rt-polarity": "sentiment", "pairs": "paraphrase", "sim": "sentiment"}


def kinded_suite(root):
    return write_suite(root, [{**t, "kind": KINDS[t["name"]]} for t in SUITE_TASKS])


def test_the_suite_score_averages_kinds_then_tasks(tmp_path):
    tasks = {t.spec.name: t.spec for t in load_tasks(str(kinded_suite(tmp_path / "s")))}
    assert {n: s.kind for n, s in tasks.items()} == KINDS
    metrics = {"rt-polarity": {"accuracy": 80.0}, "pairs": {"accuracy": 50.0}, "sim": {"spearman": 20.0}}
    # sentiment (80 + 20) / 2 = 50, paraphrase 50: 50; the mean over tasks would be 50 too, so move one
    metrics["pairs"]["accuracy"] = 70.0
    assert glue_score.suite_score_detail(metrics, tasks).value == pytest.approx((50.0 + 70.0) / 2)
    plain = {n: {"primary_metric": s.primary} for n, s in tasks.items()}
    assert glue_score.suite_score_detail(metrics, plain).value == pytest.approx((80 + 70 + 20) / 3)


def test_a_bad_kind_is_refused_in_one_line(tmp_path):
    root = write_suite(tmp_path / "s", [{**SUITE_TASKS[0], "kind": ""}, *SUITE_TASKS[1:]])
    with pytest.raises(BenchError, match=r"suite.json: task 'rt-polarity': kind must be a non-empty string"):
        load_tasks(str(root))


def test_suites_by_name_and_the_legacy_default():
    assert suite_mod.suite_dir(None) == suite_mod.suite_dir("ebs-2")
    assert load_tasks(None)[0].source == load_tasks("ebs-2")[0].source
    with pytest.raises(BenchError, match=r"unknown suite 'ebs-9': the embedded suites are ebs-2, ebs-3"):
        suite_mod.suite_dir("ebs-9")


def test_suite_ebs2_is_the_run_without_a_source():
    from electra_bench.experiments.spec import CompareSpec

    kw = dict(preset=None, budget=None, quick=True, convention="measured", corpus=None, tasks=None, seeds=None,
              protocol=None, device="cpu")
    legacy, named = CompareSpec.resolve(source=None, **kw), CompareSpec.resolve(source="ebs-2", **kw)
    assert legacy.run_id() == named.run_id() == "compare-tiny-quick-dcf2017d"
    assert CompareSpec.resolve(source="ebs-3", **kw).run_id() != legacy.run_id()


def cli(*args):
    return subprocess.run([sys.executable, "-m", "electra_bench.cli", *args], capture_output=True, text=True)


def test_suite_and_data_together_are_refused(tmp_path):
    proc = cli("compare", "--quick", "--suite", "ebs-2", "--data", str(tmp_path), "--dry-run")
    assert proc.returncode != 0 and proc.stderr.strip() == \
        "error: --suite and --data both name the downstream tasks: give one"


def test_suites_lists_each_suite_with_its_kinds():
    proc = cli("suites", "--json")
    assert proc.returncode == 0, proc.stderr
    info = {s["name"]: s for s in json.loads(proc.stdout)}
    assert set(info) == {"ebs-2", "ebs-3"} and info["ebs-2"]["score"] == "mean over tasks"
    assert [t["name"] for t in info["ebs-2"]["tasks"]][0] == "rt-polarity"
    if info["ebs-3"]["installed"]:
        assert info["ebs-3"]["score"].startswith("mean over kinds") and len(info["ebs-3"]["kinds"]) >= 4
        assert all(t["kind"] for t in info["ebs-3"]["tasks"])
