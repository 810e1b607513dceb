"""The evidence path of one claim in one run, and the pages two runs read for it compared."""

from __future__ import annotations

from dataclasses import dataclass, field

from replay.core.flips.inputs import Key, PageRead, Result, RunInput
from replay.core.page_diff import region_diff
from replay.core.page_lines import claim_line_pair, formatting_free, quote_in
from replay.core.text import normalise_ws, quote_occurs, subject_words, value_tokens
from replay.schema.claims import AnyClaim
from replay.schema.flip_evidence import PageEvidence, SearchResults, Side
from replay.urls import normalise_learn_url, page_name

# --------------------------------------------------------------------------- the pages a claim rests on


@dataclass
class ClaimTrace:
    """The pages one run's verdict on one claim rests on."""

    recorded: bool
    """The claim's conversation was recorded (its Learn traffic is known)."""
    read: list[str]
    """Normalised URLs fetched for this claim, in first-fetch order."""
    cited: str | None
    """Normalised `evidence_url` of the verdict."""
    searched: list[str]
    """Search queries made for this claim."""
    pages: dict[str, PageRead]
    """Normalised URL -> the version this run holds (from the conversation, else anywhere in the run)."""
    found: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Search query -> the normalised URLs Learn returned for it, in rank order (the last such search)."""

    @property
    def path(self) -> set[str]:
        return set(self.read) | ({self.cited} if self.cited else set())


def _matches_claim(query: str, claim_text: str | None) -> bool:
    if not claim_text:
        return False
    q, c = normalise_ws(query).lower(), normalise_ws(claim_text).lower()
    return bool(q) and (q == c or c in q or q in c)


def claim_trace(run: RunInput, key: Key) -> ClaimTrace:
    """Which pages run's verdict on the claim rests on: the claim's cited URL, the verdict's evidence_url,
    and pages reached through a search for the claim's text."""
    file, _ = key
    claim, result = run.claims.get(key), run.results.get(key)
    conv = run.conversations.get(file)
    wanted: list[str] = []
    for url in (claim.evidence_url if claim else None, result.evidence_url if result else None):
        if url:
            wanted.append(url)
    searched: list[str] = []
    found: dict[str, tuple[str, ...]] = {}
    if conv is not None:
        for search in conv.searches:
            if _matches_claim(search.query, claim.claim if claim else None):
                searched.append(search.query)
                found[search.query] = tuple(normalise_learn_url(u) for u in search.result_urls)
                wanted.extend(u for u in search.result_urls if conv.fetched(u) is not None)
    read: list[str] = []
    pages: dict[str, PageRead] = {}
    for url in wanted:
        k = normalise_learn_url(url)
        got = conv.fetched(url) if conv is not None else None
        if got is not None and k not in read:
            read.append(k)
        page = got or run.pages.get(k)
        if page is not None and k not in pages:
            pages[k] = page
    cited = normalise_learn_url(result.evidence_url) if result and result.evidence_url else None
    return ClaimTrace(conv is not None, read, cited, searched, pages, found)


def searches_changed(ta: ClaimTrace, tb: ClaimTrace) -> dict[str, SearchResults]:
    """The searches both runs made for the claim (the same query) whose results differ: Learn's index
    changed, so the pages available did, even where no page's content changed."""
    return {q: SearchResults(a=list(ta.found[q]), b=list(tb.found[q])) for q in _changed_searches(ta, tb)}


def _changed_searches(ta: ClaimTrace, tb: ClaimTrace) -> list[str]:
    """The queries of `searches_changed`."""
    return [q for q in ta.found if q in tb.found and ta.found[q] != tb.found[q]]


def _version(run: RunInput, trace: ClaimTrace, url: str) -> PageRead | None:
    return trace.pages.get(url) or run.pages.get(url)


def _sha(page: PageRead | None) -> str | None:
    if page is None:
        return None
    return page.sha256 or "missing"


@dataclass
class PageCompare:
    url: str
    a: PageRead | None
    b: PageRead | None

    @property
    def compared(self) -> bool:
        return self.a is not None and self.b is not None

    @property
    def changed(self) -> bool:
        return self.compared and _sha(self.a) != _sha(self.b)


def _compare_pages(a: RunInput, b: RunInput, ta: ClaimTrace, tb: ClaimTrace) -> list[PageCompare]:
    urls = list(dict.fromkeys([*ta.pages, *tb.pages, *ta.read, *tb.read]))
    return [PageCompare(u, _version(a, ta, u), _version(b, tb, u)) for u in urls]


def _rests_unchanged(cmp: PageCompare, ra: Result, rb: Result) -> bool:
    """Whether a changed page kept the text both verdicts rest on: each run's quote occurs in both
    versions (formatting aside), or the versions differ only in their formatting."""
    if not cmp.compared or cmp.a.text is None or cmp.b.text is None:  # type: ignore[union-attr]
        return False
    text_a, text_b = cmp.a.text, cmp.b.text  # type: ignore[union-attr]
    if formatting_free(text_a) == formatting_free(text_b):
        return True
    quotes = [q for q in (ra.evidence_quote, rb.evidence_quote) if q and q.strip()]
    return len(quotes) == 2 and all(quote_in(q, text_a) and quote_in(q, text_b) for q in quotes)


def _page_evidence(
    cmp: PageCompare, ta: ClaimTrace, tb: ClaimTrace, claim: AnyClaim | None, ra: Result | None,
    rb: Result | None, a: RunInput, b: RunInput, *, detail: bool = True, hunks: bool = True,
) -> PageEvidence:
    """What one page says about a claim in the two runs. `detail=False`: only whether and where the page
    changed (`near_claim`, `note`), without the diff's text and the changed line (a verdict that held).
    `hunks=False`: the diff's text left empty (a report that does not show it)."""
    quote_a = ra.evidence_quote if ra else ""
    quote_b = rb.evidence_quote if rb else ""
    sides: tuple[tuple[Side, ClaimTrace], ...] = (("a", ta), ("b", tb))
    ev = PageEvidence(
        url=(cmp.a or cmp.b or cmp).url,
        read_by=[side for side, t in sides if cmp.url in t.read],
        cited_by=[side for side, t in sides if cmp.url == t.cited],
        sha256_a=cmp.a.sha256 if cmp.a else None,
        sha256_b=cmp.b.sha256 if cmp.b else None,
        changed=cmp.changed if cmp.compared else None,
    )
    if cmp.a is None or cmp.b is None:
        ev.note = f"only run {'a' if cmp.a else 'b'} holds this page"
        return ev
    text_a, text_b = cmp.a.text or "", cmp.b.text or ""
    if quote_a and cmp.b.text is not None:
        ev.quote_a_in_b = quote_occurs(quote_a, text_b)
    if quote_b and cmp.a.text is not None:
        ev.quote_b_in_a = quote_occurs(quote_b, text_a)
    if not cmp.changed:
        ev.note = "page unchanged"
        return ev
    if cmp.a.text is None or cmp.b.text is None:
        ev.note = "page could not be retrieved in run " + ("a" if cmp.a.text is None else "b")
        return ev
    claim_text = claim.claim if claim else ""
    name = page_name(ev.url)
    diff = region_diff(
        text_a, text_b, values=value_tokens(claim_text), quotes=[q for q in (quote_a, quote_b) if q],
        subjects=subject_words(claim_text),
        old_label=f"{name} in {a.name} (sha {short_hash_of(cmp.a)})",
        new_label=f"{name} in {b.name} (sha {short_hash_of(cmp.b)})", hunks=detail and hunks,
    )
    ev.diff = diff.unified
    ev.near_claim = diff.near_claim
    if diff.note:
        ev.note = diff.note
    if diff.near_claim and detail:
        b_first = bool(quote_b) and not quote_in(quote_b, text_a)  # B rests on a line A's page lacked: that one
        old_line, new_line = claim_line_pair(text_a, text_b, claim_text, quote_a, quote_b, b_first=b_first)
        if old_line is not None or new_line is not None:
            ev.old_line, ev.new_line = old_line, new_line
    return ev


def short_hash_of(page: PageRead | None) -> str:
    return (page.sha256 or "missing")[:8] if page else "none"


# --------------------------------------------------------------------------- repeats and controlled re-runs


def _same_pages(x: RunInput, tx: ClaimTrace, y: RunInput, ty: ClaimTrace) -> bool:
    """Every page either run rests on for the claim is the same version in both (where both hold it)."""
    urls = set(tx.pages) | set(ty.pages)
    compared = 0
    for u in urls:
        px, py = _version(x, tx, u), _version(y, ty, u)
        if px is None or py is None:
            continue
        compared += 1
        if _sha(px) != _sha(py):
            return False
    if _changed_searches(tx, ty):
        return False
    return compared > 0 or (not urls and tx.recorded and ty.recorded)


def _has_pages_of(x: RunInput, tx: ClaimTrace, y: RunInput, ty: ClaimTrace) -> bool:
    """x's pages for the claim are y's: x was recorded with `--pages-from y`, or its versions equal y's."""
    return (x.pages_from is not None and x.pages_from in y.aliases) or _same_pages(x, tx, y, ty)
