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

import difflib
import functools
import posixpath
import re
import shlex
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._commands import rerecord_command
from ._mcp import normalise_learn_url
from ._records import DriftClaim, DriftPage, DriftReport, RunManifest, Verdict
from ._runs import PageVersion
from ._text import (
    Located,
    find_line,
    has_digit,
    line_counts,
    line_token_set,
    normalise_ws,
    page_lines,
    parse_number,
    quote_occurs,
    subject_words,
    tokens,
    value_tokens,
)

AT_RISK_STATUSES = frozenset({"page-gone", "value-changed", "quote-gone"})
STATUS_ORDER = ("page-gone", "value-changed", "quote-gone", "unchecked", "changed-quote-intact", "no-page",
                "unchanged")
"""Statuses by precedence (and the order reports group them in)."""
_SIMILAR = 0.6
"""Least difflib ratio for a line to count as the edited form of another."""
_SIMILAR_KEY = 0.8
"""Least difflib ratio between row keys for a table row to count as a renamed form of another."""


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


_EMPHASIS = re.compile(r"\*+|(?<![0-9A-Za-z])_+|_+(?![0-9A-Za-z])|~~")
_CELL_EDGE = re.compile(r"\s*\|\s*")


@functools.lru_cache(maxsize=256)
def formatting_free(text: str) -> str:
    """Text as it reads, without its markdown formatting: no backticks, no emphasis markers (`*`, `**`,
    `_` at a word's edge, `~~`), no padding around table cell bars, whitespace collapsed. Two versions of
    a line equal under it differ in formatting only."""
    text = _EMPHASIS.sub("", text.replace("`", ""))
    return normalise_ws(_CELL_EDGE.sub("|", text))


def quote_in(quote: str, page: str) -> bool:
    """The quote occurs in the page, formatting aside (see `formatting_free`)."""
    return quote_occurs(quote, page) or quote_occurs(formatting_free(quote), formatting_free(page))


def claim_line_pair(old_text: str, new_text: str, claim: str | None, quote_a: str = "",
                    quote_b: str = "", *, b_first: bool = False) -> tuple[str | None, str | None]:
    """The changed line a claim rests on and its counterpart, as (old page line, new page line); None on
    one side for a line removed or added, (None, None) when none of those lines changed. Tried in order:
    the line of A's quote in the old page, of B's quote in the new page (first with `b_first`: B's
    verdict rests on a line the old page lacks), then of the claim's values in each."""
    exact_old, exact_new = _exact_lines(old_text), _exact_lines(new_text)
    values, words = _claim_values(claim), _claim_words(claim)
    quoted = [(False, _quote_line(old_text, quote_a)), (True, _quote_line(new_text, quote_b))]
    tries = [
        *(quoted[::-1] if b_first else quoted),
        (False, _value_line(old_text, values, words)), (True, _value_line(new_text, values, words)),
    ]
    for in_new, line in tries:
        if line is None or normalise_ws(line.line) in (exact_old if in_new else exact_new):
            continue
        twin = _counterpart(line.line, old_text if in_new else new_text)
        found, other = line.line.strip(), twin.line.strip() if twin else None
        return (other, found) if in_new else (found, other)
    return None, None


# --------------------------------------------------------------------------- lines and tokens


def _canon(token: str) -> str:
    """A token compared as `line_token_set` does, with numbers in one spelling (`200k` == `200,000`)."""
    number = parse_number(token)
    if number is None:
        return token
    return str(int(number)) if number == int(number) else repr(number)


_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")


@functools.lru_cache(maxsize=8192)
def _tokset(text: str) -> frozenset[str]:
    """A line's tokens, with HTML tags read as the breaks they render as (`400,000<br>Input` holds
    `400000`, `requests<sup>1</sup>` holds `requests`). Cached: every claim on a page reads its lines."""
    return frozenset(_canon(t) for t in line_token_set(_HTML_TAG.sub(" ", text)))


def _token_row(line: str) -> tuple[str, ...]:
    """A line's tokens in order, as `_tokset` reads them: two lines equal under it say the same words and
    values in the same order, whatever their punctuation, list markers or thousands separators."""
    return tuple(_canon(t) for t in tokens(_HTML_TAG.sub(" ", line)) if t not in _LIST_MARKERS)


_LIST_MARKERS = frozenset({"-", "+", "•", "–"})
"""Tokens that only mark a list item (`*` is stripped as emphasis)."""


def _digits(text: str) -> set[str]:
    return {t for t in _tokset(text) if has_digit(t)}


def _claim_values(claim: str | None) -> set[str]:
    """The claim's value tokens; a lower bound (`200k+`) stands for its number."""
    if not claim:
        return set()
    return {_canon(v.rstrip("+")) for v in value_tokens(claim) if v.rstrip("+")}


def _claim_words(claim: str | None) -> set[str]:
    return set(subject_words(claim or ""))


@functools.lru_cache(maxsize=32)
def _lines(text: str) -> tuple[Located, ...]:
    """A page's non-blank lines (cached: each page version is split once per command, not per claim)."""
    return tuple(Located(i, line) for i, line in enumerate(page_lines(text)) if line.strip())


@functools.lru_cache(maxsize=32)
def _exact_lines(text: str) -> frozenset[str]:
    """A page's lines, whitespace-normalised."""
    return frozenset(normalise_ws(line.line) for line in _lines(text))


@functools.lru_cache(maxsize=32)
def _page_tokens(text: str) -> frozenset[str]:
    """Every token of a page."""
    return frozenset(t for line in _lines(text) for t in _tokset(line.line))


def _cells(line: str) -> list[str] | None:
    """The cells of a markdown table row, or None when the line is not one."""
    stripped = line.strip()
    if not stripped.startswith("|") or stripped.count("|") < 2:
        return None
    inner = stripped[1:-1] if stripped.endswith("|") else stripped[1:]
    return [cell.strip() for cell in inner.split("|")]


def _row_key(cells: list[str]) -> tuple[str, ...]:
    """What names a table row: its first cell up to any line break (labels under it come and go)."""
    return tuple(tokens(re.split(r"<br\s*/?>", cells[0], maxsplit=1)[0])) if cells else ()


def _first(lines: list[Located]) -> Located | None:
    return lines[0] if lines else None


# --------------------------------------------------------------------------- anchors and counterparts


def _quote_line(old_text: str, quote: str) -> Located | None:
    """The old page line holding the quote (for a quote over several lines: its longest line)."""
    if not quote.strip():
        return None
    found = find_line(old_text, quote)
    if found is None:
        for part in sorted((p for p in quote.splitlines() if p.strip()), key=len, reverse=True):
            found = find_line(old_text, part)
            if found is not None:
                break
    return found


def _value_line(text: str, values: set[str], words: set[str]) -> Located | None:
    """The line of a page carrying most of the claim's value tokens, then most of its subject words
    (first on a tie: `1` is on many lines, `1 K` for Azure for Students on one), if any carries a value.
    Only the lines holding a value are looked at (`_line_index`)."""
    lines, index = _lines(text), _line_index(text)
    by_value = line_counts(index, values)
    if not by_value:
        return None
    by_word = line_counts(index, words)
    best = min(by_value, key=lambda i: (-by_value[i], -by_word.get(i, 0), i))
    return lines[best]


@functools.lru_cache(maxsize=32)
def _line_index(text: str) -> dict[str, tuple[int, ...]]:
    """Token -> the positions in `_lines(text)` of the lines holding it (`_tokset`), once per page."""
    index: dict[str, list[int]] = {}
    for i, line in enumerate(_lines(text)):
        for token in _tokset(line.line):
            index.setdefault(token, []).append(i)
    return {token: tuple(at) for token, at in index.items()}


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


@dataclass(frozen=True)
class _PageLines:
    """A page version's lines, read once per command: what every counterpart look-up on it needs."""

    by_text: dict[str, Located]
    """Whitespace-normalised line -> the first line reading so."""
    rows: tuple[tuple[Located, list[str], tuple[str, ...]], ...]
    """Table rows: (line, cells, row key)."""
    prose: tuple[Located, ...]
    """Lines that are not table rows."""
    counterparts: dict[str, Located | None]
    """Lines of another version already matched to this one (many claims rest on the same line)."""


@functools.lru_cache(maxsize=32)
def _page_lines(text: str) -> _PageLines:
    by_text: dict[str, Located] = {}
    rows, prose = [], []
    for line in _lines(text):
        by_text.setdefault(normalise_ws(line.line), line)
        cells = _cells(line.line)
        if cells is None:
            prose.append(line)
        else:
            rows.append((line, cells, _row_key(cells)))
    return _PageLines(by_text, tuple(rows), tuple(prose), {})


def _counterpart(line: str, new_text: str) -> Located | None:
    """The new page's version of an old line: itself, the row with the same key, or the closest line."""
    page = _page_lines(new_text)
    if line not in page.counterparts:
        page.counterparts[line] = _find_counterpart(line, page)
    return page.counterparts[line]


def _find_counterpart(line: str, page: _PageLines) -> Located | None:
    same = page.by_text.get(normalise_ws(line))
    if same is not None:
        return same
    cells = _cells(line)
    if cells is not None:
        key = _row_key(cells)
        same_key = [(n, c) for n, c, k in page.rows if key and k == key]
        version = cells[1] if len(cells) > 1 and _is_version(cells[1]) else None
        if version is not None and len(same_key) > 1:  # rows of one model, one per version: the version is the key
            same_key = [(n, c) for n, c in same_key if version in c]
            if not same_key:
                return None  # that version's row is gone, whatever the other versions' rows say
        if same_key:
            # the row sharing most cells, then the most alike (the first on a tie); ratios only for the first
            equal = [_equal_cells(cells, c) for _, c in same_key]
            tied = [n for (n, _), e in zip(same_key, equal) if e == max(equal)]
            return tied[0] if len(tied) == 1 else max(tied, key=lambda n: _ratio(line, n.line))
        candidates: Sequence[Located] = [n for n, _, k in page.rows if _renamed_key(key, k)]
    else:
        candidates = page.prose
    return _closest(line, candidates)


def _is_version(cell: str) -> bool:
    """A cell naming a version: one word with a digit (`2024-10-01`, `turbo-2024-04-09`, `0613`)."""
    word = cell.strip().strip("`")
    return bool(word) and not any(c.isspace() for c in word) and has_digit(word)


def _closest(line: str, candidates: Sequence[Located]) -> Located | None:
    """The candidate sharing most subject words with `line` among those alike enough (`_SIMILAR`), the
    most alike among those, the first on a tie. Candidates sharing fewer words are looked at only when
    none of those sharing more is alike enough."""
    words = _line_words(line)
    by_shared: dict[int, list[Located]] = {}
    for cand in candidates:
        by_shared.setdefault(len(words & _line_words(cand.line)), []).append(cand)
    for shared in sorted(by_shared, reverse=True):
        best = _most_alike(line, by_shared[shared])
        if best is not None:
            return best
    return None


def _most_alike(line: str, candidates: Sequence[Located]) -> Located | None:
    """The first of the candidates with the highest difflib ratio to `line`, if any reaches `_SIMILAR`.
    The full ratio (the costly part) is computed in order of its upper bound (difflib's `quick_ratio`,
    from character counts kept per line) and no more once the bound falls below the best ratio found:
    the answer is the one comparing every candidate gives."""
    wanted = normalise_ws(line)
    bounded: list[tuple[float, int, str]] = []
    for i, cand in enumerate(candidates):
        other = normalise_ws(cand.line)
        length = len(wanted) + len(other)
        if _as_ratio(min(len(wanted), len(other)), length) < _SIMILAR:  # difflib's real_quick_ratio
            continue
        bound = _as_ratio(sum((_char_counts(wanted) & _char_counts(other)).values()), length)
        if bound >= _SIMILAR:
            bounded.append((bound, i, other))
    bounded.sort(key=lambda b: (-b[0], b[1]))
    best, best_ratio = -1, 0.0
    for bound, i, other in bounded:
        if bound < best_ratio:
            break
        ratio = difflib.SequenceMatcher(None, wanted, other, autojunk=False).ratio()
        if ratio >= _SIMILAR and (ratio > best_ratio or (ratio == best_ratio and i < best)):
            best, best_ratio = i, ratio
    return candidates[best] if best >= 0 else None


def _as_ratio(matches: int, length: int) -> float:
    """difflib's ratio of `matches` in sequences of `length` elements together."""
    return 2.0 * matches / length if length else 1.0


@functools.lru_cache(maxsize=8192)
def _char_counts(text: str) -> Counter[str]:
    return Counter(text)


@functools.lru_cache(maxsize=8192)
def _line_words(line: str) -> frozenset[str]:
    return frozenset(subject_words(line))


@functools.lru_cache(maxsize=65536)
def _renamed_key(old: tuple[str, ...], new: tuple[str, ...]) -> bool:
    """Whether a row key reads as a renamed form of another (`dall-e-3` -> `dalle-3`, `Max ...` ->
    `Maximum ...`): much alike, and the same digits in the same order, since `gpt-5.1` and `gpt-5.2`, or
    versions `0613` and `1106`, are two rows, not one edited."""
    if not old or not new:
        return False
    a, b = " ".join(old), " ".join(new)
    if [ch for ch in a if ch.isdigit()] != [ch for ch in b if ch.isdigit()]:
        return False
    return bool(_ratio(a, b, floor=_SIMILAR_KEY))


@functools.lru_cache(maxsize=65536)
def _ratio(a: str, b: str, floor: float = _SIMILAR) -> float:
    """difflib's similarity of two lines, or 0 when it is below `floor`."""
    matcher = difflib.SequenceMatcher(None, normalise_ws(a), normalise_ws(b), autojunk=False)
    if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
        return 0.0
    ratio = matcher.ratio()
    return ratio if ratio >= floor else 0.0


def _equal_cells(a: list[str], b: list[str]) -> int:
    return sum(1 for x, y in zip(a, b) if tokens(x) == tokens(y))


def _values_differ(old_line: str, new_line: str, values: set[str]) -> bool:
    """Whether the new line carries other values where the old one carried the claim's."""
    old_cells, new_cells = _cells(old_line), _cells(new_line)
    if old_cells is None or new_cells is None:
        return _digits(old_line) != _digits(new_line)
    holding = [i for i in range(1, len(old_cells)) if values & _tokset(old_cells[i])]
    for i in holding or range(1, max(len(old_cells), len(new_cells))):
        before = _digits(old_cells[i]) if i < len(old_cells) else set()
        after = _digits(new_cells[i]) if i < len(new_cells) else set()
        if before != after:
            return True
    return False


def _support(text: str, claim: str | None, values: set[str]) -> tuple[tuple[bool, int], Located | None]:
    """How well a page would ground a claim that has no quote: ((whether it grounds as the judge policy
    reads it, the most subject words on one line carrying every value), the line that best grounds it).
    The policy grounds a claim when every value token occurs anywhere in the page (or, with no value,
    when one line carries every subject word); the line count catches the row that now states the
    claim's fact when its values (`2`) were on the page all along."""
    words = _claim_words(claim)
    lines, index = _lines(text), _line_index(text)
    if not values:
        by_word = line_counts(index, words)
        every = [i for i, n in by_word.items() if n == len(words)]
        line = lines[min(every)] if every else None
        return (line is not None, 0), line
    by_value, by_word = line_counts(index, values), line_counts(index, words)
    holding = [i for i, n in by_value.items() if n == len(values)]
    best: Located | None = None
    best_count = -1
    if holding:
        top = min(holding, key=lambda i: (-by_word.get(i, 0), i))
        best, best_count = lines[top], by_word.get(top, 0)
    grounds = values <= _page_tokens(text)
    return (grounds, best_count), best or (_value_line(text, values, words) if grounds else None)


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
) -> DriftReport:
    """Drift of every claim of a run. Pages are keyed by normalised URL (as `Run.pages` is);
    `claims_paths` maps a claims batch's `file` to its claims file path, and `recorded_as` is the run's
    manifest, for the command that re-records the files at risk the way the run was recorded (into
    `rerecord_run`; `rerecord_note` says what that folder is, see `rerecord_target`)."""
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
        commands = [rerecord_command(recorded_as, paths, rerecord_run),
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
