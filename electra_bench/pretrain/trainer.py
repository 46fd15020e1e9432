"""Train one objective to a fixed FLOP budget.

The step count comes from counted FLOPs per step (`flops.step_flops`), the learning rate from the
fraction of the budget spent, and every random draw (data order, masking, dropout, generator samples)
from (seed, step, rank), so a run killed at any moment and started again finishes with the same losses,
weights and FLOPs as one that never stopped (on CPU; CUDA kernels may differ in the last bits).

The run directory's layout is `layout.PretrainLayout`'s. `log.jsonl` gets one row every `log_every`
steps, at checkpoints, and at every diagnostics point (step 0 and each 1/16 of the budget: the `diag/*`
keys, see diagnostics.py).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

import numpy as np
import torch

from ..store import atomic_io

from .. import objectives
from ..errors import BenchError, Terminated
from ..store.layout import PretrainLayout
from ..model import cpu_has_native_bf16, has_padding, resolve_precision
from ..run_config import RunConfig
from ..special_tokens import SpecialIds
from . import diagnostics, distributed, memory, optim, tensorboard_log, termination
from ..flops.budget import Plan
from .progress import TrainingProgress
from .meters import FiniteLoss, LogSchedule, TemperatureSchedule, Throughput, read_metrics
from .run_dir import StateSaver, finish, finished_or_prepared, resume_state, save_checkpoint
from .step import train_step


class SequenceSource(Protocol):
    seq_len: int

    def __len__(self) -> int: ...

    def batch(self, indices: np.ndarray) -> dict[str, torch.Tensor]: ...

    def token_counts(self, vocab_size: int) -> np.ndarray: ...


@dataclass
class TrainOptions:
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"  # auto: bf16 autocast on CUDA, fp32 on CPU (opt in with bf16: fast only on CPUs with AMX)
    allow_emulated_bf16: bool = False  # bf16 on a CPU without native bf16 (refused otherwise: model.resolve_precision)
    compile: bool = False
    log_every: int = 10
    save_every_steps: int = 0  # 0: save resumable state by time only
    save_interval_s: float = 120.0
    heldout_batches: int = 4
    diagnostics_every: float = 1 / 16  # fraction of the budget between learning diagnostics (0: checkpoints only)
    peak_flops: float | None = None  # declared peak for MFU; None: measured at start
    quiet: bool = False
    resume: bool = True
    # called with the number of finished steps after each step (tests inject faults here, e.g. a kill)
    after_step: tuple[Callable[[int], None], ...] = ()


def step_seed(seed: int, step: int, rank: int, stream: int = 0) -> int:
    """Seed for one step's draws; stream 0 is training, stream 1 the held-out evaluation."""
    return int(np.random.SeedSequence([seed, stream, step, rank]).generate_state(1, dtype=np.uint64)[0] >> 1)


def seed_dropout(seed: int, device: torch.device) -> None:
    """Seed the global generator that dropout draws from on `device` (and the CPU's, as torch.manual_seed
    does): the same state as torch.manual_seed(seed), without its look at every other accelerator type,
    which costs about 0.13 ms a call, a step's worth of host time for a small model on a GPU."""
    torch.default_generator.manual_seed(seed)
    if device.type == "cuda":
        torch.cuda.manual_seed(seed)


class _Order:
    """Data order: epoch e visits a permutation seeded by (seed, e); global sample g is (g // n, g % n)."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed = n, seed
        self._cache: dict[int, np.ndarray] = {}

    def indices(self, start: int, count: int) -> np.ndarray:
        g = np.arange(start, start + count, dtype=np.int64)
        epochs, pos = g // self.n, g % self.n
        out = np.empty(count, dtype=np.int64)
        for e in np.unique(epochs):
            if e not in self._cache:
                if len(self._cache) > 2:
                    self._cache.pop(min(self._cache))
                self._cache[e] = np.random.default_rng([self.seed, int(e)]).permutation(self.n)
            sel = epochs == e
            out[sel] = self._cache[e][pos[sel]]
        return out


def measure_peak_flops(device: torch.device, dtype: torch.dtype, n: int = 2048, repeats: int = 3) -> float:
    """Best-of-`repeats` dense matmul throughput (FLOP/s): the MFU denominator when none is declared."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    best = math.inf
    for _ in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        (a @ b).sum().item()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def compile_options(device: torch.device) -> dict:
    """torch.compile's options for `--compile` on this device: on CUDA the step is captured in CUDA graphs
    (inductor's "reduce-overhead" mode), which replays the whole step as one launch instead of hundreds of
    kernel launches from Python (a small model at its paper batch is launch-bound: docs/performance.md);
    on CPU inductor's default."""
    return {"mode": "reduce-overhead"} if device.type == "cuda" else {}


def compile_forward(module: torch.nn.Module, **compile_kwargs) -> Callable:
    """What `--compile` runs in place of `module` (possibly DDP-wrapped): one definition, so that
    benchmarks/bench_train.py --compile times the step `pretrain --compile` trains with.

    Every objective compiles its `compute` (`Objective.compile_step`): one graph without breaks, while the
    random draws stay eager (torch.compile cannot trace a `torch.Generator`; compiling the whole module would
    break its graph there). A module that is not an `Objective` is refused: it would run eager, silently."""
    inner = module.module if isinstance(module, torch.nn.parallel.DistributedDataParallel) else module
    if not isinstance(inner, objectives.Objective):
        raise BenchError(f"--compile: {type(inner).__name__} is not an objective with a compute step to compile")
    inner.compile_step(**compile_kwargs)
    return module


def pretrain(
    preset: RunConfig,
    plan: Plan,
    train: SequenceSource,
    heldout: SequenceSource | None,
    special: SpecialIds,
    out_dir: str | Path,
    opts: TrainOptions,
    run_info: dict | None = None,
    tokenizer=None,
) -> dict:
    """Train `plan.objective` for `plan.total_steps` steps; returns the summary (also in done.json).

    A SIGTERM stops it between steps (termination.py): the state is saved there and `Terminated` raised;
    every write in progress when the signal came is finished first."""
    with termination.deferred():
        return _pretrain(preset, plan, train, heldout, special, out_dir, opts, run_info, tokenizer)


def _pretrain(preset: RunConfig, plan: Plan, train: SequenceSource, heldout: SequenceSource | None, special: SpecialIds,
              out_dir: str | Path, opts: TrainOptions, run_info: dict | None, tokenizer) -> dict:
    out = PretrainLayout(out_dir)
    d = distributed.setup(opts.device)
    local_batch = _local_batch(preset, train, d)
    bf16 = resolve_precision(opts.precision, d.device, opts.allow_emulated_bf16) == "bf16"
    memory.check_fits(preset, plan.objective, d.device, bf16, d.world)  # before anything is allocated
    identity = {"preset": preset.to_dict(), "plan": plan.to_dict(), "seed": opts.seed, "world_size": d.world,
                **(run_info or {})}
    done = finished_or_prepared(out, identity, plan, opts.resume, d, tokenizer)
    if done is not None:
        return done

    model, temperature, diag, optimizer, start_step = _start(preset, plan, train, heldout, special, out, opts, d)
    wrapped = distributed.wrap(model, d)
    forward = compile_forward(wrapped, **compile_options(d.device)) if opts.compile else wrapped
    graphs = opts.compile and d.device.type == "cuda"  # CUDA graphs: each step is a new replay (below)
    peak = _peak_flops(opts, d, bf16)
    order = _Order(len(train), opts.seed)
    clip_params = [p for g in optimizer.param_groups for p in g["params"]]
    diag_steps = diag.steps(plan)
    logged = LogSchedule(plan, opts.log_every, diag_steps)
    remeasure = None if opts.peak_flops else (lambda: _peak_flops(opts, d, bf16) * d.world)
    meter = Throughput(preset.schedule.batch_size * preset.schedule.seq_len, plan.flops_per_step, peak * d.world,
                        remeasure)
    saver = StateSaver(out, opts, plan, start_step)
    finite = FiniteLoss(d.device, plan, out, start_step)

    with TrainingProgress(plan.objective, plan.budget, plan.total_steps, opts.quiet or not d.is_main) as bar:
        bar.update(start_step, plan.flops_at(start_step), 0.0, None, {})
        if _stop_requested(d, at_sync=True):  # during start-up: the state on disk is this step's already
            raise Terminated(f"at step {start_step} of {plan.total_steps}")
        batches = _Batches(train, order, preset.schedule.batch_size, local_batch, d, opts.seed)

        log_row = _LogRow(out, plan, preset, opts.seed, model, d, bf16, meter, temperature, diag, diag_steps, bar)

        warmup = preset.schedule.warmup_for(plan.total_steps)
        for step in range(start_step, plan.total_steps):
            model.train()
            lr = optim.lr_at(step, plan.total_steps, preset.optim.lr, warmup)
            optim.set_lr(optimizer, lr)
            temperature.set(step / plan.total_steps)
            batch, padded, rng = _step_inputs(batches, step, d.device, graphs)
            result = train_step(functools.partial(forward, padded=padded), optimizer, batch, rng, clip_params,
                                preset.optim.grad_clip, d.device.type, bf16)
            if step + 1 < plan.total_steps:
                batches.prepare(step + 1)  # the host's share of the next step, while the device runs this one
            finite.add(result.loss)
            done_steps = step + 1
            meter.tick()
            if logged.is_log_step(done_steps):
                finite.check(done_steps, lr)
                log_row(done_steps, lr, result)
            if saver.due(done_steps):
                finite.check(done_steps, lr)
                saver.save(done_steps, model, optimizer, d)
            for hook in opts.after_step:
                hook(done_steps)
            # between steps every log row and checkpoint is complete: the safe point to stop at
            if done_steps < plan.total_steps and _stop_requested(d, at_sync=logged.is_log_step(done_steps)):
                _stop(done_steps, plan, lr, finite, saver, model, optimizer, d)
    return finish(out, plan, meter.peak / d.world, d, bf16)


def _start(preset: RunConfig, plan: Plan, train: SequenceSource, heldout: SequenceSource | None, special: SpecialIds,
           out: PretrainLayout, opts: TrainOptions, d):
    """The model with its initial weights on the device, its temperature schedule, diagnostics and optimizer,
    and the step to start from (a saved state's, restored into them, or 0)."""
    model, unigram = initial_model(plan.objective, preset, train, heldout is not None, special, opts.seed)
    model = model.to(d.device)
    temperature = TemperatureSchedule(model, preset.objective, opts.compile, d.device)
    diag = _Diagnostics(model, heldout, preset, opts, special, d.device, unigram)
    optimizer = optim.pretraining_optimizer(model, preset.optim, d.device)
    start_step = resume_state(out, model, optimizer, opts.resume, d, diag)
    return model, temperature, diag, optimizer, start_step


def _step_inputs(batches: "_Batches", step: int, device: torch.device, graphs: bool):
    """The step's batch on the device, whether it is padded, and its generator; dropout seeded for it."""
    batch, padded, seed = batches.get(step)
    seed_dropout(seed, device)
    rng = torch.Generator(device=device).manual_seed(seed)
    if graphs:  # the previous step's outputs are no longer read: the graphs may reuse their memory
        torch.compiler.cudagraph_mark_step_begin()
    return batch, padded, rng


def _peak_flops(opts: TrainOptions, d, bf16: bool) -> float:
    """The peak FLOP/s MFU is a share of: declared, or measured on the device in the step's precision."""
    if opts.peak_flops:
        return opts.peak_flops
    # an emulated bf16 matmul runs at about 1 GFLOP/s here: at n = 2048 the peak alone would take minutes
    emulated = bf16 and d.device.type == "cpu" and not cpu_has_native_bf16()
    return measure_peak_flops(d.device, torch.bfloat16 if bf16 else torch.float32, n=512 if emulated else 2048)


def _stop(done_steps: int, plan: Plan, lr: float, finite, saver, model, optimizer, d) -> None:
    """Stop on request between steps: the state saved at this step (unless it just was), then `Terminated`."""
    if saver.last_step < done_steps:
        finite.check(done_steps, lr)
        saver.save(done_steps, model, optimizer, d)
    raise Terminated(f"at step {done_steps} of {plan.total_steps}")


class _LogRow:
    """Write a log row: the step's metrics read from the device once, the held-out diagnostics and the
    checkpoint due at that step, the TensorBoard mirror, the progress line."""

    def __init__(self, out, plan: Plan, preset: RunConfig, seed: int, model, d, bf16: bool, meter, temperature, diag,
                 diag_steps, bar):
        self.out, self.plan, self.preset, self.seed, self.model, self.d, self.bf16 = out, plan, preset, seed, model, d, bf16
        self.meter, self.temperature, self.diag, self.diag_steps, self.bar = meter, temperature, diag, diag_steps, bar

    def __call__(self, done_steps: int, lr: float, result) -> None:
        d, plan = self.d, self.plan
        metrics = distributed.mean_over_ranks(read_metrics(result), d)
        tok_s, mfu = self.meter.read()
        row = {"step": done_steps, "flops": plan.flops_at(done_steps), "fraction": done_steps / plan.total_steps,
               "lr": lr, **self.temperature.logged(), **metrics, "tokens_per_s": tok_s, "mfu": mfu}
        if done_steps in self.diag_steps:
            with torch.autocast(d.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                row.update(self.diag.row())
        if done_steps in plan.checkpoints.values() and d.is_main:
            save_checkpoint(self.out, self.model, plan, self.preset, self.seed, done_steps)
        if d.is_main:
            atomic_io.append_jsonl(self.out.log, row)
            tensorboard_log.mirror(self.out, row)  # with the optional tensorboard package
        self.bar.update(done_steps, plan.flops_at(done_steps), tok_s, mfu, metrics)


def _local_batch(preset: RunConfig, train: SequenceSource, d) -> int:
    if preset.schedule.batch_size % d.world:
        raise BenchError(f"batch size {preset.schedule.batch_size} is not divisible by {d.world} processes")
    if len(train) == 0:
        raise BenchError("the pre-training data holds no sequences")
    if train.seq_len != preset.schedule.seq_len:
        raise BenchError(f"data was packed to length {train.seq_len} but the preset uses {preset.schedule.seq_len}")
    return preset.schedule.batch_size // d.world


def initial_model(objective: str, preset: RunConfig, train: SequenceSource, diagnose: bool, special: SpecialIds,
                 seed: int):
    """The objective module with the seed's initial weights (identical on every rank), and the unigram
    log-probabilities of the training data when the prior init or the diagnostics need them."""
    torch.manual_seed(seed)
    model = objectives.build(objective, preset, special)
    unigram = None
    if preset.model.output_prior_init or diagnose:
        unigram = diagnostics.unigram_log_probs(train.token_counts(preset.model.encoder.vocab_size), special)
    if preset.model.output_prior_init:
        model.init_output_priors(unigram)
    return model, unigram


class _Batches:
    """Each step's host-side inputs: its batch on the device, whether it is padded (read on the host: no
    device sync in the step) and its seed. The next step's are prepared while the device runs this one
    (`prepare`), the batch into pinned memory on CUDA so that its copy is asynchronous: on a GPU a small
    model's step is a few milliseconds, and gathering a batch and deriving a seed (numpy's SeedSequence,
    about 0.4 ms) would otherwise sit between two steps. On a CPU the same work in the same order."""

    def __init__(self, train: SequenceSource, order: "_Order", batch_size: int, local_batch: int, d, seed: int = 0):
        self.train, self.order, self.batch_size, self.local_batch, self.d = train, order, batch_size, local_batch, d
        self.seed, self.pin = seed, d.device.type == "cuda"
        self._next: tuple[int, dict, bool, int] | None = None

    def prepare(self, step: int) -> None:
        idx = self.order.indices(step * self.batch_size + self.d.rank * self.local_batch, self.local_batch)
        host = self.train.batch(idx)
        padded = has_padding(host["attention_mask"])
        if self.pin:
            host = {k: v.pin_memory() for k, v in host.items()}
        self._next = (step, host, padded, step_seed(self.seed, step, self.d.rank))

    def get(self, step: int) -> tuple[dict[str, torch.Tensor], bool, int]:
        """(batch on the device, padded, the step's seed)."""
        if self._next is None or self._next[0] != step:
            self.prepare(step)
        _, host, padded, seed = self._next
        self._next = None
        return {k: v.to(self.d.device, non_blocking=True) for k, v in host.items()}, padded, seed


def _stop_requested(d, at_sync: bool) -> bool:
    """Whether to stop for a SIGTERM here. One process reads its flag after every step; ranks of a DDP
    run decide together, only where they sync anyway (log rows), so a step costs no extra collective."""
    if d.world == 1:
        return termination.requested()
    return at_sync and distributed.any_rank(termination.requested(), d)


class _Diagnostics:
    """Learning diagnostics on the first `heldout_batches` held-out batches, with masks drawn from a
    fixed seed stream (the same for every pre-training seed, so runs are comparable point by point)."""

    def __init__(self, model, heldout: SequenceSource | None, preset: RunConfig, opts: TrainOptions, special, device,
                 unigram):
        self.model, self.special, self.device, self.unigram, self.opts = model, special, device, unigram, opts
        B = preset.schedule.batch_size
        n = 0 if heldout is None else min(len(heldout), opts.heldout_batches * B)
        self.enabled = n > 0 and unigram is not None
        starts = range(0, n, B)
        self.batches = [heldout.batch(np.arange(s, min(s + B, n))) for s in starts] if self.enabled else []
        self.seeds = [step_seed(0, i, 0, stream=1) for i in range(len(self.batches))]

    def steps(self, plan: Plan) -> frozenset[int]:
        """The steps after which diagnostics are logged: every `diagnostics_every` of the budget and at
        every checkpoint (at most 1 / diagnostics_every + checkpoints + 1 of them, whatever the length)."""
        if not self.enabled:
            return frozenset()
        out = set(plan.checkpoints.values()) | {plan.total_steps}
        every = self.opts.diagnostics_every
        if every > 0:
            k = max(1, round(1 / every))
            out |= {max(1, round(plan.total_steps * i / k)) for i in range(1, k + 1)}
        return frozenset(out)

    def row(self) -> dict[str, float]:
        values = diagnostics.heldout_diagnostics(self.model, self.batches, self.seeds, self.unigram, self.special,
                                                 self.device)
        return {f"diag/{k}": v for k, v in values.items()}


