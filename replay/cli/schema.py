"""`judge-replay schema NAME`: the JSON Schema of a file format or output, generated from the records."""

from __future__ import annotations

import click

from replay.cli._output import examples
from replay.files.json_text import dump_json
from replay.schema.catalog import SCHEMAS, json_schema


@click.command("schema", epilog=examples("judge-replay schema claims > claims.schema.json"))
@click.argument("name", type=click.Choice(sorted(SCHEMAS)))
def command(name: str) -> None:
    """Print the JSON Schema of NAME: claims, gold, results, run (run.json), grade (grade --json),
    diff (diff --format json) or drift (drift --json)."""
    click.echo(dump_json(json_schema(name)), nl=False)
