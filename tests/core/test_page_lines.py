"""The indexed, memoised page matching of drift and diff gives what the plain per-line scans give.

`core.drift` and `core.page_diff` read each page version once per command (token indexes, normalised lines,
counterparts kept per line) and compute difflib ratios only where they can change the answer. The plain
scans they replaced are kept here as the reference, and both are run over every line of the real Learn
page versions in tests/data/learn-pages (before -> after), as the old line, quote and claim.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path

import pytest

from replay.core import drift as _drift
from replay.core import page_lines
from replay.core import page_diff as _page_diff
from replay.core.text import Located, line_token_set, normalise_ws, subject_words, value_tokens
from locations import DATA

PAGES = DATA / "learn-pages"
NAMES = sorted(p.name for p in (PAGES / "before").glob("*.md"))


def _texts(name: str) -> tuple[str, str]:
    return (PAGES / "before" / name).read_text("utf-8"), (PAGES / "after" / name).read_text("utf-8")


# --------------------------------------------------------------------------- the reference scans


def ref_lines(text: str) -> list[Located]:
    return list(_ref_lines(text))


@functools.cache
def _ref_lines(text: str) -> tuple[Located, ...]:
    """A page's non-blank lines, read once per page (every line of a page is checked against the others)."""
    return tuple(Located(i, line) for i, line in enumerate(text.splitlines()) if line.strip())


@functools.cache
def _ref_rows(text: str) -> tuple[frozenset[str], tuple[tuple[Located, list[str] | None, tuple[str, ...]], ...]]:
    """A page read once for `ref_counterpart`: its lines' normalised texts, and each line with its table cells
    (None: not a row) and its row key."""
    lines = _ref_lines(text)
    cells = [page_lines._cells(n.line) for n in lines]
    return (frozenset(normalise_ws(n.line) for n in lines),
            tuple((n, c, page_lines._row_key(c) if c is not None else ()) for n, c in zip(lines, cells)))


def ref_ratio(a: str, b: str, floor: float = page_lines._SIMILAR) -> float:
    matcher = difflib.SequenceMatcher(None, normalise_ws(a), normalise_ws(b), autojunk=False)
    if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
        return 0.0
    ratio = matcher.ratio()
    return ratio if ratio >= floor else 0.0


def ref_renamed_key(old: tuple[str, ...], new: tuple[str, ...]) -> bool:
    if not old or not new:
        return False
    a, b = " ".join(old), " ".join(new)
    if [ch for ch in a if ch.isdigit()] != [ch for ch in b if ch.isdigit()]:
        return False
    return bool(ref_ratio(a, b, floor=page_lines._SIMILAR_KEY))


def ref_counterpart(line: str, new_text: str) -> Located | None:
    new_lines = ref_lines(new_text)
    wanted = normalise_ws(line)
    normalised, read = _ref_rows(new_text)
    if wanted in normalised:
        return next(n for n in new_lines if normalise_ws(n.line) == wanted)
    cells = page_lines._cells(line)
    if cells is not None:
        key = page_lines._row_key(cells)
        rows = [(n, c, k) for n, c, k in read if c is not None]
        same_key = [(n, c) for n, c, k in rows if key and k == key]
        if len(cells) > 1 and page_lines._is_version(cells[1]) and len(same_key) > 1:  # one row per version
            same_key = [(n, c) for n, c in same_key if cells[1] in c]
            if not same_key:
                return None
        if same_key:
            return max(same_key, key=lambda nc: (page_lines._equal_cells(cells, nc[1]), ref_ratio(line, nc[0].line)))[0]
        candidates = [n for n, c, k in rows if ref_renamed_key(key, k)]
    else:
        candidates = [n for n, c, _ in read if c is None]
    words = set(subject_words(line))
    best, best_score = None, (0, 0.0)
    for cand in candidates:
        ratio = ref_ratio(line, cand.line)
        if not ratio:
            continue
        score = (len(words & set(subject_words(cand.line))), ratio)
        if score > best_score:
            best, best_score = cand, score
    return best


@functools.cache
def ref_token_lines(text: str) -> tuple[tuple[Located, frozenset[str]], ...]:
    """Each non-blank line of a page with its tokens, read once per page."""
    return tuple((line, page_lines._tokset(line.line)) for line in _ref_lines(text))


def ref_value_line(text: str, values: set[str], words: set[str]) -> Located | None:
    best, best_score = None, (0, 0)
    for line, toks in ref_token_lines(text):
        score = (len(values & toks), len(words & toks))
        if score[0] and score > best_score:
            best, best_score = line, score
    return best


def ref_support(text: str, claim: str, values: set[str]) -> tuple[tuple[bool, int], Located | None]:
    words = page_lines._claim_words(claim)
    lines = ref_token_lines(text)
    if not values:
        line = next((line for line, toks in lines if words and words <= toks), None)
        return (line is not None, 0), line
    best, best_count = None, -1
    for line, toks in lines:
        if values <= toks and len(words & toks) > best_count:
            best, best_count = line, len(words & toks)
    grounds = values <= page_lines._page_tokens(text)
    return (grounds, best_count), best or (ref_value_line(text, values, words) if grounds else None)


@functools.cache
def ref_page(text: str) -> tuple[list[set[str]], list[str]]:
    """Each line's tokens and normalised text (the reference reads them once per page too, to be quick)."""
    return [line_token_set(line) for line in text.splitlines()], [normalise_ws(line) for line in text.splitlines()]


def ref_focus_lines(text: str, values: list[str], quotes: list[str], subjects: list[str]) -> set[int]:
    sets, normalised = ref_page(text)
    value_set, subject_set = set(values), set(subjects)
    by_value = [len(value_set & t) for t in sets]
    by_subject = [len(subject_set & t) for t in sets]
    hits: set[int] = set()
    best = max(by_value, default=0)
    if best:
        tied = [i for i, s in enumerate(by_value) if s == best]
        top = max(by_subject[i] for i in tied)
        hits |= {i for i in tied if by_subject[i] == top}
    else:
        top = max(by_subject, default=0)
        if top >= 2:
            hits |= {i for i, s in enumerate(by_subject) if s == top}
    for quote in quotes:
        q = normalise_ws(quote)
        if q:
            hits |= {i for i, n in enumerate(normalised) if n and (q in n or (len(n) >= 20 and n in q))}
    return hits


# --------------------------------------------------------------------------- the comparisons


@pytest.mark.parametrize("name", NAMES)
def test_counterparts_are_the_ones_a_full_scan_finds(name):
    old, new = _texts(name)
    changed = [line for line in ref_lines(old) if normalise_ws(line.line) not in {normalise_ws(n) for n in new.splitlines()}]
    assert changed, "the corpus page changed, so some lines have no exact twin"
    for line in ref_lines(old):
        assert page_lines._counterpart(line.line, new) == ref_counterpart(line.line, new), line.line
    for line in ref_lines(new)[::3]:  # the other way round (claim_line_pair looks back from B's quote)
        assert page_lines._counterpart(line.line, old) == ref_counterpart(line.line, old), line.line


@pytest.mark.parametrize("name", NAMES)
def test_value_lines_and_support_are_the_ones_a_full_scan_finds(name):
    old, new = _texts(name)
    for line in ref_lines(old):
        claim = line.line
        values, words = page_lines._claim_values(claim), page_lines._claim_words(claim)
        for text in (old, new):
            assert page_lines._value_line(text, values, words) == ref_value_line(text, values, words), claim
            assert page_lines._support(text, claim, values) == ref_support(text, claim, values), claim
            few = set(sorted(values)[:1])  # one value of the line: ties between lines decide
            assert page_lines._value_line(text, few, words) == ref_value_line(text, few, words), claim
            assert page_lines._support(text, claim, set()) == ref_support(text, claim, set()), claim


@pytest.mark.parametrize("name", NAMES)
def test_focus_lines_are_the_ones_a_full_scan_finds(name):
    old, new = _texts(name)
    for line in ref_lines(old):
        claim = line.line
        values, subjects = value_tokens(claim), subject_words(claim)
        half = normalise_ws(claim)[: max(1, len(normalise_ws(claim)) // 2)]
        spanning = "\n".join(n.line for n in ref_lines(old)[line.index % 7: line.index % 7 + 2])
        for quotes in ([], [claim], [half], [spanning], [half, "no such words on the page"]):
            for text in (old, new):
                assert _page_diff.focus_lines(text, values, quotes, subjects) == \
                    ref_focus_lines(text, values, quotes, subjects), (claim, quotes)
