"""`judge-replay cassettes` (not built yet)."""

import click

from .._errors import UsageError


@click.command("cassettes", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
def command(args: tuple[str, ...]) -> None:
    """(not built yet)"""
    raise UsageError("'cassettes' is not built yet")
