"""Fitting text output to the width it is read at: the width itself, column widths and column groups for a
table, lines wrapped at words (with a hanging indent), and shell commands wrapped with `\\` continuations."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from rich.cells import cell_len

PIPED_WIDTH = 80
"""Columns assumed when the output is not a terminal (a pipe, a file, a CI log) and COLUMNS is not set."""
MIN_WIDTH = 30
"""The narrowest width laid out; a smaller COLUMNS is taken as this."""


def output_width(file: TextIO | None) -> int | None:
    """The width a report written to `file` (None: a file named by `--out`) is laid out at: None on a
    terminal (rich measures it, and honours COLUMNS); elsewhere COLUMNS when it is a whole number, else
    PIPED_WIDTH. Never below MIN_WIDTH."""
    try:
        tty = file is not None and file.isatty()
    except ValueError:  # a closed file
        tty = False
    columns = os.environ.get("COLUMNS", "").strip()
    if tty:
        return max(MIN_WIDTH, int(columns)) if columns.isdigit() else None
    return max(MIN_WIDTH, int(columns)) if columns.isdigit() else PIPED_WIDTH


# --------------------------------------------------------------------------- tables


def longest_word(text: str) -> int:
    """The widest word of `text` in cells: the narrowest a column can be without breaking a word (a number
    is one word, so never broken)."""
    return max((cell_len(w) for w in text.split()), default=0)


def longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.split("\n")), default=0)


@dataclass(frozen=True)
class ColumnNeeds:
    """What a column of text needs, in cells, padding excluded."""

    minimum: int
    """Its widest word (header included)."""
    natural: int
    """Its widest line: the width it takes when nothing wraps."""


def column_needs(cells_by_column: Sequence[Sequence[str]]) -> list[ColumnNeeds]:
    return [ColumnNeeds(max(1, max(map(longest_word, cells), default=1)), max(1, max(map(longest_line, cells), default=1)))
            for cells in cells_by_column]


def table_overhead(columns: int) -> int:
    """Cells a boxed table spends besides its columns' text: the edges, the dividers, one space of padding on
    each side of each column."""
    return columns + 1 + 2 * columns


def spread(needs: Sequence[ColumnNeeds], width: int) -> list[int] | None:
    """Column text widths that fit a table of these columns in `width` with no word broken: None when even
    their minimums do not fit; the natural widths when they fit; else each column's minimum, the room left
    handed out one cell at a time to the column that lacks the most of its natural width."""
    room = width - table_overhead(len(needs))
    if sum(n.natural for n in needs) <= room:
        return [n.natural for n in needs]
    widths = [n.minimum for n in needs]
    if sum(widths) > room:
        return None
    for _ in range(room - sum(widths)):
        lacking = max(range(len(needs)), key=lambda i: (needs[i].natural - widths[i], -i))
        if needs[lacking].natural - widths[lacking] <= 0:
            break
        widths[lacking] += 1
    return widths


def column_groups(needs: Sequence[ColumnNeeds], width: int) -> list[list[int]] | None:
    """The columns split into groups that each fit `width` (the first column, the row's key, starts every
    group; the others keep their order), or None when the key and any one other column do not fit side by
    side. One group when the whole table fits."""
    if spread(needs, width) is not None:
        return [list(range(len(needs)))]
    groups: list[list[int]] = []
    current = [0]
    for i in range(1, len(needs)):
        if spread([needs[j] for j in (*current, i)], width) is not None:
            current.append(i)
            continue
        if len(current) == 1:
            return None
        groups.append(current)
        current = [0, i]
        if spread([needs[0], needs[i]], width) is None:
            return None
    groups.append(current)
    return groups


# --------------------------------------------------------------------------- lines


def wrap_words(text: str, width: int, *, indent: int = 0, hang: int | None = None) -> list[str]:
    """`text` wrapped at spaces into lines of at most `width` cells: the first line indented by `indent`
    spaces, the others by `hang` (default `indent` + 2). A word wider than a whole line is the only thing
    ever broken. Runs of spaces inside the text are kept where no line breaks."""
    hang = indent + 2 if hang is None else hang
    out: list[str] = []
    for paragraph in text.split("\n"):
        out += _wrapped_paragraph(paragraph, width, indent if not out else hang, hang)
    return out


def _wrapped_paragraph(text: str, width: int, indent: int, hang: int) -> list[str]:
    if text.isascii() and text.isprintable():  # one cell a character: a paragraph that fits is one line
        kept = text.lstrip(" ")  # as the loop below makes it: leading spaces dropped, the rest kept
        if indent + len(kept) <= width:
            return [(" " * indent + kept).rstrip()]
    return words_loop(text, width, indent, hang)


def words_loop(text: str, width: int, indent: int, hang: int) -> list[str]:
    """One paragraph wrapped word by word (what `_wrapped_paragraph` gives, without its short cut for a
    printable-ASCII paragraph that fits: the tests hold the two equal)."""
    lines: list[str] = []
    line = ""
    lead = indent
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if not line or lead + cell_len(candidate) <= width:
            line = candidate
        else:
            lines.append(" " * lead + line)
            line, lead = word, hang
        while lead + cell_len(line) > width and " " not in line and width - lead > 0:
            cut = _cut(line, width - lead)  # a word wider than a line: broken, the only break inside a word
            lines.append(" " * lead + line[:cut])
            line, lead = line[cut:], hang
    lines.append(" " * lead + line)
    return [ln.rstrip() for ln in lines]


def _cut(word: str, room: int) -> int:
    """How many characters of `word` fit in `room` cells (at least one)."""
    used = 0
    for i, ch in enumerate(word):
        used += cell_len(ch)
        if used > room:
            return max(1, i)
    return len(word)


def wrap_command(command: str, width: int, *, indent: int = 0) -> list[str]:
    """A shell command wrapped to `width` at spaces outside quotes, each line but the last ending in ` \\`
    and the next indented four more spaces: pasted into a shell, it is the same command. A single
    argument wider than a line stays whole (breaking it would change the command)."""
    words = _option_units(_shell_words(command))
    lines: list[str] = []
    line, lead = "", indent
    for word in words:
        candidate = f"{line} {word}" if line else word
        if not line or lead + cell_len(candidate) + 2 <= width:
            line = candidate
        else:
            lines.append(" " * lead + line + " \\")
            line, lead = word, indent + 4
    lines.append(" " * lead + line)
    return lines


def _option_units(words: list[str]) -> list[str]:
    """Words joined where a line must not break: an option (`--run`) and the value after it."""
    out: list[str] = []
    for word in words:
        if out and out[-1].startswith("-") and " " not in out[-1] and not word.startswith("-"):
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def _shell_words(command: str) -> list[str]:
    """The command split at spaces outside single or double quotes (each word keeps its quotes)."""
    words, current, quote = [], "", ""
    for ch in command:
        if quote:
            current += ch
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            current += ch
            quote = ch
        elif ch == " ":
            if current:
                words.append(current)
            current = ""
        else:
            current += ch
    if current:
        words.append(current)
    return words


# --------------------------------------------------------------------------- plain text


def text_width(file: TextIO | None) -> int:
    """The width plain lines written to `file` are wrapped at: `output_width`, and on a terminal its own
    width (COLUMNS when set)."""
    import shutil

    return output_width(file) or max(MIN_WIDTH, shutil.get_terminal_size().columns)


def fit_lines(text: str, width: int) -> list[str]:
    """Each line of `text` wrapped at words to `width`, its continuation lines indented two spaces more
    than the line itself (a summary's `  key: value` lines stay readable as such)."""
    out: list[str] = []
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        out += wrap_words(line[indent:], width, indent=indent, hang=indent + 2) if line.strip() else [line]
    return out


def plain_columns(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, *, gap: int = 2) -> list[str]:
    """Rows of short cells as left-aligned columns `gap` spaces apart, as wide as their widest cell. When
    they do not fit `width`: the columns in groups that fit, one block of lines per group, each repeating
    the first column (the row's key); when not even the key and one other column fit, one block per row
    (the key, then `header: value` lines). No cell is ever cut."""
    table = [list(headers), *(list(r) for r in rows)]
    widths = [max(cell_len(row[i]) for row in table) for i in range(len(headers))]

    def lines(columns: Sequence[int]) -> list[str]:
        return ["  ".join(row[i] + " " * (widths[i] - cell_len(row[i])) for i in columns).rstrip() for row in table]

    def fits(columns: Sequence[int]) -> bool:
        return sum(widths[i] for i in columns) + gap * (len(columns) - 1) <= width

    everything = list(range(len(headers)))
    if fits(everything):
        return lines(everything)
    groups: list[list[int]] = []
    current = [0]
    for i in everything[1:]:
        if fits([*current, i]):
            current.append(i)
        elif len(current) > 1 and fits([0, i]):
            groups.append(current)
            current = [0, i]
        else:
            out: list[str] = []
            for row in table[1:]:
                out += wrap_words(row[0], width, indent=0, hang=2)
                for name, value in zip(headers[1:], row[1:]):
                    out += wrap_words(f"{name}: {value}", width, indent=2, hang=4)
            return out
    groups.append(current)
    out = []
    for n, group in enumerate(groups):
        out += ([""] if n else []) + lines(group)
    return out
