"""Train one objective to a fixed FLOP budget.

The step count comes from counted FLOPs per step (`flops.step_flops`), the learning rate from the
fraction of the budget spent, and every random draw (data order, masking, dropout, generator samples)
from (seed, step, rank), so a run killed at any moment and started again finishes with the same losses,
weights and FLOPs as one that never stopped (on CPU; CUDA kernels may differ in the last bits).

Directory layout (`out_dir`):
    run.json              the plan and resolved config; a rerun must match it
    log.jsonl             one row every `log_every` steps, at checkpoints, and at every diagnostics point
                          (step 0 and each 1/16 of the budget: the `diag/*` keys, see diagnostics.py)
    tokenizer/            the tokenizer the data was encoded with (fine-tuning uses the same)
    checkpoints/frac-F/   the kept encoder at each budget fraction F (see checkpoint.py)
    state/                the newest resumable state
    done.json             written last: the run's summary
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from .. import atomic_io, objectives
from ..errors import BenchError
from ..presets import Preset
from ..special_tokens import SpecialIds
from . import checkpoint, diagnostics, distributed
from .budget import Plan, lr_at
from .progress import TrainingProgress


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
    compile: bool = False
    log_every: int = 10
    save_every_steps: int = 0  # 0: save resumable state by time only
    save_interval_s: float = 120.0
    heldout_batches: int = 4
    diagnostics_every: float = 1 / 16  # fraction of the budget between learning diagnostics (0: checkpoints only)
    peak_flops: float | None = None  # declared peak for MFU; None: measured at start
    quiet: bool = False
    resume: bool = True


def fraction_dir(f: float) -> str:
    return f"frac-{f:.4f}"


def step_seed(seed: int, step: int, rank: int, stream: int = 0) -> int:
    """Seed for one step's draws; stream 0 is training, stream 1 the held-out evaluation."""
    return int(np.random.SeedSequence([seed, stream, step, rank]).generate_state(1, dtype=np.uint64)[0] >> 1)


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


def _param_groups(module: torch.nn.Module, weight_decay: float):
    """Weight decay except LayerNorm and biases (as BERT/ELECTRA); shared parameters listed once."""
    decay, no_decay, seen = [], [], set()
    for name, p in module.named_parameters():
        if id(p) in seen or not p.requires_grad:
            continue
        seen.add(id(p))
        (no_decay if p.ndim < 2 or "norm" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def pretrain(
    preset: Preset,
    plan: Plan,
    train: SequenceSource,
    heldout: SequenceSource | None,
    special: SpecialIds,
    out_dir: str | Path,
    opts: TrainOptions,
    run_info: dict | None = None,
    tokenizer=None,
) -> dict:
    """Train `plan.objective` for `plan.total_steps` steps; returns the summary (also in done.json)."""
    out = Path(out_dir)
    d = distributed.setup(opts.device)
    if preset.batch_size % d.world:
        raise BenchError(f"batch size {preset.batch_size} is not divisible by {d.world} processes")
    local_batch = preset.batch_size // d.world
    if len(train) == 0:
        raise BenchError("the pre-training data holds no sequences")
    if train.seq_len != preset.seq_len:
        raise BenchError(f"data was packed to length {train.seq_len} but the preset uses {preset.seq_len}")

    identity = {"preset": preset.to_dict(), "plan": plan.to_dict(), "seed": opts.seed, "world_size": d.world,
                **(run_info or {})}
    done = _check_run_dir(out, identity, opts.resume)
    if done is not None:
        return done
    if d.is_main:
        out.mkdir(parents=True, exist_ok=True)
        _remove_stale_temp_files(out)
        atomic_io.write_json(out / "run.json", identity)
        if tokenizer is not None:
            _ensure_tokenizer(out / "tokenizer", tokenizer)

    torch.manual_seed(opts.seed)  # identical initial weights on every rank
    model = objectives.build(plan.objective, preset, special)
    unigram = None
    if preset.output_prior_init or heldout is not None:
        unigram = diagnostics.unigram_log_probs(train.token_counts(preset.encoder.vocab_size), special)
    if preset.output_prior_init:
        model.init_output_priors(unigram)
    model = model.to(d.device)
    diag = _Diagnostics(model, heldout, preset, opts, special, d.device, unigram)
    diag_steps = diag.steps(plan)
    use_bf16 = opts.precision == "bf16" or (opts.precision == "auto" and d.device.type == "cuda")
    fused = d.device.type in ("cuda", "cpu")  # fused AdamW: same numbers, fewer kernel launches
    optimizer = torch.optim.AdamW(
        _param_groups(model, preset.weight_decay), lr=preset.lr, betas=preset.adam_betas, eps=preset.adam_eps,
        fused=fused,
    )
    start_step = 0
    if opts.resume:
        info = checkpoint.load_state(out / "state", model, optimizer)
        if info is not None:
            start_step = info["step"]
    if d.is_main:
        _truncate_log(out / "log.jsonl", start_step if start_step > 0 else -1)
        if start_step == 0 and diag.enabled:
            atomic_io.append_jsonl(out / "log.jsonl", {"step": 0, "flops": 0.0, "fraction": 0.0, **diag.row()})
    wrapped = distributed.wrap(model, d)
    step_fn = torch.compile(wrapped) if opts.compile else wrapped

    peak = opts.peak_flops or measure_peak_flops(d.device, torch.bfloat16 if use_bf16 else torch.float32)
    order = _Order(len(train), opts.seed)
    tokens_per_step = preset.batch_size * preset.seq_len
    clip_params = [p for g in optimizer.param_groups for p in g["params"]]
    last_save = time.perf_counter()
    window_t, window_steps = time.perf_counter(), 0
    kill_at = int(os.environ.get("ELECTRA_BENCH_KILL_AT_STEP", "0"))  # tests: simulate a kill -9

    with TrainingProgress(plan.objective, plan.budget, plan.total_steps, opts.quiet or not d.is_main) as bar:
        bar.update(start_step, plan.flops_at(start_step), 0.0, None, {})
        for step in range(start_step, plan.total_steps):
            model.train()
            lr = lr_at(step, plan.total_steps, preset.lr, preset.warmup_fraction)
            for g in optimizer.param_groups:
                g["lr"] = lr
            idx = order.indices(step * preset.batch_size + d.rank * local_batch, local_batch)
            batch = {k: v.to(d.device, non_blocking=True) for k, v in train.batch(idx).items()}
            seed = step_seed(opts.seed, step, d.rank)
            torch.manual_seed(seed)  # dropout
            rng = torch.Generator(device=d.device).manual_seed(seed)
            with torch.autocast(d.device.type, dtype=torch.bfloat16, enabled=use_bf16):
                result = step_fn(batch, rng)
            if not torch.isfinite(result.loss):
                raise BenchError(
                    f"non-finite {plan.objective} loss at step {step + 1} of {plan.total_steps} (lr {lr:.2g}); "
                    f"the last good state is kept in {out / 'state'}; try a lower --lr"
                )
            optimizer.zero_grad(set_to_none=True)
            result.loss.backward()
            torch.nn.utils.clip_grad_norm_(clip_params, preset.grad_clip)
            optimizer.step()
            done_steps = step + 1
            window_steps += 1

            is_ckpt = done_steps in plan.checkpoints.values()
            is_diag = done_steps in diag_steps
            if done_steps % opts.log_every == 0 or is_ckpt or is_diag or done_steps == plan.total_steps:
                metrics = distributed.mean_over_ranks(
                    {"loss": float(result.loss.detach()), **{k: float(v) for k, v in result.metrics.items()}}, d
                )
                elapsed = time.perf_counter() - window_t
                tok_s = window_steps * tokens_per_step / max(elapsed, 1e-9)
                mfu = window_steps * plan.flops_per_step / max(elapsed, 1e-9) / (peak * d.world)
                row = {"step": done_steps, "flops": plan.flops_at(done_steps),
                       "fraction": done_steps / plan.total_steps, "lr": lr, **metrics,
                       "tokens_per_s": tok_s, "mfu": mfu}
                if (is_ckpt or is_diag) and diag.enabled:
                    with torch.autocast(d.device.type, dtype=torch.bfloat16, enabled=use_bf16):
                        row.update(diag.row())
                if is_ckpt:
                    frac = next(f for f, s in plan.checkpoints.items() if s == done_steps)
                    if d.is_main:
                        checkpoint.save_encoder(
                            out / "checkpoints" / fraction_dir(frac), model.backbone(),
                            {"objective": plan.objective, "fraction": frac, "step": done_steps,
                             "train_flops": plan.flops_at(done_steps), "convention": plan.convention,
                             "preset": preset.name, "seed": opts.seed, "seq_len": preset.seq_len, "tokenizer": "../../tokenizer",
                             "finetune_lr": preset.finetune_lr, "layerwise_lr_decay": preset.layerwise_lr_decay},
                        )
                if d.is_main:
                    atomic_io.append_jsonl(out / "log.jsonl", row)
                bar.update(done_steps, plan.flops_at(done_steps), tok_s, mfu, metrics)
                window_t, window_steps = time.perf_counter(), 0

            due = (opts.save_every_steps and done_steps % opts.save_every_steps == 0) or is_ckpt or (
                time.perf_counter() - last_save > opts.save_interval_s
            )
            if due and done_steps < plan.total_steps:
                if d.is_main:
                    checkpoint.save_state(out / "state", done_steps, model, optimizer, {"objective": plan.objective})
                distributed.barrier(d)
                last_save = time.perf_counter()
            if kill_at and done_steps == kill_at:
                os._exit(137)

    summary = {
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
        "precision": "bf16" if use_bf16 else "fp32",
    }
    if d.is_main:
        atomic_io.write_json(out / "done.json", summary)
        shutil.rmtree(out / "state", ignore_errors=True)  # the run is complete; checkpoints hold what is kept
    distributed.barrier(d)
    return summary


class _Diagnostics:
    """Learning diagnostics on the first `heldout_batches` held-out batches, with masks drawn from a
    fixed seed stream (the same for every pre-training seed, so runs are comparable point by point)."""

    def __init__(self, model, heldout: SequenceSource | None, preset: Preset, opts: TrainOptions, special, device,
                 unigram):
        self.model, self.special, self.device, self.unigram, self.opts = model, special, device, unigram, opts
        n = 0 if heldout is None else min(len(heldout), opts.heldout_batches * preset.batch_size)
        self.enabled = n > 0 and unigram is not None
        starts = range(0, n, preset.batch_size)
        self.batches = [heldout.batch(np.arange(s, min(s + preset.batch_size, n))) for s in starts] if self.enabled else []
        self.seeds = [step_seed(0, i, 0, stream=1) for i in range(len(self.batches))]

    def steps(self, plan: Plan) -> set[int]:
        """The steps after which diagnostics are logged: every `diagnostics_every` of the budget and at
        every checkpoint."""
        if not self.enabled:
            return set()
        out = set(plan.checkpoints.values()) | {plan.total_steps}
        every = self.opts.diagnostics_every
        if every > 0:
            k = max(1, round(1 / every))
            out |= {max(1, round(plan.total_steps * i / k)) for i in range(1, k + 1)}
        return out

    def row(self) -> dict[str, float]:
        values = diagnostics.heldout_diagnostics(self.model, self.batches, self.seeds, self.unigram, self.special,
                                                 self.device)
        return {f"diag/{k}": v for k, v in values.items()}


def _remove_stale_temp_files(out: Path) -> None:
    """Temp files of atomic writes interrupted by a kill (`.<name>.*.tmp`) in the run directory this
    process owns."""
    for p in out.rglob(".*.tmp"):
        p.unlink(missing_ok=True)


def _ensure_tokenizer(directory: Path, tokenizer) -> None:
    """The saved tokenizer must be complete and the one the data was encoded with: verify it rather
    than trust that the folder exists (a kill mid-save leaves a folder without it), else save it."""
    from ..data.tokenizer import Tokenizer

    try:
        if Tokenizer.load(directory).sha256 == tokenizer.sha256:
            return
    except BenchError:
        pass
    tokenizer.save(directory)


def _check_run_dir(out: Path, identity: dict, resume: bool) -> dict | None:
    """A finished run returns its summary; a different run in the same directory is refused."""
    run_file = out / "run.json"
    if not run_file.is_file():
        return None
    existing = json.loads(run_file.read_text())
    if json.loads(json.dumps(identity, default=str)) != existing:
        changed = sorted(k for k in set(existing) | set(identity) if existing.get(k) != json.loads(json.dumps(identity.get(k), default=str)))
        raise BenchError(f"{out} already holds a different run (differs in: {', '.join(changed)}); choose another --out")
    if not resume:
        raise BenchError(f"{out} already holds this run; rerun without --no-resume to continue it, or choose another --out")
    done = out / "done.json"
    if done.is_file():
        return json.loads(done.read_text())
    return None


def _truncate_log(path: Path, step: int) -> None:
    """Drop log rows written after the state we resume from (they will be written again, identically)."""
    if not path.is_file():
        return
    rows = [r for r in atomic_io.read_jsonl(path) if r.get("step", 0) <= step]
    atomic_io.write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
