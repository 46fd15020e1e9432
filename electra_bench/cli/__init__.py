"""`electra-bench`: parse the command line and dispatch. No logic lives here.

The group and its error handling are here; each command family is one module (`train`: presets, flops,
signal, pretrain; `experiment`: compare, ablate, sweep; `results`: report, check, baseline, history;
`checkpoint`: finetune, export; `suites`: suites, data), their shared options in `options`, the consoles and
one-line path checks in `common`.

Every command that reports numbers takes --json (stable snake_case keys, documented in the README).
User errors (BenchError) print one line `error: ...` and exit 2, without a traceback.

Each command imports what it runs inside its body: `--help` and argument errors must not wait for
torch (2-15 s to import here), so nothing at module level may import it.
"""

from __future__ import annotations

import errno
import sys
import warnings

import click
from rich.markup import escape

from ..errors import BenchError, Terminated
from ..pretrain import termination
from . import checkpoint, experiment, results, suites, train
from .common import err

_warned: set[str] = set()


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning reaches the user as one `warning:` line, once per message (the same check may run in
    several places, e.g. the memory check and the trainer), not as Python's source excerpt."""
    text = str(message)
    if text not in _warned:
        _warned.add(text)
        err.print(f"warning: {escape(text)}", highlight=False, soft_wrap=True)


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


@click.group(cls=_Group)
@click.version_option(package_name="electra-bench")
def main():
    """Measure how much pre-training compute MLM (BERT) and RTD (ELECTRA) need for the same downstream score."""


for _module in (train, experiment, results, checkpoint, suites):
    for _command in _module.COMMANDS:
        main.add_command(_command)
