"""The training step never reads a tensor back to the host between log steps (issue 32): on CUDA such a
read waits for the device, so a step that has one cannot run ahead of it (or be captured in a CUDA graph).
Counted with a TorchDispatchMode around `trainer.pretrain` for every objective and generator variant: the
ops that read a value back (`.item()`, `bool(tensor)`, data-dependent shapes) per step, between the
`after_step` hooks. Log steps read the metrics on purpose (and the non-finite-loss flag there)."""

import collections

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from electra_bench import presets
from electra_bench.special_tokens import DEFAULT as SP
from electra_bench.pretrain import meters, trainer
from electra_bench.flops.budget import make_plan

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
    "temperature-warmup": ("rtd", {"rtd_temperature_warmup": (3.0, 0.25, 0.75)}),
}


@pytest.fixture
def bypassing_reads(monkeypatch):
    """On CPU `Tensor.tolist()` and `Tensor.numpy()` read without dispatching an op (on CUDA they copy to the
    host, a sync): counted here by wrapping them, into the ReadCounter the test names. The data source's own
    host batch is exempt (its padding flag is read with numpy on purpose: host memory, no device). The exempt
    tensors are kept alive: a freed one's id can be reused by a step's tensor, whose read would then go
    uncounted (seen once in CI: a `.tolist()` on the loss missed at one step)."""
    state = {"counter": None, "host": {}}
    for name in ("tolist", "numpy"):
        real = getattr(torch.Tensor, name)

        def counted(t, *a, _real=real, _name=name, **k):
            c = state["counter"]
            if c is not None and id(t) not in state["host"]:
                c.reads[(c.step, f"Tensor.{_name}")] += 1
            return _real(t, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, counted)

    def watch(counter: "ReadCounter", data):
        state["counter"] = counter
        real_batch = data.batch

        def batch(idx):
            out = real_batch(idx)
            state["host"].update((id(t), t) for t in out.values())
            return out

        data.batch = batch
        return data

    return watch


@pytest.mark.parametrize("case", list(CASES))
def test_no_host_read_between_log_steps(case, tmp_path, synthetic, bypassing_reads):
    objective, knobs = CASES[case]
    p = presets.get("tiny").for_objective(objective)
    p = p.with_knobs(num_layers=1, batch_size=8, seq_len=32, **knobs)
    plan = make_plan(objective, "measured", 12.5e9, 1e9, (1.0,))
    counter = ReadCounter()
    opts = trainer.TrainOptions(quiet=True, log_every=5, peak_flops=1e11, diagnostics_every=0,
                                save_interval_s=1e9, after_step=(counter.after_step,))
    data = bypassing_reads(counter, synthetic(64, 32, 2048))
    with counter:
        trainer.pretrain(p, plan, data, None, SP, tmp_path, opts)
    log_steps = {s for s in range(1, plan.total_steps + 1) if s % 5 == 0 or s == plan.total_steps}
    # reads attributed to the step that was running (counter.step = steps finished before it)
    in_steps = {(s + 1, name): n for (s, name), n in counter.reads.items() if 0 < s + 1 <= plan.total_steps}
    between = {k: n for k, n in in_steps.items() if k[0] not in log_steps and k[0] > 1}
    assert plan.total_steps == 12 and between == {}, between
    assert any(s in log_steps for s, _ in in_steps)  # the log steps do read: the counter sees reads
    assert counter.ops[5] > 50  # and it saw the steps' ops at all
    # a log step waits for the device twice: the non-finite flag, then all its metrics in one read (step 12,
    # the last, also saves the checkpoint, which reads every weight)
    for s in (5, 10):
        assert sum(n for (t, _), n in in_steps.items() if t == s) <= 2, {k: n for k, n in in_steps.items() if k[0] == s}


@pytest.mark.parametrize("read", ["item", "tolist"])
def test_the_count_sees_a_read_in_the_step(read, tmp_path, synthetic, bypassing_reads, monkeypatch):
    """The count is not blind: a `.item()` (dispatched) or a `.tolist()` (not dispatched on CPU) slipped into
    every step shows up between the log steps."""
    real = meters.FiniteLoss.add
    monkeypatch.setattr(meters.FiniteLoss, "add", lambda self, loss: (real(self, loss), getattr(loss, read)())[0])
    p = presets.get("tiny").for_objective("mlm")
    p = p.with_knobs(num_layers=1, batch_size=8, seq_len=32)
    plan = make_plan("mlm", "measured", 6.5e9, 1e9, (1.0,))
    counter = ReadCounter()
    data = bypassing_reads(counter, synthetic(64, 32, 2048))
    with counter:
        trainer.pretrain(p, plan, data, None, SP, tmp_path, trainer.TrainOptions(
            quiet=True, log_every=5, peak_flops=1e11, diagnostics_every=0, save_interval_s=1e9,
            after_step=(counter.after_step,)))
    name = "aten._local_scalar_dense" if read == "item" else "Tensor.tolist"
    assert all(counter.reads[(s, name)] == 1 for s in (1, 2, 3)), dict(counter.reads)
