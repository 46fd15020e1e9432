"""`electra-bench compare`: both objectives, one budget, several pre-training seeds, every checkpoint
scored, one report.

A run lives in results/<run-id>/ (layout.RunLayout; the store is store/runs.py). Its id is derived
from the resolved config (experiments/spec.py), so running the same command again resumes the
pre-training where it stopped and skips every (objective, pre-training seed, checkpoint, task, seed) score
already stored.

The work is a job graph (experiments/graph.py: pre-train objective x seed, score checkpoint x task group,
each after its run) run by one scheduler (experiments/jobs.py) on every device (one pinned worker per
GPU, or on a CPU `jobs` single-threaded workers: two 1-thread runs on 2 cores give about 1.5x the
throughput of one 2-thread run, docs/tuning.md) or as cluster jobs (experiments/cluster.py). ablate and
sweep are built on the same pieces. `--dry-run` prints the graph with its FLOPs and device-hours
(experiments/sizing.py) and runs nothing.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from ..store import atomic_io
from ..data.task_sources import load_tasks
from ..data.tasks import normalize_name
from ..errors import BenchError
from ..store.layout import RunLayout
from ..store.runs import load_run
from ..present import plots, report, tensorboard_curves
from ..summarise.summary import build_summary
from . import sizing, target
from .cluster import check_cluster
from .graph import Experiment, build_jobs, experiment, parallelism, run_experiments, slots
from ..flops.budget import parse_budget
from ..units import fmt_flops
from .spec import CPU_DEFAULT, CPU_LONG, CPU_QUICK, CompareSpec, budget_of

# On this machine's CPU, a budget beyond this many times its mode's own default asks for --yes: `--budget 150%`
# reads like a share of the default but is 16x it (hours, not minutes). The mode's own default, so that
# `--long` (5x the default mode's budget, a documented mode) and the README's `--long --budget 1.2e14` (2x
# long's) start without asking, while a budget many times what the chosen mode is sized for does not.
BIG_BUDGET = 4.0


def record_invocation(exp: Experiment) -> dict:
    """Append this invocation's row to history.jsonl; returns the run's work summed over invocations."""
    run, info = exp.run, exp.provenance
    atomic_io.append_jsonl(run.layout.history, {
        "started_utc": info["created_utc"], "wall_s": time.perf_counter() - exp.t0, "timings": exp.timings,
        "new_scores": len(run.scores()) - exp.n_scores_before, "command_line": info["command_line"],
        "git": info["git"], "versions": info["versions"], "numerics": info.get("numerics"),
        "parallelism": parallelism(exp.spec),
    })
    return work_done(atomic_io.read_jsonl(run.layout.history))


def run_compare(spec: CompareSpec, root: str | Path, run_id: str | None, quiet: bool = False, width: int = 160,
                score_more=None, announce: Callable[[], None] | None = None):
    """Run (or resume) a compare; return its summary and the report laid out for `width` columns.
    `score_more(exp)`: more scoring after the run's own graph (the reference points). `announce()`: once the
    run directory is open, before any job (what can fail on the input has, by then, failed in one line)."""
    with experiment(spec, root, run_id or spec.run_id(), quiet) as exp:
        if announce is not None:
            announce()
        run_experiments(spec, [(exp, {})], exp.run.layout.root / "cluster", quiet)
        if score_more is not None:
            score_more(exp)
        work = record_invocation(exp)
        summary = write_outputs(exp.run, {t.spec.name: t.spec for t in exp.tasks}, spec.convention, work)
        rendered = report.render([exp.run], "table", width=width)
    return summary, rendered


@dataclass(frozen=True)
class Start:
    """What a compare is about to run, said before it starts: the budget in FLOPs against its mode's default,
    and (`estimate`) the wall time of the whole graph where it will run."""
    line: str
    times_default: float  # the budget per objective over the mode's default budget
    on_this_cpu: bool  # the jobs run on this machine's CPU

    @property
    def needs_yes(self) -> bool:
        return self.on_this_cpu and self.times_default > BIG_BUDGET


def start(spec: CompareSpec, root: str | Path, run_id: str, quiet: bool = False) -> Start:
    """The line `compare` says before it starts, with the wall time of the whole graph (on a CPU that times a
    few training steps: seconds, so a --quiet run skips it unless its budget `needs_yes`)."""
    p = spec.resolved_preset()
    b = budget_of(spec, p)
    budget = b.flops
    mode = CPU_QUICK if spec.quick else CPU_LONG if spec.long else CPU_DEFAULT
    default = parse_budget(mode["budget"])
    times = budget / default
    share = (f"; a percentage is a share of the paper's full schedule for {p.name}, 100% = "
             f"{fmt_flops(b.reference_flops)} FLOPs" if b.share
             else "")
    ratio = "the default" if times == 1 else f"{times:.3g}x the default {fmt_flops(default)}"
    line = (f"{run_id}: {fmt_flops(budget)} FLOPs per objective ({ratio}{share}), {spec.pretrain_seeds} "
            f"pre-training seed(s) each")
    where = target.resolve(spec)
    if not quiet or (where.kind is None and times > BIG_BUDGET):
        plan = plan_only(spec, root, run_id)
        sized = ("at the speeds measured here" if where.kind is None else
                 f"sized for an {where.kind.name}" + (" as a reference" if where.runs_here else ""))
        unit = "CPU worker(s)" if where.kind is None else "device(s)"
        line += f"; about {sizing.fmt_hours(plan['wall_hours'])} on {plan['devices']} {unit} ({sized})"
        left = rerun_left(spec, root, run_id)
        if left is not None:  # a rerun: what is stored is skipped, so say what is left
            line += (f"; {left['stored']} of {left['jobs']} jobs stored, about "
                     f"{sizing.fmt_hours(left['wall_hours'])} left")
    return Start(line, times, where.kind is None)


def confirm(begin: Start, yes: bool, ask: Callable[[str], bool] | None) -> bool:
    """A budget `needs_yes` starts with --yes, or when `ask` (a terminal's question, which shows the start
    line) is answered yes; without a terminal it is refused in one line that says how to go on. Returns
    whether it asked."""
    if not begin.needs_yes or yes:
        return False
    why = f"more than {BIG_BUDGET:g}x the default budget on this machine's CPU"
    if ask is None:
        raise BenchError(f"not started: {begin.line}: {why}; pass --yes to start it (or a smaller --budget)")
    if not ask(f"{begin.line}\n{why[0].upper()}{why[1:]}: start it?"):
        raise BenchError("not started; pass a smaller --budget, or --yes to start without asking")
    return True


def where_it_went(layout: RunLayout) -> str:
    """Where a finished compare's outputs are: its run directory and its plots."""
    files = [f for f in layout.plots.glob("*") if f.is_file()]
    names, formats = sorted({f.stem for f in files}), sorted({f.suffix[1:] for f in files})
    plots = f"{layout.plots}/ ({', '.join(names)}; {' and '.join(formats)})" if files else "none"
    return (f"run: {layout.root}/ ({layout.report_txt.name}, {layout.report_md.name}, {layout.summary.name})\n"
            f"plots: {plots}")


def write_outputs(run, task_specs: dict, convention: str, work: dict) -> dict:
    """summary.json (with the run's work summed over invocations), plots/ and report.txt/.md, from what is
    stored: after a compare, and after scores are added to a finished run (report --reference)."""
    summary = build_summary(run, task_specs, convention)
    summary.update(work)
    run.write_summary(summary)
    plots.plot_run(run, run.layout.plots)
    tensorboard_curves.write(run.layout, summary)  # with the optional tensorboard package
    atomic_io.write_text(run.layout.report_txt, report.render([run], "table", width=120) + "\n")
    atomic_io.write_text(run.layout.report_md, report.render([run], "md") + "\n")
    return summary


def plan_only(spec: CompareSpec, root: str | Path, run_id: str, n_devices: int | None = None,
              **build_options) -> dict:
    """--dry-run: the graph and its sizing, without data (the preset's vocabulary stands, as in `pretrain
    --dry-run`) and without touching the run directory."""
    p = spec.resolved_preset()
    plans = budget_of(spec, p).plans()
    tasks, note = sized_tasks(spec)
    jobs = build_jobs(spec, plans, tasks, p, RunLayout(Path(root) / run_id), None, **build_options)
    where = target.resolve(spec)
    return {**graph_report(spec, jobs, n_devices, where, _rates(spec, where, p, plans)), "note": note}


def rerun_left(spec: CompareSpec, root: str | Path, run_id: str) -> dict | None:
    """What a rerun of a stored run has left: {"stored": jobs finished, "jobs": in the graph, "wall_hours":
    of the rest}, sized as --dry-run sizes them; None where no run is stored (or it cannot be read: the run
    itself says why when it opens). Read-only: no lock, nothing written."""
    path = Path(root) / run_id
    if not (path / "config.json").is_file():
        return None
    try:
        run = load_run(path)
        p = spec.resolved_preset()
        plans = budget_of(spec, p).plans()
        jobs = build_jobs(spec, plans, sized_tasks(spec)[0], p, run.layout, run)
    except BenchError:
        return None
    left = [j for j in jobs if j.done is None or not j.done()]
    ids = {j.id for j in left}
    left = [dataclasses.replace(j, deps=tuple(d for d in j.deps if d in ids)) for j in left]
    where = target.resolve(spec)
    rates = _rates(spec, where, p, plans)
    scoring = where.scoring_rate(rates)
    wall = sizing.simulate(left, _devices(spec), lambda job: rates.get(sizing.rate_key(job), scoring))
    return {"stored": len(jobs) - len(left), "jobs": len(jobs), "wall_hours": wall}


def _devices(spec: CompareSpec) -> int:
    """Devices the graph is sized for: --devices N (planning for a machine this is not needs no N visible
    GPUs here), else the slots found here."""
    return int(spec.devices) if spec.devices and spec.devices.isdigit() else len(slots(spec)[1])


def _rates(spec: CompareSpec, where: target.Target, p, plans: dict) -> dict[str, sizing.Rate]:
    """Each objective's pre-training rate on the target (measured on this CPU, assumed for a device)."""
    return {f"pretrain/{o}": where.pretrain_rate(p.for_objective(o), o, plans[o], spec.gpus_per_run) for o in plans}


def sized_tasks(spec: CompareSpec) -> tuple[list, str | None]:
    """The run's tasks for sizing, and a note when they are stand-ins: GLUE data that cannot be read here
    (planning on a laptop for a cluster) is sized by GLUE's published split sizes; only the names and the
    split lengths are read."""
    try:
        return load_tasks(spec.source, list(spec.tasks) if spec.tasks else None), None
    except BenchError as e:
        if spec.source is None:
            raise
        names = [normalize_name(t) for t in spec.tasks] if spec.tasks else list(sizing.GLUE_SIZES)
        unknown = [n for n in names if n not in sizing.GLUE_SIZES]
        if unknown:
            raise BenchError(f"{e} (and {', '.join(unknown)} not in GLUE, whose sizes --dry-run knows)") from None
        note = (f"note: {spec.source} is not readable here ({str(e)[:120]}); sizing with GLUE's published split "
                f"sizes")
        return [SimpleNamespace(spec=SimpleNamespace(name=n), splits={"train": range(sizing.GLUE_SIZES[n][0]),
                                                                       "dev": range(sizing.GLUE_SIZES[n][1])})
                for n in names], note


def graph_report(spec: CompareSpec, jobs: list, n_devices: int | None, where: target.Target,
                 rates: dict[str, sizing.Rate]) -> dict:
    """sizing.table over `jobs` at their rates on the target (`rates` by sizing.rate_key for what was
    measured, the target's assumed rate for the rest), plus the parent's own steps (prepare first,
    summarise last), the target and where it would run."""
    n = _devices(spec) if n_devices is None else n_devices
    scoring = where.scoring_rate(rates)
    out = sizing.table(jobs, n, lambda job: rates.get(sizing.rate_key(job), scoring))
    out["target"] = where.describe(spec)
    out["jobs"] = ([{"id": "prepare", "kind": "prepare", "devices": 0, "deps": [], "flops": 0.0, "device_hours": 0.0}]
                   + out["jobs"] + [{"id": "summarise", "kind": "summarise", "devices": 0, "deps": ["every job"],
                                     "flops": 0.0, "device_hours": 0.0}])
    out["parallelism"] = parallelism(spec)
    if spec.engine == "slurm":
        out["cluster"] = check_cluster(spec)
    return out


def work_done(history: list[dict]) -> dict:
    """The run's timings summed over every invocation (what the work cost, not what the last rerun
    skipped), and how many invocations it took."""
    timings: dict[str, float] = {}
    for row in history:
        for k, v in row.get("timings", {}).items():
            timings[k] = timings.get(k, 0.0) + v
    return {"timings": timings, "wall_s": sum(r.get("wall_s", 0.0) for r in history), "invocations": len(history)}
