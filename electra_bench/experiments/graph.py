"""An experiment run as a job graph: open the run (`experiment`), describe its work as jobs
(`build_jobs`: pre-train objective x seed, score checkpoint x task group), choose the engine
(`engine_for`: inline, device-pinned workers, or cluster jobs) and run them (`run_experiments`).
compare, ablate and sweep all go through here (docs/scheduling.md).

Completion is read from the run directory, the only source of truth: a pre-training job is done when its
run finished and verifies (every checkpoint readable, the log at the last step, the tokenizer the data's);
a scoring job when every (task, evaluation seed) row of its checkpoint is stored. The data preparation
runs first, in this process (`experiment`, before the run directory exists: bad input leaves nothing),
and the summary last, here too: both are listed in --dry-run's graph, as `prepare` and `summarise`.
"""

from __future__ import annotations

import itertools
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .. import presets
from ..data.task_sources import load_tasks
from ..data.tokenizer import Tokenizer
from ..errors import BenchError
from ..score import tuning
from ..score.readings import check_readings, readable
from ..score.scoring import recipe_for
from ..store.layout import PretrainLayout, RunLayout
from ..store import provenance
from ..store.runs import RunDir, open_run, runs_with_fewer_seeds
from ..pretrain.run_dir import unusable_part
from . import sizing
from .cluster import ClusterEngine, check_cluster
from .devices import parse_devices
from .jobs import GraphResult, InlineEngine, Job, PoolEngine, run_graph
from .progress import GraphProgress
from .spec import CompareSpec, encoder_params, suite_name
from .work import PretrainWork, ScoreWork, prepare


@dataclass
class Experiment:
    """An open experiment run: what `experiment` prepared, for building and running its jobs."""

    spec: CompareSpec
    run: RunDir
    tasks: list
    data: object
    preset: presets.RunConfig
    budget: float
    plans: dict
    provenance: dict
    t0: float
    n_scores_before: int
    timings: dict[str, float] = field(default_factory=dict)


def parallelism(spec: CompareSpec) -> dict:
    return {"jobs": spec.jobs, "threads": spec.threads, "devices": spec.devices or "auto",
            "gpus_per_run": spec.gpus_per_run, "engine": spec.engine}


@contextmanager
def experiment(spec: CompareSpec, root: str | Path, run_id: str, quiet: bool = False) -> Iterator[Experiment]:
    """Check everything that can fail on the user's input (data, budget, tasks, memory, devices) before
    the run directory exists, then open results/<run_id> (held while the block runs) with its provenance."""
    t0 = time.perf_counter()
    tasks = load_tasks(spec.source, list(spec.tasks) if spec.tasks else None)
    check_readings(spec.protocols, tasks, named=bool(spec.tasks))
    slots(spec)  # unknown or missing devices fail here
    if spec.engine == "slurm":
        check_cluster(spec)  # a job no node can take fails here, not at its sbatch
    data, p, resolved, plans = prepare(spec, quiet)
    budget, note = resolved.flops, resolved.note
    if note and not quiet:
        print(note, file=sys.stderr)
    if not (Path(root) / run_id).exists():
        fewer = runs_with_fewer_seeds(root, spec.to_dict())
        if fewer:  # more seeds name a new run; say how to extend the one there is instead
            print(f"note: {', '.join(fewer)} has this config with fewer pre-training seeds or readings; `--run-id "
                  f"{fewer[0]}` adds them to it instead of starting a new run", file=sys.stderr)
    with open_run(root, run_id, spec.to_dict()) as run:
        provenance_info = provenance.collect(
            seeds={"pretrain": list(range(spec.pretrain_seeds)), "eval": list(range(spec.seeds)), "data_packing": 0},
            convention=spec.convention,
            data_hashes=data.hashes(),
            extra={"preset": p.to_dict(), "params": encoder_params(p, spec.objectives),
                   "suite": suite_name(spec, tasks), "budget_flops": budget,
                   "plans": {o: pl.to_dict() for o, pl in plans.items()}, "parallelism": parallelism(spec),
                   "tasks": [t.spec.name for t in tasks], "task_source": tasks[0].source if tasks else None},
            threads=spec.threads, device=spec.device,
        )
        if run.provenance() is None:  # a rerun keeps the provenance of the invocation that created the run
            run.write_provenance(provenance_info)
        exp = Experiment(spec, run, tasks, data, p, budget, plans, provenance_info, t0, len(run.scores()))
        exp.timings["prepare_s"] = time.perf_counter() - t0
        yield exp


# ------------------------------------------------------------------------------------------------ jobs


def pretrain_finished(layout: PretrainLayout, plan, tokenizer_sha: str | None) -> bool:
    """Finished and usable: done.json, every checkpoint and the log verified, the tokenizer the data's.
    Anything less runs the job, whose trainer repairs it (and says so) or resumes it."""
    if not layout.done.is_file() or unusable_part(layout, plan) is not None:
        return False
    if tokenizer_sha is None:
        return True
    try:
        return Tokenizer.load(layout.tokenizer).sha256 == tokenizer_sha
    except BenchError:
        return False


def task_groups(protocol: str, names: list[str]) -> list[list[str]]:
    """Tasks scored by one job: all of them for the probe and the zero-shot reading (minutes per encoder on
    a CPU), one each for fine-tuning, tuned or not (hours per task on GLUE: MNLI alone is a third of the
    work), so devices stay busy."""
    return [[n] for n in names] if protocol in ("finetune", "finetune-tuned") else [names]


def _costs(spec: CompareSpec, protocol: str, tasks: list, preset) -> dict[str, float]:
    """FLOPs of scoring one encoder on each task under `protocol` (sizing.task_flops)."""
    sizes = {t.spec.name: (len(t.splits.get("train", [])), sum(len(v) for k, v in t.splits.items()
                                                                  if k.startswith("dev"))) for t in tasks}
    recipe = recipe_for({"seq_len": preset.schedule.seq_len}, protocol, probe_pool=spec.probe_pool,
                        probe_examples=spec.probe_examples, max_eval_examples=spec.max_eval_examples)
    forward = sizing.forward_flops_per_sequence(preset, recipe.max_len, spec.convention)
    return {n: sizing.task_flops(forward, protocol, *sizes[n], recipe.epochs_for(n), spec.seeds,
                                 spec.probe_pool, spec.max_eval_examples,
                                 tuning.selection_work(recipe, n, sizes[n][0])) for n in sizes}


def build_jobs(spec: CompareSpec, plans: dict, tasks: list, preset, layout: RunLayout, run: RunDir | None = None,
               *, prefix: str = "", final_only: bool = False, include_init: bool = True, quiet_runs: bool = True,
               tokenizer_sha: str | None = None) -> list[Job]:
    """The run's jobs: every (objective, pre-training seed) run, then scoring jobs for the untrained encoder
    (`include_init`) and every checkpoint (`final_only`: the last) x task group, each after its run. The
    first reading (spec.protocol) scores every checkpoint; the others (spec.readings) the untrained encoder
    and the final checkpoints, where their verdicts are read (a reading costs up to 20x the probe: the
    tuned fine-tuning). `run` (None for --dry-run) says what is stored already."""
    seeds = list(range(spec.seeds))
    readings = {protocol: [t.spec.name for t in readable(protocol, tasks)] for protocol in spec.protocols}
    cost = {protocol: _costs(spec, protocol, readable(protocol, tasks), preset) for protocol in readings}
    width = max(1, spec.gpus_per_run)
    pre, score = [], []
    for s in range(spec.pretrain_seeds):
        for objective, plan in plans.items():
            out = layout.pretrain(objective, s)
            work = PretrainWork(spec, objective, s, str(out.root), quiet_runs, width)
            pre.append(Job(
                id=f"{prefix}pretrain/{objective}/seed-{s}", kind="pretrain", call=(work,), devices=width,
                flops=plan.flops_at(plan.total_steps),
                done=None if run is None else (lambda o=out, p=plan: pretrain_finished(o, p, tokenizer_sha)),
                watch=(out.log, plan.total_steps, plan.budget)))
        for objective in (("init",) if include_init else ()) + tuple(plans):
            if objective == "init":
                points, deps = [(0.0, 0, 0.0, None)], ()
            else:
                plan = plans[objective]
                ckpts = layout.pretrain(objective, s)
                points = [(f, step, plan.flops_at(step), str(ckpts.checkpoint(f)))
                          for f, step in plan.checkpoints.items() if not final_only or f == max(plan.checkpoints)]
                deps = (f"{prefix}pretrain/{objective}/seed-{s}",)
            for point, (protocol, names) in itertools.product(points, readings.items()):
                reading = "" if protocol == spec.protocol else f"@{protocol}"  # the first keeps its old ids
                if reading and point is not points[-1]:  # another reading: the verdict's points only
                    continue
                for group in task_groups(protocol, names):
                    todo = group if run is None else [n for n in group if not all(
                        run.has_score(objective, point[0], n, e, protocol, s) for e in seeds)]
                    task_part = f"/{group[0]}" if len(group) == 1 and len(names) > 1 else ""
                    score.append(Job(
                        id=f"{prefix}score/{objective}/seed-{s}/frac-{point[0]:.4f}{task_part}{reading}",
                        kind="score", call=(ScoreWork(spec, objective, s, [point], {point[0]: todo}, protocol),),
                        deps=deps, flops=sum(cost[protocol][n] for n in group), done=(lambda t=todo: not t),
                        on_result=None if run is None else run.store_scored))
    return pre + score


def score_units(job: Job, seeds: int) -> int:
    """(encoder, task, evaluation seed) units a scoring job stores: the progress of scoring."""
    return job.call[0].units * seeds


# --------------------------------------------------------------------------------------------- running


def slots(spec: CompareSpec) -> tuple[str, list[str]]:
    """(kind, slots) the run's jobs are spread over (devices.parse_devices; the cluster engine's own)."""
    if spec.engine == "slurm":
        n = int(spec.devices) if spec.devices and spec.devices.isdigit() else 8
        return "cluster", [f"slurm{i}" for i in range(n)]
    kind, found = parse_devices(spec.devices, spec.device, spec.jobs)
    if spec.gpus_per_run > len(found):
        raise BenchError(f"--gpus-per-run {spec.gpus_per_run}: only {len(found)} device(s) to run on (--devices)")
    return kind, found


def engine_for(spec: CompareSpec, folder: Path):
    kind, found = slots(spec)
    if spec.engine != "local":
        gpus = kind == "cuda" or (kind == "cluster" and spec.device != "cpu")  # slurm: GPU jobs unless --device cpu
        return ClusterEngine(spec.engine, found, folder, gpus=gpus, threads=spec.threads)
    if kind == "cpu" and len(found) == 1:
        return InlineEngine()
    return PoolEngine(kind, found)


def run_experiments(spec: CompareSpec, parts: list[tuple[Experiment, dict]], folder: Path, quiet: bool) -> GraphResult:
    """Run the jobs of every part (an open experiment and its build_jobs options) as one graph: every
    pre-training run before any scoring, so scoring fills the gaps. Timings go to each part's experiment."""
    engine = engine_for(spec, folder)
    inline = isinstance(engine, InlineEngine)
    jobs, owner = [], {}
    for exp, options in parts:
        built = build_jobs(exp.spec, exp.plans, exp.tasks, exp.preset, exp.run.layout, exp.run,
                           quiet_runs=quiet or not inline, tokenizer_sha=exp.data.tokenizer.sha256, **options)
        jobs += built
        owner.update({j.id: exp for j in built})
    jobs.sort(key=lambda j: j.kind != "pretrain")  # stable: each kind keeps its order
    for j in jobs:
        finished = j.done is not None and j.done()  # read once: verifying a finished run reads its files
        j.done = lambda v=finished: v
        if j.kind == "pretrain":
            j.on_result = lambda r, e=owner[j.id]: e.timings.__setitem__(f"pretrain_{r[0]}_seed{r[1]}_s", r[2])
    units = {j.id: score_units(j, spec.seeds) for j in jobs if j.kind == "score"}
    progress = GraphProgress(jobs, quiet, runs_quiet=inline, score_units=units)
    t = time.perf_counter()
    with progress:
        result = run_graph(jobs, engine, progress)
    wall = time.perf_counter() - t
    # pre-training ends when its last run does; scoring overlapping it counts there, the rest is evaluate_s
    pre_end = max((result.finished_at[j.id] for j in jobs if j.kind == "pretrain" and j.id in result.finished_at),
                  default=0.0)
    for exp, _ in parts:
        exp.timings["pretrain_s"] = pre_end
        exp.timings["evaluate_s"] = wall - pre_end
    return result


def run_calls(spec: CompareSpec, calls: dict[str, tuple], on_result, folder: Path) -> GraphResult:
    """Independent calls {job id: (fn, *args)} as jobs without dependencies on the spec's engine, each
    result passed to `on_result` here as it comes: for work outside a run's own graph (scoring external
    encoders with a run's suite, say)."""
    jobs = [Job(id=job_id, kind="score", call=call, on_result=on_result) for job_id, call in calls.items()]
    return run_graph(jobs, engine_for(spec, folder))
