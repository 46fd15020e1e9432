"""The CI history store: a compact record per run, appended under a lock, readable after a torn write,
alike configs recognised; and which commit a record names (git, CI variables, the caller)."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from electra_bench.store import locking
from electra_bench.errors import BenchError
from electra_bench.store import commit_info, runs as results
from electra_bench.ci import history_store, regression
from electra_bench.summarise import summary

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_RUN = ROOT / "tests" / "fixtures" / "runs" / "compare-tiny-quick-dcf2017d"
BASELINE = ROOT / "results" / "baselines" / "compare-quick.json"


@pytest.fixture(scope="module")
def fixture_record():
    return history_store.record_from_run(results.load_run(FIXTURE_RUN), cwd=ROOT, environ={})


def record(commit="c1", run_id="r", **metrics):
    """A minimal valid record."""
    cfg = {"preset": "tiny", "budget": "2e12"}
    m = {"mlm/score": 40.0, "rtd/score": 41.0, **metrics}
    return {"kind": history_store.KIND, "schema_version": 1, "commit": commit, "run_id": run_id, "config": cfg,
            "config_digest": history_store.config_digest(cfg), "metrics": m,
            "run_key": history_store.run_key(commit, run_id, None, m)}


def test_a_record_holds_what_ci_plots_without_the_run(fixture_record):
    rec = fixture_record
    # the committed quick run was made at 326eda2; its provenance names the commit, not this checkout's HEAD
    assert rec["commit"].startswith("326eda2") and rec["run_id"] == FIXTURE_RUN.name
    summary_metrics, _ = regression.final_metrics(summary.load_or_build(results.load_run(FIXTURE_RUN)))
    assert rec["metrics"] == summary_metrics
    assert rec["bands"]["mlm"]["band"] == "pretrain_seeds" and rec["bands"]["mlm"]["n_pretrain_seeds"] == 2
    lo, hi = rec["bands"]["mlm"]["pretrain_seeds"]
    assert lo < rec["metrics"]["mlm/score"] < hi and rec["bands"]["rtd"]["eval_seeds"] is not None
    assert rec["learned"] == {"mlm": True, "rtd": True} and rec["machine"]["cpu_count"] == 2
    assert rec["timings"] == {}  # the fixture keeps no history.jsonl: no wall time, and none invented
    assert rec["load"] is None or rec["load"]["minutes_after_run"] is None  # load now says nothing of that run
    assert len(json.dumps(rec)) < 5000
    # the committed baseline was written from this run: same config, so the same series
    baseline = regression.load_baseline(BASELINE)
    assert rec["config_digest"] == history_store.config_digest(baseline["config"])


def test_config_digest_treats_alike_configs_alike():
    a = {"preset": "tiny", "budget": "2e12", "tasks": ["b", "a"]}
    assert history_store.config_digest(a) == history_store.config_digest({**a, "budget": "2.0e12", "tasks": ["a", "b"]})
    assert history_store.config_digest(a) != history_store.config_digest({**a, "budget": "4e12"})
    assert history_store.config_digest(a) != history_store.config_digest({**a, "overrides": {"temperature": 1.0}})


def test_append_keeps_order_and_skips_the_same_run_twice(tmp_path):
    store = tmp_path / "ci" / "history.jsonl"
    assert history_store.append(store, record("c1"))
    assert history_store.append(store, record("c2"))
    assert not history_store.append(store, record("c1"))  # the same run for the same commit: once
    assert history_store.append(store, record("c1", run_id="rerun"))  # a CI job re-run is a new record
    assert [(r["commit"], r["run_id"]) for r in history_store.read(store)] == [("c1", "r"), ("c2", "r"), ("c1", "rerun")]
    assert store.read_text().count("\n") == 3


def test_a_torn_last_line_is_skipped_with_a_warning_and_dropped_by_the_next_append(tmp_path, capsys):
    store = tmp_path / "history.jsonl"
    history_store.append(store, record("c1"))
    with open(store, "a") as f:
        f.write(json.dumps(record("c2"))[:50])  # a writer killed mid-line
    with pytest.warns(UserWarning, match=r"history.jsonl:2: skipped a torn last line"):
        assert [r["commit"] for r in history_store.read(store)] == ["c1"]
    history_store.append(store, record("c3"))
    assert "dropped a torn last line" in capsys.readouterr().err
    assert [r["commit"] for r in history_store.read(store)] == ["c1", "c3"]
    assert all(json.loads(line) for line in store.read_text().splitlines())


@pytest.mark.parametrize("line, message", [
    ("{not json", r"history.jsonl:2: malformed history line"),
    ('{"kind": "something else"}', r"history.jsonl:2: not an electra-bench history record"),
    (json.dumps({**record(), "schema_version": 9}), r"history.jsonl:2: history record schema_version 9"),
    (json.dumps({**record(), "metrics": {"mlm/score": "high"}}), r"history.jsonl:2: history metric 'mlm/score'"),
])
def test_a_bad_line_inside_the_store_names_file_and_line(tmp_path, line, message):
    store = tmp_path / "history.jsonl"
    store.write_text(json.dumps(record("c1")) + "\n" + line + "\n" + json.dumps(record("c3")) + "\n")
    with pytest.raises(BenchError, match=message):
        history_store.read(store)


def test_a_missing_store_says_how_to_start_one(tmp_path):
    with pytest.raises(BenchError, match="history store not found .*history add RUN --store"):
        history_store.read(tmp_path / "none.jsonl")


def test_a_writer_waits_for_the_lock_and_gives_up_with_one_line(tmp_path):
    store = tmp_path / "history.jsonl"
    with locking.exclusive_file(store, "test"):
        with pytest.raises(BenchError, match="stayed locked by another process"):
            history_store.append(store, record("c1"), timeout_s=0.2)
        done = []
        t = threading.Thread(target=lambda: done.append(history_store.append(store, record("c2"))))
        t.start()
        t.join(0.3)
        assert store.read_text() == ""  # waiting, not writing, while another holds the lock
    t.join()
    assert done == [True] and [r["commit"] for r in history_store.read(store)] == ["c2"]


APPENDER = """
import json, sys
from electra_bench.ci import history_store
store, who = sys.argv[1], sys.argv[2]
rec = json.loads(sys.argv[3])
for i in range(20):
    r = dict(rec, commit=f"{who}-{i}", run_id=f"run-{who}", note="x" * 3000)
    r["run_key"] = history_store.run_key(r["commit"], r["run_id"], None, r["metrics"])
    history_store.append(store, r)
    history_store.append(store, rec)  # every process also appends the one shared record
"""


def test_concurrent_appends_from_four_processes_lose_and_duplicate_nothing(tmp_path):
    store = tmp_path / "history.jsonl"
    shared = json.dumps(record("shared"))
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(store), f"p{k}", shared], env=env,
                              stderr=subprocess.PIPE, text=True) for k in range(4)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    recs = history_store.read(store)
    commits = [r["commit"] for r in recs]
    assert len(recs) == 81 and commits.count("shared") == 1
    assert sorted(c for c in commits if c != "shared") == sorted(f"p{k}-{i}" for k in range(4) for i in range(20))
    for k in range(4):  # each writer's records in its own order
        own = [c for c in commits if c.startswith(f"p{k}-")]
        assert own == [f"p{k}-{i}" for i in range(20)]


# -- which commit ------------------------------------------------------------------------------------

def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q", "-b", "feature")
    for i in range(2):
        (tmp_path / "f").write_text(str(i))
        _git(tmp_path, "add", "f")
        _git(tmp_path, "commit", "-q", "-m", f"c{i}", "--date", "2026-01-0{}T10:00:00+00:00".format(i + 1))
    return tmp_path


def test_commit_parent_branch_and_date_come_from_git(repo):
    head = commit_info.git(["rev-parse", "HEAD"], repo)
    parent = commit_info.git(["rev-parse", "HEAD^"], repo)
    got = commit_info.resolve(cwd=repo, environ={})
    assert got["commit"] == head and got["parent"] == parent and got["branch"] == "feature"
    assert got["date"] and commit_info.parse_date(got["date"]) is not None
    # the run's own commit wins over this checkout's HEAD; a short id becomes the full one
    older = commit_info.resolve(run_commit=parent[:8], cwd=repo, environ={})
    assert older["commit"] == parent and older["parent"] is None and older["branch"] is None


def test_ci_variables_and_the_caller_fill_what_git_cannot(tmp_path):
    env = {"GITHUB_SHA": "abc123", "GITHUB_HEAD_REF": "my-pr", "GITHUB_REF_NAME": "42/merge"}
    got = commit_info.resolve(cwd=tmp_path, environ=env)  # no git checkout here
    assert got == {"commit": "abc123", "parent": None, "branch": "my-pr", "date": None}
    got = commit_info.resolve(commit="x1", parent="x0", branch="b", date="2026-12-04", cwd=tmp_path, environ=env)
    assert got == {"commit": "x1", "parent": "x0", "branch": "b", "date": "2026-12-04"}
    assert commit_info.resolve(cwd=tmp_path, environ={})["commit"] == "unknown"
