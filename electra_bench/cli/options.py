"""Options several commands share: the preset overrides (one option per knob users set), the experiments'
options in their --help sections, the pre-training options, and the callbacks that check a value where it is parsed."""

from __future__ import annotations

import functools
import re

import click

from ..choices import DEVICE_KINDS, EMBEDDING_SHARING, ENGINES, FLOP_CONVENTIONS, PRECISIONS
from ..data.suite import SUITES
from ..errors import BenchError
from .common import CONVENTION_HELP, DEVICE_HELP, FRACTION, POSITIVE_FLOAT, POSITIVE_INT


def _protocols(ctx, param, value: str | None) -> tuple[str, ...] | None:
    """--protocol as the readings it names, checked here (a typo is a usage error, before torch)."""
    if value is None:
        return None
    from ..experiments.spec import split_protocols

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
    from ..errors import BenchError
    from ..presets import parse_checkpoints

    try:
        return parse_checkpoints(value)
    except BenchError as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1])


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


class Sectioned(click.Command):
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
        from ..presets import Overrides

        return fn(overrides=Overrides(**{name: kw.pop(name) for name in knobs}), **kw)

    return wrapper


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
                     help="Pre-training runs per objective (CPU default: 4; --long, --quick: 2; else 1): "
                          "the band is over these."),
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

