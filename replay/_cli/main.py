"""Entry point of `judge-replay`: the click group, and the one place user errors become exit codes."""

from __future__ import annotations

import sys

import click

from .._errors import ReplayError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="judge-replay")
def cli() -> None:
    """Record, replay, grade, snapshot and explain runs of the Learn groundedness judge."""


def _register() -> None:
    from . import bakeoff, cassettes, diff, drift, grade, judge, pages, schema, sim

    for module in (bakeoff, judge, grade, diff, drift, pages, cassettes, sim, schema):
        cli.add_command(module.command)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; a ReplayError prints its message (no traceback) and sets the exit code."""
    try:
        cli.main(args=argv, prog_name="judge-replay", standalone_mode=False)
    except ReplayError as err:
        click.echo(f"judge-replay: {err}", err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("judge-replay: interrupted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return 2 if err.exit_code not in (0, 1) else err.exit_code
    except KeyboardInterrupt:
        click.echo("judge-replay: interrupted", err=True)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
