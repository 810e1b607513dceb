"""`judge-replay pages` (not built yet)."""

import click

from .._errors import UsageError


@click.command("pages", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
def command(args: tuple[str, ...]) -> None:
    """(not built yet)"""
    raise UsageError("'pages' is not built yet")
