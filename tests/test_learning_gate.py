"""The CI gate fails when learning breaks: a baseline from a real run, then `check` on a run whose MLM
is trained on shuffled labels (it can learn token frequencies, nothing else). Slow: two small runs."""

import json

import pytest
import torch
from click.testing import CliRunner

from electra_bench.objectives import mlm as mlm_objective
from electra_bench.cli import main
from electra_bench.experiments.compare import CompareSpec, run_compare
from electra_bench.ci.regression import write_baseline, score_tolerances
from electra_bench.store.runs import load_run

ARGS = dict(preset=None, budget="6e11", quick=True, convention="measured", corpus=None, source=None,
            tasks=["rt-polarity"], seeds=2, protocol="probe", device="cpu", pretrain_seeds=1, jobs=1, threads=1)


def _run(root, run_id):
    spec = CompareSpec.resolve(**ARGS)
    run_compare(spec, root, run_id, quiet=True)
    return root / run_id


@pytest.mark.slow
def test_check_fails_on_shuffled_labels_and_passes_on_the_real_objective(tmp_path, monkeypatch):
    real = _run(tmp_path, "real")
    baseline = tmp_path / "baseline.json"
    write_baseline(load_run(real), baseline, tol=score_tolerances(2.0))
    assert json.loads(baseline.read_text())["metrics"]["mlm/diag/mlm_gain_nats"] > 0.15

    runner = CliRunner()
    ok = runner.invoke(main, ["check", str(real), "--baseline", str(baseline)])
    assert ok.exit_code == 0, ok.output

    original = mlm_objective.weighted_mlm

    def shuffled(logits, labels, weights):
        perm = torch.randperm(labels.numel(), generator=torch.Generator().manual_seed(0))
        return original(logits, labels.flatten()[perm].view_as(labels), weights)

    monkeypatch.setattr(mlm_objective, "weighted_mlm", shuffled)
    broken = _run(tmp_path, "broken")
    bad = runner.invoke(main, ["check", str(broken), "--baseline", str(baseline)])
    assert bad.exit_code == 1, bad.output
    assert "mlm/diag/mlm_gain_nats" in bad.output and "regressed" in bad.output


def test_an_inline_compare_job_leaves_the_callers_threads_alone():
    """compare --jobs 1 runs its jobs in the caller's process: their thread caps must not leak (a leaked
    torch.set_num_threads(1) once made a later in-process training differ from a 2-thread subprocess)."""
    from electra_bench.experiments.work import thread_limits as _threads

    before = torch.get_num_threads()
    with _threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
