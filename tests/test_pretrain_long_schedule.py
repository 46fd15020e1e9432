"""Issue 25, part 2: an absurd budget is one line and exit 2 before anything exists, and nothing the
trainer keeps grows with the schedule's length (a 1e21-FLOP budget of tiny used to build a set of every
log step: 18 GB within a minute, and the kernel's OOM killer at 1e30)."""

import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from electra_bench.cli import main
from electra_bench.errors import BenchError
from electra_bench.flops.budget import MAX_SCHEDULE_SHARE, MAX_SEQUENCES, check_length, make_plan
from electra_bench.pretrain.meters import LogSchedule

# a subprocess's data (heap and private writable mappings): a regression fails there, not on the machine;
# RLIMIT_DATA rather than RLIMIT_AS, which CUDA's address-space reservations would exceed
MEMORY_CAP = 4 << 30


def _capped():
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_CAP, MEMORY_CAP))


def _cli(*args, cwd):
    """The CLI in `cwd`, its data cache under `cwd` too: so "nothing created" covers the cache."""
    env = {**os.environ, "ELECTRA_BENCH_CACHE": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "electra_bench", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=env, preexec_fn=_capped)


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in stderr and len(lines) == 1 and lines[0].startswith("error:"), stderr
    return lines[0]


@pytest.mark.parametrize("budget", ["1e21", "1e30"])
def test_an_absurd_pretrain_budget_is_one_line_and_creates_nothing(tmp_path, budget):
    r = _cli("pretrain", "--preset", "tiny", "--objective", "mlm", "--budget", budget, "--out", tmp_path / "X",
             cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    line = _one_error_line(r.stderr)
    assert f"beyond the {MAX_SCHEDULE_SHARE:g}x limit" in line and "--allow-long-schedule" in line
    assert list(tmp_path.iterdir()) == []  # no --out, no results/, no data cache


def test_the_opt_in_lifts_the_share_limit_but_not_the_int64_counter(tmp_path):
    r = _cli("pretrain", "--preset", "tiny", "--objective", "mlm", "--budget", "1e30", "--out", tmp_path / "X",
             "--allow-long-schedule", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "int64 counter" in _one_error_line(r.stderr)
    assert list(tmp_path.iterdir()) == []
    # below the counter's limit the opt-in plans the run (a dry run: nothing is trained)
    r = CliRunner().invoke(main, ["pretrain", "--preset", "tiny", "--objective", "mlm", "--budget", "1e21",
                                  "--allow-long-schedule", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["plan"]["total_steps"] > 10**11


def test_the_dry_run_plans_the_way_the_run_does():
    r = CliRunner().invoke(main, ["pretrain", "--preset", "tiny", "--objective", "rtd", "--budget", "1e21",
                                  "--dry-run"])
    assert r.exit_code == 2 and "--allow-long-schedule" in r.stderr


def test_the_limits_sit_exactly_at_their_bounds():
    check_length("mlm", MAX_SEQUENCES // 32, 32)
    with pytest.raises(BenchError, match="int64"):
        check_length("mlm", MAX_SEQUENCES // 32 + 1, 32)
    with pytest.raises(BenchError, match="int64"):
        make_plan("mlm", "paper", 2.0**64, 1.0, (1.0,), batch_size=1)
    r = CliRunner().invoke(main, ["pretrain", "--preset", "tiny", "--objective", "mlm", "--dry-run",
                                  "--budget", f"{100 * MAX_SCHEDULE_SHARE * 0.999:g}%"])
    assert r.exit_code == 0, r.output  # just under 1000x is allowed (with the note); just over is not
    r = CliRunner().invoke(main, ["pretrain", "--preset", "tiny", "--objective", "mlm", "--dry-run",
                                  "--budget", f"{100 * MAX_SCHEDULE_SHARE * 1.01:g}%"])
    assert r.exit_code == 2 and "1.01e+03 times the paper's full schedule" in r.stderr


@pytest.mark.parametrize("args", [["compare"], ["ablate", "--objectives", "mlm,rtd"], ["sweep"]])
def test_the_experiments_refuse_an_absurd_budget_before_anything_exists(tmp_path, args):
    r = CliRunner().invoke(main, [*args, "--budget", "1e21", "--results", str(tmp_path / "results")])
    assert r.exit_code == 2, r.output
    assert "--allow-long-schedule" in _one_error_line(r.stderr)
    assert not (tmp_path / "results").exists()


def test_log_steps_are_a_predicate_equal_to_the_old_set():
    for total, every in ((1, 10), (7, 3), (100, 10), (1000, 7), (33, 1)):
        plan = make_plan("mlm", "paper", total + 0.5, 1.0, (1 / 16, 0.25, 0.5, 1.0))
        diag = frozenset({1, total // 3 or 1})
        old = set(range(every, total + 1, every)) | set(plan.checkpoints.values()) | {total} | diag
        schedule = LogSchedule(plan, every, diag)
        assert {s for s in range(1, total + 1) if schedule.is_log_step(s)} == old


_STEPS = textwrap.dedent("""
    import resource, sys, tempfile
    import numpy as np, torch
    from electra_bench import presets
    from electra_bench.special_tokens import DEFAULT
    from electra_bench.flops.budget import make_plan
    from electra_bench.pretrain.trainer import TrainOptions, pretrain

    class Sequences:
        seq_len = 16
        def __init__(self, n):
            self.ids = np.random.default_rng(0).integers(5, 64, (n, 16))
        def __len__(self):
            return len(self.ids)
        def token_counts(self, vocab_size):
            return np.bincount(self.ids.ravel(), minlength=vocab_size)[:vocab_size]
        def batch(self, idx):
            x = torch.from_numpy(self.ids[idx])
            return {"input_ids": x, "segment_ids": torch.zeros_like(x), "attention_mask": torch.ones_like(x)}

    class Enough(Exception):
        pass

    def enough(step):
        if step == 3:
            raise Enough

    p = presets.resolve("tiny", presets.Overrides(seq_len=16, batch_size=4, vocab_size=64))
    total = int(sys.argv[1])
    plan = make_plan("rtd", "measured", total + 0.5, 1.0, p.schedule.checkpoint_fractions, batch_size=p.schedule.batch_size)
    opts = TrainOptions(device="cpu", quiet=True, log_every=10, heldout_batches=1, peak_flops=1e12,
                        after_step=(enough,))
    try:
        pretrain(p, plan, Sequences(64), Sequences(8), DEFAULT, tempfile.mkdtemp(), opts)
    except Enough:
        pass
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux
""")


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_memory_does_not_grow_with_the_schedule_length():
    # the same three steps of a schedule 10^6 and 10^8 steps long; a set of every 10th step of the longer
    # one alone is 10^7 ints (about 600 MB), so a structure that grows with the length cannot hide
    peak = {}
    for total in (10**6, 10**8):
        r = subprocess.run([sys.executable, "-c", _STEPS, str(total)], capture_output=True, text=True, timeout=300,
                           preexec_fn=_capped)
        assert r.returncode == 0, r.stderr
        peak[total] = int(r.stdout.split()[-1])
    assert abs(peak[10**8] - peak[10**6]) < 32 * 1024, peak  # KiB: within 32 MB


@pytest.mark.parametrize("args", [["pretrain", "--objective", "mlm", "--budget", "1e12"], ["compare", "--budget", "1e12"]])
def test_a_step_too_big_for_memory_is_refused_before_the_schedule_is_counted(tmp_path, monkeypatch, args):
    # the schedule check counts FLOPs with a forward at the preset's shapes: at --seq-len 100000 that took
    # 11 minutes before the memory check said its line (the paper's formula, which the limits are first
    # checked on, is arithmetic: it may run)
    from electra_bench.pretrain import schedule

    counted = schedule.step_flops

    def no_measured_count(preset, objective, convention="measured"):
        if convention == "measured":
            raise AssertionError("FLOPs counted before the memory check")
        return counted(preset, objective, convention)

    monkeypatch.setattr(schedule, "step_flops", no_measured_count)
    r = CliRunner().invoke(main, [*args, "--seq-len", "100000", "--results" if args[0] == "compare" else "--out",
                                  str(tmp_path / "x")])
    assert r.exit_code == 2, r.output
    assert "lower --seq-len" in _one_error_line(r.stderr)
    assert not (tmp_path / "x").exists()
