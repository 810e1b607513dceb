"""Text primitives shared by the model stand-in, quote verification and drift: tokens, numbers, quotes."""

from __future__ import annotations

import bisect
import functools
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

_STRIP = ".,;:!?()[]*`"
_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?:\D|$))")


@functools.lru_cache(maxsize=256)
def sha256_text(text: str) -> str:
    """sha256 hex digest of a text's UTF-8 bytes (the last few kept: a run's pages are hashed by every
    conversation that read them)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tokens(text: str) -> list[str]:
    """Tokens: split on white space and `|`, strip punctuation/markdown, lower-case."""
    out = []
    for raw in re.split(r"[\s|]+", text):
        tok = raw.strip(_STRIP).lower()
        if tok:
            out.append(tok)
    return out


def has_digit(token: str) -> bool:
    return any(map(str.isdigit, token))


def without_thousands(token: str) -> str:
    """`1,047,576` -> `1047576`; other commas are kept."""
    return _THOUSANDS.sub("", token)


def parse_number(token: str) -> float | None:
    """A number token as the scoring rules read it (`200k` -> 200000, `1.5M` -> 1500000), else None."""
    m = _NUMBER.match(without_thousands(token))
    if not m:
        return None
    value = float(m.group(1))
    suffix = m.group(2).lower()
    return value * {"": 1, "k": 1_000, "m": 1_000_000}[suffix]


def value_tokens(text: str) -> list[str]:
    """Tokens that carry a value: every token containing a digit, thousands separators removed."""
    return list(_value_tokens(text))


def subject_words(text: str) -> list[str]:
    """The claim's other tokens of four or more letters."""
    return list(_subject_words(text))


@functools.lru_cache(maxsize=16384)
def _value_tokens(text: str) -> tuple[str, ...]:
    return tuple(without_thousands(t) for t in tokens(text) if has_digit(t))


@functools.lru_cache(maxsize=16384)
def _subject_words(text: str) -> tuple[str, ...]:
    return tuple(t for t in tokens(text) if not has_digit(t) and sum(c.isalpha() for c in t) >= 4)


def line_token_set(line: str) -> set[str]:
    """A page line's tokens, compared the same way as a claim's value tokens."""
    return {without_thousands(t) if has_digit(t) else t for t in tokens(line)}


def normalise_ws(text: str) -> str:
    return " ".join(text.split())


@functools.lru_cache(maxsize=64)
def normalised_page(page: str) -> str:
    """`normalise_ws` of a whole page, kept for the pages in use: every claim resting on a page checks
    its quote against the same text."""
    return normalise_ws(page)


@functools.lru_cache(maxsize=64)
def page_lines(page: str) -> tuple[str, ...]:
    """A page's lines (`splitlines`), kept like `normalised_page`."""
    return tuple(page.splitlines())


@functools.lru_cache(maxsize=64)
def normalised_lines(page: str) -> tuple[str, ...]:
    """A page's lines, each whitespace-normalised (kept, like `normalised_page`)."""
    return tuple(normalise_ws(line) for line in page_lines(page))


@functools.lru_cache(maxsize=64)
def joined_lines(page: str) -> tuple[str, list[int]]:
    """(the page's `normalised_lines` joined by line breaks, the offset where each starts): a needle
    with no line break is found in every line at once, each occurrence within one line (`line_at`)."""
    starts, at = [], 0
    for line in normalised_lines(page):
        starts.append(at)
        at += len(line) + 1
    return "\n".join(normalised_lines(page)), starts


def line_counts(index: Mapping[str, Sequence[int]], tokens: Iterable[str]) -> dict[int, int]:
    """How many of the (distinct) `tokens` each line holds, from a page's token -> lines index (lines
    holding none left out): scoring a page's lines for a claim without reading every line."""
    counts: dict[int, int] = {}
    for token in tokens:
        for i in index.get(token, ()):
            counts[i] = counts.get(i, 0) + 1
    return counts


def line_at(starts: list[int], offset: int) -> int:
    """The index of the line holding `offset` of `joined_lines`."""
    return bisect.bisect_right(starts, offset) - 1


def quote_occurs(quote: str, page: str) -> bool:
    """The strict evidence rule, checked mechanically: the quote occurs in the page, whitespace-normalised."""
    q = normalise_ws(quote)
    return bool(q) and q in normalised_page(page)


def short_hash(text: str, n: int = 12) -> str:
    return sha256_text(text)[:n]


@dataclass(frozen=True)
class Located:
    """A line of a page and its index."""

    index: int
    line: str


def find_line(page: str, needle: str) -> Located | None:
    """The first page line that contains the (whitespace-normalised) needle."""
    n = normalise_ws(needle)
    if not n:
        return None
    joined, starts = joined_lines(page)
    at = joined.find(n)
    if at < 0:
        return None
    i = line_at(starts, at)
    return Located(i, page_lines(page)[i])
