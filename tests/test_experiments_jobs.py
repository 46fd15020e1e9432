"""The job graph's scheduler on toy jobs (fast): dependencies, resuming by `done`, a failure that stays
local, a lost worker retried, device pinning checked inside each worker, and the sizing simulation."""

import os

import pytest
from job_helpers import die_once as _die_once
from job_helpers import fail as _fail
from job_helpers import slot_after as _slot_after
from job_helpers import value as _value

from electra_bench.errors import BenchError
from electra_bench.experiments import sizing
from electra_bench.experiments.devices import parse_devices
from electra_bench.experiments.jobs import InlineEngine, Job, PoolEngine, check_graph, run_graph


def _log(order):
    return lambda value: order.append(value)


def test_dependencies_run_first_and_results_reach_the_parent():
    order = []
    jobs = [Job("b", "score", (_value, "b"), deps=("a",), on_result=_log(order)),
            Job("a", "pretrain", (_value, "a"), on_result=_log(order)),
            Job("c", "score", (_value, "c"), deps=("a", "b"), on_result=_log(order))]
    result = run_graph(jobs, InlineEngine())
    assert order == ["a", "b", "c"] and result.ran == ["a", "b", "c"]


def test_a_done_job_is_never_run_again():
    order = []
    jobs = [Job("a", "pretrain", (_value, "a"), done=lambda: True, on_result=_log(order)),
            Job("b", "score", (_value, "b"), deps=("a",), done=lambda: False, on_result=_log(order))]
    result = run_graph(jobs, InlineEngine())
    assert order == ["b"] and result.skipped == ["a"]


def test_a_failed_job_is_one_line_and_the_others_keep_their_results():
    order = []
    jobs = [Job("bad", "pretrain", (_fail, "disk on fire")),
            Job("after-bad", "score", (_value, "x"), deps=("bad",), on_result=_log(order)),
            Job("good", "pretrain", (_value, "good"), on_result=_log(order)),
            Job("after-good", "score", (_value, "ok"), deps=("good",), on_result=_log(order))]
    with pytest.raises(BenchError) as e:
        run_graph(jobs, InlineEngine())
    assert order == ["good", "ok"]  # independent jobs ran and stored their results
    msg = str(e.value)
    assert "\n" not in msg and "job bad failed: disk on fire" in msg and "1 job(s) waiting on them were not run" in msg


@pytest.mark.parametrize("jobs, message", [
    ([Job("a", "x", (_value, 1)), Job("a", "x", (_value, 2))], "listed twice"),
    ([Job("a", "x", (_value, 1), deps=("nope",))], "unknown nope"),
    ([Job("a", "x", (_value, 1), deps=("b",)), Job("b", "x", (_value, 1), deps=("a",))], "cycle"),
    ([Job("a", "x", (_value, 1), devices=3)], "needs 3 devices; only 2"),
])
def test_bad_graphs_are_refused(jobs, message):
    with pytest.raises(BenchError, match=message):
        check_graph(jobs, 2)


def test_each_worker_is_pinned_to_its_own_device_before_torch():
    """A fake device list (two GPU ids on a CPU machine): each worker sees its own id in
    CUDA_VISIBLE_DEVICES, set before anything imported torch; both run at once."""
    seen = []
    jobs = [Job(f"j{i}", "score", (_slot_after, 1.5), on_result=seen.append) for i in range(2)]
    engine = PoolEngine("cuda", ["3", "5"])
    run_graph(jobs, engine)
    assert sorted(s["cuda_visible_devices"] for s in seen) == ["3", "5"]
    assert sorted(s["slot"] for s in seen) == ["3", "5"]
    assert not any(s["torch_before_pin"] for s in seen)
    assert len({s["pid"] for s in seen}) == 2 and os.getpid() not in {s["pid"] for s in seen}


def test_a_job_over_two_devices_sees_both():
    seen = []
    run_graph([Job("ddp", "pretrain", (_slot_after, 0.0), devices=2, on_result=seen.append)],
              PoolEngine("cuda", ["0", "1"]))
    assert seen[0]["cuda_visible_devices"] == "0,1"


def test_a_killed_worker_is_retried_on_a_fresh_one(tmp_path):
    seen = []
    marker = str(tmp_path / "died")
    result = run_graph([Job("victim", "pretrain", (_die_once, marker), on_result=seen.append),
                        Job("other", "score", (_value, "x"), on_result=seen.append)], PoolEngine("cpu", ["cpu0", "cpu1"]))
    assert sorted(seen) == ["survived", "x"] and os.path.exists(marker) and not result.failed


def test_a_worker_that_dies_every_time_is_reported_in_one_line(tmp_path):
    with pytest.raises(BenchError, match=r"job victim failed: its worker process died .* on every attempt"):
        run_graph([Job("victim", "pretrain", (_die_once, str(tmp_path / "m")))], PoolEngine("cpu", ["cpu0"]), retries=0)


def test_devices_resolve_on_a_cpu_machine():
    assert parse_devices(None, "cpu", 2) == ("cpu", ["cpu0", "cpu1"])
    assert parse_devices("cpu", "auto", 3) == ("cpu", ["cpu0", "cpu1", "cpu2"])
    assert parse_devices("auto", "cuda:3", 1) == ("cuda", ["3"])
    with pytest.raises(BenchError, match="not visible here"):
        parse_devices("0,1", "auto", 1)
    with pytest.raises(BenchError, match="distinct GPU ids"):
        parse_devices("0,0", "auto", 1)


def test_the_simulated_wall_time_follows_devices_and_dependencies():
    hour = sizing.PEAK_FLOPS * sizing.MFU * 3600  # one device-hour of FLOPs
    jobs = [Job("p1", "pretrain", (_value, 0), flops=2 * hour), Job("p2", "pretrain", (_value, 0), flops=2 * hour),
            Job("s1", "score", (_value, 0), deps=("p1",), flops=hour),
            Job("s2", "score", (_value, 0), deps=("p2",), flops=hour)]
    assert sizing.simulate(jobs, 1) == pytest.approx(6)
    assert sizing.simulate(jobs, 2) == pytest.approx(3)
    assert sizing.simulate(jobs, 8) == pytest.approx(3)  # the chain p -> s bounds it
    wide = [Job("ddp", "pretrain", (_value, 0), devices=2, flops=2 * hour)]
    assert sizing.simulate(wide, 2) == pytest.approx(1)
    report = sizing.table(jobs, 2)
    assert report["device_hours"] == pytest.approx(6) and report["by_kind"]["score"]["jobs"] == 2
    assert "wall on 2 device(s): 3 h" in sizing.render(report)


def test_submitit_local_engine_pins_reports_and_retries(tmp_path, monkeypatch, capfd):
    """The cluster engine on submitit's local executor: each job its own process with its slot's GPU id in
    CUDA_VISIBLE_DEVICES (set by submitit before Python starts), a job's BenchError back as one line, and a
    job whose process was killed submitted again, which the driver says (which job, which attempt, why)."""
    pytest.importorskip("submitit")
    from electra_bench.experiments.cluster import ClusterEngine

    here = os.path.dirname(os.path.abspath(__file__))  # a job process imports job_helpers from here
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    seen = []
    engine = ClusterEngine("submitit-local", ["3", "5"], tmp_path / "cluster", gpus=True, threads=1)
    run_graph([Job(f"j{i}", "score", (_slot_after, 0.5), on_result=seen.append) for i in range(2)]
              + [Job("victim", "pretrain", (_die_once, str(tmp_path / "died")), on_result=seen.append)], engine)
    slots = sorted(s["cuda_visible_devices"] for s in seen if isinstance(s, dict))
    assert slots == ["3", "5"] and "survived" in seen
    said = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("warning: job victim lost attempt 1 of 2: ")]
    assert len(said) == 1 and "ended without a result" in said[0] and said[0].endswith("; running it again")
    with pytest.raises(BenchError, match="job bad failed: disk on fire"):
        run_graph([Job("bad", "pretrain", (_fail, "disk on fire"))],
                  ClusterEngine("submitit-local", ["cpu0"], tmp_path / "cluster2", gpus=False, threads=1))


def test_independent_calls_run_on_the_specs_engine(tmp_path):
    from electra_bench.experiments.graph import run_calls
    from electra_bench.experiments.spec import CompareSpec

    got = []
    result = run_calls(CompareSpec(preset="tiny", budget="1e12", device="cpu", jobs=2),
                       {"ref/a": (_slot_after, 0.0), "ref/b": (_slot_after, 0.0)}, got.append, tmp_path)
    assert sorted(result.ran) == ["ref/a", "ref/b"] and sorted(g["slot"] for g in got) == ["cpu0", "cpu1"]
