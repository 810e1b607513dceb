"""`judge-replay drift`: which verdicts of a run rest on pages that have changed since (no model call)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from .._drift import STATUS_ORDER, ClaimEvidence, drift_report, evidence_url
from .._config import setting
from .._errors import CheckFailed, UsageError
from .._io import load_claims, write_model
from .._mcp import FETCH_TOOL, normalise_learn_url
from .._pagestore import PageStore, cassettes_root, store_folder
from .._records import (
    LEARN_MCP_URL,
    Claim,
    ClaimsFileEntry,
    DriftClaim,
    DriftReport,
    FileResult,
    ResultsFile,
    RunManifest,
    ToolCall,
)
from .._render import console_for
from .._runs import MANIFEST, RESULTS, Run, cassette_name
from .._text import sha256_text

SNAPSHOT_PROMPT = "pages-snapshot"
"""The `prompt` of a page snapshot folder: it holds Learn fetches only, no judge conversation."""
_STYLE = {"page-gone": "bold red", "value-changed": "red", "quote-gone": "yellow",
          "changed-quote-intact": "cyan", "unchanged": "green"}


@click.command("drift")
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
def command(run: str, against: str | None, live: bool, learn_url: str | None, claims: tuple[str, ...],
            cassettes: str | None, store: str | None, as_json: bool) -> None:
    """Compare every page RUN's judge read with a later version of it and list the claims whose evidence
    changed. Exit 0: nothing at risk; 1: some claims at risk; 2: bad input."""
    if bool(against) == live:
        raise UsageError("drift: give exactly one of --against RUN_B (offline) or --live (fetch from Learn)")
    if learn_url and not live:
        raise UsageError("drift: --learn-url only applies with --live")
    old_run = Run(run)
    overrides, override_paths = _claims_overrides(claims)
    now = datetime.now(timezone.utc)
    if live:
        endpoint = str(setting("learn-url", learn_url, LEARN_MCP_URL))
        snapshot = record_page_snapshot(old_run, endpoint, cassettes_root(cassettes), now)
        new_run = Run(snapshot)
        with PageStore(store_folder(store)) as page_store:
            page_store.index_runs([old_run, new_run])
        against_name = str(snapshot)
    else:
        new_run = Run(str(against))
        against_name = str(against)
    report = run_drift(old_run, new_run, run_name=run.rstrip("/"), against_name=against_name,
                       claims=overrides, claims_paths=override_paths, today=now.strftime("%Y%m%d"))
    if live:
        report.snapshot = against_name
    unknown = sorted({i.file for i in drift_items(old_run, overrides) if i.claim is None})
    if unknown:
        click.echo(f"judge-replay: drift: the claims of {', '.join(unknown)} were not found (not in the cassettes, "
                   "nor at the manifest's paths); their quotes alone were checked: pass --claims PATH", err=True)
    if as_json:
        click.echo(json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        print_report(report)
    if report.at_risk:
        raise CheckFailed(f"drift: {len(report.at_risk)} claim(s) of {report.run} rest on evidence that changed")


def run_drift(old_run: Run, new_run: Run, *, run_name: str, against_name: str,
              claims: Mapping[str, list[Claim]] | None = None, claims_paths: Mapping[str, str] | None = None,
              today: str) -> DriftReport:
    """The drift report of `old_run` against the pages of `new_run` (both run folders, read offline)."""
    items = drift_items(old_run, claims or {})
    paths = {entry.file: entry.path for entry in old_run.manifest.claims}
    paths.update(claims_paths or {})
    return drift_report(
        run=run_name, against=against_name, items=items, old_pages=old_run.pages, new_pages=new_run.pages,
        prompt=old_run.manifest.prompt, claims_paths=paths, rerecord_run=f"{run_name}-{today}",
    )


def drift_items(run: Run, overrides: Mapping[str, list[Claim]]) -> list[ClaimEvidence]:
    """What every verdict of a run rests on: its result's page and quote, and the claim text."""
    items = []
    for file_result in run.results.files:
        claims = {c.id: c for c in overrides.get(file_result.file) or run.claims(file_result.file) or []}
        answered = set()
        for result in file_result.results:
            answered.add(result.id)
            claim = claims.get(result.id)
            url = evidence_url(result.evidence_url or None, claim.evidence_url if claim else None, run.pages)
            items.append(ClaimEvidence(file=file_result.file, id=result.id, claim=claim.claim if claim else None,
                                       evidence_url=url, verdict=result.judge_verdict, quote=result.evidence_quote))
        for claim in claims.values():
            if claim.id not in answered:
                url = evidence_url(None, claim.evidence_url, run.pages)
                items.append(ClaimEvidence(file=file_result.file, id=claim.id, claim=claim.claim, evidence_url=url))
    return items


def _claims_overrides(paths: tuple[str, ...]) -> tuple[dict[str, list[Claim]], dict[str, str]]:
    if not paths:
        return {}, {}
    batches = load_claims(list(paths))
    return {b.file: b.claims for _, b in batches}, {b.file: str(p) for p, b in batches}


# --------------------------------------------------------------------------- --live: a dated page snapshot


def record_page_snapshot(run: Run, learn_url: str, root: Path, now: datetime) -> Path:
    """Fetch every page `run` read, per claims file, through the recorder into a run-like folder
    `root/pages-<YYYYMMDD-HHMMSS>/` (usable as `--against`); its path. A failed fetch leaves no folder."""
    folder = _fresh_folder(root, f"pages-{now:%Y%m%d-%H%M%S}")
    try:
        _record_fetches(run, learn_url, folder, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # we just created it; half a snapshot is no snapshot
        raise
    return folder


def _record_fetches(run: Run, learn_url: str, folder: Path, recorded_at: str) -> None:
    from .._learn import LearnClient
    from .._recorder import HttpRecorder

    entries: list[ClaimsFileEntry] = []
    files: list[FileResult] = []
    stand_in = False
    with HttpRecorder("record", folder) as recorder:
        for entry in run.manifest.claims:
            calls = []
            with recorder.conversation(entry.file), LearnClient(learn_url) as client:
                for url in _fetched_urls(run, entry.file):
                    fetched = client.fetch(url)
                    sha = None if fetched.missing or fetched.text is None else sha256_text(fetched.text)
                    calls.append(ToolCall(tool=FETCH_TOOL, arguments={"url": url}, url=url, page_sha256=sha))
                stand_in = stand_in or client.stand_in
            entries.append(ClaimsFileEntry(file=entry.file, path=entry.path, sha256=entry.sha256,
                                           cassette=cassette_name(entry.file)))
            files.append(FileResult(file=entry.file, results=[], tool_calls=calls))
    manifest = RunManifest(
        run_id=folder.name, prompt=SNAPSHOT_PROMPT, prompt_sha256=sha256_text(SNAPSHOT_PROMPT), model="none",
        mode="record", recorded_at=recorded_at, learn_url=learn_url, claims=entries,
        stand_ins=["learn"] if stand_in else [], stats=recorder.stats,
    )
    write_model(folder / RESULTS, ResultsFile(prompt=SNAPSHOT_PROMPT, prompt_sha256=manifest.prompt_sha256,
                                              model="none", recorded_at=recorded_at, files=files))
    write_model(folder / MANIFEST, manifest)  # last: a folder with run.json is a complete snapshot


def _fetched_urls(run: Run, claims_file: str) -> list[str]:
    """The URLs a claims file's conversation fetched, in order, each page once."""
    seen: dict[str, str] = {}
    for call in run.learn_calls(claims_file):
        if call.tool == FETCH_TOOL and "url" in call.arguments:
            url = str(call.arguments["url"])
            seen.setdefault(normalise_learn_url(url), url)
    return list(seen.values())


def _fresh_folder(root: Path, name: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    folder, n = root / name, 1
    while folder.exists():
        n += 1
        folder = root / f"{name}-{n}"
    folder.mkdir()
    return folder


# --------------------------------------------------------------------------- terminal output


def print_report(report: DriftReport) -> None:
    """The report for people: a table grouped by status (old → new for value changes), then what to do."""
    console = console_for()
    counts = {s: sum(1 for c in report.claims if c.status == s) for s in STATUS_ORDER}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    console.print(Text(f"drift of {report.run} against {report.against}: "
                       f"{len(report.claims)} claims ({summary or 'none'})"))
    if report.snapshot:
        console.print(Text(f"pages fetched now were recorded into {report.snapshot} (reuse it with --against)"))
    table = Table()
    table.add_column("status", no_wrap=True)
    table.add_column("claim", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    table.add_column("page", overflow="fold", max_width=40)
    table.add_column("old → new", overflow="fold", ratio=1)
    for status in STATUS_ORDER[:-1]:  # unchanged claims are only counted: --json lists every claim
        group = [c for c in report.claims if c.status == status]
        for c in group:
            table.add_row(Text(c.status, style=_STYLE[c.status]), Text(f"{c.file}:{c.id}"), c.verdict or "-",
                          Text(_short_url(c.evidence_url)), _change(c))
        if group:
            table.add_section()
    if table.row_count:
        console.print(table)
    if counts["unchanged"]:
        console.print(Text(f"{counts['unchanged']} claim(s) unchanged: their page is byte-for-byte the same"))
    if not report.at_risk:
        console.print(Text("nothing at risk: every verdict's evidence still says what it said"))
        return
    at_risk = ", ".join(f"{a['file']}:{a['id']}" for a in report.at_risk)
    console.print(Text(f"at risk ({len(report.at_risk)}): {at_risk}"))
    console.print(Text("re-record only the affected claims files, then see which verdicts moved:"))
    for cmd in report.rerecord_commands:
        console.print(Text(f"  {cmd}"), soft_wrap=True)
    console.print(Text(f"(add --pages-from {report.against} to the judge command to judge on exactly the pages "
                       "compared here; check the new run later the same way: "
                       "judge-replay drift <new run> --against <later run>)"), soft_wrap=True)


def _short_url(url: str | None) -> str:
    if not url:
        return "-"
    return url.split("://", 1)[-1].removeprefix("learn.microsoft.com")


def _change(c: DriftClaim) -> Text:
    if c.status != "value-changed":
        return Text(c.note or "")
    old, new = _differing_cells(c.old, c.new)
    out = Text(old or "(not on the page)", style="red")
    out.append("\n→ ")
    out.append(new or "(no longer on the page)", style="green")
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
