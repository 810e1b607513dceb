"""`judge-replay judge` (not built yet)."""

import click

from .._errors import UsageError


@click.command("judge", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
def command(args: tuple[str, ...]) -> None:
    """(not built yet)"""
    raise UsageError("'judge' is not built yet")
