"""`judge-replay sim` (not built yet)."""

import click

from .._errors import UsageError


@click.command("sim", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
def command(args: tuple[str, ...]) -> None:
    """(not built yet)"""
    raise UsageError("'sim' is not built yet")
