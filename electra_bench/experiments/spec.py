"""What an experiment run is: its spec (`CompareSpec`: preset, budget, objectives, evaluation, the
thread count of its workers), resolved from the command line, and its identity (`run_id`, derived from
everything that changes its numbers; where and on how many devices it runs is not part of it).

compare, ablate and sweep share it (experiments/compare.py, ablate.py, sweep.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field

from .. import presets
from ..choices import ALL_OBJECTIVES, DEVICE_KINDS, ENGINES, OBJECTIVES, PROTOCOLS, require
from ..data.suite import LEGACY_SUITE, is_suite_name, load_suite
from ..errors import BenchError
from ..pretrain import schedule
from ..flops.budget import parse_budget

# No torch at module level: the command line checks a spec's arguments (`precheck`) before torch is
# imported, which takes seconds; what needs it (the memory check, the measured FLOP count, the model's
# parameters) imports it inside the function.

# The embedded CPU default and its --quick variant for CI. The recipe was chosen by learning diagnostics and
# dev scores, the design (4 pre-training seeds at 1.2e13, about 15 minutes on 2 idle cores) by how often
# candidate designs resolve each objective against the untrained encoder and RTD - MLM (docs/tuning.md,
# round 5): with 2 seeds every interval carries t(1) = 12.7 and nothing resolves.
CPU_DEFAULT = {"preset": "tiny", "budget": "1.2e13", "protocol": "probe", "seeds": 3, "pretrain_seeds": 4}
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
    protocol: str = "probe"  # the reading the headline and verdict name
    pretrain_seeds: int = 1
    probe_pool: int = 3000
    probe_examples: int = 2000
    max_eval_examples: int | None = None
    quick: bool = False
    long: bool = False
    threads: int = 1
    overrides: tuple[tuple[str, object], ...] = ()  # knobs changed on the command line (run_config.KNOBS)
    objectives: tuple[str, ...] = OBJECTIVES  # what is pre-trained and scored (with the untrained encoder)
    # compare --until-resolved: (first look's seeds, seeds added per look, maximum); it decides how the
    # verdict is read (summarise/sequential.py), so it is part of the identity
    until_resolved: tuple[int, int, int] | None = None
    # more readings of the same encoders (`--protocol probe,zeroshot`): each scored and given its own verdict;
    # adding one to a run scores what it lacks and keeps the rest (store/runs.open_run)
    readings: tuple[str, ...] = ()
    # where and how wide it runs: not part of the identity (the numbers do not depend on it)
    device: str = field(default="auto", compare=False)
    jobs: int = field(default=1, compare=False)
    devices: str | None = field(default=None, compare=False)  # --devices: auto (None), cpu, N or ids "0,2"
    gpus_per_run: int = field(default=1, compare=False)  # GPUs of one pre-training run (torchrun DDP)
    engine: str = field(default="local", compare=False)  # one of ENGINES
    device_kind: str | None = field(default=None, compare=False)  # --device-kind: what it is planned for (target.py)
    # the budget as `resolve` decided it on the preset (schedule.resolve: FLOPs, share, steps, note): derived
    # from the fields above, so not part of the identity; None where the spec was built without `resolve`
    resolved: schedule.Budget | None = field(default=None, compare=False, repr=False)

    @classmethod
    def resolve(cls, *, preset, budget, quick, convention, corpus, source, tasks, seeds, protocol, device,
                pretrain_seeds=None, jobs=None, threads=None, overrides=None, long=False, objectives=None,
                devices=None, gpus_per_run=None, engine=None, allow_long_schedule=False, device_kind=None):
        precheck(preset=preset, budget=budget, quick=quick, long=long, convention=convention, overrides=overrides,
                 objectives=objectives, allow_long_schedule=allow_long_schedule)
        base = CPU_QUICK if quick else CPU_LONG if long else CPU_DEFAULT
        name = preset or base["preset"]
        custom_preset = name != base["preset"]
        for label, value in (("--seeds", seeds), ("--pretrain-seeds", pretrain_seeds), ("--jobs", jobs),
                             ("--threads", threads), ("--gpus-per-run", gpus_per_run)):
            if value is not None and value < 1:
                raise BenchError(f"{label} must be at least 1, got {value}")
        objectives = tuple(objectives) if objectives else OBJECTIVES
        n_pretrain = pretrain_seeds or (base["pretrain_seeds"] if not custom_preset else 1)
        auto_jobs, auto_threads = default_parallelism(len(objectives) * n_pretrain)
        if device not in ("auto", "cpu"):
            auto_jobs, auto_threads = 1, auto_threads * auto_jobs
        ov = tuple(sorted(overrides.items())) if overrides is not None else ()
        protocols = split_protocols(protocol)
        spec = cls(
            preset=name,
            budget=str(budget or base["budget"]),
            convention=convention,
            corpus=corpus,
            source=None if source == LEGACY_SUITE else source,  # the name of what no source has always meant
            tasks=tuple(tasks) if tasks else None,
            seeds=seeds or base["seeds"],
            protocol=protocols[0] if protocols else (base["protocol"] if not custom_preset else "finetune"),
            readings=protocols[1:],
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
            devices=devices,
            gpus_per_run=gpus_per_run or 1,
            engine=require("engine", engine or "local", ENGINES),
            device_kind=require("device kind", device_kind, DEVICE_KINDS) if device_kind else None,
        )
        # an absurdly long schedule fails here, before data or the run directory exist (the opt-in is not
        # part of the config: it changes nothing about the run); memory first, on the device the jobs will
        # run on (target.py: a cluster's GPUs, not the login node's CPU): the measured FLOP count of the
        # schedule check runs a forward at the preset's shapes (minutes at --seq-len 100000)
        from ..pretrain import run as runner  # torch, from here on
        from . import target

        target.resolve(spec).check_memory(spec)
        budget = runner.resolve_schedule(spec.resolved_preset(), objectives, spec.budget, convention, allow_long_schedule)
        return dataclasses.replace(spec, resolved=budget)

    def to_dict(self) -> dict:
        d = dataclasses.asdict(dataclasses.replace(self, resolved=None))
        for k in ("device", "jobs", "devices", "gpus_per_run", "engine", "device_kind", "resolved"):
            d.pop(k)
        d["overrides"] = dict(self.overrides)
        if self.objectives == OBJECTIVES:  # left out at the default: compare's run ids stay what they were
            d.pop("objectives")
        else:
            d["objectives"] = list(self.objectives)
        if self.until_resolved is None:  # likewise
            d.pop("until_resolved")
        else:
            first, batch, maximum = self.until_resolved
            d["until_resolved"] = {"first": first, "batch": batch, "max_pretrain_seeds": maximum}
        if not self.readings:  # likewise
            d.pop("readings")
        else:
            d["readings"] = list(self.readings)
        return d

    def run_id(self, kind: str = "compare") -> str:
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        mode = "-quick" if self.quick else "-long" if self.long else ""
        return f"{kind}-{self.preset}{mode}-{digest}"

    @property
    def protocols(self) -> tuple[str, ...]:
        """Every reading the run scores, the headline's first."""
        return (self.protocol,) + self.readings

    def resolved_preset(self) -> presets.RunConfig:
        return presets.resolve(self.preset, presets.Overrides(**dict(self.overrides)))


def budget_of(spec: CompareSpec, preset: presets.RunConfig | None = None) -> schedule.Budget:
    """The spec's budget on `preset` (the spec's own by default; the data's vocabulary may change it): the one
    `CompareSpec.resolve` made where it fits, else resolved here. The share limit was decided there, before
    any data, on the preset: it is not asked again (nor was it before the budget was one value)."""
    p = preset if preset is not None else spec.resolved_preset()
    b = spec.resolved
    if b is not None and b.fits(spec.budget, spec.convention, spec.objectives):
        return b.on(p)
    return schedule.resolve(p, spec.objectives, spec.budget, spec.convention, allow_long=True)


def split_protocols(protocol) -> tuple[str, ...]:
    """--protocol's readings in order ("probe,zeroshot" or a sequence; None: none named), each checked."""
    if protocol is None:
        return ()
    names = [p.strip() for p in (protocol.split(",") if isinstance(protocol, str) else protocol) if p.strip()]
    for name in names:
        require("protocol", name, PROTOCOLS)
    if len(set(names)) != len(names):
        raise BenchError(f"--protocol names a reading twice: {','.join(names)}")
    return tuple(names)


def precheck(*, preset, budget, quick, long, convention, overrides, objectives=None,
             allow_long_schedule=False) -> None:
    """What `CompareSpec.resolve` checks that needs no model, hence no torch: the mode, the preset and its
    overrides, the budget's syntax and the schedule's limits on the paper's FLOP count
    (schedule.check_schedule_bound). The command line calls it before importing anything heavy, so a typo
    is answered in a blink; `resolve` calls it first too."""
    if quick and long:
        raise BenchError("--quick and --long exclude each other")
    base = CPU_QUICK if quick else CPU_LONG if long else CPU_DEFAULT
    name = preset or base["preset"]
    presets.get(name)  # an unknown preset fails first, before anything is created
    if name != base["preset"] and budget is None:
        raise BenchError(f"--budget is required with --preset {preset} (e.g. 1e17 or 6.25%)")
    parse_budget(budget or base["budget"], reference_flops=1.0)  # a malformed budget fails here
    objectives = tuple(objectives) if objectives else OBJECTIVES
    for o in objectives:
        require("objective", o, ALL_OBJECTIVES)
    if len(set(objectives)) != len(objectives):
        raise BenchError(f"objectives named twice: {', '.join(objectives)}")
    schedule.check_schedule_bound(presets.resolve(name, overrides), objectives, str(budget or base["budget"]),
                                  convention, allow_long_schedule)


def encoder_params(p, objectives: tuple[str, ...] = OBJECTIVES) -> dict[str, int]:
    """Parameters of the model that is kept (MLM's encoder / RTD's discriminator), as the paper reports:
    the same encoder for every objective."""
    from ..objectives import parameter_counts

    n = parameter_counts(p)["encoder"]
    return {o: n for o in objectives + ("init",)}


def suite_name(spec: CompareSpec, tasks) -> str:
    if spec.source is None or is_suite_name(spec.source):
        return load_suite(spec.source).name
    return tasks[0].source if tasks else str(spec.source)
