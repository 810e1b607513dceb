"""Lines of a page matched across versions: a quote's or a value's line, and its counterpart in the later page."""

from __future__ import annotations

import difflib
import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from replay.core.text import (
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

_SIMILAR = 0.6
"""Least difflib ratio for a line to count as the edited form of another."""
_SIMILAR_KEY = 0.8
"""Least difflib ratio between row keys for a table row to count as a renamed form of another."""


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
