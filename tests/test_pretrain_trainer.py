import json
import os
import subprocess
import sys
import textwrap

import pytest
from safetensors.torch import load_file

from electra_bench import presets
from electra_bench.errors import BenchError
from electra_bench.special_tokens import DEFAULT
from electra_bench.flops.budget import make_plan
from electra_bench.pretrain.trainer import TrainOptions, pretrain

FRACS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)


def _preset(**kw):
    p = presets.get("tiny")
    return p.with_knobs(num_layers=1, vocab_size=300, batch_size=8, seq_len=32, **kw)


def _kill_after(step):
    """A fault hook: die like kill -9 right after `step` finishes (no cleanup, no flush)."""
    def hook(done):
        if done == step:
            os._exit(137)
    return (hook,)


def _run(tmp, synthetic, objective, steps=32, **opt):
    p = _preset()
    plan = make_plan(objective, "measured", steps * 1e9 + 5e8, 1e9, FRACS)
    opts = TrainOptions(quiet=True, log_every=4, save_every_steps=5, heldout_batches=1, peak_flops=1e11, **opt)
    return pretrain(p, plan, synthetic(64, 32, 300), synthetic(16, 32, 300, seed=1), DEFAULT, tmp, opts)


def _final_weights(path):
    return load_file(str(path / "checkpoints" / "frac-1.0000" / "model.safetensors"))


def _losses(path):
    return [(r["step"], r.get("loss"), r.get("diag/mlm_loss")) for r in map(json.loads, open(path / "log.jsonl"))]


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_budget_checkpoints_and_flops(tmp_path, synthetic, objective):
    s = _run(tmp_path, synthetic, objective)
    assert s["steps"] == 32 and s["train_flops"] == 32e9 <= s["budget"] < 33e9
    for f, expected_step in zip(FRACS, (2, 4, 8, 16, 32)):
        meta = json.loads((tmp_path / "checkpoints" / f"frac-{f:.4f}" / "checkpoint.json").read_text())
        assert meta["step"] == expected_step and meta["train_flops"] == expected_step * 1e9
    assert not (tmp_path / "state").exists()  # nothing resumable is left behind a finished run
    rows = list(map(json.loads, open(tmp_path / "log.jsonl")))
    assert rows[-1]["step"] == 32 and "diag/mlm_gain_nats" in rows[-1]
    assert max(r["flops"] for r in rows) <= s["budget"]


@pytest.mark.parametrize("objective", ["mlm", "rtd"])
def test_kill_and_resume_equals_uninterrupted(tmp_path, synthetic, objective):
    _run(tmp_path / "straight", synthetic, objective)
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {os.path.dirname(__file__)!r})
        from conftest import SyntheticSequences
        from test_pretrain_trainer import _run
        from test_pretrain_trainer import _kill_after
        _run(__import__('pathlib').Path({str(tmp_path / 'killed')!r}), SyntheticSequences, {objective!r},
             after_step=_kill_after(13))
    """)
    proc = subprocess.run([sys.executable, "-c", script])
    assert proc.returncode == 137  # died mid-run, after its state at step 10
    assert json.loads((tmp_path / "killed" / "state" / "latest.json").read_text())["step"] == 10
    _run(tmp_path / "killed", synthetic, objective)  # the same command again resumes
    a, b = _final_weights(tmp_path / "straight"), _final_weights(tmp_path / "killed")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert _losses(tmp_path / "straight") == _losses(tmp_path / "killed")


def test_a_finished_run_is_reused_and_a_different_one_refused(tmp_path, synthetic):
    s1 = _run(tmp_path, synthetic, "mlm", steps=8)
    assert _run(tmp_path, synthetic, "mlm", steps=8) == s1
    with pytest.raises(BenchError, match="already holds a different run"):
        _run(tmp_path, synthetic, "mlm", steps=9)


def test_mfu_never_exceeds_100_percent():
    """Issue 40: a peak measured at start-up while the machine was busy was too low, and the progress showed
    MFU 168-175%. A step rate above the peak measures the peak again (the higher one stands); a rate still
    above it reports no MFU rather than an impossible one."""
    from electra_bench.pretrain.meters import Throughput

    measured = []
    meter = Throughput(2048, 1e12, peak=1.0, remeasure=lambda: measured.append(1) or 1e30)  # 1 FLOP/s: far too low
    meter.tick()
    tokens_per_s, mfu = meter.read()
    assert tokens_per_s > 0 and measured == [1] and meter.peak == 1e30 and 0 < mfu <= 1.0
    meter.tick()
    assert meter.read()[1] <= 1.0 and measured == [1]  # a rate below the peak measures nothing again

    busy = Throughput(2048, 1e12, peak=1.0, remeasure=lambda: measured.append(1) or 2.0)  # busy again: still low
    for _ in range(Throughput.MAX_REMEASURES + 3):
        busy.tick()
        assert busy.read()[1] is None
    assert len(measured) == 1 + Throughput.MAX_REMEASURES and busy.peak == 2.0  # bounded cost


def test_a_declared_peak_below_the_achieved_rate_reports_no_mfu(tmp_path, synthetic):
    p = _preset()
    plan = make_plan("mlm", "measured", 8e9 + 5e8, 1e9, FRACS)
    pretrain(p, plan, synthetic(64, 32, 300), None, DEFAULT, tmp_path,
             TrainOptions(quiet=True, log_every=2, peak_flops=1.0))  # --peak-flops 1: below any real rate
    mfus = [r["mfu"] for r in map(json.loads, open(tmp_path / "log.jsonl")) if "mfu" in r]
    assert mfus and all(m is None for m in mfus)


def test_non_finite_loss_is_a_clear_error(tmp_path, synthetic):
    p = _preset(lr=1e30)
    plan = make_plan("mlm", "measured", 20e9, 1e9, FRACS)
    with pytest.raises(BenchError, match="non-finite mlm loss at step"):
        pretrain(p, plan, synthetic(64, 32, 300), None, DEFAULT, tmp_path,
                 TrainOptions(quiet=True, peak_flops=1e11, save_every_steps=1))


def test_two_process_gloo_ddp(tmp_path):
    """torchrun with 2 CPU processes: global batch kept (4 per rank), FLOPs summed, only rank 0 writes.
    Rank 1 looks at the run directory late, as a slow rank can; under --no-resume it must still see the
    directory as it was before the run, not the identity rank 0 has written meanwhile."""
    script = tmp_path / "ddp_run.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time, torch.distributed as dist
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from conftest import SyntheticSequences
        from test_pretrain_trainer import _run
        from electra_bench.pretrain import run_dir
        import pathlib
        check = run_dir.check_run_dir
        if os.environ["RANK"] == "1":
            run_dir.check_run_dir = lambda *a: (time.sleep(1.5), check(*a))[1]
        s = _run(pathlib.Path({str(tmp_path / 'ddp')!r}), SyntheticSequences, 'rtd', steps=12, resume=False)
        assert s['world_size'] == 2 and s['train_flops'] == 12e9, s
    """))
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517", str(script)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    steps = [r["step"] for r in map(json.loads, open(tmp_path / "ddp" / "log.jsonl"))]
    assert steps == sorted(set(steps)) and steps[-1] == 12  # one writer: no duplicated rows
    assert json.loads((tmp_path / "ddp" / "done.json").read_text())["world_size"] == 2


def test_an_incomplete_tokenizer_folder_is_saved_again(tmp_path):
    """A kill mid-save leaves tokenizer/ with only a temp file: the resume must notice and save it."""
    from electra_bench.data.tokenizer import Tokenizer
    from electra_bench.store.atomic_io import remove_stale_temp_files
    from electra_bench.pretrain.run_dir import ensure_tokenizer

    tok = Tokenizer.train(["the cat sat on the mat ."] * 20, 40)
    d = tmp_path / "tokenizer"
    d.mkdir()
    (d / ".vocab.txt.abc.tmp").write_text("partial")
    assert remove_stale_temp_files(tmp_path) == 1
    ensure_tokenizer(d, tok)
    assert Tokenizer.load(d).sha256 == tok.sha256
    assert not list(d.glob(".*.tmp"))
