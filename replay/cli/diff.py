"""`judge-replay diff RUN_A RUN_B`: every claim whose verdict moved between two runs, and why."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import click

from replay.analysis.flip_inputs import explain_flips
from replay.cli._jobs import jobs_option
from replay.cli._output import SUMMARY_VARIABLE, append_job_summary, dash_is_stdout
from replay.core.flips.report import gold_labels
from replay.errors import UsageError
from replay.files.atomic import atomic_write_chunks
from replay.files.inputs import load_claims, load_gold
from replay.core.display import printable
from replay.files.paths import display_path
from replay.reports.fit import output_width
from replay.reports.flips import json_pieces, render_text, write_text
from replay.reports.flips_html import html_pieces
from replay.reports.flips_markdown import markdown_pieces
from replay.runs.folder import Run, new_runs_folder, warm_conversations
from replay.runs.stand_in_notes import stand_in_notes
from replay.settings import load_settings, setting
from replay.secrets.registry import redact


def _default_gold() -> Path | None:
    """`[tool.judge-replay] gold`, resolved against the pyproject's folder, if that file exists."""
    value = setting("gold", None)
    if not value:
        return None
    path = Path(value)
    if not path.is_absolute():
        _, root = load_settings()
        path = (root or Path.cwd()) / path
    return path if path.is_file() else None


EPILOG = """\b
Example (the bundled demo: v2's prompt against v3's on later pages; v2's prompt on those
pages, cassettes/v2-demo-2026-09, is found as a sibling folder and says which input moved each verdict):
  judge-replay diff cassettes/v2-demo cassettes/v3-demo-2026-09 --format html --out flips.html
"""


@click.command("diff", epilog=EPILOG)
@click.argument("run_a", type=click.Path(readable=False, path_type=str))
@click.argument("run_b", type=click.Path(readable=False, path_type=str))
@click.option("--gold", "gold_path", type=click.Path(readable=False, path_type=str), default=None,
              help="Gold set: mark which side was right (default: [tool.judge-replay] gold, if it exists).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "html"]), default="text",
              show_default=True)
@click.option("--out", callback=dash_is_stdout, type=click.Path(readable=False, path_type=str), default=None, help="Write the report to FILE (atomically).")
@click.option("--with", "with_runs", multiple=True, type=click.Path(readable=False, path_type=str), metavar="RUN",
              help="Another run that can confirm a cause (A's prompt with B's pages, a repeat...). Repeatable.")
@click.option("--siblings/--no-siblings", "--discover/--no-discover", "discover", default=True, show_default=True,
              help="Also use sibling run folders (beside A or B) as repeats or controls (--pages-from A or B): only "
                   "those that hold the same claims, are complete and verify (as `cassettes verify` checks; "
                   "remembered while they do not change). The report names each one skipped and why.")
@click.option("--claims", "claims_paths", multiple=True, type=click.Path(readable=False, path_type=str),
              help="Claims files/folders, for runs that do not record the claim texts. Repeatable.")
@click.option("--a-at", "a_at", metavar="COMMIT", default=None,
              help="Read RUN_A as git COMMIT holds it (copied out of git into a temporary folder, removed "
                   "afterwards): `diff --a-at HEAD~1 runs/v3 runs/v3` compares a run with its last commit.")
@click.option("--confirm", is_flag=True,
              help="Print the `judge` commands that would record the missing controlled runs.")
@jobs_option
def command(run_a: str, run_b: str, gold_path: str | None, fmt: str, out: str | None, with_runs: tuple[str, ...],
            discover: bool, claims_paths: tuple[str, ...], a_at: str | None, confirm: bool) -> None:
    """Pair the two runs' claims and, for every claim whose verdict differs, say why: prompt, page,
    prompt+page, evidence_path, model or unknown. Exit 0 whether or not anything flipped. When
    GITHUB_STEP_SUMMARY is set, the markdown report is also appended to that file."""
    if a_at is not None:
        from replay.runs.at_commit import run_at_commit

        with run_at_commit(run_a, a_at) as folder:
            _diff(str(folder), f"{run_a}@{a_at}", run_b, gold_path, fmt, out, with_runs,
                  discover, claims_paths, confirm)
        return
    _diff(run_a, run_a, run_b, gold_path, fmt, out, with_runs, discover, claims_paths, confirm)


def _diff(run_a: str, label_a: str, run_b: str, gold_path: str | None, fmt: str, out: str | None,
          with_runs: tuple[str, ...], discover: bool, claims_paths: tuple[str, ...], confirm: bool) -> None:
    if out and Path(out).is_dir():
        raise UsageError(f"--out {out}: is a folder; give a file name (e.g. {Path(out) / ('flips.' + fmt)})")
    a, b = Run(run_a), Run(run_b)
    extras = [Run(p) for p in with_runs]
    warm_conversations(a, b, *extras)  # their cassettes parsed on every core where the parse cache lacks them
    chosen = Path(gold_path) if gold_path else _default_gold()
    labels = gold_labels(load_gold(chosen)) if chosen is not None else None  # the gold set's records let go of
    batches = [batch for _, batch in load_claims(list(claims_paths))] if claims_paths else []
    report = explain_flips(a, b, labels, extras, discover=discover, claims=batches, confirm_parent=new_runs_folder(b),
                           text_only=fmt == "text" and not os.environ.get(SUMMARY_VARIABLE))
    report.run_a, report.run_b = label_a, run_b
    if label_a != run_a:  # a run read out of git: named as the user named it, not by its temporary folder
        shown = display_path(a.path)
        report.notes = [note.replace(shown, label_a) for note in report.notes]
    report.notes = stand_in_notes([a, b, *(Run(c.path) for c in report.controlled_runs)]) + report.notes
    if not confirm and fmt != "json":
        report.confirm_commands = []
    append_job_summary(lambda: "".join(markdown_pieces(report)))
    if fmt == "text" and out is None:
        write_text(report, lambda piece: click.echo(piece, nl=False), color=sys.stdout.isatty(),
                   width=output_width(sys.stdout))
        return
    if fmt == "text":
        pieces: Iterable[str] = [render_text(report, width=output_width(None))]
    else:  # written as they are made: the report of a large run is never held as one text
        pieces = {"json": json_pieces, "markdown": markdown_pieces, "html": html_pieces}[fmt](report)
    if out:
        atomic_write_chunks(out, pieces)
        click.echo(f"wrote {printable(str(out))}: {len(report.flips)} flips of {report.paired} paired claims", err=True)
    else:
        for piece in pieces:  # whole lines: a secret is never split between two
            click.echo(redact(piece), nl=False)
