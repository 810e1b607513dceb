"""The characters rich prints for a table of text, or one of our field panels, on a console that shows no style, laid out without rich's per-cell machinery."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich._pick import pick_bool
from rich._ratio import ratio_reduce
from rich._wrap import divide_line
from rich.box import ROUNDED
from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions, JustifyMethod, OverflowMethod, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.table import Column, Table
from rich.text import Text

# Rich lays a table out by measuring and rendering every cell through Padding, Segment lists and Lines
# (about 0.5 ms a row). For the tables our commands print (text cells, a box, a header, sections), the same
# characters come from the same rules applied to the cells' plain text: column widths from each cell's
# (longest word, longest line) in cells fed to rich's own collapse logic; a line that fits its column is
# padded as rich pads it; a line that does not is divided by rich's own `divide_line` (or, justified other
# than left, wrapped by `Text.wrap`); a cell that repeats in a column is laid out once. Anything else
# (colour, other renderables, options `_covered` does not list) is left to rich. tests/test_plain_table.py
# holds this to rich's output.

_PADDING = (0, 1, 0, 1)
"""The one cell padding covered (rich's default: one space either side)."""
_OUTSIDE_FAST_LINES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters rich treats in ways this layout does not copy: tabs, control codes, line breaks other than \\n."""
_TRAILING_WHITESPACE = re.compile(r"\s+$")
_JOINERS = ("\u200d", "\ufe0f")
"""Characters that make a string's width differ from the sum of its parts': such cells are wrapped by rich."""


@dataclass(frozen=True, slots=True)
class _Cell:
    lines: tuple[str, ...]
    """The cell's plain text split at line breaks."""
    justify: JustifyMethod
    overflow: OverflowMethod
    no_wrap: bool
    simple: bool
    """No joiner characters: a line's width is the sum of its characters' widths."""
    ascii: bool
    """Only ASCII (and no control code): a string's width is its length."""


def _print_options(console: Console, soft_wrap: bool | None) -> ConsoleOptions:
    """The options `Console.print(table, soft_wrap=soft_wrap)` renders with."""
    if soft_wrap is None:
        soft_wrap = console.soft_wrap
    return console.options.update(justify=None, overflow="ignore" if soft_wrap else None, height=None,
                                  no_wrap=True if soft_wrap else None, markup=None, highlight=None)


def shows_no_style(console: Console) -> bool:
    """Whether the console prints characters only (a pipe, a file: no colour, not recording): what every
    layout here assumes."""
    return (console.color_system is None and not console.record and not console.legacy_windows
            and not console.options.ascii_only)


def _covered(console: Console, table: Table) -> bool:
    """Whether the console shows no style and the table uses only what this layout covers."""
    if not shows_no_style(console):
        return False
    if (not table.columns or table.width is not None or table.min_width is not None or table.expand
            or table.show_footer or table.leading or table.collapse_padding or not table.pad_edge
            or tuple(table.padding) != _PADDING):
        return False
    rows = len(table.rows)
    return all(c.vertical in ("top", "middle", "bottom") and len(c._cells) == rows
               for c in table.columns)


def _cell(console: Console, content: RenderableType, column: Column, parsed: dict[str, Text]) -> _Cell | None:
    """The cell as the layout needs it, or None when it is not a str or Text or holds what is not covered.
    `parsed`: the Text of each str cell (console markup), a cache."""
    if type(content) is str:
        text = parsed.get(content)
        if text is None:
            text = parsed[content] = console.render_str(content)
    elif type(content) is Text:
        text = content
    else:
        return None
    plain = text.plain
    if text.end != "\n" or _OUTSIDE_FAST_LINES.search(plain):
        return None
    lines = tuple(plain.split("\n")) if "\n" in plain else (plain,)  # one line: the Text's own string
    return _Cell(lines, text.justify or column.justify or "default",
                 text.overflow or column.overflow or "fold", pick_bool(text.no_wrap, column.no_wrap, False),
                 not any(j in plain for j in _JOINERS), plain.isascii())


def _natural_width(cell: _Cell) -> tuple[int, int]:
    """Rich's measurement of the cell's text: (longest word, longest line), in cells."""
    width = len if cell.ascii else cell_len
    longest_line = max(map(width, cell.lines))
    words = [word for line in cell.lines for word in line.split()]
    return max(map(width, words), default=longest_line), longest_line


def _column_range(naturals: set[tuple[int, int]], column: Column, max_width: int) -> Measurement:
    """Rich's measurement of a column whose padded cells have these natural widths (`Table._measure_column`)."""
    if max_width < 1:
        return Measurement(0, 0)
    pad = _PADDING[1] + _PADDING[3]
    if column.width is not None:  # a fixed width
        return Measurement(column.width + pad, column.width + pad).with_maximum(max_width)
    minimums, maximums = [], []
    for natural in naturals:
        if max_width - pad < 1:
            minimum, maximum = max_width, max_width
        else:
            inner = Measurement(*natural).normalize().with_maximum(max_width)
            inner = Measurement(0, 0) if inner.maximum < 1 else inner.normalize()
            minimum, maximum = Measurement(inner.minimum + pad, inner.maximum + pad).with_maximum(max_width)
        minimums.append(minimum)
        maximums.append(maximum)
    measurement = Measurement(max(minimums, default=1), max(maximums, default=max_width)).with_maximum(max_width)
    return measurement.clamp(None if column.min_width is None else column.min_width + pad,
                             None if column.max_width is None else column.max_width + pad)


def _column_widths(table: Table, naturals: list[set[tuple[int, int]]], max_width: int) -> list[int]:
    """Rich's column widths, padding included (`Table._calculate_column_widths` for a table that does not
    expand and has no set width)."""
    columns = table.columns
    widths = [_column_range(n, c, max_width).maximum or 1 for n, c in zip(naturals, columns)]
    if sum(widths) > max_width:
        widths = Table._collapse_widths(widths, [c.width is None and not c.no_wrap for c in columns], max_width)
        if sum(widths) > max_width:
            widths = ratio_reduce(sum(widths) - max_width, [1] * len(widths), widths, widths)
        widths = [_column_range(n, c, w).maximum or 0 for n, c, w in zip(naturals, columns, widths)]
    return widths


def _cell_lines(console: Console, cell: _Cell, width: int) -> list[str]:
    """The cell's lines as rich renders them in `width` cells (padding excluded), each exactly `width` wide."""
    if width < 1:
        return []  # rich renders nothing in no room
    lengths = [(len if cell.ascii else cell_len)(line) for line in cell.lines] if cell.simple else None
    justify = "left" if cell.overflow == "ignore" else cell.justify  # rich does not justify what it ignores
    if lengths is None or max(lengths) > width:
        if justify in ("left", "default"):
            return _wrapped(cell, width)
        wrapped = Text("\n".join(cell.lines)).wrap(console, width, justify=cell.justify, overflow=cell.overflow,
                                                   no_wrap=cell.no_wrap)
        return [set_cell_size(line.plain, width) for line in wrapped]
    if justify in ("right", "center"):
        out = []
        for line in cell.lines:
            line = line.rstrip()
            room = width - cell_len(line)
            left = room if justify == "right" else room // 2
            out.append(" " * left + line + " " * (room - left))
        return out
    out = []
    for line, length in zip(cell.lines, lengths):
        if cell.overflow != "ignore" and len(line) > width:  # fits in cells, not in characters (zero-width ones)
            line = _rstrip_end(line, width)
            length = cell_len(line)
        out.append(line + " " * (width - length))
    return out


def _wrapped(cell: _Cell, width: int) -> list[str]:
    """`Text.wrap` of a cell justified left, on plain strings: rich's own line division, then its trailing
    whitespace rule and overflow, each line `width` wide."""
    overflow = cell.overflow
    out = []
    for line in cell.lines:
        if cell.no_wrap or overflow == "ignore":
            pieces = [line]
        else:
            offsets = divide_line(line, width, fold=overflow == "fold")
            pieces = [line[start:end] for start, end in zip([0, *offsets], [*offsets, len(line)])]
            pieces = [_rstrip_end(piece, width) for piece in pieces]
        for piece in pieces:
            if overflow != "ignore" and cell_len(piece) > width:
                piece = set_cell_size(piece, width - 1) + "…" if overflow == "ellipsis" else set_cell_size(piece, width)
            out.append(set_cell_size(piece, width))
    return out


def _rstrip_end(line: str, width: int) -> str:
    """`Text.rstrip_end`: a line longer than `width` characters loses trailing whitespace beyond it."""
    excess = len(line) - width
    if excess > 0 and (trailing := _TRAILING_WHITESPACE.search(line)) is not None:
        return line[:len(line) - min(len(trailing.group(0)), excess)]
    return line


def _aligned(lines: list[str], vertical: str, width: int, height: int) -> list[str]:
    blank = [" " * width] * (height - len(lines))
    if vertical == "top":
        return lines + blank
    if vertical == "bottom":
        return blank + lines
    top = len(blank) // 2
    return blank[:top] + lines + blank[top:]


def _annotation(console: Console, options: ConsoleOptions, text: Text | str, style: Style | str,
                justify: JustifyMethod) -> str:
    """A title or caption, rendered by rich (`Table.__rich_console__`)."""
    shown = console.render_str(text, style=style, highlight=False) if isinstance(text, str) else text
    return "".join(s.text for s in console.render(shown, options.update(justify=justify)) if not s.control)


def plain_table(console: Console, table: Table, *, soft_wrap: bool | None = None) -> str | None:
    """The characters `console.print(table, soft_wrap=soft_wrap)` writes, or None when the console shows style
    or the table holds anything this layout does not cover (then print it with rich)."""
    lines = plain_table_lines(console, table, soft_wrap=soft_wrap)
    return None if lines is None else "".join(lines)


def plain_table_lines(console: Console, table: Table, *, soft_wrap: bool | None = None) -> Iterator[str] | None:
    """`plain_table`'s characters as they are laid out, line by line (each ending in a line break), so that
    a table of thousands of rows is never held whole; None when `plain_table` is None."""
    if not _covered(console, table):
        return None
    parsed: dict[str, Text] = {}
    columns: list[list[_Cell]] = []
    for column in table.columns:
        cells = []
        made: dict[int, _Cell] = {}  # a renderable in many rows (a status, a page) is read once
        for content in ([column.header] if table.show_header else []) + list(column._cells):
            cell = made.get(id(content))
            if cell is None:
                cell = _cell(console, content, column, parsed)
                if cell is None:
                    return None
                made[id(content)] = cell
            cells.append(cell)
        columns.append(cells)
    options = _print_options(console, soft_wrap)
    extra_width = table._extra_width
    widths = _column_widths(table, [{_natural_width(c) for c in set(cells)} for cells in columns],
                            max(0, options.max_width - extra_width))
    if min(widths) < sum(_PADDING[1::2]):
        return None  # narrower than the padding: rare, left to rich
    table_width = sum(widths) + extra_width
    if table_width > options.max_width and not (console.soft_wrap if soft_wrap is None else soft_wrap):
        return None  # wider than the console (columns with a minimum width), which crops it: left to rich
    render_options = options.update(width=table_width, highlight=table.highlight, height=None)
    return _laid_out(console, table, options, render_options, columns, widths)


def _laid_out(console: Console, table: Table, options: ConsoleOptions, render_options: ConsoleOptions,
              columns: list[list[_Cell]], widths: list[int]) -> Iterator[str]:
    """The title, the box and rows, the caption."""
    if table.title:
        yield _annotation(console, render_options, table.title,
                          Style.pick_first(table.title_style, "table.title"), table.title_justify)
    yield from _table_lines(console, table, options, columns, widths)
    if table.caption:
        yield _annotation(console, render_options, table.caption,
                          Style.pick_first(table.caption_style, "table.caption"), table.caption_justify)


def _table_lines(console: Console, table: Table, options: ConsoleOptions, columns: list[list[_Cell]],
                 widths: list[int]) -> Iterator[str]:
    """The box and rows (`Table._render`), each line ending in a line break."""
    box = table.box.substitute(options, safe=pick_bool(table.safe_box, console.safe_box)) if table.box else None
    if box and not table.show_header:
        box = box.get_plain_headed_box()
    edge = table.show_edge
    if box and edge:
        yield box.get_top(widths) + "\n"
    left_pad, right_pad = " " * _PADDING[3], " " * _PADDING[1]
    inner = [w - len(left_pad) - len(right_pad) for w in widths]
    row_count = len(columns[0])
    laid_out: list[dict[_Cell, list[str]]] = [{} for _ in columns]  # cells repeat (a status, a page's change)
    repeated = [{cell for cell, n in Counter(column).items() if n > 1} for column in columns]  # only those are kept
    for index in range(row_count):
        first, last = index == 0, index == row_count - 1
        header_row = first and table.show_header
        cells = []
        for column, w, done, repeats in zip(columns, inner, laid_out, repeated):
            lines = done.get(column[index])
            if lines is None:
                lines = _cell_lines(console, column[index], w)
                if column[index] in repeats:
                    done[column[index]] = lines
            cells.append(lines)
        height = max(1, *(len(lines) for lines in cells))
        shaped = [[f"{left_pad}{line}{right_pad}" for line in
                   _aligned(lines, "bottom" if header_row else column.vertical, w, height)]
                  for lines, column, w in zip(cells, table.columns, inner)]
        if box:
            left, right, divider = ((box.head_left, box.head_right, box.head_vertical) if first else
                                    (box.foot_left, box.foot_right, box.foot_vertical) if last else
                                    (box.mid_left, box.mid_right, box.mid_vertical))
            if not edge:
                left = right = ""
            for line_no in range(height):
                yield left + divider.join(cell[line_no] for cell in shaped) + right + "\n"
            if header_row:
                yield box.get_row(widths, "head", edge=edge) + "\n"
            row = None if header_row else table.rows[index - table.show_header]
            if (table.show_lines or (row is not None and row.end_section)) and not last and not header_row:
                yield box.get_row(widths, "row", edge=edge) + "\n"
        else:
            for line_no in range(height):
                yield "".join(cell[line_no] for cell in shaped) + "\n"
    if box and edge:
        yield box.get_bottom(widths) + "\n"


def plain_panel(console: Console, title: str, rows: list[tuple[str, str]], note: str, body: str | None,
                labels: dict[str, str]) -> str | None:
    """The characters rich prints, on a console that shows no style, for `reports.tables.FieldPanel.rich`: a
    rounded box titled `title`, the `rows` (label as rich markup, value as text) in a right-aligned grid,
    `note` under them and `body` below (rich's own layout of such a panel costs about 2 ms, the whole
    report at knowledge-base scale). None when the panel holds anything this layout does not cover (a
    tab, an empty value or one that ends a line in the rows; a box too narrow): rich prints
    those. `labels` caches the labels as rich renders them. tests/test_render_panels.py holds it to rich."""
    width = console.width
    inner = width - 4  # the border and one space of padding on each side
    title = Text.from_markup(escape(title)).plain.replace("\n", " ")
    for label, _ in rows:
        if label not in labels:
            labels[label] = console.render_str(label).plain
    shown = [labels[label] for label, _ in rows] + [""]
    values = [value for _, value in rows] + [note]
    if (any("\t" in t or t.splitlines() != t.split("\n") for t in values)  # empty, ends a line, a tab...
            or any("\t" in t or "\n" in t for t in shown) or "\t" in title
            or (body is not None and body.splitlines() != body.split("\n"))):  # a line break other than \n
        return None
    label_width = max(cell_len(label) for label in shown)
    if width <= 6 or label_width + 1 > inner // 2:
        return None
    value_width = min(max(cell_len(line) for v in values for line in v.split("\n")), inner - label_width - 1)
    if not title:
        top = ROUNDED.top * (width - 2)
    elif cell_len(title) + 2 > width - 4:  # cut to the box, as rich cuts a title too wide (no ellipsis)
        top = f"{ROUNDED.top}{set_cell_size(f' {title} ', width - 4)}{ROUNDED.top}"
    else:
        top = f"{ROUNDED.top} {title} {ROUNDED.top * (width - 6 - cell_len(title))}{ROUNDED.top}"
    out = [f"{ROUNDED.top_left}{top}{ROUNDED.top_right}"]
    for label, value in zip(shown, values):
        for i, line in enumerate(_panel_wrapped(console, value, value_width, justify="left", overflow="ellipsis")):
            cell = " " * (label_width - cell_len(label)) + label if i == 0 else " " * label_width
            out.append(_boxed(f"{cell} {set_cell_size(line, value_width)}", inner))
    if body is not None:
        out += [_boxed(line, inner) for line in _panel_wrapped(console, body, inner, justify=None, overflow=None)]
    out.append(f"{ROUNDED.bottom_left}{ROUNDED.bottom * (width - 2)}{ROUNDED.bottom_right}")
    return "\n".join(out) + "\n"


def _panel_wrapped(console: Console, text: str, width: int, *, justify: Any, overflow: Any) -> list[str]:
    """The lines of `text` wrapped at `width` as rich wraps a Text (which wraps each line on its own): a
    line that fits as it is; a longer one divided as `_wrapped` divides a table cell's (rich's own
    `divide_line`; padded to `width`, which the panel pads it to anyway); one with a tab or a control
    code by rich's wrapping."""
    out: list[str] = []
    for line in text.split("\n"):
        if "\t" not in line and cell_len(line) <= width:
            out.append(_rstrip_end(line, width))
        elif justify in (None, "left") and not _OUTSIDE_FAST_LINES.search(line):  # as a table cell is wrapped
            out += _wrapped(_Cell((line,), justify or "default", overflow or "fold", False, False, False), width)
        else:
            out += [part.plain for part in Text(line).wrap(console, width, justify=justify, overflow=overflow)]
    return out


def _boxed(line: str, inner: int) -> str:
    return f"{ROUNDED.mid_left} {set_cell_size(line, inner)} {ROUNDED.mid_right}"


PRINTED_LINES = 500
"""How many lines of a long plain table or report are printed at a time (`reports.tables.print_table`, `LinePrinter`)."""


class LinePrinter:
    """`console.print(markup, soft_wrap=...)` for the many one-line prints of a report. On a console that
    shows no style, a line rich would print as it is (its text fits the width, or soft wrap is on; no tab,
    control code, line break or joiner) is kept and written, with those before it, at the next line rich
    prints, at `flush`, or once PRINTED_LINES are kept (one `Console.print` for many lines; rich costs about
    0.1 ms a line). Anything else is printed by rich, in order. tests/test_plain_table.py holds it to rich's
    output."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.width = console.width
        """The console's width when the printer was made (rich works it out anew each time it is asked)."""
        self.plain = shows_no_style(console)
        self.pending: list[str] = []

    def print(self, markup: str = "", *, soft_wrap: bool = False, hang: int | None = None) -> None:
        """Print one line of markup. `hang`: a line wider than the console is wrapped at words, the lines
        after its first indented by `hang` spaces (its first keeps its own indent)."""
        if hang is not None and not soft_wrap:
            parsed = Text.from_markup(markup)
            if "\n" not in parsed.plain and cell_len(parsed.plain) > self.console.width:
                indent = len(parsed.plain) - len(parsed.plain.lstrip(" "))
                body = parsed[indent:]
                room = max(1, self.console.width - max(indent, hang))
                for i, line in enumerate(body.wrap(self.console, room, overflow="fold")):
                    line.rstrip()
                    self.print_text(Text(" " * (indent if i == 0 else hang)) + line)
                return
        if self.plain:
            text = Text.from_markup(markup).plain
            if ("\n" not in text and not _OUTSIDE_FAST_LINES.search(text) and not any(j in text for j in _JOINERS)
                    and (soft_wrap or cell_len(text) <= self.console.width)):
                self.pending.append(text if soft_wrap else _rstrip_end(text, self.console.width))
                if len(self.pending) >= PRINTED_LINES:
                    self.flush()
                return
        self.flush()
        self.console.print(markup, soft_wrap=soft_wrap)

    def print_line(self, text: str, style: str = "") -> None:
        """A line of text, no markup read, printed as `console.print(Text(text, style=style), soft_wrap=True)`
        prints it (`reports.tables.print_wrapped`'s lines)."""
        if (self.plain and "\n" not in text and not _OUTSIDE_FAST_LINES.search(text)
                and not any(j in text for j in _JOINERS)):
            self.pending.append(text)  # soft wrap: rich keeps the line as it is, trailing spaces too
            if len(self.pending) >= PRINTED_LINES:
                self.flush()
            return
        self.flush()
        self.console.print(Text(text, style=style), soft_wrap=True)

    def print_text(self, text: Text) -> None:
        """A line already laid out to the console's width (no markup read, nothing wrapped)."""
        if self.plain:
            self.pending.append(text.plain)
            if len(self.pending) >= PRINTED_LINES:
                self.flush()
            return
        self.flush()
        self.console.print(text, soft_wrap=True)

    def flush(self) -> None:
        if self.pending:
            self.console.print(Prerendered("\n".join(self.pending) + "\n"), end="", soft_wrap=True)
            self.pending = []


class Prerendered:
    """Characters already laid out, printed as they are by `Console.print` (which still crops and captures them)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        yield Segment(self.text)
