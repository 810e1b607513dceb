"""The adjudication report: each judge-vs-gold disagreement with the recorded page region it rests on."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from replay.core.grading import NO_RESULT, ClaimKey
from replay.core.text import line_token_set, normalise_ws, parse_number, quote_occurs, value_tokens
from replay.runs.folder import Run
from replay.schema.claims import AnyClaim, ClaimRow
from replay.schema.scores import ClaimError, Scores
from replay.secrets.excerpts import excerpt

CONTEXT_LINES = 3
"""Lines shown before and after the anchor line of a page region."""
_MAX_LINE = 240


# --------------------------------------------------------------------------- claims of a run


def run_claims(run: Run) -> dict[ClaimKey, AnyClaim]:
    """Every claim a run judged (`Run.all_claims`), held compact (`ClaimRow`): each claims file's read, kept
    compact and let go of in turn."""
    claims: dict[ClaimKey, AnyClaim] = {}
    for entry in run.manifest.claims:
        for claim in run.claims(entry.file) or []:
            claims[(entry.file, claim.id)] = ClaimRow.of(claim)
        run.forget_claims()
    return claims


# --------------------------------------------------------------------------- page regions


@functools.lru_cache(maxsize=64)
def _line_values(page: str) -> tuple[tuple[frozenset[str], frozenset[float]], ...]:
    """Each line of a page as (its tokens, the numbers among them): worked out once per page version, as
    many claims rest on the same page."""
    out = []
    for line in page.splitlines():
        toks = frozenset(line_token_set(line))
        out.append((toks, frozenset(n for t in toks if (n := parse_number(t)) is not None)))
    return tuple(out)


def _value_anchor(page: str, claim: str) -> int | None:
    """The page line holding the most of the claim's value tokens (`200k` also matches `200,000`)."""
    wanted = [(t, parse_number(t)) for t in {v.rstrip("+") for v in value_tokens(claim)}]
    best, best_hits = None, 0
    for i, (toks, numbers) in enumerate(_line_values(page)):
        hits = sum(1 for tok, num in wanted if tok in toks or (num is not None and num in numbers))
        if hits > best_hits:
            best, best_hits = i, hits
    return best


def _quote_span(lines: list[str], quote: str) -> tuple[int, int] | None:
    """First and last page line of the quote (a quote may run over several lines of the page)."""
    q = normalise_ws(quote)
    if not q:
        return None
    for i, line in enumerate(lines):
        if q in normalise_ws(line):
            return i, i
    quote_lines = [normalise_ws(part) for part in quote.splitlines() if part.strip()]
    hits = [i for i, line in enumerate(lines)
            if any(ql and ql in normalise_ws(line) for ql in quote_lines[:1] + quote_lines[-1:])]
    return (hits[0], hits[-1]) if hits else None


def _excerpt(lines: list[str], first: int, last: int, context: int) -> str:
    lo, hi = max(0, first - context), min(len(lines), last + context + 1)
    out = []
    for i in range(lo, hi):
        line = excerpt(lines[i], _MAX_LINE)
        mark = ">" if first <= i <= last else " "
        out.append(f"{mark}{i + 1:>5} | {line}".rstrip())
    return "\n".join(out)


def page_region(
    page: str, quote: str, claim: str | None, context: int = CONTEXT_LINES
) -> tuple[str | None, str, bool | None]:
    """(region, what it is centred on, whether the quote occurs in the page) for one recorded page.

    The region is a few numbered lines around the quote; when the quote is not in the page, around the
    line holding most of the claim's value tokens. Anchor lines are marked `>`.
    """
    lines = page.splitlines()
    found = quote_occurs(quote, page) if quote.strip() else None
    span = _quote_span(lines, quote) if found else None
    if span is not None:
        return _excerpt(lines, *span, context), f"around the quote (line {span[0] + 1})", found
    anchor = _value_anchor(page, claim) if claim else None
    lead = "the quote is not in the recorded page; " if found is False else ""
    if anchor is not None:
        return (_excerpt(lines, anchor, anchor, context),
                f"{lead}around the claim's values (line {anchor + 1})", found)
    what = "the claim's values do not occur in it either" if claim and value_tokens(claim) else (
        "the claim carries no value to look for" if claim else "the claim text is not known")
    return None, f"{lead}{what}", found


def _page_url(error: ClaimError, claim: AnyClaim | None) -> str | None:
    return error.evidence_url or (claim.evidence_url if claim else None) or None


def attach_page_region(error: ClaimError, run: Run | None, claim: AnyClaim | None = None) -> ClaimError:
    """A copy of `error` with the recorded page region (from the run's cassettes) and whether the quote
    occurs in that page; `page_note` says why there is no region when there is none."""
    url = _page_url(error, claim)
    text = error.claim or (claim.claim if claim else None)
    update: dict[str, Any] = {"page_url": url, "claim": text}
    if run is None:
        update["page_note"] = "no recorded pages: the results are not a run folder (give --run RUN)"
    elif url is None:
        update["page_note"] = "the judge cited no page and the claim names none"
    elif (page := run.page(url)) is None:
        update["page_note"] = f"run {run.name} recorded no fetch of this page"
    elif page.text is None:
        update["page_note"] = "the page could not be retrieved when the run was recorded"
    else:
        region, note, found = page_region(page.text, error.evidence_quote, text)
        update.update(page_region=region, page_note=note, quote_in_page=found)
    return error.model_copy(update=update)


def adjudicate(scores: Scores, run: Run | None, claims: Mapping[ClaimKey, AnyClaim] | None = None) -> Scores:
    """The scores with every error carrying its page region (reads cassettes, never calls the judge)."""
    claims = claims or {}
    errors = [attach_page_region(e, run, claims.get((e.file, e.id))) for e in scores.errors]
    return scores.model_copy(update={"errors": errors})


def with_a_result(errors: list[ClaimError]) -> list[ClaimError]:
    """The disagreements the results say something of (a verdict, a quote, an error of the claim or of its
    file): the ones a panel or section adjudicates. A gold claim they say nothing of is named only in the
    list of claims without a verdict (a gold set for a whole knowledge base graded against a run of part
    of it has thousands, each with nothing to show)."""
    return [e for e in errors if not (e.kind == "no_verdict" and e.judge_error == NO_RESULT)]


def without_a_result_note(errors: list[ClaimError]) -> str | None:
    """What the adjudication leaves out (`with_a_result`), said after it; None when nothing."""
    left = len(errors) - len(with_a_result(errors))
    return (f"({left:,} of them: gold claims the results do not hold, listed above, with nothing more to show)"
            if left else None)
