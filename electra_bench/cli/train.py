"""Commands about one pre-training run and what it costs: presets, flops, signal, pretrain."""

from __future__ import annotations

import click

from ..choices import ALL_OBJECTIVES, FLOP_CONVENTIONS
from ..errors import BenchError
from .common import (CONVENTION_HELP, FRACTION, OBJECTIVE_HELP, POSITIVE_FLOAT, POSITIVE_INT, check_data_paths,
                     emit_json, existing, note, out)
from .options import override_options, train_options


@click.command()
@click.option("--convention", type=click.Choice(FLOP_CONVENTIONS), default="paper", show_default=True,
              help=CONVENTION_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def presets(convention, as_json):
    """List the presets with parameter counts and FLOPs per step per objective."""
    from ..present.tables import preset_rows, presets_table

    from .. import presets as presets_mod

    rows = preset_rows(presets_mod.names(), convention)
    emit_json(rows) if as_json else out.print(presets_table(rows))


@click.command()
@click.option("--preset", default="small", show_default=True, help="Preset name (`electra-bench presets`).")
@click.option("--objective", type=click.Choice(ALL_OBJECTIVES), default="rtd", show_default=True,
              help=OBJECTIVE_HELP)
@click.option("--convention", type=click.Choice(FLOP_CONVENTIONS), default="measured", show_default=True,
              help=CONVENTION_HELP)
@override_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def flops(preset, objective, convention, overrides, as_json):
    """FLOPs of one training step and of the preset's full schedule (or --steps)."""
    from ..presets import resolve
    from ..present.tables import flops_report, flops_table

    result = flops_report(resolve(preset, overrides).for_objective(objective), objective, convention)
    emit_json(result) if as_json else out.print(flops_table(result))


@click.command()
@click.option("--seq-len", type=POSITIVE_INT, default=512, show_default=True, help="Tokens per sequence.")
@click.option("--mask-prob", type=FRACTION, default=0.15, show_default=True, help="Fraction of positions masked.")
@click.option("--vocab-size", type=click.IntRange(min=2), default=30522, show_default=True,
              help="Vocabulary size (bits per MLM target).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def signal(seq_len, mask_prob, vocab_size, as_json):
    """Learning signal per sequence: positions with gradient and bits of target, MLM vs RTD; then every
    objective, by the formula and as measured on the objective modules on a batch."""
    from ..flops.learning_signal import learning_signal, objective_signal, signal_table
    from ..present.tables import key_value_table

    s = learning_signal(seq_len, mask_prob, vocab_size)
    rows = objective_signal(seq_len, mask_prob, vocab_size)
    if as_json:
        emit_json({**s, "objectives": rows})
    else:
        out.print(key_value_table("learning signal per sequence", s))
        out.print(signal_table(rows, seq_len))


@click.command()
@train_options
@click.option("--objective", type=click.Choice(ALL_OBJECTIVES), required=True, help=OBJECTIVE_HELP)
@click.option("--out", "out_dir", default=None, help="Run directory (default results/pretrain-<preset>-<objective>-<budget>).")
@click.option("--resume/--no-resume", default=True, show_default=True,
              help="Continue a run found in --out (--no-resume: refuse to touch it).")
@click.option("--log-every", type=POSITIVE_INT, default=10, show_default=True, help="Steps between log rows.")
@click.option("--save-every", type=click.IntRange(min=0), default=0, help="Also save resumable state every N steps.")
@click.option("--peak-flops", type=POSITIVE_FLOAT, default=None, help="Declared peak FLOP/s for MFU (default: measured).")
@click.option("--dry-run", is_flag=True, help="Plan only: print steps, FLOPs and checkpoints.")
@click.option("--show-config", is_flag=True, help="Print the resolved config and plan, then exit.")
@override_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def pretrain(preset, budget, convention, corpus, vocab_file, seed, device, precision, allow_emulated_bf16, compile_,
             quiet, allow_long_schedule, objective, out_dir, resume, log_every, save_every, peak_flops, dry_run,
             show_config, overrides, as_json):
    """Pre-train one objective to a fixed FLOP budget."""
    from ..presets import resolve
    from ..pretrain import schedule

    p = resolve(preset, overrides)
    if budget is None:
        raise BenchError("--budget is required (FLOPs like 1e15, or a share of the paper's budget like 25%)")
    # what needs no model is refused before torch is imported (seconds): the schedule's limits on the
    # paper's FLOP count, and the data's paths (planning needs no data)
    schedule.check_schedule_bound(p, (objective,), budget, convention, allow_long_schedule)
    planning_only = dry_run or show_config
    if not planning_only:
        check_data_paths(corpus, None)
        if vocab_file is not None:
            existing(vocab_file, "a WordPiece vocab.txt")

    from ..pretrain import run as runner
    from ..pretrain.trainer import TrainOptions

    if not planning_only:  # first: the FLOP count below runs a forward at these shapes (minutes at --seq-len 1e5)
        runner.check_memory(p, (objective,), device, precision, allow_emulated_bf16)
    # the schedule's length needs only the preset: checked before data or --out exist
    resolved = runner.resolve_schedule(p, (objective,), budget, convention, allow_long_schedule)
    if planning_only:  # planning needs no data: the preset's vocabulary stands
        note(resolved.note)
        info = {"preset": p.to_dict(), "plan": resolved.plan(objective).to_dict()}
        emit_json(info) if (as_json or show_config) else out.print(info["plan"])
        return
    data, p = runner.prepare_data(p, corpus, vocab_file, seed, quiet)
    resolved = resolved.on(p)  # the data's vocabulary
    note(resolved.note)
    the_plan = resolved.plan(objective)
    out_dir = out_dir or f"results/pretrain-{p.name}-{objective}-{resolved.flops:.3g}"
    opts = TrainOptions(seed=seed, device=device, precision=precision, allow_emulated_bf16=allow_emulated_bf16,
                        compile=compile_, log_every=log_every, save_every_steps=save_every, peak_flops=peak_flops,
                        quiet=quiet, resume=resume)
    summary = runner.run(p, the_plan, data, out_dir, opts)
    summary["out_dir"] = str(out_dir)
    emit_json(summary) if as_json else out.print(
        f"{objective}: {summary['steps']} steps, {summary['train_flops']:.3g} FLOPs "
        f"({convention}) of a {summary['budget']:.3g} budget -> {out_dir}"
    )



COMMANDS = (presets, flops, signal, pretrain)
