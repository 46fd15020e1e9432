"""`electra-bench pretrain` itself, profiled from the outside: where a steady-state step's host time goes, the
ops each phase dispatches and the device-to-host reads it makes.

    python benchmarks/profile_pretrain.py                          # tiny, mlm and rtd, the bundled corpus
    python benchmarks/profile_pretrain.py --objectives rtd --steps 80 --threads 1
    PYTHONPATH=/path/to/an/older/checkout python benchmarks/profile_pretrain.py   # the same table, before

benchmarks/profile_step.py times a copy of the loop body with a synchronize after each phase (device time on
a GPU). This one runs the real `training.trainer.pretrain`, untouched, on the preset's real data (prepared as
the CLI does), and wraps from the outside the functions the loop calls, where the trainer being profiled has
them (so it profiles older trainers too, for a before/after): the data order and the source's `batch`
(data), the padding check and the copy to the device, the seeds, the learning rate, the objective's
`draw_noise` (masking and sampling draws) and `compute` (forward), `zero_grad`, `Tensor.backward`,
`clip_grad_norm_`, the optimizer's `step`, the non-finite-loss flag, the log row (metric reads, rank mean,
JSON line, progress bar), the FLOP/throughput accounting and the checkpoint/stop checks. A phase's time is
its own (a wrapped call inside another is subtracted); "loop (the rest)" is the step's wall time less every
phase: autocast, the generator object, the loop's own Python.

Two passes per objective: one timed, one under a TorchDispatchMode counting the ops each phase dispatches
(on a GPU each is about one kernel launch) and its host reads (`_local_scalar_dense`, `item`, `is_nonzero`,
`nonzero`, `masked_select`: on CPU a read of a host tensor counts too). Steps up to `--skip` are left out
(start-up). Not a timed test: a benchmark, printed.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import os
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from electra_bench.store import atomic_io

from electra_bench import presets
from electra_bench.flops import step_flops
from electra_bench.pretrain import distributed, meters, optim, run as runner, run_dir, trainer
from electra_bench.flops.budget import make_plan
from electra_bench.pretrain.progress import TrainingProgress

READS = ("aten._local_scalar_dense", "aten.item", "aten.is_nonzero", "aten.nonzero", "aten.masked_select")
LOOP = "loop (the rest)"


class Phases:
    """Exclusive wall time, ops and host reads per phase, counted only while `on`."""

    def __init__(self):
        self.time = collections.Counter()
        self.calls = collections.Counter()
        self.ops = collections.Counter()
        self.reads = collections.Counter()
        self.stack: list[list] = []  # [phase, start, time spent in nested phases]
        self.on = False

    @property
    def current(self) -> str:
        return self.stack[-1][0] if self.stack else LOOP

    def wrap(self, phase: str, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            self.stack.append([phase, time.perf_counter(), 0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                name, start, nested = self.stack.pop()
                spent = time.perf_counter() - start
                if self.on:
                    self.time[name] += spent - nested
                    self.calls[name] += 1
                if self.stack:
                    self.stack[-1][2] += spent
        return timed


class CountOps(TorchDispatchMode):
    def __init__(self, phases: Phases):
        super().__init__()
        self.phases = phases

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.phases.on:
            name = str(func.overloadpacket)
            self.phases.ops[self.phases.current] += 1
            if name in READS:
                self.phases.reads[self.phases.current] += 1
        return func(*args, **(kwargs or {}))


def _patch(monkey: list, owner, attr: str, phases: Phases, phase: str) -> None:
    """Wrap `owner.attr` (if it exists in this version of the code) for the run; undone by `_unpatch`."""
    if not hasattr(owner, attr):
        return
    real = getattr(owner, attr)
    monkey.append((owner, attr, real))
    setattr(owner, attr, phases.wrap(phase, real))


def _unpatch(monkey: list) -> None:
    for owner, attr, real in reversed(monkey):
        setattr(owner, attr, real)
    monkey.clear()


def profile(preset, data, objective: str, steps: int, skip: int, log_every: int, count_ops: bool) -> tuple[Phases, float]:
    """One pretrain run of `steps` steps with the phases wrapped; returns them and the window's wall time."""
    phases, monkey = Phases(), []
    p = preset.for_objective(objective)
    fps = step_flops(p, objective, "measured").flops_per_step
    # one checkpoint, after the window: saving one is not a step's work (the last step, steps + 1, saves it)
    plan = make_plan(objective, "measured", (steps + 1.5) * fps, fps, (1.0,))
    # data: the order and the source's batches (the loop's `train.batch`)
    _patch(monkey, trainer._Order, "indices", phases, "data (order, batch)")
    _patch(monkey, type(data.train), "batch", phases, "data (order, batch)")
    _patch(monkey, trainer, "has_padding", phases, "padding check, copy to device")
    if hasattr(trainer, "_Batches"):  # batches prepared ahead (issue 32); `get` copies to the device
        _patch(monkey, trainer._Batches, "get", phases, "padding check, copy to device")
    _patch(monkey, trainer, "step_seed", phases, "seeds")
    _patch(monkey, trainer, "seed_dropout", phases, "seeds")
    _patch(monkey, torch, "manual_seed", phases, "seeds")  # what older trainers seeded dropout with
    _patch(monkey, optim, "lr_at", phases, "lr schedule")
    _patch(monkey, optim, "set_lr", phases, "lr schedule")
    _patch(monkey, torch.nn.utils, "clip_grad_norm_", phases, "grad clip")
    _patch(monkey, torch.Tensor, "backward", phases, "backward")
    _patch(monkey, meters.FiniteLoss, "add", phases, "non-finite flag")
    _patch(monkey, meters.FiniteLoss, "check", phases, "log row (reads, JSON line, bar)")
    _patch(monkey, trainer, "read_metrics", phases, "log row (reads, JSON line, bar)")
    _patch(monkey, distributed, "mean_over_ranks", phases, "log row (reads, JSON line, bar)")
    _patch(monkey, atomic_io, "append_jsonl", phases, "log row (reads, JSON line, bar)")
    _patch(monkey, TrainingProgress, "update", phases, "log row (reads, JSON line, bar)")
    _patch(monkey, meters.Throughput, "tick", phases, "FLOP and throughput accounting")
    _patch(monkey, meters.Throughput, "read", phases, "FLOP and throughput accounting")
    _patch(monkey, type(plan), "flops_at", phases, "FLOP and throughput accounting")
    _patch(monkey, run_dir.StateSaver, "due", phases, "checkpoint and stop checks")
    _patch(monkey, trainer, "_stop_requested", phases, "checkpoint and stop checks")
    _patch(monkey, meters.LogSchedule, "is_log_step", phases, "checkpoint and stop checks")

    real_build = trainer.initial_model

    def build(*args, **kwargs):  # the objective's draws and forward, and the optimizer, of this run's model
        model, unigram = real_build(*args, **kwargs)
        for attr, phase in (("draw_noise", "masking and sampling draws"), ("compute", "forward")):
            if hasattr(model, attr):
                setattr(model, attr, phases.wrap(phase, getattr(model, attr)))
        if not hasattr(model, "compute"):  # an objective without the split: its whole forward
            model.forward = phases.wrap("forward", model.forward)
        return model, unigram

    real_opt = optim.pretraining_optimizer

    def make_opt(*args, **kwargs):
        opt = real_opt(*args, **kwargs)
        opt.zero_grad = phases.wrap("zero_grad", opt.zero_grad)
        opt.step = phases.wrap("optimizer (fused AdamW)", opt.step)
        return opt

    monkey += [(trainer, "initial_model", real_build), (optim, "pretraining_optimizer", real_opt)]
    trainer.initial_model, optim.pretraining_optimizer = build, make_opt
    window = {}

    def hook(done: int) -> None:  # after step `done`: the window is steps skip+1 .. steps
        if done == skip:
            phases.on, window["t0"] = True, time.perf_counter()
        if done == steps:
            window["t1"], phases.on = time.perf_counter(), False

    opts = trainer.TrainOptions(quiet=True, log_every=log_every, peak_flops=1e12, diagnostics_every=0,
                                save_interval_s=1e9, after_step=(hook,))
    mode = CountOps(phases) if count_ops else None
    try:
        with tempfile.TemporaryDirectory() as out:
            if mode is not None:
                with mode:
                    trainer.pretrain(p, plan, data.train, None, data.tokenizer.special, out, opts)
            else:
                trainer.pretrain(p, plan, data.train, None, data.tokenizer.special, out, opts)
    finally:
        _unpatch(monkey)
    wall = window["t1"] - window["t0"]
    phases.time[LOOP] = wall - sum(phases.time.values())
    return phases, wall


def table(timed: Phases, counted: Phases, wall: float, n: int) -> str:
    names = sorted(set(timed.time) | set(counted.ops), key=lambda k: -timed.time.get(k, 0.0))
    lines = ["| phase | ms/step | share | ops/step | host reads/step |", "|---|---|---|---|---|"]
    for k in names:
        lines.append(f"| {k} | {1e3 * timed.time.get(k, 0.0) / n:.2f} | {100 * timed.time.get(k, 0.0) / wall:.1f}% "
                     f"| {counted.ops.get(k, 0) / n:.1f} | {counted.reads.get(k, 0) / n:.2f} |")
    lines.append(f"| **step (wall)** | **{1e3 * wall / n:.2f}** | 100% | **{sum(counted.ops.values()) / n:.1f}** "
                 f"| **{sum(counted.reads.values()) / n:.2f}** |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="tiny", choices=presets.names())
    ap.add_argument("--objectives", nargs="+", default=["mlm", "rtd"])
    ap.add_argument("--steps", type=int, default=60, help="steps of each run (default 60)")
    ap.add_argument("--skip", type=int, default=10, help="start-up steps left out of the window (default 10)")
    ap.add_argument("--log-every", type=int, default=10, help="pretrain's --log-every (default 10, the CLI's)")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--seq-len", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    preset = presets.resolve(args.preset, presets.Overrides(batch_size=args.batch_size, seq_len=args.seq_len))
    data, preset = runner.prepare_data(preset, None, None, 0, True)
    n = args.steps - args.skip
    print(f"# profile_pretrain  preset={preset.name} {preset.schedule.batch_size}x{preset.schedule.seq_len}  threads={torch.get_num_threads()}  "
          f"torch {torch.__version__}  steps {args.skip + 1}-{args.steps} of {args.steps}, --log-every "
          f"{args.log_every}  load average {[round(x, 2) for x in os.getloadavg()]}")
    for objective in args.objectives:
        timed, wall = profile(preset, data, objective, args.steps, args.skip, args.log_every, count_ops=False)
        counted, _ = profile(preset, data, objective, args.steps, args.skip, args.log_every, count_ops=True)
        print(f"\n## {objective}: {1e3 * wall / n:.1f} ms/step over {n} steps "
              f"(load average {[round(x, 2) for x in os.getloadavg()]})\n")
        print(table(timed, counted, wall, n), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
