"""Text primitives shared by the model stand-in, quote verification and drift: tokens, numbers, quotes."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_STRIP = ".,;:!?()[]*`"
_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)([kKmM]?)$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?:\D|$))")


def sha256_text(text: str) -> str:
    """sha256 hex digest of a text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tokens(text: str) -> list[str]:
    """SPEC.md tokens: split on white space and `|`, strip punctuation/markdown, lower-case."""
    out = []
    for raw in re.split(r"[\s|]+", text):
        tok = raw.strip(_STRIP).lower()
        if tok:
            out.append(tok)
    return out


def has_digit(token: str) -> bool:
    return any(ch.isdigit() for ch in token)


def without_thousands(token: str) -> str:
    """`1,047,576` -> `1047576`; other commas are kept."""
    return _THOUSANDS.sub("", token)


def parse_number(token: str) -> float | None:
    """A number token as SPEC.md reads it (`200k` -> 200000, `1.5M` -> 1500000), else None."""
    m = _NUMBER.match(without_thousands(token))
    if not m:
        return None
    value = float(m.group(1))
    suffix = m.group(2).lower()
    return value * {"": 1, "k": 1_000, "m": 1_000_000}[suffix]


def value_tokens(text: str) -> list[str]:
    """Tokens that carry a value: every token containing a digit, thousands separators removed."""
    return [without_thousands(t) for t in tokens(text) if has_digit(t)]


def subject_words(text: str) -> list[str]:
    """The claim's other tokens of four or more letters."""
    return [t for t in tokens(text) if not has_digit(t) and sum(c.isalpha() for c in t) >= 4]


def line_token_set(line: str) -> set[str]:
    """A page line's tokens, compared the same way as a claim's value tokens."""
    return {without_thousands(t) if has_digit(t) else t for t in tokens(line)}


def normalise_ws(text: str) -> str:
    return " ".join(text.split())


def quote_occurs(quote: str, page: str) -> bool:
    """The strict evidence rule, checked mechanically: the quote occurs in the page, whitespace-normalised."""
    q = normalise_ws(quote)
    return bool(q) and q in normalise_ws(page)


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
    for i, line in enumerate(page.splitlines()):
        if n in normalise_ws(line):
            return Located(i, line)
    return None
