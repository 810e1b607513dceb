"""`judge-replay cassettes audit|verify|list`: secrets, reproducibility and an overview of recorded runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from .._errors import CheckFailed, InputError
from .._runs import Run, find_runs


@click.group("cassettes")
def command() -> None:
    """Audit cassettes for secrets, verify runs replay exactly, list recorded runs."""


@command.command("audit")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def audit(paths: tuple[Path, ...]) -> None:
    """Scan cassettes (files or folders of *.yaml / *.json, ours or any vcrpy cassette) for secrets:
    API keys, bearer tokens, organization ids, cookies. Exit 1 if any is found."""
    from .._scrub import audit_report

    report = audit_report(paths)
    if report.files == 0:
        raise InputError(", ".join(str(p) for p in paths), "holds no YAML or JSON files to audit")
    for finding in report.findings:
        click.echo(str(finding))
    if report.findings:
        files = len({f.path for f in report.findings})
        raise CheckFailed(
            f"{len(report.findings)} secret(s) found in {files} of {report.files} file(s); "
            "remove them (re-save through judge-replay scrubs on write) and rotate the keys"
        )
    click.echo(f"no secrets found in {report.cassettes} cassettes ({report.interactions} interactions)")


@command.command("verify")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
def verify(runs: tuple[Path, ...]) -> None:
    """Replay each run offline and check it reproduces its results.json and uses every recorded
    interaction. Exit 1 on any mismatch."""
    from .._recorder import verify_run

    failed = 0
    for run in runs:
        report = verify_run(run)
        if report.ok:
            click.echo(f"{run}: ok ({report.interactions} interactions replayed, results reproduced)")
            continue
        failed += 1
        click.echo(f"{run}: FAILED")
        for problem in report.problems:
            click.echo(f"  {problem}")
    if failed:
        raise CheckFailed(f"{failed} of {len(runs)} run(s) did not reproduce")


@command.command("list")
@click.argument("root", required=False, default="cassettes", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_runs(root: Path, as_json: bool) -> None:
    """One row per run folder under ROOT (default `cassettes`)."""
    if not root.is_dir():
        raise InputError(root, "no such folder of runs")
    rows = [_row(run) for run in find_runs(root)]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"no runs under {root}")
        return
    headers = ["run", "prompt", "model", "recorded", "files", "interactions", "tokens in/out", "stand-ins"]
    table = [headers] + [
        [
            r["run"],
            r["prompt"],
            r["model"],
            r["recorded_at"],
            str(r["files"]),
            str(r["interactions"]),
            f"{r['input_tokens']}/{r['output_tokens']}",
            ", ".join(r["stand_ins"]) or "-",
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


def _row(run: Run) -> dict[str, Any]:
    m = run.manifest
    return {
        "run": run.name,
        "prompt": m.prompt,
        "model": m.model,
        "recorded_at": m.recorded_at,
        "files": len(m.claims),
        "interactions": sum(_count_interactions(run.path / c.cassette) for c in m.claims),
        "input_tokens": m.stats.input_tokens,
        "output_tokens": m.stats.output_tokens,
        "stand_ins": list(m.stand_ins),
        "frozen": m.frozen,
    }


def _count_interactions(path: Path) -> int:
    """Interactions in a vcrpy YAML cassette, without parsing it (each starts a `- request:` line)."""
    if not path.is_file():
        return 0
    with path.open(encoding="utf-8") as fh:
        return sum(1 for line in fh if line.startswith("- request:"))
