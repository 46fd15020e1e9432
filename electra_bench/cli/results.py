"""Commands that read finished runs: report, check, baseline and the history over commits."""

from __future__ import annotations

import sys

import click

from ..errors import BenchError
from ..present.text_formats import FORMATS
from .common import DEVICE_HELP, POSITIVE_INT, REFERENCE_HELP, emit_json, existing, existing_run, out


@click.command()
@click.argument("runs", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Terminal table, Markdown, CSV or LaTeX.")
@click.option("--reference", "references", multiple=True, metavar="LABEL=SOURCE[@FLOPS]",
              help=REFERENCE_HELP + " Scored into the (one) compare run first.")
@click.option("--device", default="auto", show_default=True, help=DEVICE_HELP + " (for --reference)")
@click.option("--plan", "show_plan", is_flag=True,
              help="Compare runs: the seeds the design needs, per checkpoint (the smallest difference it detects, "
                   "the pre-training seeds that would resolve the measured one; docs/results.md).")
@click.option("--write", "rewrite", is_flag=True,
              help="Compare runs: rewrite each run's summary.json, plots and report.txt/.md from its stored "
                   "scores, as this version computes them (nothing is trained or scored).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def report(runs, fmt, references, device, show_plan, rewrite, as_json):
    """Paper-style table for one or more runs: compare runs in Table 1's layout with the headline,
    ablation runs in Table 5's."""
    for run in runs:
        existing_run(run)
    from ..present.plan_report import plan_report, render_plan
    from ..present.report import render_runs, report_json

    if rewrite:
        from ..experiments.rewrite import rewrite_outputs

        for run in runs:
            rewrite_outputs(run)

    if references:
        from ..experiments.references import add_to_run

        if len(runs) != 1:
            raise BenchError("--reference scores into one compare run: give exactly one RUN")
        add_to_run(runs[0], list(references), device)
    if show_plan:
        plans = plan_report(runs)
        return emit_json(plans) if as_json else click.echo(render_plan(plans))
    if as_json:
        return emit_json(report_json(runs))
    click.echo(render_runs(runs, fmt, width=out.width))


@click.command()
@click.argument("run")
@click.option("--baseline", required=True, help="Baseline JSON (see results/baselines/).")
@click.option("--tol", type=click.FloatRange(min=0), default=None,
              help="Allowed drop in score points for scores and margins (default: the baseline's); the "
                   "learning diagnostics keep their own tolerances.")
@click.option("--allow-different-config", is_flag=True,
              help="Compare even when the run's preset, budget, protocol, suite, FLOP convention, tasks or "
                   "seeds differ from the baseline's (a WARNING line says what differs).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def check(run, baseline, tol, allow_different_config, as_json):
    """CI regression check: exit 0 within tolerance, 1 on a regression, 2 on bad input or unlike runs."""
    existing_run(run)
    existing(baseline, "a baseline JSON written by `electra-bench baseline`")
    from ..ci.regression import check as do_check
    from ..ci.regression import score_tolerances
    from ..store.runs import load_compare_run

    result = do_check(load_compare_run(run), baseline, None if tol is None else score_tolerances(tol),
                      allow_different_config=allow_different_config)
    click.echo(result.to_json() if as_json else result.render())
    sys.exit(0 if result.ok else 1)


@click.command()
@click.argument("run")
@click.option("--out", "out_path", required=True, help="Where to write the baseline JSON.")
@click.option("--tol", type=click.FloatRange(min=0), default=2.0, show_default=True,
              help="Allowed drop in score points (scores, margins); diagnostics use their own tolerances.")
@click.option("--json", "as_json", is_flag=True, help="Print the baseline written, with its path under `out` "
                                                     "(stable snake_case keys).")
def baseline(run, out_path, tol, as_json):
    """Write a run's scores as a regression baseline for `check`."""
    existing_run(run)
    from ..ci.regression import score_tolerances, write_baseline
    from ..store.runs import load_compare_run

    written = write_baseline(load_compare_run(run), out_path, tol=score_tolerances(tol))
    emit_json({**written, "out": out_path}) if as_json else click.echo(out_path)


class _HistoryGroup(click.Group):
    """`history RUN...` (before the subcommands) gets a pointer to what replaced it, not just "no such command"."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            raise click.UsageError(f"no history subcommand '{args[0]}': plot runs with `history plot RUN... --out DIR`, "
                                   "or keep a store: `history add RUN --store FILE`, then `history plot|show --store FILE`",
                                   ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=_HistoryGroup)
def history():
    """The regression history over commits: add a run to a store, plot the trend, summarise it for CI."""


HISTORY_INPUTS = click.argument("inputs", nargs=-1)
STORE_OPTION = click.option("--store", default=None, help="History store (JSONL written by `history add`).")
BASELINE_OPTION = click.option("--baseline", default=None,
                               help="Baseline JSON (results/baselines/): its values and tolerances are the band, "
                                    "and each record is judged against it.")


@history.command("add")
@click.argument("run")
@click.option("--store", required=True, help="History store to append to (JSONL; created when absent).")
@click.option("--commit", default=None, help="Commit id (default: the run's provenance, else CI's variables, else git HEAD).")
@click.option("--parent", default=None, help="Parent commit (default: from git).")
@click.option("--branch", default=None, help="Branch (default: CI's variables, else git).")
@click.option("--date", default=None, help="Commit date, ISO 8601 (default: from git, else the run's start).")
@click.option("--note", default=None, help="A note kept with the record (e.g. why a point is special).")
@click.option("--json", "as_json", is_flag=True, help="Print the record (stable snake_case keys).")
def history_add(run, store, commit, parent, branch, date, note, as_json):
    """Append a compare run's record (commit, config, final scores with bands, diagnostics, wall times,
    machine, load) to a history store; safe with concurrent CI jobs."""
    from ..ci.history_store import append, record_from_run
    from ..ci.history_trend import short_commit
    from ..store.runs import load_compare_run

    record = record_from_run(load_compare_run(run), commit=commit, parent=parent, branch=branch, date=date, note=note)
    added = append(store, record)
    if as_json:
        emit_json({**record, "added": added})
    else:
        click.echo(f"{store}: {'added' if added else 'already holds'} {short_commit(record['commit'])} "
                   f"(run {record['run_id']}, config {record['config_digest']})")


@history.command("plot")
@HISTORY_INPUTS
@STORE_OPTION
@BASELINE_OPTION
@click.option("--last", type=POSITIVE_INT, default=30, show_default=True, help="Plot the newest N records.")
@click.option("--out", "out_dir", default="results/history", show_default=True, help="Directory for history.png/svg.")
@click.option("--json", "as_json", is_flag=True, help="Print the files written as JSON (`files`, `records`).")
def history_plot(inputs, store, baseline, last, out_dir, as_json):
    """Plot the trend over commits: scores with their bands, the baseline's tolerance band, diagnostics,
    wall time. INPUTS: run directories (recorded on the fly) and/or a baseline JSON file."""
    from ..ci.history_plot import plot_history
    from ..ci.history_trend import gather, judge

    records, base, base_path = gather(store, inputs, baseline)
    paths = [str(p) for p in plot_history(judge(records, base), out_dir, base, base_path, last=last)]
    if as_json:
        return emit_json({"files": paths, "records": len(records)})
    for path in paths:
        click.echo(path)


@history.command("show")
@HISTORY_INPUTS
@STORE_OPTION
@BASELINE_OPTION
@click.option("--last", type=click.IntRange(min=0), default=5, show_default=True,
              help="Markdown: compare with this many previous records of the same config.")
@click.option("--format", "fmt", type=click.Choice(("md", "csv", "json")), default="md", show_default=True,
              help="md: for a CI job summary or PR comment; csv/json: the whole trend.")
@click.option("--plot-url", "plot_urls", multiple=True, help="Markdown: link to a plot (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="The same as --format json (as every command takes it).")
def history_show(inputs, store, baseline, last, fmt, plot_urls, as_json):
    """The newest record against the baseline and the previous ones (Markdown, pass/FAIL per metric), or
    the whole trend as CSV or JSON."""
    from ..ci.history_trend import gather, judge, render

    fmt = "json" if as_json else fmt
    records, base, base_path = gather(store, inputs, baseline)
    click.echo(render(judge(records, base), base, base_path, fmt, last=last, plot_urls=plot_urls), nl=False)


COMMANDS = (report, check, baseline, history)
