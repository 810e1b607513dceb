"""Drift: whether the page each verdict rests on still says what it said (pure: texts in, statuses out).

For one claim, its old page (what the run's judge read) against a later version of it:

- `page-gone`: Learn now answers that the page could not be retrieved, or refuses its URL.
- `unchecked`: the later fetch failed (a Learn error or outage), or the later run never read the page
  (its judge chose other pages): that says nothing about the page, so the claim could not be checked.
- `no-page`: there is no page to compare, then or now: the verdict cites none, or cites a URL that was no
  page when the run read it (the server refused it as outside Learn, Learn could not retrieve it, the
  fetch failed, or the judge never fetched it) and is none later either. Not at risk: no page changed.
- `unchanged`: same content hash.
- `value-changed`: the line carrying the claim's value now carries a different one. The anchor lines in
  the old page are the line holding the recorded quote and the line holding most of the claim's value
  tokens; each anchor's counterpart in the new page is the same line if it is still there, else the
  table row with the same row key (first cell), else the most similar line (difflib, shared subject
  words first). For a table row only the cells holding the claim's values are compared (all cells after
  the key when none holds one), so an edit in another column of the same row does not count. Also
  `value-changed`: a claimed value that was on the old page is on the new page no more (`new` is then
  the counterpart line, or None; when the line went with the quote on it, that is `quote-gone`).
  A claim with no quote the old page held (typically `source_silent`) whose values (or, with no values,
  all subject words) now appear on one line of the new page, and did not before, may now ground: it is
  `value-changed` with `old` None and `new` the line now carrying the value. `changed-quote-intact`
  would hide exactly the claims whose verdict the change is most likely to move.
- `quote-gone`: the recorded quote occurred in the old page and occurs in the new one no more.
- `changed-quote-intact`: the page changed, but the quote and the claim's values are still there.

Quotes are compared on text stripped of markdown formatting (`formatting_free`: backticks, emphasis,
table padding, whitespace), so a line that only gained backticks or lost padding is no drift: its claims
are `changed-quote-intact`, with a note saying the change was formatting only.

Several may apply; the first in the order page-gone > value-changed > quote-gone > changed-quote-intact
> unchanged wins. Claims `page-gone`, `value-changed` or `quote-gone` are at risk; `unchecked` ones are
not known to be safe (the command says so and exits 1), the others are not at risk.
"""

from __future__ import annotations

import posixpath
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from replay.core.commands import NO_ENDPOINTS, Endpoints, rerecord_command
from replay.core.page_lines import (
    _claim_values,
    _claim_words,
    _counterpart,
    _first,
    _page_tokens,
    _quote_line,
    _support,
    _token_row,
    _value_line,
    _values_differ,
    formatting_free,
    quote_in,
)
from replay.core.text import (
    Located,
    quote_occurs,
)
from replay.schema.common import Verdict
from replay.schema.drift import DriftClaim, DriftPage, DriftReport
from replay.schema.manifest import RunManifest
from replay.schema.pages import PageVersion
from replay.urls import normalise_learn_url

AT_RISK_STATUSES = frozenset({"page-gone", "value-changed", "quote-gone"})
STATUS_ORDER = ("page-gone", "value-changed", "quote-gone", "unchecked", "changed-quote-intact", "no-page",
                "unchanged")
"""Statuses by precedence (and the order reports group them in)."""


@dataclass(frozen=True, slots=True)
class ClaimEvidence:
    """What one verdict of a run rests on."""

    file: str
    id: str
    claim: str | None
    """The claim text; None when the run does not say (then only the quote is checked)."""
    evidence_url: str | None
    """The page the verdict rests on: the result's `evidence_url`, else the claim's."""
    verdict: Verdict | None = None
    quote: str = ""


def evidence_url(result_url: str | None, claim_url: str | None, read: Mapping[str, PageVersion]) -> str | None:
    """The page a verdict rests on: the result's URL, else the claim's; one the run read wins."""
    candidates = [u for u in (result_url, claim_url) if u]
    for url in candidates:
        if normalise_learn_url(url) in read:
            return url
    return candidates[0] if candidates else None


_EVERY_DRIFT_FIELD = set(DriftClaim.model_fields)
"""The fields set of every `DriftClaim` drift makes: all of them, one set shared by a run's thousands (a set
of a model's own is 0.7 KB; setting a field adds a name already in it, so it never changes)."""


def claim_drift(item: ClaimEvidence, old: PageVersion | None, new: PageVersion | None) -> DriftClaim:
    """The drift status of one claim, given the page its verdict rests on and the later version (built
    from values made here, unvalidated, with the shared `_EVERY_DRIFT_FIELD`)."""
    fields: dict[str, Any] = {
        "file": item.file, "id": item.id, "evidence_url": item.evidence_url, "status": "unchanged",
        "old_sha256": old.sha256 if old else None, "new_sha256": new.sha256 if new else None,
        "verdict": item.verdict, "quote": item.quote,
    }
    for name, value in _drift_of(item, old, new).items():  # page lines and notes: many claims share each
        fields[name] = sys.intern(value) if type(value) is str else value
    return DriftClaim.model_construct(_EVERY_DRIFT_FIELD, **fields)


def _drift_of(item: ClaimEvidence, old: PageVersion | None, new: PageVersion | None) -> dict[str, Any]:
    """The status of one claim's evidence, and what says why (`claim_drift`'s fields beyond the claim's own)."""
    old_text = old.text if old and old.sha256 is not None else None
    new_text = new.text if new and new.sha256 is not None else None
    if item.evidence_url is None:
        return {"status": "no-page", "note": "the verdict cites no page"}
    if old_text is None and new_text is None:
        return {"status": "no-page", "note": _no_page_note(old, new)}
    if new_text is None:
        if new is None:
            return {"status": "unchecked", "note": NOT_READ_LATER}
        if new.no_page == "failed":
            return {"status": "unchecked", "note": NO_PAGE_NOTES["failed"] + " later: fetch again"}
        anchor = _anchors(item, old_text or "")
        return {
            "status": "page-gone", "old": anchor[0].line.strip() if anchor else None,
            "note": _GONE_NOTES.get(new.no_page, "the later version is no page"),
        }
    if old and new and old.sha256 == new.sha256:
        return {}
    return _changed(item, old_text or "", new_text)


NOT_READ_LATER = "the later run did not read this page, which says nothing about it: compare with a run that read it, or --live"
"""Why a claim whose page the later run never read is `unchecked`."""
NO_PAGE_NOTES = {
    "refused": "not a Learn page: the server refused the URL as outside Microsoft Learn",
    "not-found": "Learn had no page there (it could not be retrieved)",
    "failed": "the fetch failed (a Learn error or outage, which says nothing about the page)",
}
"""What a fetch that got no page means, by `PageVersion.no_page`."""
_GONE_NOTES: dict[str | None, str] = {
    "not-found": "the later version could not be retrieved",
    "refused": "the server now refuses the URL as outside Microsoft Learn",
}


def _no_page_note(old: PageVersion | None, new: PageVersion | None) -> str:
    """Why a claim has no page to compare, then or now (the run's answer first, then the later one)."""
    reasons = [v.no_page for v in (old, new) if v is not None and v.no_page]
    if not reasons:
        return "the judge never fetched the page it cites: nothing to compare"
    if "refused" in reasons:
        return NO_PAGE_NOTES["refused"] + ": it never had a page"
    if len(set(reasons)) == 1:
        return NO_PAGE_NOTES[reasons[0]] + (", then and now" if len(reasons) == 2 else "")
    return f"{NO_PAGE_NOTES[reasons[0]]} then; {NO_PAGE_NOTES[reasons[1]]} now"


def _changed(item: ClaimEvidence, old_text: str, new_text: str) -> dict[str, object]:
    """Status fields of a claim whose page content changed."""
    values = _claim_values(item.claim)
    quoted = bool(item.quote.strip()) and quote_in(item.quote, old_text)
    old_tokens, new_tokens = _page_tokens(old_text), _page_tokens(new_text)

    if not quoted and (grounds := _may_now_ground(item, old_text, new_text, values)):
        return grounds

    for anchor in _anchors(item, old_text):
        twin = _counterpart(anchor.line, new_text)
        if twin is not None and _values_differ(anchor.line, twin.line, values):
            return {"status": "value-changed", "old": anchor.line.strip(), "new": twin.line.strip(),
                    "note": f"line {anchor.index + 1} now reads as line {twin.index + 1} with other values"}

    quote_gone = quoted and not quote_in(item.quote, new_text)
    vanished = sorted(v for v in values if v in old_tokens and v not in new_tokens)
    if vanished:
        value_line = _value_line(old_text, values, _claim_words(item.claim)) or _first(_anchors(item, old_text))
        twin = _counterpart(value_line.line, new_text) if value_line else None
        # a removed row or paragraph took the quote with it: that is the quote gone, not a new value
        if twin is not None or not quote_gone:
            return {"status": "value-changed", "old": value_line.line.strip() if value_line else None,
                    "new": twin.line.strip() if twin else None,
                    "note": f"no longer on the page: {', '.join(vanished)}"}

    if quote_gone:
        quote_line = _quote_line(old_text, item.quote)
        twin = _counterpart(quote_line.line, new_text) if quote_line else None
        if quote_line is not None and twin is not None and _token_row(quote_line.line) == _token_row(twin.line):
            return {"status": "changed-quote-intact", "old": quote_line.line.strip(), "new": twin.line.strip(),
                    "note": "the quote's line changed only in punctuation or formatting: the same words and values"}
        return {"status": "quote-gone", "old": quote_line.line.strip() if quote_line else None,
                "new": twin.line.strip() if twin else None, "note": "the recorded quote no longer occurs"}

    if formatting_free(old_text) == formatting_free(new_text):
        return {"status": "changed-quote-intact", "note": "the page changed only in its markdown formatting"}
    # a judge quotes the closest line for a claim it does not ground: the page may now state the claim elsewhere
    if quoted and item.verdict != "grounded" and (grounds := _may_now_ground(item, old_text, new_text, values)):
        return grounds
    if quoted and not quote_occurs(item.quote, new_text):
        return {"status": "changed-quote-intact",
                "note": "the quote's line changed only in its markdown formatting (backticks, emphasis, padding)"}
    return {"status": "changed-quote-intact", "note": "the page changed elsewhere"}


def _may_now_ground(item: ClaimEvidence, old_text: str, new_text: str, values: set[str]) -> dict[str, object] | None:
    """`value-changed` when the later page carries the claim's values (or, on one line, more of its subject
    words) where the earlier did not: a verdict that did not rest on them may now ground. Else None."""
    (grounds_now, words_now), now = _support(new_text, item.claim, values)
    (grounded_before, words_before), _ = _support(old_text, item.claim, values)
    if now is None or not ((grounds_now and not grounded_before) or words_now > max(words_before, 1)):
        return None
    said = f"a {item.verdict} verdict" if item.quote.strip() else "a verdict without a quote"
    return {"status": "value-changed", "old": None, "new": now.line.strip(),
            "note": f"the page now carries the claim's value: {said} may now ground"}


def _anchors(item: ClaimEvidence, old_text: str) -> list[Located]:
    """The old page lines the verdict rests on: the quote's line, then the claim's value line."""
    out: list[Located] = []
    quote_line = _quote_line(old_text, item.quote)
    if quote_line is not None:
        out.append(quote_line)
    value_line = _value_line(old_text, _claim_values(item.claim), _claim_words(item.claim))
    if value_line is not None and all(value_line.index != a.index for a in out):
        out.append(value_line)
    return out


# --------------------------------------------------------------------------- the report


def is_at_risk(claim: DriftClaim) -> bool:
    return claim.status in AT_RISK_STATUSES


def unchecked(report: DriftReport) -> list[DriftClaim]:
    """The claims whose later page could not be fetched (not known to be safe)."""
    return [c for c in report.claims if c.status == "unchecked"]


def rerecord_target(run: str, today: str, outside_project: str | None = None) -> tuple[str, str]:
    """(the run folder the suggested re-record writes, one line saying what recording there does).

    Beside the run (`<run>-<today>`), where a project keeps its runs, unless `outside_project` is given
    (a folder outside the project, for a run whose folder the project's own tests watch: the bundled
    demo runs), then `<outside_project>/<run name>-<today>`."""
    parent, name = posixpath.split(run.rstrip("/"))
    if outside_project is None:
        folder = f"{run.rstrip('/')}-{today}"
        return folder, (f"{folder} is a new run folder beside {run}: `diff` may use it as a controlled run of its "
                        "siblings, and a project whose tests snapshot every run needs its snapshot written "
                        "(pytest --snapshot-update)")
    folder = f"{outside_project.rstrip('/')}/{name}-{today}"
    where = parent or "."
    return folder, (f"{folder} is outside the project: a run folder in {where}/ is part of it (`diff` may use it "
                    "as a controlled run of its siblings, tests/test_snapshots.py expects its snapshot); to keep "
                    f"the new run, record it into {where}/ and write its snapshot "
                    "(pytest tests/test_snapshots.py --snapshot-update)")


def drift_report(
    *,
    run: str,
    against: str,
    items: list[ClaimEvidence],
    old_pages: Mapping[str, PageVersion],
    new_pages: Mapping[str, PageVersion],
    recorded_as: RunManifest,
    claims_paths: Mapping[str, str],
    rerecord_run: str,
    rerecord_note: str | None = None,
    endpoints: Endpoints = NO_ENDPOINTS,
) -> DriftReport:
    """Drift of every claim of a run. Pages are keyed by normalised URL (as `Run.pages` is);
    `claims_paths` maps a claims batch's `file` to its claims file path, and `recorded_as` is the run's
    manifest, for the command that re-records the files at risk the way the run was recorded (into
    `rerecord_run`; `rerecord_note` says what that folder is, see `rerecord_target`), at `endpoints`: where
    the later pages came from and the model endpoint the user gave (the run's own where None). The command
    never pins the run's own pages (its `--pages-from`): it is meant to judge the later ones."""
    keys = [normalise_learn_url(item.evidence_url) if item.evidence_url else "" for item in items]
    found: dict[int, DriftClaim] = {}
    for i in sorted(range(len(items)), key=keys.__getitem__):  # page by page (what each page's caches serve)
        found[i] = claim_drift(items[i], old_pages.get(keys[i]) if keys[i] else None,
                               new_pages.get(keys[i]) if keys[i] else None)
    claims = [found[i] for i in range(len(items))]
    at_risk = [{"file": c.file, "id": c.id} for c in claims if is_at_risk(c)]
    files = list(dict.fromkeys(c["file"] for c in at_risk))
    commands = []
    if files:
        paths = [claims_paths.get(f, f"<claims file of {f}>") for f in files]
        commands = [rerecord_command(recorded_as, paths, rerecord_run, endpoints=endpoints, recorded_pages=False),
                    shlex.join(["judge-replay", "diff", run, rerecord_run])]
    return DriftReport(run=run, against=against, claims=claims, at_risk=at_risk, rerecord_commands=commands,
                       rerecord_note=rerecord_note if commands else None, pages=_pages(claims))


def _pages(claims: list[DriftClaim]) -> list[DriftPage]:
    out: dict[str, DriftPage] = {}
    for c in claims:
        if c.evidence_url is None:
            continue
        key = normalise_learn_url(c.evidence_url)
        if key in out:
            out[key].claims += 1
            continue
        state: Literal["unchanged", "changed", "gone", "appeared", "no-page", "unchecked"]
        if c.status in ("no-page", "unchecked"):
            state = c.status
        elif c.old_sha256 == c.new_sha256:
            state = "unchanged"
        elif c.new_sha256 is None:
            state = "gone"
        elif c.old_sha256 is None:
            state = "appeared"
        else:
            state = "changed"
        out[key] = DriftPage(url=c.evidence_url, old_sha256=c.old_sha256, new_sha256=c.new_sha256,
                             state=state, claims=1)
    return sorted(out.values(), key=lambda p: p.url)
