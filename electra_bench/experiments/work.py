"""What one job of an experiment does, in whatever process runs it (a pinned worker, a cluster job, or
inline): pre-train one (objective, seed), or score a list of encoders on the tasks still missing.

Each job rebuilds what it needs from the spec (`prepare`: the data is packed once per run and cached on
disk, so a worker reads it back), so a job is a plain picklable call that any engine can run.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from ..data.task_sources import load_tasks
from ..errors import BenchError
from ..score import zeroshot
from ..score.scoring import recipe_for, score_encoder
from ..objectives import initial_encoder
from ..store import predictions
from ..pretrain import checkpoint
from ..pretrain import run as runner
from ..pretrain.distributed import resolve_device
from ..pretrain.trainer import TrainOptions
from .spec import CompareSpec, budget_of


def prepare(spec: CompareSpec, quiet: bool = True):
    """The preset and data every process of this run uses (data is packed once and cached), the budget
    (schedule.Budget: the spec's own unless the data's vocabulary changed the preset) and each objective's plan."""
    data, p = runner.prepare_data(spec.resolved_preset(), spec.corpus, None, 0, quiet)
    budget = budget_of(spec, p)
    return data, p, budget, {o: budget.plan(o) for o in spec.objectives}


@contextmanager
def thread_limits(threads: int):
    """torch and the BLAS/OpenMP pools scikit-learn's probe uses, for one job: without the second, two
    probe workers each start one BLAS thread per core and the 2 cores run 4+ busy threads (measured: a
    third slower). Restored afterwards, so a job run inline (jobs == 1) leaves its caller as it was."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(threads):
            yield
    finally:
        torch.set_num_threads(before)


def pretrain_job(spec: CompareSpec, objective: str, seed: int, out_dir: str, quiet: bool) -> tuple[str, int, float]:
    """One pre-training run; it resumes from the run's last saved state when there is one."""
    with thread_limits(spec.threads):
        data, p, _, plans = prepare(spec)
        t = time.perf_counter()
        runner.run(p, plans[objective], data, out_dir, TrainOptions(seed=seed, device=spec.device, quiet=quiet))
        return objective, seed, time.perf_counter() - t


def ddp_pretrain_job(spec: CompareSpec, objective: str, seed: int, out_dir: str, quiet: bool,
                     nproc: int) -> tuple[str, int, float]:
    """One pre-training run over `nproc` processes with torchrun (DDP: the global batch is split over the
    ranks, FLOPs summed); the devices are the ones this process sees (the scheduler set
    CUDA_VISIBLE_DEVICES to the slots it holds). Rank 0 writes, exactly as `pretrain` under torchrun."""
    t = time.perf_counter()
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as f:
        pickle.dump((pretrain_job, spec, objective, seed, out_dir, True), f)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           "-m", "electra_bench.experiments.ddp_entry", f.name]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(*_):  # the scheduler stops this worker with SIGTERM: take the ranks down with it
        proc.terminate()
        proc.wait(timeout=30)
        os._exit(143)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        _, err = proc.communicate()
    finally:
        signal.signal(signal.SIGTERM, previous)
        Path(f.name).unlink(missing_ok=True)
    if proc.returncode != 0:
        lines = [ln for ln in err.splitlines() if ln.startswith("error:")] or err.strip().splitlines()[-1:] or ["?"]
        raise BenchError(f"torchrun over {nproc} devices exited {proc.returncode}: {lines[-1]}")
    return objective, seed, time.perf_counter() - t


@functools.lru_cache(maxsize=4)
def tasks_of(source: str | None, names: tuple[str, ...] | None) -> dict:
    """The run's tasks by name, read once per worker process: a worker runs many scoring jobs (one per
    checkpoint), and reading the suite takes about a second each time."""
    return {t.spec.name: t for t in load_tasks(source, list(names) if names else None)}


def score_job(spec: CompareSpec, label: str, pretrain_seed: int, points: list[tuple], todo: dict,
              protocol: str | None = None) -> dict:
    """Score encoders on the tasks still missing under `protocol` (None: the spec's first); returns {"rows":
    score rows labelled `label` (an objective, or "init" for the untrained encoder of this pre-training
    seed), "predictions": [(label, pre-training seed, fraction, TaskPredictions)]}: the per-example
    predictions behind them (RunDir.store_scored).

    `points`: (fraction, step, train FLOPs, checkpoint directory or None for the untrained encoder);
    `todo`: fraction -> task names to score. Generic on purpose: any encoder a loader can produce is one
    more scoring job."""
    protocol = protocol or spec.protocol
    with thread_limits(spec.threads):
        data, p, _, _ = prepare(spec)
        tasks = tasks_of(spec.source, spec.tasks)
        recipe = recipe_for({**dataclasses.asdict(p.evaluation), "seq_len": p.schedule.seq_len}, protocol,
                            probe_pool=spec.probe_pool,
                            probe_examples=spec.probe_examples, max_eval_examples=spec.max_eval_examples)
        device = resolve_device(spec.device)
        rows, stored = [], []
        for fraction, step, flops, ckpt in points:
            names = todo[fraction]
            chosen = [tasks[n] for n in names]
            records: dict = {}
            if protocol == "zeroshot":  # the objective's own heads, not only its kept encoder
                readers = (zeroshot.untrained_readers(p, data.train, data.tokenizer.special, pretrain_seed)
                           if ckpt is None else zeroshot.readers_of(checkpoint.load_objective(
                               Path(ckpt), checkpoint.run_preset(Path(ckpt)), data.tokenizer.special)))
                scored = zeroshot.score_readers(readers, zeroshot.own_reading(label), data.tokenizer, chosen,
                                                list(range(spec.seeds)), recipe.max_len, device, predictions=records)
            else:
                encoder = (initial_encoder(p.model.encoder, pretrain_seed) if ckpt is None
                           else checkpoint.load_encoder(ckpt)[0])
                scored = score_encoder(encoder, data.tokenizer, chosen, list(range(spec.seeds)), recipe, device,
                                       predictions=records)
            for r in scored:
                rows.append({"objective": label, "fraction": fraction, "step": step, "train_flops": flops,
                             "convention": spec.convention, "task": r["task"], "seed": r["seed"],
                             "metric": r["metric"], "value": r["value"], "protocol": protocol,
                             "pretrain_seed": pretrain_seed})
            stored += [(label, pretrain_seed, fraction, predictions.collect(name, by_seed, protocol))
                       for name, by_seed in records.items()]
        return {"rows": rows, "predictions": stored}


# ---- the typed jobs: what the graph hands an engine (a picklable call; engines run `work()`) -----------


@dataclass(frozen=True)
class PretrainWork:
    """Pre-train `objective` with pre-training seed `seed` into `out_dir` (over `nproc` GPUs with torchrun)."""

    spec: CompareSpec
    objective: str
    seed: int
    out_dir: str
    quiet: bool = True
    nproc: int = 1

    def __call__(self) -> tuple[str, int, float]:
        if self.nproc == 1:
            return pretrain_job(self.spec, self.objective, self.seed, self.out_dir, self.quiet)
        return ddp_pretrain_job(self.spec, self.objective, self.seed, self.out_dir, True, self.nproc)


@dataclass(frozen=True)
class ScoreWork:
    """Score encoders labelled `label` of pre-training seed `pretrain_seed` at `points` ((fraction, step,
    FLOPs, checkpoint directory or None for the untrained encoder)) on the tasks `todo[fraction]` lacks,
    under `protocol`."""

    spec: CompareSpec
    label: str
    pretrain_seed: int
    points: list = field(default_factory=list)
    todo: dict = field(default_factory=dict)
    protocol: str | None = None  # None: the spec's first reading

    def __call__(self) -> dict:
        return score_job(self.spec, self.label, self.pretrain_seed, self.points, self.todo, self.protocol)

    @property
    def units(self) -> int:
        """(encoder, task) pairs it stores scores for (times the evaluation seeds: the progress of scoring)."""
        return sum(len(self.todo[p[0]]) for p in self.points)
