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
    from replay.core.display import printable
    from replay.files.atomic import atomic_write_text
    from replay.files.paths import display_path
    from replay.secrets.registry import redact

    if text is None:
        if out is None:
            print_rich(sys.stdout)
            return
        buffer = io.StringIO()
        print_rich(buffer)
        text = buffer.getvalue()
    if out is not None:
        atomic_write_text(out, text)
        click.echo(f"wrote {printable(display_path(out))}", err=True)
    else:
        click.echo(redact(text), nl=False)  # a machine form quotes data as it is: the user's secrets removed


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


SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"
"""The file a GitHub Actions step's markdown job summary is appended to."""


def append_job_summary(markdown: Callable[[], str]) -> None:
    """When GITHUB_STEP_SUMMARY names a file, append the command's markdown report to it (never truncating
    what earlier steps wrote). A file that cannot be written is an InputError naming it (exit 2)."""
    import os

    from replay.errors import InputError
    from replay.secrets.registry import redact

    target = os.environ.get(SUMMARY_VARIABLE, "")
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as summary:
            summary.write(redact(markdown().rstrip("\n")) + "\n\n")
    except OSError as exc:
        raise InputError(target, f"{SUMMARY_VARIABLE}: cannot append the job summary ({exc.strerror or exc})") from exc


def check_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--check/--no-check`: exit 1 when the adoption gate refuses a candidate (default: `[tool.judge-replay] check`)."""
    return click.option("--check/--no-check", "check", default=None,
                        help="Exit 1 when the adoption gate refuses a candidate or cannot decide (a baseline or "
                             "candidate with claims without a verdict), as a linter fails on a finding; the report "
                             "is printed first. Default: [tool.judge-replay] check, else off (exit 0 whatever "
                             "the gate decides).")(command)
