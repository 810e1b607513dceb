"""`judge-replay drift`: which verdicts of a run rest on pages that have changed since (no model call)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from datetime import datetime, timezone

import click
from rich.table import Table
from rich.text import Text

from replay.analysis.drift_inputs import drift_items, run_drift
from replay.cli._jobs import jobs_option
from replay.core.commands import Endpoints
from replay.core.display import printable
from replay.core.drift import AT_RISK_STATUSES, STATUS_ORDER, unchecked
from replay.errors import CheckFailed, InputError, UsageError
from replay.files.inputs import load_claims
from replay.files.json_text import model_json_pieces
from replay.judge.page_snapshot import record_page_snapshot
from replay.reports.fit import column_needs, spread
from replay.reports.plain_table import LinePrinter
from replay.reports.tables import console_for, print_command, print_table, print_wrapped
from replay.runs.folder import Run, new_runs_folder, warm_conversations
from replay.runs.page_store import cassettes_root, index_or_warn
from replay.runs.stand_in_notes import stand_in_notes
from replay.schema.claims import Claim
from replay.schema.drift import DriftClaim, DriftReport
from replay.schema.manifest import LEARN_MCP_URL
from replay.settings import check_endpoint, given_endpoints, setting
from replay.secrets.registry import redact

_STYLE = {"page-gone": "bold red", "value-changed": "red", "quote-gone": "yellow", "unchecked": "magenta",
          "changed-quote-intact": "cyan", "no-page": "dim", "unchanged": "green"}
_LISTED = tuple(s for s in STATUS_ORDER if s in AT_RISK_STATUSES or s == "unchecked")
"""Statuses whose claims the table lists one by one (the others are counted: --json lists every claim)."""


EPILOG = """\b
Examples:
  judge-replay drift cassettes/v3-demo --against cassettes/v3-demo-2026-09   # offline, two recorded runs
  judge-replay drift cassettes/v3-demo --live                                # today's pages, from Learn
"""


@click.command("drift", epilog=EPILOG)
@click.argument("run", metavar="RUN")
@click.option("--against", "against", metavar="RUN_B", help="Compare with the pages in RUN_B's cassettes (offline).")
@click.option("--live", is_flag=True, help="Fetch every page RUN read from Learn now, into a dated page snapshot.")
@click.option("--learn-url", "learn_url", metavar="URL",
              help=f"Learn MCP endpoint for --live (default {LEARN_MCP_URL}).")
@click.option("--claims", "claims", multiple=True, metavar="PATH",
              help="Claims files/folders of RUN, when the run's cassettes and manifest paths do not give them.")
@click.option("--cassettes", "cassettes", metavar="DIR", help="Where --live writes its snapshot (default: cassettes/).")
@click.option("--store", "store", metavar="DIR", help="Page store that --live adds its fetches to.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@jobs_option
def command(run: str, against: str | None, live: bool, learn_url: str | None, claims: tuple[str, ...],
            cassettes: str | None, store: str | None, as_json: bool) -> None:
    """Compare every page RUN's judge read with a later version of it and list the claims whose evidence
    changed. Exit 0: nothing at risk; 1: some claims at risk, or not checked (their page's later fetch
    failed); 2: bad input."""
    if bool(against) == live:
        raise UsageError("drift: give exactly one of --against RUN_B (offline) or --live (fetch from Learn)")
    if learn_url and not live:
        raise UsageError("drift: --learn-url only applies with --live")
    if learn_url is not None:
        check_endpoint(learn_url, "drift: --learn-url")
    old_run = Run(run)
    missing = old_run.missing_cassettes()
    if missing:  # the pages its judge read are only in its cassettes: without them every claim would look changed
        raise InputError(old_run.path, f"the cassette of {len(missing)} claims file(s) is missing ({', '.join(missing[:3])}"
                         f"{', …' if len(missing) > 3 else ''}): drift compares the pages the run's judge read, which only "
                         "its cassettes hold; restore them")
    overrides, override_paths = _claims_overrides(claims)
    now = datetime.now(timezone.utc)
    if live:
        endpoint = str(setting("learn-url", learn_url, LEARN_MCP_URL))
        root = cassettes_root(cassettes)
        if root.exists() and not root.is_dir():
            raise InputError(root, "is not a folder: --cassettes (or [tool.judge-replay] cassettes) names the folder "
                             "drift --live writes its page snapshot in")
        snapshot = record_page_snapshot(old_run, endpoint, root, now)
        new_run = Run(snapshot)
        index_or_warn([old_run, new_run], store=store)
        against_name = str(snapshot)
    else:
        new_run = Run(str(against))
        against_name = str(against)
    warm_conversations(old_run, new_run)  # their cassettes parsed on every core where the parse cache lacks them
    items = drift_items(old_run, overrides)
    old_run.forget_claims()  # the items hold what drift needs of them
    unknown = sorted({i.file for i in items if i.claim is None})
    # the re-record judges the pages compared: --live's from the endpoint they were fetched from now
    endpoints = Endpoints(endpoint, given_endpoints().anthropic_base_url) if live else None
    report = run_drift(old_run, new_run, run_name=run.rstrip("/"), against_name=against_name,
                       claims=overrides, claims_paths=override_paths, today=now.strftime("%Y%m%d"),
                       outside_project=new_runs_folder(old_run), items=items, endpoints=endpoints)
    del items
    if live:
        report.snapshot = against_name
    report.stand_ins = {"run": list(old_run.manifest.stand_ins), "against": list(new_run.manifest.stand_ins)}
    report.notes = stand_in_notes([old_run, new_run])
    if unknown:
        click.echo(printable(f"judge-replay: drift: the claims of {', '.join(unknown)} were not found (not in the "
                             "cassettes, nor at the manifest's paths); their quotes alone were checked: pass "
                             "--claims PATH"), err=True)
    if as_json:
        for piece in model_json_pieces(report, "claims"):  # written as it is made: 5,000 claims are no one text
            click.echo(redact(piece), nl=False)  # whole lines: a secret is never split between two
    else:
        print_report(report)
    if report.at_risk:
        raise CheckFailed(f"drift: {len(report.at_risk)} claim(s) of {report.run} rest on evidence that changed")
    if unchecked(report):
        raise CheckFailed(f"drift: {len(unchecked(report))} claim(s) of {report.run} could not be checked: the later "
                          "run has no version of their page (its fetch failed, or it did not read the page)")


def _claims_overrides(paths: tuple[str, ...]) -> tuple[dict[str, list[Claim]], dict[str, str]]:
    if not paths:
        return {}, {}
    batches = load_claims(list(paths))
    return {b.file: b.claims for _, b in batches}, {b.file: str(p) for p, b in batches}


# --------------------------------------------------------------------------- terminal output


def print_report(report: DriftReport) -> None:
    """The report for people: a table grouped by status (old → new for value changes), then what to do."""
    console = console_for()
    counts = {s: sum(1 for c in report.claims if c.status == s) for s in STATUS_ORDER}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    for note in report.notes:
        print_wrapped(console, note, "bold yellow")
    print_wrapped(console, f"drift of {report.run} against {report.against}: "
                  f"{len(report.claims)} claims ({summary or 'none'})")
    if report.snapshot:
        print_wrapped(console, f"pages fetched now were recorded into {report.snapshot} (reuse it with --against)")
    table = claims_table(report)
    if table.row_count and _whole_words_fit(report, console.width):
        print_table(console, table, soft_wrap=False)
    elif table.row_count:  # too narrow for the table without breaking a claim id or a URL: one block per claim
        lines = LinePrinter(console)  # thousands of short lines: printed a few hundred at a time
        for status in _LISTED:
            for c in (c for c in report.claims if c.status == status):
                print_wrapped(console, f"{c.status}  {c.file}:{c.id}  {c.verdict or '-'}", _STYLE[c.status], printer=lines)
                print_wrapped(console, f"page: {_short_url(c.evidence_url)}", indent=2, hang=4, printer=lines)
                for n, part in enumerate(_change(c).plain.split("\n")):  # old, then `→ new` under it
                    print_wrapped(console, part, indent=4 if n else 2, hang=4, printer=lines)
        lines.flush()
    intact: dict[str, int] = {}
    for c in report.claims:
        if c.status == "changed-quote-intact":
            intact[_short_url(c.evidence_url)] = intact.get(_short_url(c.evidence_url), 0) + 1
    for url, n in sorted(intact.items()):
        print_wrapped(console, f"{n} claim(s) on {url}: page changed, their quote and values still there")
    no_page: dict[tuple[str, str], int] = {}
    for c in report.claims:
        if c.status == "no-page":
            key = (_short_url(c.evidence_url), c.note or "")
            no_page[key] = no_page.get(key, 0) + 1
    for (url, note), n in sorted(no_page.items()):
        where = f"on {url}" if url != "-" else "citing no page"
        print_wrapped(console, f"{n} claim(s) {where}: no page to compare, not at risk ({note})")
    if counts["unchanged"]:
        print_wrapped(console, f"{counts['unchanged']} claim(s) unchanged: their page is byte-for-byte the same")
    if not report.at_risk:
        if counts["unchecked"]:
            print_wrapped(console, f"{counts['unchecked']} claim(s) not checked: the later run has no version of their "
                          "page (its fetch failed, or it did not read the page); compare with a run that read it, or --live")
        else:
            print_wrapped(console, "nothing at risk: every verdict's evidence still says what it said")
        return
    at_risk = ", ".join(f"{a['file']}:{a['id']}" for a in report.at_risk)
    print_wrapped(console, f"at risk ({len(report.at_risk)}): {at_risk}")
    print_wrapped(console, "re-record only the affected claims files, then see which verdicts moved:")
    for cmd in report.rerecord_commands:  # wrapped with `\` continuations: each still pastes as one command
        print_command(console, cmd)
    if report.rerecord_note:
        print_wrapped(console, f"({report.rerecord_note})")
    print_wrapped(console, f"(add --pages-from {shlex.quote(report.against)} to the judge command to judge on "
                   "exactly the pages compared here; check the new run later the same way: "
                   "judge-replay drift <new run> --against <later run>)")


def _short_url(url: str | None) -> str:
    if not url:
        return "-"
    return url.split("://", 1)[-1].removeprefix("learn.microsoft.com")


def claims_table(report: DriftReport) -> Table:
    """The claims at risk or not checked, one row each, grouped by status."""
    table = Table()
    table.add_column("status", no_wrap=True)
    table.add_column("claim", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    table.add_column("page", overflow="fold", max_width=40)
    table.add_column("old → new", overflow="fold", ratio=1)
    shared: dict[tuple[str | None, ...], Text] = {}  # one Text for the cells many rows repeat (status, page, change)

    def cell(key: tuple[str | None, ...], make: Callable[[], Text]) -> Text:
        found = shared.get(key)
        if found is None:
            found = shared[key] = make()
        return found

    for status in _LISTED:
        group = [c for c in report.claims if c.status == status]
        for c in group:
            url = _short_url(c.evidence_url)
            change = ("change", c.old, c.new) if c.status == "value-changed" else ("note", c.note)  # what _change shows
            table.add_row(cell(("status", c.status), lambda: Text(c.status, style=_STYLE[c.status])),
                          Text(printable(f"{c.file}:{c.id}")), c.verdict or "-",
                          cell(("page", url), lambda: Text(printable(url))), cell(change, lambda: _change(c)))
        if group:
            table.add_section()
    return table


def _whole_words_fit(report: DriftReport, width: int) -> bool:
    """Whether the claims table fits `width` with no word of a cell broken (`fit.spread`)."""
    listed = [c for c in report.claims if c.status in _LISTED]
    columns = [["status", *(c.status for c in listed)], ["claim", *(printable(f"{c.file}:{c.id}") for c in listed)],
               ["verdict", *(c.verdict or "-" for c in listed)],
               ["page", *(printable(_short_url(c.evidence_url)) for c in listed)],
               ["old → new", *(_change(c).plain for c in listed)]]
    return spread(column_needs(columns), width) is not None


def _change(c: DriftClaim) -> Text:
    if c.status != "value-changed":
        return Text(printable(c.note or ""))
    old, new = _differing_cells(c.old, c.new)
    out = Text(printable(old or "(not on the page)"), style="red")
    out.append("\n→ ")
    out.append(printable(new or "(no longer on the page)"), style="green")
    return out


def _differing_cells(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Two versions of a long table row cut to the row key and the cells that differ (display only)."""
    if old is None or new is None or len(old) + len(new) < 160:
        return old, new
    a, b = old.strip().strip("|").split("|"), new.strip().strip("|").split("|")
    if len(a) != len(b):
        return old, new
    keep = [0] + [i for i in range(1, len(a)) if " ".join(a[i].split()) != " ".join(b[i].split())]

    def cut(cells: list[str]) -> str:
        parts, last = [], -1
        for i in keep:
            if i > last + 1:
                parts.append(" … ")
            parts.append(" " + " ".join(cells[i].split()) + " ")
            last = i
        if last < len(cells) - 1:
            parts.append(" … ")
        return "|" + "|".join(parts) + "|"

    return cut(a), cut(b)
