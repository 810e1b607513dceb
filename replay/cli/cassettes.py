"""`judge-replay cassettes audit|verify|list`: secrets, reproducibility and an overview of recorded runs."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from replay.cli._jobs import jobs_option
from replay.cli._output import examples
from replay.core.cost import format_usd, run_cost
from replay.core.display import printable
from replay.core.prices import Price
from replay.errors import CheckFailed, InputError
from replay.files.regular import open_regular
from replay.reports.fit import plain_columns, text_width
from replay.runs.folder import Run, find_runs
from replay.schema.manifest import RunStats
from replay.schema.results import Usage
from replay.settings import project_prices
from replay.secrets.registry import redact


@click.group("cassettes", epilog=examples("judge-replay cassettes audit cassettes       # any secret in any cassette?",
                                          "judge-replay cassettes verify cassettes/v3-demo",
                                          "judge-replay cassettes list"))
def command() -> None:
    """Audit cassettes for secrets, verify runs replay exactly, list recorded runs."""


@command.command("audit", epilog=examples("judge-replay cassettes audit cassettes tests/data/real-cassettes"))
@click.argument("paths", nargs=-1, required=True, type=click.Path(readable=False, path_type=Path))
def audit(paths: tuple[Path, ...]) -> None:
    """Scan every file under PATHS for secrets: cassettes (ours or any vcrpy cassette), run.json,
    results.json, prompt.md, any other file as text. It looks for credential headers, API keys and
    tokens of common providers, JWTs, credentials in URLs, fields named like secrets, in values and
    names, comments and lines that do not parse, also inside base64, URL-encoded or escaped text.
    Hidden folders (.git...) and pipes or devices are skipped and named. Exit 1 if any secret is found;
    2 when nothing under PATHS could be read.

    A credential-shaped string inside the text of a public Learn page the cassette fetched (sample
    SAS URLs, example tokens in the docs) is listed apart, with its page: it is documentation, not a
    leak, and does not fail the audit."""
    from replay.cassettes.audit import audit_report

    report = audit_report(paths)
    skipped = _skipped(report.hidden, report.special)
    if skipped:
        click.echo(f"judge-replay: skipped: {skipped}", err=True)
    for problem in report.unparsed:
        click.echo(f"judge-replay: read as text only: {printable(str(problem))}", err=True)
    if report.files == 0:
        raise InputError(", ".join(str(p) for p in paths), "nothing the audit could read"
                         + (" (only what is skipped above)" if skipped else " (no file)"))
    for finding in report.leaks:
        click.echo(printable(str(finding)))
    if report.in_pages:
        click.echo(f"in public Learn page text ({len(report.in_pages)}; documentation quoting examples, not a leak: "
                   "review, nothing to remove):")
        for finding in report.in_pages:
            click.echo("  " + printable(str(finding)))
    if report.leaks:
        files = len({f.path for f in report.leaks})
        raise CheckFailed(
            f"{len(report.leaks)} secret(s) found in {files} of {report.files} file(s); "
            "remove them (re-save through judge-replay scrubs on write) and rotate the keys"
        )
    click.echo(f"no secrets found in {_counted(report.files, 'file')}: {_counted(report.cassettes, 'cassette')} "
               f"({_counted(report.interactions, 'interaction')}), {_counted(report.data, 'other JSON or YAML file')}, "
               f"{report.text} read as text")


def _counted(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _skipped(hidden: list[Path], special: list[Path]) -> str:
    """What the audit did not read, named (the first three of each kind)."""
    def named(paths: list[Path]) -> str:
        shown = ", ".join(printable(str(p)) for p in paths[:3])
        return shown + (f" and {len(paths) - 3:,} more" if len(paths) > 3 else "")

    parts = ([f"{_counted(len(hidden), 'hidden folder')} ({named(hidden)})"] if hidden else [])
    parts += [f"{len(special):,} that {'is' if len(special) == 1 else 'are'} not a regular file ({named(special)})"] if special else []
    return ", ".join(parts)


@command.command("verify", epilog=examples("judge-replay cassettes verify cassettes/v2-demo cassettes/v3-demo"))
@click.argument("runs", nargs=-1, required=True, type=click.Path(readable=False, path_type=Path))
@jobs_option
def verify(runs: tuple[Path, ...]) -> None:
    """Replay each run offline and check it reproduces its results.json and uses every recorded
    interaction, and that the folder holds no cassette its run.json does not name. Exit 1 on any
    mismatch. A page snapshot `drift --live` wrote among them (`cassettes/*`)
    is skipped, and said so."""
    from replay.analysis.verify import verify_run

    failed = verified = 0
    for run in runs:
        report = verify_run(run)
        shown = printable(str(run))
        if report.page_snapshot:
            click.echo(f"{shown}: skipped (a page snapshot drift --live wrote: it called no model, nothing to replay)")
            continue
        verified += 1
        if report.ok:
            click.echo(f"{shown}: ok ({report.interactions} interactions replayed, results reproduced)")
            continue
        failed += 1
        click.echo(f"{shown}: FAILED")
        for problem in report.problems:
            click.echo(f"  {printable(problem)}")
    if failed:
        raise CheckFailed(f"{failed} of {verified} run(s) did not reproduce")
    if not verified:
        raise InputError(", ".join(str(run) for run in runs), "holds only page snapshots, no run to verify")


@command.command("list", epilog=examples("judge-replay cassettes list cassettes --json"))
@click.argument("root", required=False, type=click.Path(readable=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_runs(root: Path | None, as_json: bool) -> None:
    """One row per run folder under ROOT (default: the `cassettes` setting of [tool.judge-replay], else
    `cassettes` in the project). "tokens in+cached" counts every input token: uncached, written to
    the prompt cache and read from it. A run folder that cannot be read is named on stderr, one line
    each, and makes the exit code 2."""
    from replay.runs.page_store import cassettes_root

    root = cassettes_root(root)
    if not root.is_dir():
        raise InputError(root, "no such folder of runs")
    rows = []
    broken: list[InputError] = []
    prices = project_prices()
    for run in find_runs(root):
        try:
            rows.append(_row(run, prices))
        except InputError as unreadable:
            broken.append(unreadable)
    if as_json:
        click.echo(redact(json.dumps(rows, indent=2)))
    elif not rows:
        click.echo(f"no {'readable ' if broken else ''}runs under {printable(str(root))}")
    else:
        _table(rows)
    for problem in broken:
        click.echo(f"judge-replay: {printable(str(problem))}", err=True)
    if broken:
        raise InputError(root, f"{len(broken)} run folder(s) could not be read (named above)")


def _table(rows: list[dict[str, Any]]) -> None:
    headers = ["run", "prompt", "model", "recorded", "files", "interactions", "tokens in+cached/out", "cost", "stand-ins"]
    table = [headers] + [
        [
            printable(r["run"]),
            printable(r["prompt"]),
            printable(r["model"]),
            printable(r["recorded_at"]),
            str(r["files"]),
            str(r["interactions"]),
            f"{r['total_input_tokens']}/{r['output_tokens']}",
            format_usd(r["cost_usd"]) + (" (batch)" if r["batch"] else ""),
            ", ".join(r["stand_ins"]) or "-",
        ]
        for r in rows
    ]
    # fitted to the width: the columns in groups that each fit, every group led by the run (no cell cut)
    for line in plain_columns(headers, table[1:], text_width(sys.stdout)):
        click.echo(line)


def _row(run: Run, prices: Mapping[str, Price]) -> dict[str, Any]:
    m = run.manifest
    # as every command prices: recorded usage, current table; a page snapshot called no model
    cost = 0.0 if run.is_page_snapshot else run_cost(run.results, m, prices)
    return {
        "run": run.name,
        "prompt": m.prompt,
        "model": m.model,
        "recorded_at": m.recorded_at,
        "files": len(m.claims),
        "interactions": sum(_count_interactions(run.cassette_path(c.file)) for c in m.claims),
        "input_tokens": m.stats.input_tokens,
        "total_input_tokens": _usage(m.stats).total_input,
        "output_tokens": m.stats.output_tokens,
        "cost_usd": cost,
        "batch": m.batch_ids is not None,
        "stand_ins": list(m.stand_ins),
        "frozen": m.frozen,
    }


def _usage(stats: RunStats) -> Usage:
    """A run's token counters as a Usage (the one place that knows what "all input tokens" is)."""
    return Usage.model_validate(stats.model_dump(include=set(Usage.model_fields)))


def _count_interactions(path: Path) -> int:
    """Interactions in a vcrpy YAML cassette, without parsing it (each starts a `- request:` line); 0
    for a missing or unreadable file (`verify` is the command that checks cassettes)."""
    try:
        with open_regular(path, "cassette") as fh:
            return sum(1 for line in fh if line.startswith(b"- request:"))
    except (OSError, InputError):
        return 0
