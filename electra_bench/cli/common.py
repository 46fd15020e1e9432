"""What every command module shares: the consoles, the help texts and number types used by several commands,
the one-line refusals of missing paths, and how a command prints JSON and notes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from ..errors import BenchError

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


def existing(path: str, expected: str) -> None:
    """A path argument that must exist: refused in one line before the command imports anything heavy."""
    if not Path(path).expanduser().exists():
        raise BenchError(f"{path}: no such file or directory (expected {expected})")


def existing_run(path: str) -> None:
    if not Path(path).expanduser().is_dir():
        raise BenchError(f"{path}: no such run directory")


def check_data_paths(corpus: str | None, source: str | None) -> None:
    if corpus is not None:
        from ..data.corpus import open_corpus

        open_corpus(corpus)
    from ..data.suite import is_suite_name

    if source is not None and not str(source).startswith("hf:") and str(source) != "suite" and not is_suite_name(source):
        from ..data.task_sources import check_source

        check_source(source)


def note(line: str | None) -> None:
    if line:
        err.print(line, highlight=False, soft_wrap=True)


def emit_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=True, default=str))

