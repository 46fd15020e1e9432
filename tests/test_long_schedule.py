"""Issue 25, part 2: nothing the trainer keeps grows with the schedule's length (a 1e21-FLOP budget of
tiny used to build a set of every log step: 18 GB within a minute, and the kernel's OOM killer at 1e30)."""

import resource
import subprocess
import sys
import textwrap

import pytest

from electra_bench.training.budget import make_plan
from electra_bench.training.trainer import _LogSchedule

MEMORY_CAP = 4 << 30  # address space for a subprocess: a regression fails there, not on the machine


def _capped():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def test_log_steps_are_a_predicate_equal_to_the_old_set():
    for total, every in ((1, 10), (7, 3), (100, 10), (1000, 7), (33, 1)):
        plan = make_plan("mlm", "paper", total + 0.5, 1.0, (1 / 16, 0.25, 0.5, 1.0))
        diag = frozenset({1, total // 3 or 1})
        old = set(range(every, total + 1, every)) | set(plan.checkpoints.values()) | {total} | diag
        schedule = _LogSchedule(plan, every, diag)
        assert {s for s in range(1, total + 1) if schedule.is_log_step(s)} == old


_STEPS = textwrap.dedent("""
    import resource, sys, tempfile
    import numpy as np, torch
    from electra_bench import presets
    from electra_bench.special_tokens import DEFAULT
    from electra_bench.training.budget import make_plan
    from electra_bench.training.trainer import TrainOptions, pretrain

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
    plan = make_plan("rtd", "measured", total + 0.5, 1.0, p.checkpoint_fractions)
    opts = TrainOptions(quiet=True, log_every=10, heldout_batches=1, peak_flops=1e12, after_step=(enough,))
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
