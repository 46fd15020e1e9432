"""The run directory store: create, reuse, refuse, lock, concurrent ids, validated rows."""

import json
import multiprocessing as mp
import os

import pytest

from electra_bench.errors import BenchError
from electra_bench.store import runs as results

CONFIG = {"preset": "tiny", "budget": 1e13, "tasks": ["sst2", "rte"], "seeds": [0, 1]}


def row(**kw):
    base = dict(objective="rtd", fraction=0.5, step=100, train_flops=5e12, convention="measured", task="sst2",
                seed=0, metric="accuracy", value=80.0, protocol="finetune")
    base.update(kw)
    return base


def test_create_writes_config_and_reuses_same_config(tmp_path):
    with results.open_run(tmp_path, "r1", CONFIG) as run:
        assert run.path == tmp_path / "r1"
        assert json.loads((run.path / "config.json").read_text()) == json.loads(json.dumps(CONFIG))
        run.append_scores([row(), row(seed=1, value=81.0)])
    # same config (tuples and lists compare equal after JSON) -> the same run, with its scores
    with results.open_run(tmp_path, "r1", {**CONFIG, "tasks": ("sst2", "rte")}) as again:
        assert len(again.scores()) == 2
        assert again.has_score("rtd", 0.5, "sst2", 1, "finetune")
        assert not again.has_score("rtd", 0.5, "sst2", 2, "finetune")
        assert not again.has_score("mlm", 0.5, "sst2", 0, "finetune")
        assert not again.has_score("rtd", 0.5, "sst2", 0, "probe")


def test_different_config_is_refused(tmp_path):
    results.open_run(tmp_path, "r1", CONFIG).close()
    with pytest.raises(BenchError, match="different config.*budget"):
        results.open_run(tmp_path, "r1", {**CONFIG, "budget": 2e13})
    # the refused open released its lock
    results.open_run(tmp_path, "r1", CONFIG).close()


def test_create_false_needs_an_existing_run(tmp_path):
    with pytest.raises(BenchError, match="no such run"):
        results.open_run(tmp_path, "nope", CONFIG, create=False)


def test_invalid_run_id(tmp_path):
    for bad in ("", "../x", "a/b", ".hidden"):
        with pytest.raises(BenchError):
            results.open_run(tmp_path, bad, CONFIG)


def _hold_lock(root, run_id, ready, release):
    with results.open_run(root, run_id, CONFIG):
        ready.set()
        release.wait(30)


def test_lock_contention_from_a_second_process(tmp_path):
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_lock, args=(str(tmp_path), "r1", ready, release))
    proc.start()
    try:
        assert ready.wait(60), "child never took the lock"
        with pytest.raises(BenchError, match=rf"run r1 is being written by another process \(pid {proc.pid}\)"):
            results.open_run(tmp_path, "r1", CONFIG)
        # readers need no lock
        assert results.load_run(tmp_path / "r1").scores().empty
    finally:
        release.set()
        proc.join(60)
    assert proc.exitcode == 0
    results.open_run(tmp_path, "r1", CONFIG).close()


def _make_runs(root, n, start, out):
    start.wait(30)
    ids = []
    for _ in range(n):
        run_id = results.new_run_id("ci", root)
        results.open_run(root, run_id, {"pid": os.getpid()}).close()
        ids.append(run_id)
    out.put(ids)


def test_two_processes_creating_runs_get_distinct_ids(tmp_path):
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_make_runs, args=(str(tmp_path), 15, start, out)) for _ in range(2)]
    for p in procs:
        p.start()
    start.set()
    ids = out.get(timeout=60) + out.get(timeout=60)
    for p in procs:
        p.join(60)
    assert len(ids) == 30 and len(set(ids)) == 30
    assert all((tmp_path / i / "config.json").exists() for i in ids)


def test_new_run_id_format():
    a, b = results.new_run_id("x"), results.new_run_id("x")
    assert a != b and a.startswith("x-")
    with pytest.raises(BenchError):
        results.new_run_id("bad/prefix")


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"value": None}, "value"),
        ({"objective": "bert"}, "objective"),
        ({"convention": "guess"}, "convention"),
        ({"protocol": "oneshot"}, "protocol"),
        ({"seed": 1.5}, "seed"),
        ({"value": float("nan")}, "finite"),
        ({"task": ""}, "task"),
        ({"fraction": 0.0}, "fraction > 0"),
        ({"objective": "init", "fraction": 0.0, "step": 0, "train_flops": 1.0}, "init"),
        ({"extra": 1}, "unknown extra"),
    ],
)
def test_append_scores_validates_rows(tmp_path, bad, match):
    with results.open_run(tmp_path, "r1", CONFIG) as run:
        with pytest.raises(BenchError, match=match):
            run.append_scores([row(), row(**bad)])
        assert run.scores().empty  # nothing written when any row is bad


def test_missing_key(tmp_path):
    r = row()
    del r["metric"]
    with results.open_run(tmp_path, "r1", CONFIG) as run, pytest.raises(BenchError, match="missing metric"):
        run.append_scores([r])


def test_init_point_is_accepted(tmp_path):
    with results.open_run(tmp_path, "r1", CONFIG) as run:
        run.append_scores([row(objective="init", fraction=0, step=0, train_flops=0)])
        df = run.scores()
    assert list(df.columns) == list(results.SCORE_FIELDS)
    assert df.iloc[0]["objective"] == "init"


def test_load_run_is_read_only_and_checks_files(tmp_path):
    with results.open_run(tmp_path, "r1", CONFIG) as run:
        run.append_scores([row()])
    loaded = results.load_run(tmp_path / "r1")
    assert len(loaded.scores()) == 1
    with pytest.raises(BenchError, match="read-only"):
        loaded.append_scores([row()])
    with pytest.raises(BenchError, match="read-only"):
        loaded.write_summary({"schema_version": 1})
    with pytest.raises(BenchError, match="no such run directory"):
        results.load_run(tmp_path / "absent")
    (tmp_path / "r2").mkdir()
    with pytest.raises(BenchError, match="config.json"):
        results.load_run(tmp_path / "r2")
    (tmp_path / "r2" / "config.json").write_text('{"a": 1,\n oops}')
    with pytest.raises(BenchError, match=r"config.json:2"):
        results.load_run(tmp_path / "r2")


def test_torn_last_line_is_skipped_but_a_bad_middle_line_is_an_error(tmp_path):
    with results.open_run(tmp_path, "r1", CONFIG) as run:
        run.append_scores([row(), row(seed=1)])
    path = tmp_path / "r1" / "scores.jsonl"
    with open(path, "a") as f:
        f.write('{"objective": "rtd", "fra')  # a crash mid-append
    assert len(results.load_run(tmp_path / "r1").scores()) == 2
    lines = path.read_text().split("\n")
    path.write_text("\n".join([lines[0], "not json", lines[1]]) + "\n")
    with pytest.raises(BenchError, match=r"scores.jsonl:2"):
        results.load_run(tmp_path / "r1").scores()


def test_summary_and_provenance_round_trip(tmp_path):
    with results.open_run(tmp_path, "r1", CONFIG) as run:
        assert run.summary() is None
        run.write_summary({"schema_version": 1, "x": 1})
        run.write_provenance({"created_utc": "2026-01-01T00:00:00+00:00"})
        with pytest.raises(BenchError):
            run.write_summary({"x": 1})
    loaded = results.load_run(tmp_path / "r1")
    assert loaded.summary()["x"] == 1
    assert loaded.provenance()["created_utc"].startswith("2026")


def test_a_torn_last_line_is_dropped_before_the_next_append(tmp_path, capsys):
    from electra_bench.store.atomic_io import append_jsonl, read_jsonl

    path = tmp_path / "log.jsonl"
    append_jsonl(path, {"a": 1})
    with open(path, "a") as f:
        f.write('{"a": 2, "b"')  # a kill mid-write
    append_jsonl(path, {"a": 3})
    assert path.read_text() == '{"a": 1}\n{"a": 3}\n'
    assert read_jsonl(path) == [{"a": 1}, {"a": 3}]
    assert "dropped a torn last line" in capsys.readouterr().err


def test_more_pretraining_seeds_extend_a_run_and_fewer_are_refused(tmp_path):
    cfg = {"preset": "tiny", "budget": "1e12", "pretrain_seeds": 2}
    with results.open_run(tmp_path, "r", cfg) as run:
        run.append_scores([row()])
    assert results.runs_with_fewer_seeds(tmp_path, {**cfg, "pretrain_seeds": 4}) == ["r"]
    assert results.runs_with_fewer_seeds(tmp_path, {**cfg, "pretrain_seeds": 4, "budget": "2e12"}) == []
    with results.open_run(tmp_path, "r", {**cfg, "pretrain_seeds": 4}) as run:
        assert len(run.scores()) == 1 and run.config["pretrain_seeds"] == 4
    with pytest.raises(BenchError, match="different config"):
        results.open_run(tmp_path, "r", {**cfg, "pretrain_seeds": 3})
