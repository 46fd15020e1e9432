"""The experiments: compare, ablate and sweep (their shared options: options.experiment_options), with what
they refuse before torch is imported and how a --dry-run's graph is shown."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from ..errors import BenchError
from .common import POSITIVE_INT, REFERENCE_HELP, check_data_paths, emit_json, note, out
from .options import Sectioned, experiment_options, override_options


def experiment_prechecks(*, preset, budget, quick, long_mode, convention, overrides, objectives, corpus, source,
                          references, dry_run, allow_long_schedule) -> None:
    """What compare, ablate and sweep refuse without a model, before torch and pandas are imported: the
    spec's arguments (experiments/spec.precheck), the references' syntax, and the data paths (a dry run plans
    for another machine, where they may be, so it does not ask)."""
    from ..experiments.spec import precheck
    from ..summarise.reference_spec import parse_all

    precheck(preset=preset, budget=budget, quick=quick, long=long_mode, convention=convention, overrides=overrides,
             objectives=objectives, allow_long_schedule=allow_long_schedule)
    parse_all(references)
    if not dry_run:
        check_data_paths(corpus, source)



@click.command(cls=Sectioned)
@click.option("--preset", default=None, help="Default: tiny (the embedded CPU default).")
@click.option("--budget", default=None,
              help="FLOPs per objective (1.2e13; default: the mode's) or a percentage: a share of the paper's "
                   "full schedule for the preset, not of the default budget.")
@click.option("--quick", is_flag=True, help="1/6 of the default budget, smaller probes (CI).")
@click.option("--long", "long_mode", is_flag=True, help="5x the default budget (an hour on 2 idle cores).")
@click.option("--yes", is_flag=True, help="Start over 4x the default budget on a CPU unasked.")
@click.option("--reference", "references", multiple=True, metavar="LABEL=SOURCE[@FLOPS]",
              help=REFERENCE_HELP)
@click.option("--until-resolved", is_flag=True,
              help="Add --pretrain-seeds seeds at a time until RTD - MLM resolves; 5% error over all looks "
                   "(docs/results.md).")
@click.option("--max-pretrain-seeds", type=POSITIVE_INT, default=None,
              help="--until-resolved's limit per objective (default 8).")
@experiment_options
@override_options
def compare(preset, budget, quick, long_mode, yes, references, until_resolved, max_pretrain_seeds, convention, corpus,
            source, tasks, seeds, pretrain_seeds, protocol, root, run_id, device, jobs, threads, devices, gpus_per_run,
            engine, device_kind, dry_run, quiet, allow_long_schedule, as_json, overrides):
    """Pre-train MLM and RTD to the same budget, score every checkpoint, report the curves."""
    if max_pretrain_seeds is not None and not until_resolved:
        raise BenchError("--max-pretrain-seeds goes with --until-resolved")
    if until_resolved and pretrain_seeds is not None:
        from ..summarise.sequential import check_design

        check_design(pretrain_seeds, max_pretrain_seeds or 8)
    experiment_prechecks(preset=preset, budget=budget, quick=quick, long_mode=long_mode, convention=convention,
                          overrides=overrides, objectives=None, corpus=corpus, source=source, references=references,
                          dry_run=dry_run, allow_long_schedule=allow_long_schedule)
    from ..experiments import references as refs_mod
    from ..experiments.compare import CompareSpec, confirm, plan_only, run_compare, start, where_it_went
    from ..store.layout import RunLayout
    from ..summarise.reference_spec import parse_all

    spec = CompareSpec.resolve(preset=preset, budget=budget, quick=quick, convention=convention, corpus=corpus,
                               source=source, tasks=tasks.split(",") if tasks else None, seeds=seeds,
                               protocol=protocol, device=device, pretrain_seeds=pretrain_seeds, jobs=jobs,
                               threads=threads, overrides=overrides, long=long_mode, devices=devices,
                               gpus_per_run=gpus_per_run, engine=engine, allow_long_schedule=allow_long_schedule,
                               device_kind=device_kind)
    refs = parse_all(references)
    if until_resolved:
        from ..experiments import until_resolved as sequential_run

        spec = sequential_run.design(spec, max_pretrain_seeds or 8)
        if dry_run:  # the most it can cost: every look taken
            plan = plan_only(sequential_run.every_look(spec), root, run_id or spec.run_id())
            return show_graph(plan, as_json)
        summary, rendered = sequential_run.run_until_resolved(
            spec, root, run_id, spec.until_resolved[2], quiet=quiet or as_json, width=out.width,
            score_more=refs_mod.phase(refs) if refs else None)
        emit_json(summary) if as_json else click.echo(rendered, nl=False)
        return
    run_id = run_id or spec.run_id()
    if dry_run:
        return show_graph(plan_only(spec, root, run_id), as_json)
    begin = start(spec, root, run_id, quiet=quiet)
    asked = confirm(begin, yes, ask=(lambda q: click.confirm(q, default=False, err=True)) if sys.stdin.isatty() else None)
    summary, rendered = run_compare(spec, root, run_id, quiet=quiet or as_json, width=out.width,
                                    score_more=refs_mod.phase(refs) if refs else None,
                                    announce=None if quiet or asked else functools.partial(note, begin.line))
    emit_json(summary) if as_json else click.echo(rendered, nl=False)
    note(where_it_went(RunLayout(Path(root) / run_id)))


def show_graph(plan: dict, as_json: bool) -> None:
    """--dry-run's output: the job graph and its sizing (experiments/sizing.py)."""
    from ..experiments.sizing import render

    note(plan.pop("note", None))
    emit_json(plan) if as_json else out.print(render(plan), highlight=False, soft_wrap=True)


@click.command(cls=Sectioned)
@click.option("--preset", default=None, help="Default: tiny (the embedded CPU default).")
@click.option("--budget", default=None, help="Per-objective budget (default: the preset's tuned default).")
@click.option("--objectives", default=None,
              help="Comma-separated objectives (default: Table 5's five: rtd, alltokens-mlm, replace-mlm, rtd-15, mlm).")
@click.option("--quick", is_flag=True, help="compare --quick's budget and probes (for CI).")
@experiment_options
@override_options
def ablate(preset, budget, objectives, quick, convention, corpus, source, tasks, seeds, pretrain_seeds, protocol, root,
           run_id, device, jobs, threads, devices, gpus_per_run, engine, device_kind, dry_run, quiet, allow_long_schedule,
           as_json, overrides):
    """The paper's efficiency analysis (Table 5): every objective to one budget, final checkpoints scored."""
    chosen = [o.strip() for o in objectives.split(",") if o.strip()] if objectives else None
    experiment_prechecks(preset=preset, budget=budget, quick=quick, long_mode=False, convention=convention,
                          overrides=overrides, objectives=chosen, corpus=corpus, source=source, references=(),
                          dry_run=dry_run, allow_long_schedule=allow_long_schedule)
    from ..experiments.ablate import plan_ablate, resolve_spec, run_ablate

    spec = resolve_spec(objectives=chosen,
                        preset=preset, budget=budget, quick=quick, convention=convention, corpus=corpus,
                        source=source, tasks=tasks.split(",") if tasks else None, seeds=seeds, protocol=protocol,
                        device=device, pretrain_seeds=pretrain_seeds, jobs=jobs, threads=threads,
                        overrides=overrides, devices=devices, gpus_per_run=gpus_per_run, engine=engine,
                        allow_long_schedule=allow_long_schedule, device_kind=device_kind)
    if dry_run:
        return show_graph(plan_ablate(spec, root, run_id), as_json)
    result, rendered = run_ablate(spec, root, run_id, quiet=quiet or as_json)
    emit_json(result) if as_json else click.echo(rendered)


@click.command(cls=Sectioned)
@click.option("--preset", default=None, help="Default: tiny (the embedded CPU default).")
@click.option("--budget", default=None, help="Budget of every pre-training run (default: the preset's tuned default).")
@click.option("--generator-sizes", default=None,
              help="Comma-separated generator hidden sizes, each a fraction of the discriminator's (<= 1) or "
                   "absolute (a whole number > 1); default: the paper's Figure 3, 0.125,0.25,0.5,0.75,1.0. "
                   "(--generator-size, singular, sets one generator elsewhere and is refused here.)")
@click.option("--quick", is_flag=True, help="compare --quick's budget and probes (for CI).")
@experiment_options
@override_options
def sweep(preset, budget, generator_sizes, quick, convention, corpus, source, tasks, seeds, pretrain_seeds, protocol,
          root, run_id, device, jobs, threads, devices, gpus_per_run, engine, device_kind, dry_run, quiet,
          allow_long_schedule, as_json, overrides):
    """The paper's generator-size sweep (Figure 3): ELECTRA at each generator size and BERT, all to one
    budget; every checkpoint scored; score vs generator size and vs FLOPs."""
    experiment_prechecks(preset=preset, budget=budget, quick=quick, long_mode=False, convention=convention,
                          overrides=overrides, objectives=None, corpus=corpus, source=source, references=(),
                          dry_run=dry_run, allow_long_schedule=allow_long_schedule)
    from ..experiments.sweep import plan_sweep, resolve_spec, run_sweep

    spec = resolve_spec(generator_sizes=generator_sizes, preset=preset, budget=budget, quick=quick,
                        convention=convention, corpus=corpus, source=source,
                        tasks=tasks.split(",") if tasks else None, seeds=seeds, protocol=protocol, device=device,
                        pretrain_seeds=pretrain_seeds, jobs=jobs, threads=threads, overrides=overrides,
                        devices=devices, gpus_per_run=gpus_per_run, engine=engine,
                        allow_long_schedule=allow_long_schedule, device_kind=device_kind)
    if dry_run:
        return show_graph(plan_sweep(spec, root, run_id), as_json)
    result, rendered = run_sweep(spec, root, run_id, quiet=quiet or as_json, width=out.width)
    emit_json(result) if as_json else click.echo(rendered, nl=False)


COMMANDS = (compare, ablate, sweep)
