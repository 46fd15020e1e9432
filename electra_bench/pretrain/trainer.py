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
import json
import math
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

import numpy as np
import torch

from ..store import atomic_io

from .. import objectives
from ..data.tokenizer import Tokenizer
from ..errors import BenchError, Terminated
from ..store.layout import TOKENIZER_FROM_CHECKPOINT, PretrainLayout, fraction_dir
from ..model import cpu_has_native_bf16, has_padding, resolve_precision
from ..run_config import ObjectiveConfig, RunConfig
from ..special_tokens import SpecialIds
from . import checkpoint, diagnostics, distributed, memory, optim, tensorboard_log, termination
from ..flops.budget import Plan
from .progress import TrainingProgress
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
    done = _finished_or_prepared(out, identity, plan, opts.resume, d, tokenizer)
    if done is not None:
        return done

    model, unigram = initial_model(plan.objective, preset, train, heldout is not None, special, opts.seed)
    model = model.to(d.device)
    temperature = _TemperatureSchedule(model, preset.objective, opts.compile, d.device)
    diag = _Diagnostics(model, heldout, preset, opts, special, d.device, unigram)
    optimizer = optim.pretraining_optimizer(model, preset.optim, d.device)
    start_step = _resume(out, model, optimizer, opts.resume, d, diag)
    wrapped = distributed.wrap(model, d)
    forward = compile_forward(wrapped, **compile_options(d.device)) if opts.compile else wrapped
    graphs = opts.compile and d.device.type == "cuda"  # CUDA graphs: each step is a new replay (below)
    peak = _peak_flops(opts, d, bf16)
    order = _Order(len(train), opts.seed)
    clip_params = [p for g in optimizer.param_groups for p in g["params"]]
    diag_steps = diag.steps(plan)
    logged = _LogSchedule(plan, opts.log_every, diag_steps)
    remeasure = None if opts.peak_flops else (lambda: _peak_flops(opts, d, bf16) * d.world)
    meter = _Throughput(preset.schedule.batch_size * preset.schedule.seq_len, plan.flops_per_step, peak * d.world,
                        remeasure)
    saver = _StateSaver(out, opts, plan, start_step)
    finite = _FiniteLoss(d.device, plan, out, start_step)

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
            batch, padded, seed = batches.get(step)
            seed_dropout(seed, d.device)
            rng = torch.Generator(device=d.device).manual_seed(seed)
            if graphs:  # the previous step's outputs are no longer read: the graphs may reuse their memory
                torch.compiler.cudagraph_mark_step_begin()
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
    return _finish(out, plan, meter.peak / d.world, d, bf16)


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


def _finish(out: PretrainLayout, plan: Plan, peak: float, d, bf16: bool) -> dict:
    """The run's summary, written as done.json; the resumable state goes (the checkpoints hold what is kept)."""
    summary = _summary(plan, peak, d, bf16)
    if d.is_main:
        atomic_io.write_json(out.done, summary)
        shutil.rmtree(out.state, ignore_errors=True)
    distributed.barrier(d)
    return summary


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
            _save_checkpoint(self.out, self.model, plan, self.preset, self.seed, done_steps)
        if d.is_main:
            atomic_io.append_jsonl(self.out.log, row)
            tensorboard_log.mirror(self.out, row)  # with the optional tensorboard package
        self.bar.update(done_steps, plan.flops_at(done_steps), tok_s, mfu, metrics)


def _finished_or_prepared(out: PretrainLayout, identity: dict, plan: Plan, resume: bool, d, tokenizer) -> dict | None:
    """The summary of a finished, usable run in `out` (nothing to train), else None with the directory ready
    for training (a finished run that fails verification is trained again from the start: deterministic)."""
    done = _check_run_dir(out, identity, resume)
    # every rank reads the directory before rank 0 writes to it: a rank that looked after rank 0 had
    # written this run's identity would take it for an earlier run (and refuse it under --no-resume)
    distributed.barrier(d)
    if done is not None:
        problem = unusable_part(out, plan)
        if problem is None:
            if d.is_main and tokenizer is not None:
                _ensure_tokenizer(out.tokenizer, tokenizer)
            return done
        if d.is_main:
            print(f"warning: {out.root}: {problem}; training this run again from the start", file=sys.stderr)
            out.done.unlink(missing_ok=True)
            shutil.rmtree(out.state, ignore_errors=True)
        distributed.barrier(d)
    if d.is_main:
        _prepare_run_dir(out, identity, tokenizer)
    return None


def _local_batch(preset: RunConfig, train: SequenceSource, d) -> int:
    if preset.schedule.batch_size % d.world:
        raise BenchError(f"batch size {preset.schedule.batch_size} is not divisible by {d.world} processes")
    if len(train) == 0:
        raise BenchError("the pre-training data holds no sequences")
    if train.seq_len != preset.schedule.seq_len:
        raise BenchError(f"data was packed to length {train.seq_len} but the preset uses {preset.schedule.seq_len}")
    return preset.schedule.batch_size // d.world


def _prepare_run_dir(out: PretrainLayout, identity: dict, tokenizer) -> None:
    out.root.mkdir(parents=True, exist_ok=True)
    atomic_io.remove_stale_temp_files(out.root)
    atomic_io.write_json(out.run_file, identity)
    if tokenizer is not None:
        _ensure_tokenizer(out.tokenizer, tokenizer)


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


def _resume(out: PretrainLayout, model, optimizer, resume: bool, d, diag: "_Diagnostics") -> int:
    """The step to start from: the saved state's, or 0 (then the step-0 diagnostics row is logged).
    Log rows written after that state are dropped: they will be written again, identically."""
    start_step = 0
    if resume:
        info = checkpoint.load_state(out.state, model, optimizer)
        if info is not None:
            start_step = info["step"]
            threads = info.get("threads")
            if d.is_main and threads is not None and threads != torch.get_num_threads():
                print(f"warning: {out.root}: resuming with {torch.get_num_threads()} threads where the run started "
                      f"with {threads}; float sums may differ in the last bits from an uninterrupted run",
                      file=sys.stderr)
    if d.is_main:
        _truncate_log(out.log, start_step if start_step > 0 else -1)
        if start_step == 0 and diag.enabled:
            atomic_io.append_jsonl(out.log, {"step": 0, "flops": 0.0, "fraction": 0.0, **diag.row()})
    return start_step


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


def read_metrics(result: objectives.ObjectiveResult) -> dict[str, float]:
    """A step's loss and metrics as floats for its log row, in one device-to-host read (the scalars stacked,
    in float64, so each is exactly the float its own read gave): a log step waits for the device once, not
    once per metric."""
    names = ["loss", *result.metrics]
    values = torch.stack([result.loss.detach().double(), *(v.detach().double() for v in result.metrics.values())])
    return dict(zip(names, values.tolist()))


class _TemperatureSchedule:
    """The generator's sampling temperature on its schedule (`ObjectiveConfig.temperature_at`), set on the objective
    before each step; with no warm-up, or an objective without a temperature, there is nothing to set.
    Eager, the objective gets a Python float, as always. Compiled, a 0-d tensor on the device, updated in
    place: an input of the step's one graph, where a float would be a constant that recompiles it."""

    def __init__(self, model, cfg: ObjectiveConfig, compiled: bool, device: torch.device):
        self.model, self.cfg = model, cfg
        self.on = cfg.rtd_temperature_warmup is not None and hasattr(model, "temperature")
        self.value: float | None = None
        self.tensor = torch.zeros((), device=device) if self.on and compiled else None
        self.set(0.0)

    def set(self, fraction: float) -> None:
        if not self.on:
            return
        self.value = self.cfg.temperature_at(fraction)
        if self.tensor is not None:
            self.tensor.fill_(self.value)  # a kernel on CUDA, no host sync
        self.model.temperature = self.tensor if self.tensor is not None else self.value

    def logged(self) -> dict[str, float]:
        return {"temperature": self.value} if self.on else {}


class _LogSchedule:
    """Which steps get a log row: every `every` steps, the checkpoints, the diagnostics points and the
    last step. A predicate, not a set of steps: the set grew with the schedule (a 1e21-FLOP budget of
    tiny is 1.6e11 steps; its set filled 18 GB within a minute before the first step)."""

    def __init__(self, plan: Plan, every: int, diag_steps: frozenset[int]):
        self.every, self.total = every, plan.total_steps
        self.special = frozenset(plan.checkpoints.values()) | diag_steps  # O(checkpoints + diagnostics points)

    def is_log_step(self, step: int) -> bool:
        return step % self.every == 0 or step == self.total or step in self.special


def _stop_requested(d, at_sync: bool) -> bool:
    """Whether to stop for a SIGTERM here. One process reads its flag after every step; ranks of a DDP
    run decide together, only where they sync anyway (log rows), so a step costs no extra collective."""
    if d.world == 1:
        return termination.requested()
    return at_sync and distributed.any_rank(termination.requested(), d)


class _Throughput:
    """Tokens/s and MFU over the steps since the last read.

    MFU is a share of a peak measured once at start-up. Measured while the machine was busy (another job, the
    other workers starting up), that peak is too low, and runs showed MFU 168-175%. A step rate above the
    peak proves the peak wrong, so then it is measured again (`remeasure`; the highest measurement stands,
    at most `MAX_REMEASURES` times: each costs a second's matmuls). An MFU that would still exceed 100% (the
    machine busy again while measuring, or a declared --peak-flops below what the run achieves) is not
    reported (None) rather than reported impossible."""

    MAX_REMEASURES = 5

    def __init__(self, tokens_per_step: int, flops_per_step: float, peak: float,
                 remeasure: Callable[[], float] | None = None):
        self.tokens_per_step, self.flops_per_step, self.peak = tokens_per_step, flops_per_step, peak
        self.remeasure, self.remeasures_left = remeasure, self.MAX_REMEASURES if remeasure else 0
        self.t, self.steps = time.perf_counter(), 0

    def tick(self) -> None:
        self.steps += 1

    def read(self) -> tuple[float, float | None]:
        elapsed = max(time.perf_counter() - self.t, 1e-9)
        tokens_per_s, flops_per_s = self.steps * self.tokens_per_step / elapsed, self.steps * self.flops_per_step / elapsed
        if flops_per_s > self.peak and self.remeasures_left > 0:
            self.remeasures_left -= 1
            self.peak = max(self.peak, self.remeasure())
        mfu = flops_per_s / self.peak if flops_per_s <= self.peak else None
        self.t, self.steps = time.perf_counter(), 0
        return tokens_per_s, mfu


class _FiniteLoss:
    """A non-finite loss stops the run, noticed without a device sync per step: a flag accumulates on
    the device and is read where the loop syncs anyway (log rows) and before anything is saved, so no
    checkpoint or state ever holds weights updated by a non-finite loss."""

    def __init__(self, device: torch.device, plan: Plan, out: PretrainLayout, start_step: int):
        self.bad = torch.zeros((), dtype=torch.bool, device=device)
        self.plan, self.out, self.last_ok = plan, out, start_step

    def add(self, loss: torch.Tensor) -> None:
        self.bad |= ~torch.isfinite(loss.detach())

    def check(self, step: int, lr: float) -> None:
        if bool(self.bad):
            at = f"step {step}" if step == self.last_ok + 1 else f"a step from {self.last_ok + 1} to {step}"
            raise BenchError(
                f"non-finite {self.plan.objective} loss at {at} of {self.plan.total_steps} (lr {lr:.2g}); the last "
                f"good state is kept in {self.out.state}; try a lower --lr"
            )
        self.last_ok = step


class _StateSaver:
    """Resumable state every `save_every_steps`, at every checkpoint, and every `save_interval_s`."""

    def __init__(self, out: PretrainLayout, opts: TrainOptions, plan: Plan, start_step: int):
        self.out, self.opts, self.plan = out, opts, plan
        self.last = time.perf_counter()
        self.last_step = start_step  # the step the newest state on disk (or the start) is at

    def due(self, step: int) -> bool:
        every = self.opts.save_every_steps
        due = (every and step % every == 0) or step in self.plan.checkpoints.values() or (
            time.perf_counter() - self.last > self.opts.save_interval_s)
        return bool(due) and step < self.plan.total_steps

    def save(self, step: int, model, optimizer, d) -> None:
        if d.is_main:
            checkpoint.save_state(self.out.state, step, model, optimizer,
                                  {"objective": self.plan.objective, "threads": torch.get_num_threads()})
        distributed.barrier(d)
        self.last, self.last_step = time.perf_counter(), step


def _save_checkpoint(out: PretrainLayout, model, plan: Plan, preset: RunConfig, seed: int, step: int) -> None:
    fraction = next(f for f, s in plan.checkpoints.items() if s == step)
    checkpoint.save_encoder(
        out.checkpoint(fraction), model.backbone(),
        {"objective": plan.objective, "fraction": fraction, "step": step, "train_flops": plan.flops_at(step),
         "convention": plan.convention, "preset": preset.name, "seed": seed, "seq_len": preset.schedule.seq_len,
         "tokenizer": TOKENIZER_FROM_CHECKPOINT, "finetune_lr": preset.evaluation.finetune_lr,
         "layerwise_lr_decay": preset.evaluation.layerwise_lr_decay},
        objective=model,
    )


def _summary(plan: Plan, peak: float, d, bf16: bool) -> dict:
    return {
        "objective": plan.objective,
        "steps": plan.total_steps,
        "train_flops": plan.planned_flops,
        "budget": plan.budget,
        "convention": plan.convention,
        "flops_per_step": plan.flops_per_step,
        "checkpoints": {fraction_dir(f): {"fraction": f, "step": s, "train_flops": plan.flops_at(s)}
                        for f, s in plan.checkpoints.items()},
        "peak_flops_per_s": peak,
        "world_size": d.world,
        "device": str(d.device),
        "precision": "bf16" if bf16 else "fp32",
        "threads": torch.get_num_threads(),
    }


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


def _ensure_tokenizer(directory: Path, tokenizer) -> None:
    """The saved tokenizer must be complete and the one the data was encoded with: verify it rather
    than trust that the folder exists (a kill mid-save leaves a folder without it), else save it."""
    try:
        if Tokenizer.load(directory).sha256 == tokenizer.sha256:
            return
    except BenchError:
        pass
    tokenizer.save(directory)


def comparable_identity(identity: dict) -> dict:
    """A run's identity with its config in the current schema: a run.json written before the config tree
    (schema 1, flat) is the same run as one written now when it reads back as the same config."""
    try:
        return {**identity, "preset": RunConfig.from_dict(identity["preset"]).to_dict()}
    except (KeyError, TypeError, ValueError, BenchError):
        return identity  # unreadable: compared as it is, so it differs


def _check_run_dir(out: PretrainLayout, identity: dict, resume: bool) -> dict | None:
    """A finished run returns its summary; a different run in the same directory is refused."""
    run_file = out.run_file
    if not run_file.is_file():
        return None
    existing = comparable_identity(json.loads(run_file.read_text()))
    identity = comparable_identity(json.loads(json.dumps(identity, default=str)))
    if identity != existing:
        changed = sorted(k for k in set(existing) | set(identity) if existing.get(k) != identity.get(k))
        raise BenchError(f"{out.root} already holds a different run (differs in: {', '.join(changed)}); choose another --out")
    if not resume:
        raise BenchError(f"{out.root} already holds this run; rerun without --no-resume to continue it, or choose another --out")
    if out.done.is_file():
        return json.loads(out.done.read_text())
    return None


def unusable_part(out: PretrainLayout, plan: Plan) -> str | None:
    """What of a finished run a later step could not use (a checkpoint or the log), or None. Verified
    rather than trusted: a file can be lost or cut short after the run finished."""
    for fraction in plan.checkpoints:
        try:
            checkpoint.verify_checkpoint(out.checkpoint(fraction))
        except BenchError as e:
            return f"checkpoint {fraction_dir(fraction)} is unusable ({e})"
    try:
        steps = [r.get("step") for r in atomic_io.read_jsonl(out.log)] if out.log.is_file() else []
    except (OSError, ValueError) as e:
        return f"its log is unreadable ({e})"
    if plan.total_steps not in steps:
        return "its log does not reach the last step"
    return None


def _truncate_log(path: Path, step: int) -> None:
    """Drop log rows written after the state we resume from (they will be written again, identically)."""
    if not path.is_file():
        return
    atomic_io.repair_torn_tail(path)
    rows = [r for r in atomic_io.read_jsonl(path) if r.get("step", 0) <= step]
    atomic_io.write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
