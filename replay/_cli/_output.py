"""Where a command's report goes: the terminal, or `--out FILE` (written atomically)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import click

from .._io import atomic_write_text, display_path


def emit_report(out: Path | None, text: str | None, print_rich: Callable[[TextIO], None]) -> None:
    """Print the report or write it to `out`. `text` is a machine form (JSON, markdown); None means the
    terminal form, which `print_rich` renders (into a buffer when it goes to a file)."""
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
