"""`electra-bench compare`: both objectives, one budget, every checkpoint scored, one report.

A run lives in results/<run-id>/ (see evaluation/results.py). Its id is derived from the resolved
config, so running the same command again resumes the pre-training where it stopped and skips every
(objective, checkpoint, task, seed) score already stored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import presets, runner
from .errors import BenchError
from .model import Encoder
from .training import checkpoint
from .training.trainer import TrainOptions, fraction_dir

# The embedded CPU default (tuned on dev data, see docs/tuning.md) and its --quick variant for CI.
CPU_DEFAULT = {"preset": "tiny", "budget": "6e12", "protocol": "probe", "seeds": 3}
CPU_QUICK = {"preset": "tiny", "budget": "1e12", "protocol": "probe", "seeds": 2, "probe_pool": 1000,
             "probe_examples": 800, "max_eval_examples": 1000}


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
    pretrain_seed: int = 0
    probe_pool: int = 3000
    probe_examples: int = 2000
    max_eval_examples: int | None = None
    quick: bool = False
    device: str = field(default="auto", compare=False)

    @classmethod
    def resolve(cls, *, preset, budget, quick, convention, corpus, source, tasks, seeds, protocol, device):
        base = CPU_QUICK if quick else CPU_DEFAULT
        custom_preset = preset is not None and preset != base["preset"]
        if custom_preset and budget is None:
            raise BenchError(f"--budget is required with --preset {preset} (e.g. 1e17 or 6.25%)")
        return cls(
            preset=preset or base["preset"],
            budget=str(budget or base["budget"]),
            convention=convention,
            corpus=corpus,
            source=source,
            tasks=tuple(tasks) if tasks else None,
            seeds=seeds or base["seeds"],
            protocol=protocol or (base["protocol"] if not custom_preset else "finetune"),
            probe_pool=base.get("probe_pool", 3000),
            probe_examples=base.get("probe_examples", 2000),
            max_eval_examples=base.get("max_eval_examples"),
            quick=quick,
            device=device,
        )

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("device")
        return d

    def run_id(self) -> str:
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]
        return f"compare-{self.preset}{'-quick' if self.quick else ''}-{digest}"


def _params(p) -> dict[str, int]:
    """Parameters of the model that is kept (MLM's encoder / RTD's discriminator), as the paper reports."""
    from .views import parameter_counts

    n = parameter_counts(p)["encoder"]
    return {"mlm": n, "rtd": n, "init": n}


def _suite_name(spec: CompareSpec, tasks) -> str:
    if spec.source is None:
        from .data.suite import load_suite

        return load_suite().name
    return tasks[0].source if tasks else str(spec.source)


def _points(run_path: Path, plans: dict):
    """(objective, fraction, step, train_flops, checkpoint dir) for every saved checkpoint."""
    for objective, plan in plans.items():
        for f, step in plan.checkpoints.items():
            yield objective, f, step, plan.flops_at(step), run_path / "pretrain" / objective / "checkpoints" / fraction_dir(f)


def run_compare(spec: CompareSpec, root: str | Path, run_id: str | None, quiet: bool = False):
    from .data.tasks import load_tasks
    from .evaluation import plots, provenance, report
    from .evaluation.results import open_run
    from .evaluation.summary import build_summary
    from .scoring import recipe_for, score_encoder
    from .training.distributed import resolve_device

    run_id = run_id or spec.run_id()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    with open_run(root, run_id, spec.to_dict()) as run:
        p = presets.resolve(spec.preset)
        data, p = runner.prepare_data(p, spec.corpus, None, spec.pretrain_seed, quiet)
        budget = runner.resolve_budget(p, spec.budget, spec.convention)
        plans = {o: runner.plan(p, o, budget, spec.convention) for o in presets.OBJECTIVES}
        tasks = load_tasks(spec.source, list(spec.tasks) if spec.tasks else None)
        seeds = list(range(spec.seeds))
        provenance_info = provenance.collect(
            seeds={"pretrain": spec.pretrain_seed, "eval": seeds},
            convention=spec.convention,
            data_hashes=runner.data_hashes(data),
            extra={"preset": p.to_dict(), "params": _params(p), "suite": _suite_name(spec, tasks), "budget_flops": budget, "plans": {o: pl.to_dict() for o, pl in plans.items()},
                   "tasks": [t.spec.name for t in tasks], "task_source": tasks[0].source if tasks else None},
        )
        run.write_provenance(provenance_info)
        timings["prepare_s"] = time.perf_counter() - t0

        opts = TrainOptions(seed=spec.pretrain_seed, device=spec.device, quiet=quiet)
        for objective, plan in plans.items():
            t = time.perf_counter()
            runner.run(p, plan, data, run.path / "pretrain" / objective, opts)
            timings[f"pretrain_{objective}_s"] = time.perf_counter() - t

        device = resolve_device(spec.device)
        recipe = recipe_for({"finetune_lr": p.finetune_lr, "layerwise_lr_decay": p.layerwise_lr_decay,
                             "seq_len": p.seq_len}, spec.protocol, probe_pool=spec.probe_pool,
                            probe_examples=spec.probe_examples, max_eval_examples=spec.max_eval_examples)
        t = time.perf_counter()
        torch.manual_seed(spec.pretrain_seed)  # the untrained point: exactly both objectives' initial encoder
        init_encoder = Encoder(p.encoder)
        points = [("init", 0.0, 0, 0.0, None)] + list(_points(run.path, plans))
        for objective, fraction, step, flops, ckpt in points:
            todo = [task for task in tasks
                    if not all(run.has_score(objective, fraction, task.spec.name, s, spec.protocol) for s in seeds)]
            if not todo:
                continue
            encoder = init_encoder if ckpt is None else checkpoint.load_encoder(ckpt)[0]

            def store(task, seed, metrics, objective=objective, fraction=fraction, step=step, flops=flops):
                if run.has_score(objective, fraction, task.spec.name, seed, spec.protocol):
                    return
                run.append_scores([
                    {"objective": objective, "fraction": fraction, "step": step, "train_flops": flops,
                     "convention": spec.convention, "task": task.spec.name, "seed": seed, "metric": m,
                     "value": v, "protocol": spec.protocol}
                    for m, v in metrics.items()
                ])

            score_encoder(encoder, data.tokenizer, todo, seeds, recipe, device, on_result=store)
        timings["evaluate_s"] = time.perf_counter() - t

        specs = {t.spec.name: t.spec for t in tasks}
        summary = build_summary(run, specs, spec.convention)
        summary["timings"] = timings
        summary["wall_s"] = time.perf_counter() - t0
        run.write_summary(summary)
        plots.plot_run(run, run.path / "plots")
        rendered = report.render([run], "table")
    return summary, rendered
