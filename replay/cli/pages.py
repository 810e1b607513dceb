"""`judge-replay pages history|diff`: every recorded version of a Learn page, and the change between two."""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence

import click
from rich.text import Text

from replay.core.display import printable
from replay.errors import UsageError
from replay.files.json_text import dump_json
from replay.reports.tables import TextTable, console_for, print_wrapped
from replay.runs.page_store import NoPageAnswer, PageRecord, PageStore, open_indexed_store
from replay.runs.stand_in_notes import STAND_IN_LEARN_NOTE
from replay.secrets.registry import redact

_STORE_HELP = "Page store folder (default: [tool.judge-replay] page-store, else .judge-replay/pages)."
_CASSETTES_HELP = "Folder of run folders to index first (default: [tool.judge-replay] cassettes, else cassettes/)."


PAGE = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/model-retirements"
EPILOG = f"""\b
Examples:
  judge-replay pages history {PAGE}
  judge-replay pages diff {PAGE}
"""


@click.group("pages", epilog=EPILOG)
def command() -> None:
    """Every recorded version of a Learn page (from the runs' cassettes), and what changed between two."""


@command.command("history", epilog=f"\b\nExample:\n  judge-replay pages history {PAGE} --json")
@click.argument("url")
@click.option("--store", "store", metavar="DIR", help=_STORE_HELP)
@click.option("--cassettes", "cassettes", metavar="DIR", help=_CASSETTES_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def history(url: str, store: str | None, cassettes: str | None, as_json: bool) -> None:
    """List every recorded version of URL: hash, first and last seen, runs, size. Fetches that got no
    page (a URL refused as outside Learn, a page Learn could not retrieve, a failed fetch) are listed
    under the versions, never as one."""
    with open_indexed_store(store, cassettes) as page_store:
        no_page = page_store.no_page_answers(url)
        versions = page_store.versions(url) if no_page else _known_versions(page_store, url)
    notes = stand_in_notes([*versions, *no_page])
    shown_url = versions[0].url if versions else no_page[0].url
    if as_json:
        click.echo(redact(dump_json({"url": shown_url, "notes": notes, "versions": [_version_json(v) for v in versions],
                                     "no_page": [_no_page_json(a) for a in no_page]})), nl=False)
        return
    console = console_for()
    for note in notes:
        print_wrapped(console, note, "bold yellow")
    if versions:
        # fitted to the width without breaking a hash, a time or a run's name (`TextTable`)
        print_wrapped(console, f"{shown_url}: {len(versions)} recorded version(s)")
        TextTable("", ["hash", "first seen", "last seen", "runs", "size"],
                  [[v.short, v.first_seen, v.last_seen, ", ".join(v.runs), f"{v.size:,} B"] for v in versions],
                  right_from=4).print(console)
    else:
        print_wrapped(console, f"{shown_url}: no recorded version (no run read a page there)")
    for a in no_page:
        when = a.first_seen if a.first_seen == a.last_seen else f"{a.first_seen} to {a.last_seen}"
        print_wrapped(console, f"{a.meaning}: {', '.join(a.runs)} ({when})")


@command.command("diff", epilog=f"\b\nExample (the change between two given versions):\n"
                                  f"  judge-replay pages diff {PAGE} --from 122ac30 --to d318b43")
@click.argument("url")
@click.option("--from", "from_hash", metavar="HASH",
              help="Older version (hash or prefix; default: the one before --to).")
@click.option("--to", "to_hash", metavar="HASH", help="Newer version (hash or prefix; default: the latest).")
@click.option("--store", "store", metavar="DIR", help=_STORE_HELP)
@click.option("--cassettes", "cassettes", metavar="DIR", help=_CASSETTES_HELP)
def diff(url: str, from_hash: str | None, to_hash: str | None, store: str | None, cassettes: str | None) -> None:
    """Show a unified diff between two recorded versions of URL (default: the two latest)."""
    with open_indexed_store(store, cassettes) as page_store:
        if not page_store.versions(url) and page_store.no_page_answers(url):
            click.echo(printable(f"{url}: no run read a page there (see `judge-replay pages history`); "
                                 "nothing to compare"))
            return
        versions = _known_versions(page_store, url)
        new = page_store.version(url, to_hash) if to_hash else versions[-1]
        if from_hash:
            old = page_store.version(url, from_hash)
        else:
            earlier = versions[: [v.sha256 for v in versions].index(new.sha256)]
            if not earlier:
                click.echo(printable(f"{url}: no version recorded before {new.short}; nothing to compare"))
                return
            old = earlier[-1]
        old_text = page_store.text(old.sha256) or ""
        new_text = page_store.text(new.sha256) or ""
    lines = list(difflib.unified_diff(
        old_text.splitlines(), new_text.splitlines(), lineterm="",
        fromfile=f"{old.url} @ {old.short} (first seen {old.first_seen}; {', '.join(old.runs)})",
        tofile=f"{new.url} @ {new.short} (first seen {new.first_seen}; {', '.join(new.runs)})",
    ))
    for note in stand_in_notes([old, new]):
        click.echo(printable(note))
    if not lines:
        click.echo(printable(f"{url}: {old.short} and {new.short} are the same version"))
        return
    _print_diff([printable(line) for line in lines])


def _known_versions(page_store: PageStore, url: str) -> list[PageRecord]:
    versions = page_store.versions(url)
    if versions:
        return versions
    known = page_store.urls()
    listing = [f"  {u}" for u in known] if known else ["  (none: no run under the cassettes folder read a page)"]
    raise UsageError(f"no recorded version of {url}; the page store knows:", *listing)


def _version_json(v: PageRecord) -> dict[str, object]:
    return {"sha256": v.sha256, "hash": v.short, "first_seen": v.first_seen,
            "last_seen": v.last_seen, "runs": list(v.runs), "size": v.size, "stand_in_runs": list(v.stand_in_runs)}


def _no_page_json(a: NoPageAnswer) -> dict[str, object]:
    return {"reason": a.reason, "meaning": a.meaning, "first_seen": a.first_seen, "last_seen": a.last_seen,
            "runs": list(a.runs)}


def stand_in_notes(versions: Sequence[PageRecord | NoPageAnswer]) -> list[str]:
    """The note every reader must see when some of these versions (or answers) came from the local Learn
    stand-in."""
    runs = list(dict.fromkeys(r for v in versions for r in v.stand_in_runs))
    return [f"{STAND_IN_LEARN_NOTE}: {', '.join(runs)}"] if runs else []


def _print_diff(lines: list[str]) -> None:
    if not sys.stdout.isatty():
        click.echo("\n".join(lines))
        return
    console = console_for()
    for line in lines:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        console.print(Text(line, style=style), soft_wrap=True)
