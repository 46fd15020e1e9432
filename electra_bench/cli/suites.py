"""Commands that describe data: suites (the embedded ones) and data inspect (a corpus or task directory)."""

from __future__ import annotations

import click

from .common import emit_json, out


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def suites(as_json):
    """The embedded suites (--suite NAME): their tasks, kinds and sizes."""
    from ..data.describe import render_suites, suites_info

    info = suites_info()
    emit_json(info) if as_json else out.print(render_suites(info))


@click.group()
def data():
    """Inspect pre-training corpora and task directories."""


@data.command("inspect")
@click.argument("path", required=False, default=None)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (stable snake_case keys).")
def data_inspect(path, as_json):
    """What a corpus, a GLUE/task directory or the embedded suite (no PATH) holds."""
    from ..data.describe import inspect_path, render_inspect

    info = inspect_path(path)
    emit_json(info) if as_json else out.print(render_inspect(info))



COMMANDS = (suites, data)
