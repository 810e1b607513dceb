"""`judge-replay diff` (not built yet)."""

import click

from .._errors import UsageError


@click.command("diff", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
def command(args: tuple[str, ...]) -> None:
    """(not built yet)"""
    raise UsageError("'diff' is not built yet")
