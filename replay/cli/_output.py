"""Where a command's report goes: the terminal, or `--out FILE` (written atomically)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import click


def emit_report(out: Path | None, text: str | None, print_rich: Callable[[TextIO], None]) -> None:
    """Print the report or write it to `out`. `text` is a machine form (JSON, markdown); None means the
    terminal form, which `print_rich` renders (into a buffer when it goes to a file)."""
    from replay.files.atomic import atomic_write_text
    from replay.files.paths import display_path

    if text is None:
        if out is None:
            print_rich(sys.stdout)
            return
        buffer = io.StringIO()
        print_rich(buffer)
        text = buffer.getvalue()
    if out is not None:
        atomic_write_text(out, text)
        click.echo(f"wrote {display_path(out)}", err=True)
    else:
        click.echo(text, nl=False)


def dash_is_stdout(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """`--out -`: the report on standard output, as without `--out` (a file named `-` is `./-`)."""
    return None if value is not None and str(value) == "-" else value


def no_dash(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """`--out -` where the command's standard output is its summary: refused (a file named `-` is `./-`)."""
    if value is not None and str(value) == "-":
        raise click.BadParameter("standard output shows the summary; give a file for the results (a file named - is ./-)")
    return value


def examples(*commands: str) -> str:
    """A command's help epilog: `Examples:` and the command lines, kept unwrapped (click's `\\b`), so that
    every `--help` ends with a line a user can paste, starting with `judge-replay`."""
    return "Examples:\n\n\b\n" + "\n".join(commands)
