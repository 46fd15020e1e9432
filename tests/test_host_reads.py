"""The training step never reads a tensor back to the host between log steps (issue 32): on CUDA such a
read waits for the device, so a step that has one cannot run ahead of it (or be captured in a CUDA graph).
Counted with a TorchDispatchMode around `trainer.pretrain` for every objective and generator variant: the
ops that read a value back (`.item()`, `bool(tensor)`, data-dependent shapes) per step, between the
`after_step` hooks. Log steps read the metrics on purpose (and the non-finite-loss flag there)."""

import collections
import dataclasses

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from electra_bench import presets
from electra_bench.special_tokens import DEFAULT as SP
from electra_bench.training import trainer
from electra_bench.training.budget import make_plan

# ops that hand a device value to the host, or whose output shape depends on the data
READS = {"aten._local_scalar_dense", "aten.item", "aten.is_nonzero", "aten.nonzero", "aten.masked_select",
         "aten.equal", "aten.unique", "aten._unique2", "aten.repeat_interleave"}


class ReadCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.step = 0
        self.reads: collections.Counter = collections.Counter()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket._qualified_op_name.replace("::", ".")
        self.ops[self.step] += 1
        if name in READS:
            self.reads[(self.step, name)] += 1
        return func(*args, **(kwargs or {}))

    def after_step(self, done: int) -> None:
        self.step = done


CASES = {
    "mlm": ("mlm", {}), "rtd": ("rtd", {}), "rtd-15": ("rtd-15", {}), "replace-mlm": ("replace-mlm", {}),
    "alltokens-mlm": ("alltokens-mlm", {}), "uniform-generator": ("rtd", {"uniform_generator": True}),
    "gdes": ("rtd", {"embedding_sharing": "gdes"}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_host_read_between_log_steps(case, tmp_path, synthetic):
    objective, knobs = CASES[case]
    p = presets.get("tiny").for_objective(objective)
    p = dataclasses.replace(p, encoder=dataclasses.replace(p.encoder, num_layers=1), batch_size=8, seq_len=32,
                            **knobs)
    plan = make_plan(objective, "measured", 12.5e9, 1e9, (1.0,))
    counter = ReadCounter()
    opts = trainer.TrainOptions(quiet=True, log_every=5, peak_flops=1e11, diagnostics_every=0,
                                save_interval_s=1e9, after_step=(counter.after_step,))
    with counter:
        trainer.pretrain(p, plan, synthetic(64, 32, 2048), None, SP, tmp_path, opts)
    log_steps = {s for s in range(1, plan.total_steps + 1) if s % 5 == 0 or s == plan.total_steps}
    # reads attributed to the step that was running (counter.step = steps finished before it)
    in_steps = {(s + 1, name): n for (s, name), n in counter.reads.items() if 0 < s + 1 <= plan.total_steps}
    between = {k: n for k, n in in_steps.items() if k[0] not in log_steps and k[0] > 1}
    assert plan.total_steps == 12 and between == {}, between
    assert any(s in log_steps for s, _ in in_steps)  # the log steps do read: the counter sees reads
    assert counter.ops[5] > 50  # and it saw the steps' ops at all
