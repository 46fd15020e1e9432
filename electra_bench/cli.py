"""`electra-bench`: parse the command line and dispatch. No logic lives here.

Every command that reports numbers takes --json (stable snake_case keys, documented in the README).
User errors (BenchError) print one line `error: ...` and exit 2, without a traceback.

Each command imports what it runs inside its body: `--help` and argument errors must not wait for
torch (2-15 s to import here), so nothing at module level may import it.
"""

from __future__ import annotations

import errno
import functools
import json
import re
import sys
import warnings
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from .data.suite import SUITES
from .choices import ALL_OBJECTIVES, DEVICE_KINDS, EMBEDDING_SHARING, ENGINES, FLOP_CONVENTIONS, PRECISIONS, PROTOCOLS
from .errors import BenchError, Terminated
from .present.text_formats import FORMATS
from .pretrain import termination

# Piped output (CI logs, files, grep) is never wrapped: rich would wrap at 80 columns, and any fixed width
# splits long lines (a report's notes) where a reader or a script expects one line. Tables take their natural
# width; only a terminal's width lays them out.
UNWRAPPED = 100_000


def _console(stream, **kw) -> Console:
    return Console(**kw) if stream.isatty() else Console(width=UNWRAPPED, soft_wrap=True, **kw)


out = _console(sys.stdout)
err = _console(sys.stderr, stderr=True)


CONVENTION_HELP = "FLOP counting: measured (fvcore on our modules) or paper (the paper's formula)."
DEVICE_HELP = "auto (CUDA when available), cpu, cuda or cuda:N."
PROTOCOL_HELP = "finetune (the paper's recipe), probe (linear probe on frozen features) or fewshot."
REFERENCE_HELP = ("Score an external checkpoint beside the run, shown at the FLOPs you state; SOURCE: a "
                  "transformers folder, hf:NAME (local cache) or a checkpoint; repeatable.")
OBJECTIVE_HELP = ("mlm: BERT's masked LM; rtd: ELECTRA's replaced-token detection; the paper's Table 5 ablations: "
                  "rtd-15 (discriminator loss on masked positions only), replace-mlm (generator samples instead "
                  "of [MASK]), alltokens-mlm (predict every token, with a copy mechanism).")

# Numeric options are checked where they are parsed: a bad value is a usage error naming the option.
POSITIVE_INT = click.IntRange(min=1)
POSITIVE_FLOAT = click.FloatRange(min=0, min_open=True)
FRACTION = click.FloatRange(0, 1, min_open=True, max_open=True)


def _protocols(ctx, param, value: str | None) -> tuple[str, ...] | None:
    """--protocol as the readings it names, checked here (a typo is a usage error, before torch)."""
    if value is None:
        return None
    from .experiments.spec import split_protocols

    try:
        return split_protocols(value) or None
    except BenchError as e:
        raise click.BadParameter(str(e)) from None


def _temperature_warmup(ctx, param, value: str | None) -> tuple[float, float, float] | None:
    """--temperature-warmup T:HOLD:END as three numbers (their ranges: presets.resolve)."""
    if value is None:
        return None
    try:
        start, hold, end = (float(x) for x in value.split(":"))
    except ValueError:
        raise click.BadParameter(f"expected T:HOLD:END, three numbers like 2:0.125:0.25, got {value!r}")
    return start, hold, end


def _checkpoints(ctx, param, value: str | None) -> tuple[float, ...] | None:
    """--checkpoints as fractions (presets.parse_checkpoints); a malformed value is a usage error."""
    if value is None:
        return None
    from .errors import BenchError
    from .presets import parse_checkpoints

    try:
        return parse_checkpoints(value)
    except BenchError as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1])


def _existing(path: str, expected: str) -> None:
    """A path argument that must exist: refused in one line before the command imports anything heavy."""
    if not Path(path).expanduser().exists():
        raise BenchError(f"{path}: no such file or directory (expected {expected})")


def _existing_run(path: str) -> None:
    if not Path(path).expanduser().is_dir():
        raise BenchError(f"{path}: no such run directory")


def _experiment_prechecks(*, preset, budget, quick, long_mode, convention, overrides, objectives, corpus, source,
                          references, dry_run, allow_long_schedule) -> None:
    """What compare, ablate and sweep refuse without a model, before torch and pandas are imported: the
    spec's arguments (experiments/spec.precheck), the references' syntax, and the data paths (a dry run plans
    for another machine, where they may be, so it does not ask)."""
    from .experiments.spec import precheck
    from .summarise.reference_spec import parse_all

    precheck(preset=preset, budget=budget, quick=quick, long=long_mode, convention=convention, overrides=overrides,
             objectives=objectives, allow_long_schedule=allow_long_schedule)
    parse_all(references)
    if not dry_run:
        _check_data_paths(corpus, source)


def _check_data_paths(corpus: str | None, source: str | None) -> None:
    if corpus is not None:
        from .data.corpus import open_corpus

        open_corpus(corpus)
    from .data.suite import is_suite_name

    if source is not None and not str(source).startswith("hf:") and str(source) != "suite" and not is_suite_name(source):
        from .data.task_sources import check_source

        check_source(source)


def _note(line: str | None) -> None:
    if line:
        err.print(line, highlight=False, soft_wrap=True)


_warned: set[str] = set()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning reaches the user as one `warning:` line, once per message (the same check may run in
    several places, e.g. the memory check and the trainer), not as Python's source excerpt."""
    text = str(message)
    if text not in _warned:
        _warned.add(text)
        err.print(f"warning: {escape(text)}", highlight=False, soft_wrap=True)


def _emit_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))


def _fail(message: str, code: int = 2) -> None:
    """One line, whatever the message holds (click's lists span lines; brackets are not markup)."""
    err.print(f"[bold red]error:[/] {escape(' '.join(str(message).split()))}", highlight=False, soft_wrap=True)
    sys.exit(code)


def _os_error(e: OSError) -> str:
    """One line for an OSError: the file, what went wrong, and what to do for the common ones."""
    where = f"{e.filename}: " if e.filename else ""
    hint = {
        errno.ENOSPC: "; free space (or choose another --out/--results) and run the same command again: "
                      "finished parts are kept and nothing half-written is used",
        errno.ENOTDIR: " (a file stands where a directory is expected)",
        errno.EEXIST: " (a file stands where a directory is expected)",
        errno.EACCES: "; check the permissions",
    }.get(e.errno, "")
    return f"{where}{e.strerror or e}{hint}"


class _Group(click.Group):
    """Every way a command can fail on its input or environment ends in one `error:` line and a
    non-zero exit: BenchError (exit 2), usage errors (2), OSError such as a full disk or a file where a
    directory is expected (2), Ctrl-C (130). SIGTERM stops it with one line too (143; the trainer stops
    between steps, pretrain/termination.py). A traceback means a bug in electra-bench."""

    def main(self, *args, **kwargs):
        kwargs.pop("standalone_mode", None)
        warnings.showwarning = _show_warning
        try:
            with termination.raising():
                rv = super().main(*args, standalone_mode=False, **kwargs)
        except Terminated as e:
            err.print(escape(str(e)), highlight=False, soft_wrap=True)
            sys.exit(e.exit_code)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `electra-bench`: the help, as usual
            click.echo(e.ctx.get_help())
            sys.exit(0)
        except click.UsageError as e:
            cmd = e.ctx.command_path if e.ctx else "electra-bench"
            _fail(f"{e.format_message()} (see `{cmd} --help`)", e.exit_code)
        except click.ClickException as e:
            _fail(e.format_message(), e.exit_code)
        except click.exceptions.Abort:
            err.print("interrupted")
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BenchError as e:
            _fail(str(e), e.exit_code)
        except OSError as e:
            _fail(_os_error(e))
        except (MemoryError, RuntimeError) as e:
            # Python 3.11 wraps an exception raised inside a class's creation (`__set_name__`) in a
            # RuntimeError: a Ctrl-C or SIGTERM landing in one of torch's lazy imports (torch._dynamo's
            # dataclasses, pulled in by the FLOP count) arrives so
            if isinstance(e.__cause__, KeyboardInterrupt):
                _interrupted()
            if isinstance(e.__cause__, Terminated):
                raise e.__cause__ from None  # said by main()
            # torch.OutOfMemoryError (CUDA) and the CPU allocator's RuntimeError; any other RuntimeError is a bug
            if not (isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError"
                    or "can't allocate memory" in str(e)):
                raise
            _fail(f"out of memory ({str(e).splitlines()[0][:160]}); lower --batch-size or --seq-len, or use "
                  f"fewer --jobs", 1)
        except KeyboardInterrupt:
            _interrupted()


def _interrupted() -> None:
    err.print("interrupted: run the same command again to resume where it stopped")
    sys.exit(130)


MODEL_SECTION = "Model and objective (default: the preset's)"
# compare, ablate and sweep list their options in these groups, in this order (the rest: MODEL_SECTION, the
# preset overrides; then --help); one flat list of 45 options hid what a newcomer looks for
SECTIONS = {
    "Budget": ("preset", "budget", "quick", "long_mode", "yes", "convention", "allow_long_schedule",
               "until_resolved", "max_pretrain_seeds"),
    "What is compared and scored": ("objectives", "generator_sizes", "references", "corpus", "suite", "source", "tasks",
                                    "seeds", "pretrain_seeds", "protocol"),
    "Where it runs": ("device", "jobs", "threads", "devices", "gpus_per_run", "engine", "device_kind"),
    "Output": ("root", "run_id", "dry_run", "quiet", "as_json"),
}


class _Sectioned(click.Command):
    """A command whose --help lists its options in SECTIONS, then the preset overrides, then --help. Number
    options show as N or X without click's range ([x>=1]): a bad value is refused with its range anyway, and
    at 80 columns each costs a line."""

    def format_options(self, ctx, formatter) -> None:
        section_of = {name: title for title, names in SECTIONS.items() for name in names}
        groups: dict[str, list] = {title: [] for title in (*SECTIONS, MODEL_SECTION, "Other")}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and not isinstance(param, click.Argument):
                group = section_of.get(param.name, MODEL_SECTION if param.name in KNOB_OPTIONS else "Other")
                groups[group].append(_short_numbers(*record))
        for title, records in groups.items():
            if records:
                with formatter.section(title):  # a choice list runs long: it takes its own line, not the column
                    formatter.write_dl(records, col_max=max([len(r[0]) for r in records if len(r[0]) <= 24] or [24]))


def _short_numbers(signature: str, text: str) -> tuple[str, str]:
    signature = signature.replace(" INTEGER RANGE", " N").replace(" FLOAT RANGE", " X")
    head, bracket, extras = text.rpartition("  [")
    if bracket and extras.endswith("]"):
        kept = [e for e in extras[:-1].split("; ") if not re.fullmatch(r"[0-9.]*<?=?x[<>]=?[0-9.]*", e)]
        text = head + (f"  [{'; '.join(kept)}]" if kept else "")
    return signature, text


KNOB_OPTIONS: set[str] = set()  # the dests of override_options' options (filled as it decorates)


def override_options(fn):
    """The preset fields users change on the command line."""
    opts = [
        click.option("--steps", type=POSITIVE_INT, help="Full-schedule steps (the reference for '%' budgets)."),
        click.option("--batch-size", type=POSITIVE_INT, help="Global batch size (sequences per step)."),
        click.option("--seq-len", type=POSITIVE_INT, help="Sequence length."),
        click.option("--generator-size", type=POSITIVE_FLOAT,
                     help="Generator hidden size: a fraction of the discriminator's (<= 1) or absolute (> 1)."),
        click.option("--lr", type=POSITIVE_FLOAT, help="Peak learning rate."),
        click.option("--mask-prob", type=FRACTION, help="Fraction of positions masked."),
        click.option("--vocab-size", type=click.IntRange(min=6), help="Vocabulary size of the tokenizer trained."),
        click.option("--temperature", "rtd_temperature", type=click.FloatRange(min=0),
                     help="RTD: sample the generator at temperature T (official temperature; 1 = standard)."),
        click.option("--temperature-warmup", "rtd_temperature_warmup", callback=_temperature_warmup,
                     metavar="T:HOLD:END",
                     help="RTD: temperature T until HOLD of the budget, then linearly to --temperature by END, "
                          "e.g. 2:0.125:0.25 (ours: a bootstrap for small budgets)."),
        click.option("--dropout", type=click.FloatRange(0, 1, max_open=True), help="Encoder dropout in pre-training."),
        # the official code's generator knobs (configure_pretraining.py); defaults: the preset's
        click.option("--generator-layers", type=POSITIVE_FLOAT,
                     help="Generator depth: a share of the discriminator's layers (<= 1) or a count."),
        click.option("--uniform-generator/--learned-generator", default=None,
                     help="Replacements uniform over the vocabulary: no generator model."),
        click.option("--embedding-sharing", type=click.Choice(EMBEDDING_SHARING), default=None,
                     help="Generator and discriminator embeddings: shared (the paper), untied, or gdes "
                          "(DeBERTaV3: the discriminator reads the generator's under stop-gradient plus its own "
                          "residual, so only the generator's loss trains them; rtd, rtd-15)."),
        click.option("--untied-generator/--tied-generator", default=None,
                     help="--tied-generator: one transformer is generator and discriminator."),
        click.option("--disallow-correct/--allow-correct", default=None,
                     help="A generator sample never equals the original token."),
        click.option("--gen-weight", type=click.FloatRange(min=0), help="Weight of the generator (MLM) loss."),
        click.option("--disc-weight", type=click.FloatRange(min=0),
                     help="Weight of the discriminator loss (ELECTRA's lambda)."),
        click.option("--warmup-steps", type=click.IntRange(min=0),
                     help="Learning-rate warm-up steps (default: the preset's fraction of the run)."),
        click.option("--checkpoints", "checkpoint_fractions", callback=_checkpoints, metavar="F,F,...|N@FIRST",
                     help="Budget fractions saved and scored: 0.25,0.5,1, or 7@0.125 (7 log-spaced from 0.125)."),
    ]
    before = len(getattr(fn, "__click_params__", []))
    for o in reversed(opts):
        fn = o(fn)
    # every option above stores into the knob it is named after (run_config.KNOBS): a knob users set is
    # one option there, and nothing else here
    knobs = [param.name for param in fn.__click_params__[before:]]
    KNOB_OPTIONS.update(knobs)

    @functools.wraps(fn)
    def wrapper(**kw):
        from .presets import Overrides

        return fn(overrides=Overrides(**{name: kw.pop(name) for name in knobs}), **kw)

    return wrapper


@click.group(cls=_Group)
@click.version_option(package_name="electra-bench")
def main():
    """Measure how much pre-training compute MLM (BERT) and RTD (ELECTRA) need for the same downstream score."""


@main.command()
@click.option("--convention", type=click.Choice(FLOP_CONVENTIONS), default="paper", show_default=True,
              help=CONVENTION_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def presets(convention, as_json):
    """List the presets with parameter counts and FLOPs per step per objective."""
    from .present.tables import preset_rows, presets_table

    from . import presets as presets_mod

    rows = preset_rows(presets_mod.names(), convention)
    _emit_json(rows) if as_json else out.print(presets_table(rows))


@main.command()
@click.option("--preset", default="small", show_default=True, help="Preset name (`electra-bench presets`).")
@click.option("--objective", type=click.Choice(ALL_OBJECTIVES), default="rtd", show_default=True,
              help=OBJECTIVE_HELP)
@click.option("--convention", type=click.Choice(FLOP_CONVENTIONS), default="measured", show_default=True,
              help=CONVENTION_HELP)
@override_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def flops(preset, objective, convention, overrides, as_json):
    """FLOPs of one training step and of the preset's full schedule (or --steps)."""
    from .presets import resolve
    from .present.tables import flops_report, flops_table

    result = flops_report(resolve(preset, overrides).for_objective(objective), objective, convention)
    _emit_json(result) if as_json else out.print(flops_table(result))


@main.command()
@click.option("--seq-len", type=POSITIVE_INT, default=512, show_default=True, help="Tokens per sequence.")
@click.option("--mask-prob", type=FRACTION, default=0.15, show_default=True, help="Fraction of positions masked.")
@click.option("--vocab-size", type=click.IntRange(min=2), default=30522, show_default=True,
              help="Vocabulary size (bits per MLM target).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def signal(seq_len, mask_prob, vocab_size, as_json):
    """Learning signal per sequence: positions with gradient and bits of target, MLM vs RTD; then every
    objective, by the formula and as measured on the objective modules on a batch."""
    from .flops.learning_signal import learning_signal, objective_signal, signal_table
    from .present.tables import key_value_table

    s = learning_signal(seq_len, mask_prob, vocab_size)
    rows = objective_signal(seq_len, mask_prob, vocab_size)
    if as_json:
        _emit_json({**s, "objectives": rows})
    else:
        out.print(key_value_table("learning signal per sequence", s))
        out.print(signal_table(rows, seq_len))


LONG_SCHEDULE_OPTION = click.option(
    "--allow-long-schedule", is_flag=True,
    help="Allow over 1000x the paper's full schedule.")


def experiment_options(fn):
    """What every experiment (compare, ablate, sweep) takes: data, evaluation, where results go, parallelism."""
    opts = [
        click.option("--convention", type=click.Choice(FLOP_CONVENTIONS), default="measured", show_default=True,
                     help=CONVENTION_HELP),
        click.option("--corpus", default=None,
                     help="Pre-training text: file, directory, glob or hf:NAME (default: the suite's)."),
        click.option("--suite", type=click.Choice(tuple(SUITES)), default=None,
                     help="Embedded tasks (default ebs-2; `electra-bench suites`)."),
        click.option("--data", "source", default=None, help="Other tasks: GLUE dir, hf:glue or a suite dir."),
        click.option("--tasks", default=None, help="Comma-separated task names (default: all)."),
        click.option("--seeds", type=POSITIVE_INT, default=None, help="Evaluation seeds per checkpoint and task."),
        click.option("--pretrain-seeds", type=POSITIVE_INT, default=None,
                     help="Pre-training runs per objective (CPU default: 2, else 1): the band is over these."),
        click.option("--protocol", default=None, callback=_protocols,
                     help="How encoders are read, comma-separated, the headline's first: probe (frozen "
                          "features), finetune (the paper's), finetune-tuned, fewshot, zeroshot (minimal pairs, "
                          "own heads). Default: probe on the CPU default, finetune with --preset."),
        click.option("--results", "root", default="results", show_default=True, help="Where run directories go."),
        click.option("--run-id", default=None, help="Default: derived from the config, so a rerun resumes."),
        click.option("--device", default="auto", show_default=True, help=DEVICE_HELP),
        click.option("--jobs", type=POSITIVE_INT, default=None,
                     help="Worker processes (default: one per core, at most one per run)."),
        click.option("--threads", type=POSITIVE_INT, default=None, help="Threads per worker (default: cores / jobs)."),
        click.option("--devices", default=None,
                     help="One worker each: auto (every visible GPU, else --jobs CPU workers), cpu, N GPUs or "
                          "ids like 0,2; slurm: GPUs in flight (8)."),
        click.option("--gpus-per-run", type=POSITIVE_INT, default=None,
                     help="GPUs of one pre-training run (DDP); the others score meanwhile."),
        click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
                     help="local workers, submitit-local or slurm (cluster jobs: the [cluster] extra, "
                          "docs/scheduling.md)."),
        click.option("--device-kind", type=click.Choice(DEVICE_KINDS), default=None,
                     help="The GPU the jobs run on, for the memory check and the dry run's hours (default: this "
                          "machine's; an h100 for GPUs it lacks)."),
        click.option("--dry-run", is_flag=True,
                     help="Print the job graph, its FLOPs and hours on the devices it runs on; run nothing."),
        click.option("--quiet", is_flag=True, help="No progress output."),
        LONG_SCHEDULE_OPTION,
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys)."),
    ]
    fn = _suite_as_source(fn)
    for o in reversed(opts):
        fn = o(fn)
    return fn


def _suite_as_source(fn):
    """--suite NAME is the task source NAME (data/task_sources.py): the commands see one `source`."""

    @functools.wraps(fn)
    def wrapper(*args, suite=None, **kwargs):
        if suite is not None:
            if kwargs.get("source") is not None:
                raise BenchError("--suite and --data both name the downstream tasks: give one")
            kwargs["source"] = suite
        return fn(*args, **kwargs)

    return wrapper


def train_options(fn):
    opts = [
        click.option("--preset", default="tiny", show_default=True, help="Preset name (`electra-bench presets`)."),
        click.option("--budget", default=None, help="FLOPs (1e15) or a share of the paper's budget (25%)."),
        click.option("--convention", type=click.Choice(FLOP_CONVENTIONS), default="measured", show_default=True,
                     help=CONVENTION_HELP),
        click.option("--corpus", default=None, help="Text file, directory, glob or hf:NAME (default: embedded suite)."),
        click.option("--vocab-file", default=None, help="A WordPiece vocab.txt (default: train one on the corpus)."),
        click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
                     help="Seed of the initial weights, data order, masks and samples."),
        click.option("--device", default="auto", show_default=True, help=DEVICE_HELP),
        click.option("--precision", type=click.Choice(PRECISIONS), default="auto", show_default=True,
                     help="auto: bf16 autocast on CUDA, fp32 on CPU."),
        click.option("--allow-emulated-bf16", is_flag=True,
                     help="Run --precision bf16 on a CPU without native bf16 (AVX512-BF16/AMX): slow, for checks."),
        click.option("--compile", "compile_", is_flag=True, help="torch.compile the training step."),
        click.option("--quiet", is_flag=True, help="No progress display (for CI)."),
        LONG_SCHEDULE_OPTION,
    ]
    for o in reversed(opts):
        fn = o(fn)
    return fn


@main.command()
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
    from .presets import resolve
    from .pretrain import schedule

    p = resolve(preset, overrides)
    if budget is None:
        raise BenchError("--budget is required (FLOPs like 1e15, or a share of the paper's budget like 25%)")
    # what needs no model is refused before torch is imported (seconds): the schedule's limits on the
    # paper's FLOP count, and the data's paths (planning needs no data)
    schedule.check_schedule_bound(p, (objective,), budget, convention, allow_long_schedule)
    planning_only = dry_run or show_config
    if not planning_only:
        _check_data_paths(corpus, None)
        if vocab_file is not None:
            _existing(vocab_file, "a WordPiece vocab.txt")

    from .pretrain import run as runner
    from .pretrain.trainer import TrainOptions

    if not planning_only:  # first: the FLOP count below runs a forward at these shapes (minutes at --seq-len 1e5)
        runner.check_memory(p, (objective,), device, precision, allow_emulated_bf16)
    # the schedule's length needs only the preset: checked before data or --out exist
    b = runner.check_schedule(p, (objective,), budget, convention, allow_long_schedule)
    if planning_only:  # planning needs no data: the preset's vocabulary stands
        _note(runner.budget_note(p, b, convention))
        info = {"preset": p.to_dict(), "plan": runner.plan(p, objective, b, convention).to_dict()}
        _emit_json(info) if (as_json or show_config) else out.print(info["plan"])
        return
    data, p = runner.prepare_data(p, corpus, vocab_file, seed, quiet)
    b = runner.resolve_budget(p, budget, convention)
    _note(runner.budget_note(p, b, convention))
    the_plan = runner.plan(p, objective, b, convention)
    out_dir = out_dir or f"results/pretrain-{p.name}-{objective}-{b:.3g}"
    opts = TrainOptions(seed=seed, device=device, precision=precision, allow_emulated_bf16=allow_emulated_bf16,
                        compile=compile_, log_every=log_every, save_every_steps=save_every, peak_flops=peak_flops,
                        quiet=quiet, resume=resume)
    summary = runner.run(p, the_plan, data, out_dir, opts)
    summary["out_dir"] = str(out_dir)
    _emit_json(summary) if as_json else out.print(
        f"{objective}: {summary['steps']} steps, {summary['train_flops']:.3g} FLOPs "
        f"({convention}) of a {summary['budget']:.3g} budget -> {out_dir}"
    )


@main.command()
@click.argument("checkpoint")  # a checkpoints/frac-F directory, a transformers folder, or hf:NAME (local cache)
@click.option("--tasks", default=None, help="Comma-separated task names (default: all of the source).")
@click.option("--data", "source", default=None, help="GLUE directory, parquet layout, hf:glue (default: embedded suite).")
@click.option("--seeds", type=POSITIVE_INT, default=3, show_default=True, help="Evaluation seeds per task.")
@click.option("--protocol", type=click.Choice(PROTOCOLS), default="finetune", show_default=True,
              help=PROTOCOL_HELP)
@click.option("--device", default="auto", show_default=True, help=DEVICE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def finetune(checkpoint, tasks, source, seeds, protocol, device, as_json):
    """Fine-tune (or probe) one checkpoint on every task with several seeds; median and spread.

    CHECKPOINT: a pre-training checkpoint (checkpoints/frac-F), a local transformers folder of a BERT or
    ELECTRA encoder, or hf:NAME for a model already in the local Hugging Face cache."""
    if not checkpoint.startswith("hf:"):
        _existing(checkpoint, "a checkpoints/frac-F directory, a transformers folder, or hf:NAME")
    _check_data_paths(None, source)
    from .score.scoring import score_checkpoint
    from .present.tables import checkpoint_table

    result = score_checkpoint(checkpoint, source, tasks.split(",") if tasks else None, seeds, protocol, device)
    _emit_json(result) if as_json else out.print(checkpoint_table(result))


@main.command()
@click.argument("source")
@click.option("--out", "out_dir", required=True, help="The folder to write (transformers' from_pretrained reads it).")
@click.option("--objective", type=click.Choice(ALL_OBJECTIVES), default=None,
              help="With a run directory: which objective's checkpoint.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="With a run directory: which pre-training seed.")
@click.option("--fraction", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True,
              help="With a run directory: which budget fraction's checkpoint.")
@click.option("--overwrite", is_flag=True, help="Replace a non-empty --out.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def export(source, out_dir, objective, seed, fraction, overwrite, as_json):
    """Export a checkpoint as a transformers folder: ElectraForPreTraining (+ generator/ ElectraForMaskedLM)
    for RTD, BertForMaskedLM for MLM, with tokenizer and model card (docs/interop.md).

    SOURCE: a checkpoints/frac-F directory, or a compare run directory with --objective (and --seed,
    --fraction)."""
    _existing(source, "a checkpoints/frac-F directory, or a compare run directory with --objective")
    from .present.export import checkpoint_of_run, export as do_export

    if objective is not None:
        source = checkpoint_of_run(source, objective, seed, fraction)
    result = do_export(source, out_dir, overwrite=overwrite)
    if as_json:
        _emit_json(result)
    else:
        for m in result["models"]:
            out.print(f"{m['architecture']}: {m['folder']}", highlight=False)


@main.command(cls=_Sectioned)
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
        from .summarise.sequential import check_design

        check_design(pretrain_seeds, max_pretrain_seeds or 8)
    _experiment_prechecks(preset=preset, budget=budget, quick=quick, long_mode=long_mode, convention=convention,
                          overrides=overrides, objectives=None, corpus=corpus, source=source, references=references,
                          dry_run=dry_run, allow_long_schedule=allow_long_schedule)
    from .experiments import references as refs_mod
    from .experiments.compare import CompareSpec, confirm, plan_only, run_compare, start, where_it_went
    from .store.layout import RunLayout
    from .summarise.reference_spec import parse_all

    spec = CompareSpec.resolve(preset=preset, budget=budget, quick=quick, convention=convention, corpus=corpus,
                               source=source, tasks=tasks.split(",") if tasks else None, seeds=seeds,
                               protocol=protocol, device=device, pretrain_seeds=pretrain_seeds, jobs=jobs,
                               threads=threads, overrides=overrides, long=long_mode, devices=devices,
                               gpus_per_run=gpus_per_run, engine=engine, allow_long_schedule=allow_long_schedule,
                               device_kind=device_kind)
    refs = parse_all(references)
    if until_resolved:
        from .experiments import until_resolved as sequential_run

        spec = sequential_run.design(spec, max_pretrain_seeds or 8)
        if dry_run:  # the most it can cost: every look taken
            plan = plan_only(sequential_run.every_look(spec), root, run_id or spec.run_id())
            return _show_graph(plan, as_json)
        summary, rendered = sequential_run.run_until_resolved(
            spec, root, run_id, spec.until_resolved[2], quiet=quiet or as_json, width=out.width,
            score_more=refs_mod.phase(refs) if refs else None)
        _emit_json(summary) if as_json else click.echo(rendered, nl=False)
        return
    run_id = run_id or spec.run_id()
    if dry_run:
        return _show_graph(plan_only(spec, root, run_id), as_json)
    begin = start(spec, root, run_id, quiet=quiet)
    asked = confirm(begin, yes, ask=(lambda q: click.confirm(q, default=False, err=True)) if sys.stdin.isatty() else None)
    summary, rendered = run_compare(spec, root, run_id, quiet=quiet or as_json, width=out.width,
                                    score_more=refs_mod.phase(refs) if refs else None,
                                    announce=None if quiet or asked else functools.partial(_note, begin.line))
    _emit_json(summary) if as_json else click.echo(rendered, nl=False)
    _note(where_it_went(RunLayout(Path(root) / run_id)))


def _show_graph(plan: dict, as_json: bool) -> None:
    """--dry-run's output: the job graph and its sizing (experiments/sizing.py)."""
    from .experiments.sizing import render

    _note(plan.pop("note", None))
    _emit_json(plan) if as_json else out.print(render(plan), highlight=False, soft_wrap=True)


@main.command(cls=_Sectioned)
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
    _experiment_prechecks(preset=preset, budget=budget, quick=quick, long_mode=False, convention=convention,
                          overrides=overrides, objectives=chosen, corpus=corpus, source=source, references=(),
                          dry_run=dry_run, allow_long_schedule=allow_long_schedule)
    from .experiments.ablate import plan_ablate, resolve_spec, run_ablate

    spec = resolve_spec(objectives=chosen,
                        preset=preset, budget=budget, quick=quick, convention=convention, corpus=corpus,
                        source=source, tasks=tasks.split(",") if tasks else None, seeds=seeds, protocol=protocol,
                        device=device, pretrain_seeds=pretrain_seeds, jobs=jobs, threads=threads,
                        overrides=overrides, devices=devices, gpus_per_run=gpus_per_run, engine=engine,
                        allow_long_schedule=allow_long_schedule, device_kind=device_kind)
    if dry_run:
        return _show_graph(plan_ablate(spec, root, run_id), as_json)
    result, rendered = run_ablate(spec, root, run_id, quiet=quiet or as_json)
    _emit_json(result) if as_json else click.echo(rendered)


@main.command(cls=_Sectioned)
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
    _experiment_prechecks(preset=preset, budget=budget, quick=quick, long_mode=False, convention=convention,
                          overrides=overrides, objectives=None, corpus=corpus, source=source, references=(),
                          dry_run=dry_run, allow_long_schedule=allow_long_schedule)
    from .experiments.sweep import plan_sweep, resolve_spec, run_sweep

    spec = resolve_spec(generator_sizes=generator_sizes, preset=preset, budget=budget, quick=quick,
                        convention=convention, corpus=corpus, source=source,
                        tasks=tasks.split(",") if tasks else None, seeds=seeds, protocol=protocol, device=device,
                        pretrain_seeds=pretrain_seeds, jobs=jobs, threads=threads, overrides=overrides,
                        devices=devices, gpus_per_run=gpus_per_run, engine=engine,
                        allow_long_schedule=allow_long_schedule, device_kind=device_kind)
    if dry_run:
        return _show_graph(plan_sweep(spec, root, run_id), as_json)
    result, rendered = run_sweep(spec, root, run_id, quiet=quiet or as_json, width=out.width)
    _emit_json(result) if as_json else click.echo(rendered, nl=False)


@main.command()
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
        _existing_run(run)
    from .present.report import plan_report, render_plan, render_runs, report_json

    if rewrite:
        from .experiments.rewrite import rewrite_outputs

        for run in runs:
            rewrite_outputs(run)

    if references:
        from .experiments.references import add_to_run

        if len(runs) != 1:
            raise BenchError("--reference scores into one compare run: give exactly one RUN")
        add_to_run(runs[0], list(references), device)
    if show_plan:
        plans = plan_report(runs)
        return _emit_json(plans) if as_json else click.echo(render_plan(plans))
    if as_json:
        return _emit_json(report_json(runs))
    click.echo(render_runs(runs, fmt, width=out.width))


@main.command()
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
    _existing_run(run)
    _existing(baseline, "a baseline JSON written by `electra-bench baseline`")
    from .ci.regression import check as do_check
    from .ci.regression import score_tolerances
    from .store.runs import load_compare_run

    result = do_check(load_compare_run(run), baseline, None if tol is None else score_tolerances(tol),
                      allow_different_config=allow_different_config)
    click.echo(result.to_json() if as_json else result.render())
    sys.exit(0 if result.ok else 1)


@main.command()
@click.argument("run")
@click.option("--out", "out_path", required=True, help="Where to write the baseline JSON.")
@click.option("--tol", type=click.FloatRange(min=0), default=2.0, show_default=True,
              help="Allowed drop in score points (scores, margins); diagnostics use their own tolerances.")
@click.option("--json", "as_json", is_flag=True, help="Print the baseline written, with its path under `out` "
                                                     "(stable snake_case keys).")
def baseline(run, out_path, tol, as_json):
    """Write a run's scores as a regression baseline for `check`."""
    _existing_run(run)
    from .ci.regression import score_tolerances, write_baseline
    from .store.runs import load_compare_run

    written = write_baseline(load_compare_run(run), out_path, tol=score_tolerances(tol))
    _emit_json({**written, "out": out_path}) if as_json else click.echo(out_path)


class _HistoryGroup(click.Group):
    """`history RUN...` (before the subcommands) gets a pointer to what replaced it, not just "no such command"."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            raise click.UsageError(f"no history subcommand '{args[0]}': plot runs with `history plot RUN... --out DIR`, "
                                   "or keep a store: `history add RUN --store FILE`, then `history plot|show --store FILE`",
                                   ctx)
        return super().resolve_command(ctx, args)


@main.group(cls=_HistoryGroup)
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
    from .ci.history_store import append, record_from_run
    from .ci.history_trend import short_commit
    from .store.runs import load_compare_run

    record = record_from_run(load_compare_run(run), commit=commit, parent=parent, branch=branch, date=date, note=note)
    added = append(store, record)
    if as_json:
        _emit_json({**record, "added": added})
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
    from .ci.history_plot import plot_history
    from .ci.history_trend import gather, judge

    records, base, base_path = gather(store, inputs, baseline)
    paths = [str(p) for p in plot_history(judge(records, base), out_dir, base, base_path, last=last)]
    if as_json:
        return _emit_json({"files": paths, "records": len(records)})
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
    from .ci.history_trend import gather, judge, render

    fmt = "json" if as_json else fmt
    records, base, base_path = gather(store, inputs, baseline)
    click.echo(render(judge(records, base), base, base_path, fmt, last=last, plot_urls=plot_urls), nl=False)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def suites(as_json):
    """The embedded suites (--suite NAME): their tasks, kinds and sizes."""
    from .data.describe import render_suites, suites_info

    info = suites_info()
    _emit_json(info) if as_json else out.print(render_suites(info))


@main.group()
def data():
    """Inspect pre-training corpora and task directories."""


@data.command("inspect")
@click.argument("path", required=False, default=None)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def data_inspect(path, as_json):
    """What a corpus, a GLUE/task directory or the embedded suite (no PATH) holds."""
    from .data.describe import inspect_path, render_inspect

    info = inspect_path(path)
    _emit_json(info) if as_json else out.print(render_inspect(info))


if __name__ == "__main__":
    main()
