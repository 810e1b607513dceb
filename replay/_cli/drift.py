"""`judge-replay drift` (not built yet)."""

import click

from .._errors import UsageError


@click.command("drift", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1)
def command(args: tuple[str, ...]) -> None:
    """(not built yet)"""
    raise UsageError("'drift' is not built yet")
