"""`--dry-run` on compare, ablate and sweep prints the job graph and its sizing, runs nothing and creates
nothing; bad scheduling options are one line. Fast: planning needs no data."""

import json

import pytest
import torch
from click.testing import CliRunner

from electra_bench.cli import main


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def graph(*args, tmp_path):
    r = invoke(*args, "--dry-run", "--json", "--results", tmp_path / "results")
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "results").exists()  # nothing created
    return json.loads(r.stdout), r.stderr


def ids(plan, kind):
    return [j["id"] for j in plan["jobs"] if j["kind"] == kind]


def test_compare_quick_graph(tmp_path):
    plan, _ = graph("compare", "--quick", "--jobs", "2", tmp_path=tmp_path)
    assert ids(plan, "pretrain") == [f"pretrain/{o}/seed-{s}" for s in (0, 1) for o in ("mlm", "rtd")]
    scores = {j["id"]: j for j in plan["jobs"] if j["kind"] == "score"}
    assert len(scores) == 2 * (1 + 3 + 3)  # per pre-training seed: untrained + 3 checkpoints per objective
    assert scores["score/rtd/seed-1/frac-0.5000"]["deps"] == ["pretrain/rtd/seed-1"]
    assert scores["score/init/seed-0/frac-0.0000"]["deps"] == []
    assert [j["id"] for j in plan["jobs"]][0] == "prepare" and plan["jobs"][-1]["id"] == "summarise"
    assert all(j["flops"] > 0 for j in plan["jobs"] if j["kind"] in ("pretrain", "score"))
    assert plan["device_hours"] == pytest.approx(sum(j["device_hours"] for j in plan["jobs"]))
    assert 0 < plan["wall_hours"] < plan["device_hours"]  # two workers: shorter than one device doing all


def test_paper_scale_graph_is_sized_with_glue_sizes_when_the_data_is_elsewhere(tmp_path):
    plan, err = graph("compare", "--preset", "small", "--budget", "100%", "--convention", "paper", "--protocol",
                      "finetune", "--data", tmp_path / "glue", "--devices", "8", tmp_path=tmp_path)
    assert "sizing with GLUE's published split sizes" in err
    pre = {j["id"]: j for j in plan["jobs"] if j["kind"] == "pretrain"}
    assert set(pre) == {"pretrain/mlm/seed-0", "pretrain/rtd/seed-0"}
    assert 1.2e18 < pre["pretrain/rtd/seed-0"]["flops"] < 1.5e18  # the paper's ELECTRA-Small: 1.4e18
    scores = [j for j in plan["jobs"] if j["kind"] == "score"]
    assert {j["id"].rsplit("/", 1)[1] for j in scores} == {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte"}
    mnli = next(j for j in scores if j["id"].endswith("/mnli"))
    rte = next(j for j in scores if j["id"].endswith("/rte"))
    assert mnli["flops"] > 20 * rte["flops"]  # fine-tuning cost follows the task's size
    assert plan["devices"] == 8 and plan["wall_hours"] < plan["device_hours"]
    # small's measured speed (2-3% MFU at its paper batch) makes each pre-training run the critical path
    assert plan["speeds"]["pretrain/rtd"]["source"].startswith("measured on h200")
    assert plan["wall_hours"] >= max(j["device_hours"] for j in pre.values())
    assert plan["target"]["kind"] == "h100"
    if not torch.cuda.is_available():  # --devices 8 asks for GPUs: planned for the default kind, said so
        assert "none visible here" in plan["target"]["why"] and not plan["target"]["runs_here"]


def test_ablate_and_sweep_graphs(tmp_path):
    plan, _ = graph("ablate", "--quick", tmp_path=tmp_path)
    assert len(ids(plan, "pretrain")) == 5 and len(ids(plan, "score")) == 6  # final checkpoints + untrained
    plan, _ = graph("sweep", "--quick", "--generator-sizes", "0.25,0.5", tmp_path=tmp_path)
    assert ids(plan, "pretrain") == ["gen-0.25/pretrain/rtd/seed-0", "gen-0.5/pretrain/rtd/seed-0",
                                     "bert/pretrain/mlm/seed-0"]
    assert [i for i in ids(plan, "score") if "/init/" in i] == ["bert/score/init/seed-0/frac-0.0000"]


def test_a_cpu_plan_is_sized_at_the_speed_measured_here(tmp_path):
    """Issue 40: on a CPU machine the dry run sized the quick run for an H100 (`wall on 2 device(s):
    5.51e-06 h` for a run of 10 minutes). The jobs run on this CPU: each objective's step is timed here, at
    one worker's threads, and the hours follow from it."""
    r = invoke("compare", "--quick", "--jobs", "2", "--device", "cpu", "--dry-run", "--results", tmp_path / "results")
    assert r.exit_code == 0, r.output
    assert "pretrain/mlm/seed-0" in r.stdout and "wall on 2 CPU worker(s)" in r.stdout
    assert "target: this machine's CPU (--device cpu;" in r.stdout and "h100" not in r.stdout
    plan, _ = graph("compare", "--quick", "--jobs", "2", "--device", "cpu", tmp_path=tmp_path)
    assert plan["target"]["kind"] == "cpu" and plan["target"]["runs_here"] and plan["target"]["peak_flops"] is None
    for objective in ("mlm", "rtd"):
        speed = plan["speeds"][f"pretrain/{objective}"]
        assert speed["source"].startswith("measured here: ") and "on 1 thread(s)" in speed["source"]
        assert speed["mfu"] is None and 0 < speed["flops_per_s"] < 1e13  # a CPU core, not a GPU
    # 4 runs of 2e12 FLOPs on 2 single-thread workers: minutes, never the milliseconds of an H100
    assert plan["wall_hours"] > 1e-3
    pre = next(j for j in plan["jobs"] if j["id"] == "pretrain/rtd/seed-0")
    assert pre["device_hours"] == pytest.approx(pre["flops"] / plan["speeds"]["pretrain/rtd"]["flops_per_s"] / 3600)


def test_measuring_the_speed_here_leaves_threads_and_random_state_alone():
    from electra_bench import presets
    from electra_bench.pretrain import speed

    p = presets.get("tiny").with_knobs(batch_size=8, seq_len=32, vocab_size=300).for_objective("rtd")
    threads, state = torch.get_num_threads(), torch.get_rng_state()
    m = speed.measure(p, "rtd", threads=1)
    assert m.tokens_per_s > 0 and m.batch_size == 8 and m.threads == 1 and m.steps >= 1
    assert torch.get_num_threads() == threads and torch.equal(torch.get_rng_state(), state)
    assert speed.measure(p, "rtd", threads=1) is m  # once per process


def test_a_cluster_plan_typed_where_there_is_no_gpu_is_for_the_clusters_gpus(tmp_path, monkeypatch):
    """Issue 33: on a login node without GPUs this refused, because one base step "needs about 189 GiB, far
    more than the 21 GiB available on cpu". The jobs run on the cluster's GPUs: an h100 unless named (said
    so), its memory per process of the 8-GPU run, and base's measured speed (docs/performance.md)."""
    # planned away from the cluster: sinfo cannot answer (a local test cluster would refuse the GPU jobs)
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-cluster" / "slurm.conf"))
    args = ["compare", "--preset", "base", "--budget", "100%", "--devices", "64", "--gpus-per-run", "8",
            "--engine", "slurm"]
    plan, _ = graph(*args, tmp_path=tmp_path)
    target = plan["target"]
    assert plan["cluster"].startswith("not checked against a cluster (SLURM_CONF names ")
    assert target["kind"] == "h100" and "--engine slurm" in target["why"] and not target["runs_here"]
    assert target["memory_bytes"] == 80e9 and target["peak_flops"] == 989e12
    assert 2**30 < target["step_memory_bytes"]["rtd"] < 80e9  # bf16, a batch of 32 per GPU
    for objective, tokens_per_s in (("mlm", "423,301"), ("rtd", "287,067")):
        source = plan["speeds"][f"pretrain/{objective}"]["source"]
        assert source.startswith("measured on h200") and tokens_per_s in source and "docs/performance.md" in source
    assert plan["speeds"]["score"]["source"].startswith("assumed: 40% MFU")
    pre = {j["id"]: j for j in plan["jobs"] if j["kind"] == "pretrain"}
    assert pre["pretrain/mlm/seed-0"]["devices"] == 8
    # measured speeds: RTD's step is slower per token than MLM's, so its run takes longer at equal FLOPs
    assert pre["pretrain/rtd/seed-0"]["device_hours"] > pre["pretrain/mlm/seed-0"]["device_hours"]
    r = invoke(*args, "--dry-run", "--results", tmp_path / "results")
    assert r.exit_code == 0, r.output
    assert "target: h100 (assumed for --engine slurm): 80 GB of memory" in r.stdout
    assert "speed of pretrain/rtd" in r.stdout and "measured on h200" in r.stdout


def test_a_named_device_kind_sets_the_memory_and_the_speed(tmp_path):
    plan, _ = graph("compare", "--preset", "small", "--budget", "6.25%", "--device-kind", "h200", tmp_path=tmp_path)
    assert plan["target"]["kind"] == "h200" and plan["target"]["memory_bytes"] == 141e9
    source = plan["speeds"]["pretrain/mlm"]["source"]
    assert source.startswith("measured on this kind") and "363,693 tokens/s" in source  # small at 128 x 128
    flops_per_step = json.loads(invoke("pretrain", "--preset", "small", "--objective", "mlm", "--budget", "6.25%",
                                       "--dry-run", "--json").stdout)["plan"]["flops_per_step"]
    assert plan["speeds"]["pretrain/mlm"]["flops_per_s"] == pytest.approx(363_693 * flops_per_step / (128 * 128))
    a100, _ = graph("compare", "--preset", "small", "--budget", "6.25%", "--device-kind", "a100-80gb",
                    tmp_path=tmp_path)
    # carried over at the same share of the datasheet peak: 312 of 989 TFLOP/s
    assert a100["speeds"]["pretrain/mlm"]["flops_per_s"] == pytest.approx(
        plan["speeds"]["pretrain/mlm"]["flops_per_s"] * 312 / 989)
    assert "carried over" in a100["speeds"]["pretrain/mlm"]["source"]
    r = invoke("compare", "--preset", "base", "--budget", "1%", "--device-kind", "a100-40gb", "--batch-size", "4096",
               "--dry-run", "--results", tmp_path / "results")
    assert r.exit_code == 2 and "available on an a100-40gb (--device-kind" in r.stderr, r.output


@pytest.mark.parametrize("args, message", [
    (["--devices", "0,0"], "distinct GPU ids"),
    (["--devices", "0,1"], "not visible here"),
    (["--engine", "nope"], "Invalid value for '--engine'"),
    (["--jobs", "2", "--gpus-per-run", "4"], "--gpus-per-run 4: only 2 device"),
])
def test_bad_scheduling_options_are_one_line_and_create_nothing(tmp_path, args, message):
    r = invoke("compare", "--quick", "--results", tmp_path / "results", *args)
    assert r.exit_code == 2, r.output
    lines = [line for line in r.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], r.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
