"""`electra-bench compare`: both objectives, one budget, several pre-training seeds, every checkpoint
scored, one report.

The machinery is shared with other experiments (experiments/ablate.py): `CompareSpec` (whose
`objectives` say what is trained), `experiment` (data, plans, the run directory and its provenance),
`pretrain_phase`, `score_phase` and `record_invocation`; `run_compare` puts them together and reports.

A run lives in results/<run-id>/ (layout.RunLayout; the store is reporting/results.py). Its id is derived from the resolved
config, so running the same command again resumes the pre-training where it stopped and skips every
(objective, pre-training seed, checkpoint, task, seed) score already stored.

Parallelism. On a CPU, several single-threaded processes get more out of the cores than one
multi-threaded process does at this model size (two 1-thread runs on 2 cores: about 1.5x the
throughput of one 2-thread run, measured in docs/tuning.md), so independent pre-training runs and the
scoring of independent checkpoints go to a pool of `jobs` worker processes with `threads` each. The
thread count is part of the config (it can change the last bits of a float reduction); `jobs` is not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import torch
from threadpoolctl import threadpool_limits

from .. import atomic_io, presets
from ..choices import ALL_OBJECTIVES, OBJECTIVES, require
from ..data.suite import load_suite
from ..data.task_sources import load_tasks
from ..errors import BenchError
from ..evaluation.scoring import recipe_for, score_encoder
from ..objectives import initial_encoder, parameter_counts
from ..reporting import plots, provenance, report
from ..reporting.results import RunDir, open_run
from ..reporting.summary import build_summary
from ..training import checkpoint
from ..training import run as runner
from ..training.distributed import resolve_device
from ..training.budget import parse_budget
from ..training.progress import PhaseProgress, training_detail
from ..training.trainer import TrainOptions

# The embedded CPU default (chosen by learning diagnostics and dev scores, see docs/tuning.md) and
# its --quick variant for CI.
CPU_DEFAULT = {"preset": "tiny", "budget": "1.2e13", "protocol": "probe", "seeds": 3, "pretrain_seeds": 2}
# The long CPU mode (`compare --long`, about an hour on 2 idle cores): 5x the default budget.
CPU_LONG = {"preset": "tiny", "budget": "6e13", "protocol": "probe", "seeds": 3, "pretrain_seeds": 2}
CPU_QUICK = {"preset": "tiny", "budget": "2e12", "protocol": "probe", "seeds": 2, "pretrain_seeds": 2,
             "probe_pool": 1000, "probe_examples": 800, "max_eval_examples": 1000}


def default_parallelism(runs: int, cores: int | None = None) -> tuple[int, int]:
    """(jobs, threads per job): one single-threaded job per core, never more jobs than runs."""
    cores = cores or os.cpu_count() or 1
    jobs = max(1, min(cores, runs))
    return jobs, max(1, cores // jobs)


@dataclass(frozen=True)
class CompareSpec:
    preset: str
    budget: str
    convention: str = "measured"
    corpus: str | None = None
    source: str | None = None
    tasks: tuple[str, ...] | None = None
    seeds: int = 3
    protocol: str = "probe"
    pretrain_seeds: int = 1
    probe_pool: int = 3000
    probe_examples: int = 2000
    max_eval_examples: int | None = None
    quick: bool = False
    long: bool = False
    threads: int = 1
    overrides: tuple[tuple[str, object], ...] = ()  # preset fields changed on the command line
    objectives: tuple[str, ...] = OBJECTIVES  # what is pre-trained and scored (with the untrained encoder)
    device: str = field(default="auto", compare=False)
    jobs: int = field(default=1, compare=False)

    @classmethod
    def resolve(cls, *, preset, budget, quick, convention, corpus, source, tasks, seeds, protocol, device,
                pretrain_seeds=None, jobs=None, threads=None, overrides=None, long=False, objectives=None,
                allow_long_schedule=False):
        if quick and long:
            raise BenchError("--quick and --long exclude each other")
        base = CPU_QUICK if quick else CPU_LONG if long else CPU_DEFAULT
        name = preset or base["preset"]
        presets.get(name)  # an unknown preset fails first, before anything is created
        custom_preset = name != base["preset"]
        if custom_preset and budget is None:
            raise BenchError(f"--budget is required with --preset {preset} (e.g. 1e17 or 6.25%)")
        parse_budget(budget or base["budget"], reference_flops=1.0)  # a malformed budget fails here
        for label, value in (("--seeds", seeds), ("--pretrain-seeds", pretrain_seeds), ("--jobs", jobs),
                             ("--threads", threads)):
            if value is not None and value < 1:
                raise BenchError(f"{label} must be at least 1, got {value}")
        objectives = tuple(objectives) if objectives else OBJECTIVES
        for o in objectives:
            require("objective", o, ALL_OBJECTIVES)
        if len(set(objectives)) != len(objectives):
            raise BenchError(f"objectives named twice: {', '.join(objectives)}")
        n_pretrain = pretrain_seeds or (base["pretrain_seeds"] if not custom_preset else 1)
        auto_jobs, auto_threads = default_parallelism(len(objectives) * n_pretrain)
        if device not in ("auto", "cpu"):
            auto_jobs, auto_threads = 1, auto_threads * auto_jobs
        ov = tuple(sorted((k, v) for k, v in dataclasses.asdict(overrides).items()
                          if v is not None)) if overrides is not None else ()
        spec = cls(
            preset=name,
            budget=str(budget or base["budget"]),
            convention=convention,
            corpus=corpus,
            source=source,
            tasks=tuple(tasks) if tasks else None,
            seeds=seeds or base["seeds"],
            protocol=protocol or (base["protocol"] if not custom_preset else "finetune"),
            pretrain_seeds=n_pretrain,
            probe_pool=base.get("probe_pool", 3000),
            probe_examples=base.get("probe_examples", 2000),
            max_eval_examples=base.get("max_eval_examples"),
            quick=quick,
            long=long,
            threads=threads or auto_threads,
            overrides=ov,
            objectives=objectives,
            device=device,
            jobs=jobs or auto_jobs,
        )
        # an absurdly long schedule fails here, before data or the run directory exist (the opt-in is not
        # part of the config: it changes nothing about the run); memory first: the FLOP count of the
        # schedule check runs a forward at the preset's shapes (minutes at --seq-len 100000)
        runner.check_memory(spec.resolved_preset(), objectives, device, "auto")
        runner.check_schedule(spec.resolved_preset(), objectives, spec.budget, convention, allow_long_schedule)
        return spec

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("device")
        d.pop("jobs")
        d["overrides"] = dict(self.overrides)
        if self.objectives == OBJECTIVES:  # left out at the default: compare's run ids stay what they were
            d.pop("objectives")
        else:
            d["objectives"] = list(self.objectives)
        return d

    def run_id(self, kind: str = "compare") -> str:
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        mode = "-quick" if self.quick else "-long" if self.long else ""
        return f"{kind}-{self.preset}{mode}-{digest}"

    def resolved_preset(self) -> presets.Preset:
        return presets.resolve(self.preset, presets.Overrides(**dict(self.overrides)))


def _params(p, objectives: tuple[str, ...] = OBJECTIVES) -> dict[str, int]:
    """Parameters of the model that is kept (MLM's encoder / RTD's discriminator), as the paper reports:
    the same encoder for every objective."""
    n = parameter_counts(p)["encoder"]
    return {o: n for o in objectives + ("init",)}


def suite_name(spec: CompareSpec, tasks) -> str:
    if spec.source is None:
        return load_suite().name
    return tasks[0].source if tasks else str(spec.source)


def prepare(spec: CompareSpec, quiet: bool = True):
    """The preset and data every process of this run uses (data is packed once and cached), the budget
    and each objective's plan."""
    data, p = runner.prepare_data(spec.resolved_preset(), spec.corpus, None, 0, quiet)
    budget = runner.resolve_budget(p, spec.budget, spec.convention)
    plans = {o: runner.plan(p, o, budget, spec.convention) for o in spec.objectives}
    return data, p, budget, plans


@contextmanager
def job_threads(threads: int):
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
    """One pre-training run (in a worker process, or inline when jobs == 1)."""
    with job_threads(spec.threads):
        data, p, _, plans = prepare(spec)
        t = time.perf_counter()
        runner.run(p, plans[objective], data, out_dir, TrainOptions(seed=seed, device=spec.device, quiet=quiet))
        return objective, seed, time.perf_counter() - t


def _score_job(spec: CompareSpec, objective: str, pretrain_seed: int, points: list[tuple], todo: dict) -> list[dict]:
    """Score a run's checkpoints (or, for "init", the untrained encoder of this pre-training seed) on
    the tasks still missing; returns score rows."""
    with job_threads(spec.threads):
        return _score_points(spec, objective, pretrain_seed, points, todo)


def _score_points(spec: CompareSpec, objective: str, pretrain_seed: int, points: list[tuple], todo: dict) -> list[dict]:
    data, p, _, _ = prepare(spec)
    tasks = {t.spec.name: t for t in load_tasks(spec.source, list(spec.tasks) if spec.tasks else None)}
    recipe = recipe_for({"finetune_lr": p.finetune_lr, "layerwise_lr_decay": p.layerwise_lr_decay,
                         "seq_len": p.seq_len}, spec.protocol, probe_pool=spec.probe_pool,
                        probe_examples=spec.probe_examples, max_eval_examples=spec.max_eval_examples)
    device = resolve_device(spec.device)
    rows = []
    for fraction, step, flops, ckpt in points:
        names = todo[fraction]
        if ckpt is None:
            encoder = initial_encoder(p.encoder, pretrain_seed)
        else:
            encoder = checkpoint.load_encoder(ckpt)[0]
        for r in score_encoder(encoder, data.tokenizer, [tasks[n] for n in names], list(range(spec.seeds)),
                               recipe, device):
            rows.append({"objective": objective, "fraction": fraction, "step": step, "train_flops": flops,
                         "convention": spec.convention, "task": r["task"], "seed": r["seed"], "metric": r["metric"],
                         "value": r["value"], "protocol": spec.protocol, "pretrain_seed": pretrain_seed})
    return rows


def _ignore_sigint() -> None:
    """Worker initializer: a Ctrl-C in a terminal reaches the whole process group; the parent handles it
    (stops the workers, says one line), so a worker must not die mid-run with a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now. `shutdown` alone waits for the running calls (minutes-long pre-training runs), so
    a Ctrl-C would go unanswered until they end. Killing them is safe: every checkpoint and log row is
    written atomically or repaired on resume, and a rerun resumes from the last checkpoint."""
    workers = list((pool._processes or {}).values())  # no public handle on 3.10-3.13 (3.14: terminate_workers)
    pool.shutdown(wait=False, cancel_futures=True)
    for w in workers:
        w.terminate()
    for w in workers:
        w.join(timeout=10)


def run_jobs(jobs: int, calls: list[tuple], on_done, poll=None) -> None:
    """Run (fn, *args) calls inline (jobs == 1) or in a spawn pool; `on_done(result)` in the parent, in
    submission order, as each finishes (so results are stored as they come); `poll()` about every
    second while waiting (progress). An exception or Ctrl-C in the parent stops the workers at once."""
    if jobs <= 1 or len(calls) <= 1:
        for fn, *args in calls:
            on_done(fn(*args))
        return
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(calls)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_ignore_sigint)
    try:
        futures = [pool.submit(fn, *args) for fn, *args in calls]
        for f in futures:
            while True:
                try:
                    result = f.result(timeout=1.0)
                    break
                except FuturesTimeout:
                    if poll is not None:
                        poll()
                except BrokenProcessPool:
                    raise BenchError("a worker process died (killed, or out of memory: try fewer --jobs); run the "
                                     "same command again to resume where it stopped") from None
            on_done(result)
    except BaseException:
        _stop_workers(pool)
        raise
    pool.shutdown()


class PretrainMonitor:
    """Progress of pre-training runs in worker processes, read from their logs (the workers are quiet)."""

    def __init__(self, runs: dict[str, tuple[Path, int, float]], quiet: bool):
        self.runs = runs  # name -> (log path, total steps, budget)
        self.phase = PhaseProgress(quiet)
        for name, (log, total, _) in runs.items():
            self.phase.add(name, total, self._last(log).get("step", 0))

    @staticmethod
    def _last(log: Path) -> dict:
        try:
            rows = atomic_io.read_jsonl(log) if log.is_file() else []
        except (OSError, BenchError):  # mid-rewrite by a resuming worker: next poll
            return {}
        return next((r for r in reversed(rows) if "loss" in r), rows[-1] if rows else {})

    def poll(self) -> None:
        for name, (log, _, budget) in self.runs.items():
            row = self._last(log)
            if row:
                self.phase.update(name, row.get("step", 0), training_detail(
                    row.get("flops", 0.0), budget, row.get("tokens_per_s", 0.0), row.get("mfu"), row))


@dataclass
class Experiment:
    """An open experiment run: what `experiment` prepared, for the phases below."""

    spec: CompareSpec
    run: RunDir
    tasks: list
    data: object
    preset: presets.Preset
    budget: float
    plans: dict
    provenance: dict
    t0: float
    n_scores_before: int
    timings: dict[str, float] = field(default_factory=dict)


@contextmanager
def experiment(spec: CompareSpec, root: str | Path, run_id: str, quiet: bool = False) -> Iterator[Experiment]:
    """Check everything that can fail on the user's input (data, budget, tasks, memory) before the run
    directory exists, then open results/<run_id> (held while the block runs) with its provenance."""
    t0 = time.perf_counter()
    tasks = load_tasks(spec.source, list(spec.tasks) if spec.tasks else None)
    runner.check_memory(spec.resolved_preset(), spec.objectives, spec.device, "auto")
    data, p, budget, plans = prepare(spec, quiet)
    note = runner.budget_note(p, budget, spec.convention)
    if note and not quiet:
        print(note, file=sys.stderr)
    with open_run(root, run_id, spec.to_dict()) as run:
        seeds = list(range(spec.seeds))
        pretrain_seeds = list(range(spec.pretrain_seeds))
        provenance_info = provenance.collect(
            seeds={"pretrain": pretrain_seeds, "eval": seeds, "data_packing": 0},
            convention=spec.convention,
            data_hashes=data.hashes(),
            extra={"preset": p.to_dict(), "params": _params(p, spec.objectives), "suite": suite_name(spec, tasks),
                   "budget_flops": budget,
                   "plans": {o: pl.to_dict() for o, pl in plans.items()}, "parallelism": {"jobs": spec.jobs,
                   "threads": spec.threads}, "tasks": [t.spec.name for t in tasks],
                   "task_source": tasks[0].source if tasks else None},
        )
        if run.provenance() is None:  # a rerun keeps the provenance of the invocation that created the run
            run.write_provenance(provenance_info)
        exp = Experiment(spec, run, tasks, data, p, budget, plans, provenance_info, t0, len(run.scores()))
        exp.timings["prepare_s"] = time.perf_counter() - t0
        yield exp


def pretrain_phase(exp: Experiment, quiet: bool) -> None:
    """Every (objective, pre-training seed) run, in `spec.jobs` workers; finished ones are reused."""
    spec, run, plans = exp.spec, exp.run, exp.plans
    pretrain_seeds = list(range(spec.pretrain_seeds))
    t = time.perf_counter()
    calls = [(pretrain_job, spec, o, s, str(run.layout.pretrain(o, s).root), quiet or spec.jobs > 1)
             for s in pretrain_seeds for o in plans]
    monitor = PretrainMonitor({f"{o} s{s}": (run.layout.pretrain(o, s).log, plans[o].total_steps, exp.budget)
                                for s in pretrain_seeds for o in plans}, quiet or spec.jobs <= 1)
    with monitor.phase:
        run_jobs(spec.jobs, calls, lambda r: exp.timings.__setitem__(f"pretrain_{r[0]}_seed{r[1]}_s", r[2]),
                 monitor.poll)
        monitor.poll()
    exp.timings["pretrain_s"] = time.perf_counter() - t


def score_calls(exp: Experiment, final_only: bool = False, include_init: bool = True) -> list[tuple]:
    """The (_score_job, ...) calls that score what is missing: the untrained encoder (`include_init`) and
    every checkpoint (`final_only`: the last one) of every run, on every task and evaluation seed not
    scored yet. Each call returns score rows for `exp.run`."""
    spec, run, plans = exp.spec, exp.run, exp.plans
    seeds = list(range(spec.seeds))
    names = [task.spec.name for task in exp.tasks]
    calls = []
    for s in range(spec.pretrain_seeds):
        for objective in (("init",) if include_init else ()) + tuple(plans):
            if objective == "init":
                points = [(0.0, 0, 0.0, None)]
            else:
                plan = plans[objective]
                ckpts = run.layout.pretrain(objective, s)
                points = [(f, step, plan.flops_at(step), str(ckpts.checkpoint(f)))
                          for f, step in plan.checkpoints.items() if not final_only or f == max(plan.checkpoints)]
            todo = {pt[0]: [n for n in names if not all(
                run.has_score(objective, pt[0], n, e, spec.protocol, s) for e in seeds)] for pt in points}
            points = [pt for pt in points if todo[pt[0]]]
            if points:
                calls.append((_score_job, spec, objective, s, points, todo))
    return calls


def score_phase(exp: Experiment, quiet: bool, final_only: bool = False) -> None:
    """Score the untrained encoder and every checkpoint (`final_only`: the last one) of every run on
    every task and evaluation seed not scored yet; rows are stored as they come."""
    spec, run = exp.spec, exp.run
    seeds = list(range(spec.seeds))
    t = time.perf_counter()
    names = [task.spec.name for task in exp.tasks]
    calls = score_calls(exp, final_only)

    scoring = PhaseProgress(quiet)  # in units of (encoder, task, eval seed)
    scoring.add("scoring", sum(len(todo[pt[0]]) for *_, points, todo in calls for pt in points) * len(seeds))
    done = {"units": 0, "encoders": 0}
    n_encoders = sum(len(c[4]) for c in calls)

    def store(rows):
        run.append_scores(rows)
        done["units"] += len({(r["objective"], r["pretrain_seed"], r["fraction"], r["task"], r["seed"]) for r in rows})
        done["encoders"] += len({(r["objective"], r["pretrain_seed"], r["fraction"]) for r in rows})
        scoring.update("scoring", done["units"], f"{done['encoders']}/{n_encoders} encoders x "
                                                 f"{len(names)} tasks x {len(seeds)} seeds ({spec.protocol})")

    with scoring:
        run_jobs(spec.jobs, calls, store)
    exp.timings["evaluate_s"] = time.perf_counter() - t


def record_invocation(exp: Experiment) -> dict:
    """Append this invocation's row to history.jsonl; returns the run's work summed over invocations."""
    run, info = exp.run, exp.provenance
    atomic_io.append_jsonl(run.layout.history, {
        "started_utc": info["created_utc"], "wall_s": time.perf_counter() - exp.t0, "timings": exp.timings,
        "new_scores": len(run.scores()) - exp.n_scores_before, "command_line": info["command_line"],
        "git": info["git"], "versions": info["versions"],
        "parallelism": {"jobs": exp.spec.jobs, "threads": exp.spec.threads},
    })
    return work_done(atomic_io.read_jsonl(run.layout.history))


def run_compare(spec: CompareSpec, root: str | Path, run_id: str | None, quiet: bool = False, width: int = 160,
                score_more=None):
    """Run (or resume) a compare; return its summary and the report laid out for `width` columns.
    `score_more(exp)`: more scoring after the checkpoints' (the reference points)."""
    with experiment(spec, root, run_id or spec.run_id(), quiet) as exp:
        pretrain_phase(exp, quiet)
        score_phase(exp, quiet)
        if score_more is not None:
            score_more(exp)
        work = record_invocation(exp)
        summary = write_outputs(exp.run, {t.spec.name: t.spec for t in exp.tasks}, spec.convention, work)
        rendered = report.render([exp.run], "table", width=width)
    return summary, rendered


def write_outputs(run: RunDir, task_specs: dict, convention: str, work: dict) -> dict:
    """summary.json (with the run's work summed over invocations), plots/ and report.txt/.md, from what is
    stored: after a compare, and after scores are added to a finished run (report --reference)."""
    summary = build_summary(run, task_specs, convention)
    summary.update(work)
    run.write_summary(summary)
    plots.plot_run(run, run.layout.plots)
    atomic_io.write_text(run.layout.report_txt, report.render([run], "table", width=120) + "\n")
    atomic_io.write_text(run.layout.report_md, report.render([run], "md") + "\n")
    return summary


def work_done(history: list[dict]) -> dict:
    """The run's timings summed over every invocation (what the work cost, not what the last rerun
    skipped), and how many invocations it took."""
    timings: dict[str, float] = {}
    for row in history:
        for k, v in row.get("timings", {}).items():
            timings[k] = timings.get(k, 0.0) + v
    return {"timings": timings, "wall_s": sum(r.get("wall_s", 0.0) for r in history), "invocations": len(history)}
