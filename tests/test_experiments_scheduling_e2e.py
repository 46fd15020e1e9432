"""compare through the job graph's engines gives the same numbers as one process (slow: real runs at a
micro preset). The reference is the inline run (--jobs 1: every job in this process, one after another);
then 2 pinned worker processes with one worker killed mid pre-training (the scheduler retries its job,
which resumes from the run's last saved state), and submitit's local executor (each job its own process,
as on a cluster node). Scores, checkpoints and logs must match bit for bit (timing fields aside)."""

import dataclasses
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from test_experiments_orchestration import _micro_spec

from electra_bench.experiments.compare import run_compare
from electra_bench.store.layout import RunLayout

TIMING = {"tokens_per_s", "mfu", "wall_s", "elapsed_s", "seconds", "peak_flops"}


def final_files(run: Path) -> dict:
    """What a finished run holds that must not depend on how it was scheduled."""
    layout = RunLayout(run)
    scores = sorted(json.dumps(json.loads(line), sort_keys=True) for line in layout.scores.read_text().splitlines())
    weights, logs = {}, {}
    for o in ("mlm", "rtd"):
        pre = layout.pretrain(o, 0)
        for f in sorted(pre.checkpoints.iterdir()):
            weights[f"{o}/{f.name}"] = (f / "model.safetensors").read_bytes()
        logs[o] = [{k: v for k, v in json.loads(line).items() if k not in TIMING}
                   for line in pre.log.read_text().splitlines()]
    return {"scores": scores, "weights": weights, "logs": logs}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, word_corpus):
    spec = _micro_spec(word_corpus, steps=96)
    root = tmp_path_factory.mktemp("inline") / "results"
    run_compare(spec, root, None, quiet=True)
    return spec, final_files(root / spec.run_id())


def _kill_a_worker_after_its_first_checkpoint(pretrain: Path, killed: list) -> None:
    """Wait for the first checkpoint of this pre-training run, then SIGKILL the worker that writes it
    (its pid is in the directory's lock file)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if (pretrain / "checkpoints" / "frac-0.2500").is_dir() and (pretrain / ".lock").is_file():
            try:
                pid = int((pretrain / ".lock").read_text().strip())
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            except (ValueError, ProcessLookupError, FileNotFoundError):
                pass
        time.sleep(0.02)


@pytest.mark.slow
def test_two_workers_with_one_killed_mid_run_match_the_inline_run(reference, tmp_path):
    spec, expected = reference
    spec = dataclasses.replace(spec, jobs=2)
    root = tmp_path / "results"
    run = root / spec.run_id()
    killed: list = []
    watcher = threading.Thread(target=_kill_a_worker_after_its_first_checkpoint,
                               args=(RunLayout(run).pretrain("mlm", 0).root, killed), daemon=True)
    watcher.start()
    run_compare(spec, root, None, quiet=True)
    watcher.join(timeout=5)
    assert killed and killed[0] != os.getpid(), "the worker was never killed: the test did not test the retry"
    assert final_files(run) == expected
    # and a rerun afterwards changes nothing
    run_compare(spec, root, None, quiet=True)
    assert final_files(run) == expected


@pytest.mark.slow
def test_submitit_local_engine_matches_the_inline_run(reference, tmp_path):
    pytest.importorskip("submitit")
    spec, expected = reference
    spec = dataclasses.replace(spec, jobs=2, engine="submitit-local")
    root = tmp_path / "results"
    run_compare(spec, root, None, quiet=True)
    assert final_files(root / spec.run_id()) == expected
    assert list((root / spec.run_id() / "cluster").iterdir())  # submitit's job folders live with the run


@pytest.mark.slow
def test_a_pretraining_job_over_two_slots_is_one_ddp_run(tmp_path, word_corpus):
    """--gpus-per-run 2 on CPU slots: the job holds both workers' slots and runs torchrun with 2 ranks (gloo)."""
    from electra_bench.experiments.jobs import Job, PoolEngine, run_graph
    from electra_bench.experiments.work import ddp_pretrain_job, prepare

    spec = dataclasses.replace(_micro_spec(word_corpus, steps=8), device="cpu")
    prepare(spec)  # the data cache, once, before two ranks read it
    out = tmp_path / "ddp"
    seen = []
    run_graph([Job("pretrain/mlm/seed-0", "pretrain", (ddp_pretrain_job, spec, "mlm", 0, str(out), True, 2),
                   devices=2, on_result=seen.append)], PoolEngine("cpu", ["cpu0", "cpu1"]))
    done = json.loads((out / "done.json").read_text())
    assert done["world_size"] == 2 and seen[0][:2] == ("mlm", 0)
    assert (out / "checkpoints" / "frac-1.0000" / "model.safetensors").is_file()
