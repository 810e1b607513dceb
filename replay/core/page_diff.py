"""The changed region of a page around a claim's values and quotes: a unified diff of just those hunks (pure)."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from replay.core.text import (
    joined_lines,
    line_at,
    line_counts,
    line_token_set,
    normalise_ws,
    normalised_lines,
    page_lines,
    parse_number,
)

CONTEXT_LINES = 2
UNCHANGED = "page unchanged"
ELSEWHERE = "page changed elsewhere"
NOT_ON_PAGE = "page changed elsewhere (neither version carries the claim's values or either quote)"


@dataclass(frozen=True)
class RegionDiff:
    """How one page changed where a claim rests on it."""

    changed: bool
    """The two versions differ at all."""
    near_claim: bool
    """A changed hunk touches a line carrying the claim's values or one of the quotes."""
    unified: str
    """Unified diff of the hunks that touch those lines (empty when none does)."""
    note: str
    """`page unchanged`, `page changed elsewhere`, ... ; empty when the diff says it all."""


@functools.lru_cache(maxsize=4096)
def _quote_lines(text: str, quote: str) -> frozenset[int]:
    """Lines of the page that hold the quote (whitespace-normalised), or (for a quote spanning lines)
    lines of 20 characters or more that the quote holds. Kept: the claims resting on one line of a page
    tend to quote that line."""
    q = normalise_ws(quote)
    if not q:
        return frozenset()
    joined, starts = joined_lines(text)
    hits = set()
    at = joined.find(q)
    while at >= 0:
        hits.add(line_at(starts, at))
        at = joined.find(q, at + 1)
    by_start = _long_lines(text)
    for at in range(len(q) - _LONG + 1):
        for i, line in by_start.get(q[at:at + _LONG], ()):
            if q.startswith(line, at):
                hits.add(i)
    return frozenset(hits)


_LONG = 20
"""Shortest line a quote spanning lines is taken to hold (shorter ones are too common to count)."""


@functools.lru_cache(maxsize=64)
def _long_lines(text: str) -> dict[str, list[tuple[int, str]]]:
    """The page's normalised lines of `_LONG` characters or more, by their first `_LONG` characters."""
    out: dict[str, list[tuple[int, str]]] = {}
    for i, line in enumerate(normalised_lines(text)):
        if len(line) >= _LONG:
            out.setdefault(line[:_LONG], []).append((i, line))
    return out


@functools.lru_cache(maxsize=64)
def _token_sets(text: str) -> tuple[frozenset[str], ...]:
    """Each line's tokens (`line_token_set`), once per page: every claim resting on a page scores the
    same lines."""
    return tuple(frozenset(line_token_set(line)) for line in page_lines(text))


@functools.lru_cache(maxsize=64)
def _token_index(text: str) -> dict[str, tuple[int, ...]]:
    """Token -> the lines holding it, once per page."""
    index: dict[str, list[int]] = {}
    for i, tokens in enumerate(_token_sets(text)):
        for token in tokens:
            index.setdefault(token, []).append(i)
    return {token: tuple(at) for token, at in index.items()}


def focus_lines(text: str, values: Sequence[str], quotes: Sequence[str], subjects: Sequence[str] = ()) -> set[int]:
    """The lines of a page a claim rests on: those carrying most of its value tokens (ties broken by its
    subject words; with no value on the page, the lines sharing most, and at least two, subject words),
    and those holding a quote."""
    hits: set[int] = set()
    by_value = line_counts(_token_index(text), set(values))
    best = max(by_value.values(), default=0)
    if best:
        tied = [i for i, s in by_value.items() if s == best]
        wanted, sets = set(subjects), _token_sets(text)
        by_subject = {i: len(wanted & sets[i]) for i in tied}
        top = max(by_subject.values())
        hits |= {i for i in tied if by_subject[i] == top}
    else:
        by_subject = line_counts(_token_index(text), set(subjects))
        top = max(by_subject.values(), default=0)
        if top >= 2:
            hits |= {i for i, s in by_subject.items() if s == top}
    for quote in quotes:
        hits |= _quote_lines(text, quote)
    return hits


@functools.lru_cache(maxsize=64)
def _opcodes(old: str, new: str) -> tuple[tuple[str, int, int, int, int], ...]:
    """Line opcodes of old -> new; cached because every claim resting on a page diffs the same pair."""
    matcher = difflib.SequenceMatcher(None, page_lines(old), page_lines(new), autojunk=False)
    return tuple(matcher.get_opcodes())


@functools.lru_cache(maxsize=64)
def _changed_ops(old: str, new: str) -> tuple[dict[int, int], dict[int, int]]:
    """For each side, line -> the index (in `_opcodes`) of the change that line is in, for the lines
    inside a change: which changes a claim's lines touch, looked up by line instead of searched for."""
    in_old: dict[int, int] = {}
    in_new: dict[int, int] = {}
    for k, (tag, i1, i2, j1, j2) in enumerate(_opcodes(old, new)):
        if tag != "equal":
            in_old.update(dict.fromkeys(range(i1, i2), k))
            in_new.update(dict.fromkeys(range(j1, j2), k))
    return in_old, in_new


def _range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def region_diff(
    old: str,
    new: str,
    *,
    values: Sequence[str],
    quotes: Sequence[str],
    subjects: Sequence[str] = (),
    old_label: str = "a",
    new_label: str = "b",
    context: int = CONTEXT_LINES,
    hunks: bool = True,
) -> RegionDiff:
    """The hunks of old -> new that touch the claim's lines (values or quotes), with a few lines of context
    (`hunks=False`: whether any does, without their text)."""
    if old == new:
        return RegionDiff(False, False, "", UNCHANGED)
    a, b = page_lines(old), page_lines(new)
    focus_a, focus_b = focus_lines(old, values, quotes, subjects), focus_lines(new, values, quotes, subjects)
    if not focus_a and not focus_b:
        return RegionDiff(True, False, "", NOT_ON_PAGE)

    in_old, in_new = _changed_ops(old, new)
    chosen = sorted({in_old[i] for i in focus_a if i in in_old} | {in_new[j] for j in focus_b if j in in_new})
    if not chosen:
        return RegionDiff(True, False, "", ELSEWHERE)
    if not hunks:
        return RegionDiff(True, True, "", "")
    out = [f"--- {old_label}", f"+++ {new_label}"]
    for hunk in _hunks(list(_opcodes(old, new)), chosen, context):
        out.extend(_format_hunk(a, b, hunk, focus_a, focus_b))
    return RegionDiff(True, True, "\n".join(out) + "\n", "")


Op = tuple[str, int, int, int, int]
WINDOW = 6
"""In a change longer than 2 * WINDOW lines on one side, only lines within WINDOW of the claim's lines
are shown (a rewritten section should not bury the row that matters)."""


def _format_hunk(a: Sequence[str], b: Sequence[str], hunk: list[Op], focus_a: set[int], focus_b: set[int]) -> list[str]:
    """A hunk as unified-diff lines; long changes are cut to the claim's neighbourhood, each visible run
    getting its own exact `@@` header."""
    entries: list[tuple[str, int, int, str, bool]] = []  # prefix, old cursor, new cursor, text, shown
    for tag, i1, i2, j1, j2 in hunk:
        if tag == "equal":
            entries.extend((" ", i1 + k, j1 + k, a[i1 + k], True) for k in range(i2 - i1))
            continue
        keep_a = _window(range(i1, i2), focus_a)
        keep_b = _window(range(j1, j2), focus_b)
        entries.extend(("-", i, j1, a[i], i in keep_a) for i in range(i1, i2))
        entries.extend(("+", i2, j, b[j], j in keep_b) for j in range(j1, j2))
    out: list[str] = []
    run: list[tuple[str, int, int, str, bool]] = []
    for entry in [*entries, ("", 0, 0, "", False)]:
        if entry[4]:
            run.append(entry)
            continue
        if run:
            old_start, new_start = run[0][1], run[0][2]
            n_old = sum(e[0] in " -" for e in run)
            n_new = sum(e[0] in " +" for e in run)
            out.append(f"@@ -{_range(old_start, old_start + n_old)} +{_range(new_start, new_start + n_new)} @@")
            out.extend(e[0] + e[3] for e in run)
            run = []
    return out


def _window(span: range, focus: set[int]) -> set[int]:
    """The lines of one side of a change to show: all of a short change, else those near the claim."""
    if len(span) <= 2 * WINDOW:
        return set(span)
    near = {i for f in focus for i in range(max(span.start, f - WINDOW), min(span.stop, f + WINDOW + 1))}
    return near or set(span[:WINDOW])


def _hunks(ops: list[Op], chosen: list[int], context: int) -> list[list[Op]]:
    """Hunks made of the chosen change opcodes only, with up to `context` equal lines around them.

    Unlike difflib's grouping, a change that does not touch the claim is never pulled into a hunk: the
    context stops where it begins.
    """
    def head(op: Op, n: int) -> Op:
        tag, i1, i2, j1, j2 = op
        n = min(n, i2 - i1)
        return (tag, i1, i1 + n, j1, j1 + n)

    def tail(op: Op, n: int) -> Op:
        tag, i1, i2, j1, j2 = op
        n = min(n, i2 - i1)
        return (tag, i2 - n, i2, j2 - n, j2)

    hunks: list[list[Op]] = []
    last = -10
    for k in chosen:
        gap = ops[k - 1] if k > 0 else None
        if hunks and last == k - 2 and gap is not None and gap[2] - gap[1] <= 2 * context:
            hunks[-1].extend([gap, ops[k]])
        else:
            if hunks and last + 1 < len(ops) and ops[last + 1][0] == "equal":
                hunks[-1].append(head(ops[last + 1], context))
            start = [tail(gap, context)] if gap is not None and gap[0] == "equal" else []
            hunks.append([*start, ops[k]])
        last = k
    if hunks and last + 1 < len(ops) and ops[last + 1][0] == "equal":
        hunks[-1].append(head(ops[last + 1], context))
    return [[op for op in h if op[2] > op[1] or op[4] > op[3]] for h in hunks]


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


_MONTH_DATE = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December) \d{1,2}, \d{4}")


def line_values(line: str | None) -> list[str]:
    """The numbers and dates on a line, as written (`1,047,576`, `200k`, `2025-04-14`, `May 20, 2025`)."""
    out = list(dict.fromkeys(_MONTH_DATE.findall(line or "")))
    for raw in re.split(r"[\s|]+", _MONTH_DATE.sub(" ", line or "")):
        tok = raw.strip(".,;:!?()[]*`")
        if tok and (parse_number(tok) is not None or _DATE.match(tok)) and tok not in out:
            out.append(tok)
    return out


def changed_values(old_line: str | None, new_line: str | None) -> tuple[list[str], list[str]]:
    """The numbers and dates only on the old line, and only on the new one."""
    old, new = line_values(old_line), line_values(new_line)
    return [v for v in old if v not in new], [v for v in new if v not in old]


# --------------------------------------------------------------------------- side by side (for HTML)

RowKind = Literal["hunk", "equal", "change", "delete", "insert"]


@dataclass
class SideRow:
    """One row of a two-column (old | new) rendering of a unified diff."""

    kind: RowKind
    old_no: int | None = None
    old: str | None = None
    new_no: int | None = None
    new: str | None = None


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class _Block:
    minus: list[str] = field(default_factory=list)
    plus: list[str] = field(default_factory=list)


def _before_first(start: str, length: str | None) -> int:
    """The line number just before a hunk side's first line (`-5,0` is an empty range after line 5)."""
    return int(start) if length == "0" else int(start) - 1


def side_by_side(unified: str) -> list[SideRow]:
    """Rows pairing each hunk's removed lines with its added lines, for an old | new view."""
    rows: list[SideRow] = []
    old_no = new_no = 0
    block = _Block()

    def flush() -> None:
        nonlocal old_no, new_no
        for k in range(max(len(block.minus), len(block.plus))):
            o = block.minus[k] if k < len(block.minus) else None
            n = block.plus[k] if k < len(block.plus) else None
            kind: RowKind = "change" if o is not None and n is not None else ("delete" if n is None else "insert")
            rows.append(SideRow(kind, old_no + 1 if o is not None else None, o, new_no + 1 if n is not None else None, n))
            old_no += o is not None
            new_no += n is not None
        block.minus.clear()
        block.plus.clear()

    for line in unified.splitlines():
        if line.startswith(("--- ", "+++ ")) and not rows and not block.minus and not block.plus:
            continue
        m = _HUNK.match(line)
        if m:
            flush()
            old_no = _before_first(m.group(1), m.group(2))
            new_no = _before_first(m.group(3), m.group(4))
            rows.append(SideRow("hunk", old=line))
        elif line.startswith("-"):
            block.minus.append(line[1:])
        elif line.startswith("+"):
            block.plus.append(line[1:])
        else:
            flush()
            text = line[1:] if line.startswith(" ") else line
            old_no += 1
            new_no += 1
            rows.append(SideRow("equal", old_no, text, new_no, text))
    flush()
    return rows


def word_diff(old: str, new: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """Both lines split into (segment, changed) pieces, for highlighting within a changed line."""
    split = re.compile(r"(\s+|\|)")
    a = [p for p in split.split(old) if p]
    b = [p for p in split.split(new) if p]
    out_a: list[tuple[str, bool]] = []
    out_b: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if i2 > i1:
            out_a.append(("".join(a[i1:i2]), tag != "equal"))
        if j2 > j1:
            out_b.append(("".join(b[j1:j2]), tag != "equal"))
    return out_a, out_b


def claim_values_on(line: str | None, values: list[str]) -> list[str]:
    """The claim's value tokens that appear on a line (for summaries)."""
    if not line:
        return []
    present = line_token_set(line)
    return [v for v in values if v in present]
