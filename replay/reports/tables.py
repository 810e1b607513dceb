"""Tables for the terminal (rich) and markdown, the score tables grade and bakeoff share, markdown escaping of data."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from replay.core.display import printable, printable_block
from replay.reports.fit import column_groups, column_needs, output_width, spread, wrap_command, wrap_words
from replay.reports.markdown import markdown_cell, markdown_text
from replay.reports.plain_table import (PRINTED_LINES, LinePrinter, Prerendered, plain_panel, plain_table_lines,
                                        shows_no_style)

def console_for(file: TextIO | None = None) -> Console:
    """A console on `file` (default stdout): the terminal's width on a terminal; elsewhere COLUMNS, else 80
    columns (`fit.output_width`), and no colour."""
    out = file or sys.stdout
    tty = out.isatty()
    return Console(file=out, width=output_width(out), no_color=not tty, highlight=False, soft_wrap=True)


def print_wrapped(console: Console, text: str, style: str = "", *, indent: int = 0, hang: int | None = None,
                  printer: LinePrinter | None = None) -> None:
    """A line of data (shown through `printable`) wrapped at words to the console's width, the first line
    indented by `indent`, the rest by `hang` (default indent + 2). `printer`: a `LinePrinter` on `console`
    that keeps the lines for one print with those of the calls before and after (flushed by the caller);
    without it, this call's lines are printed at once."""
    out = LinePrinter(console) if printer is None else printer
    for line in wrap_words(printable(text), out.width, indent=indent, hang=hang):
        out.print_line(line, style)
    if printer is None:
        out.flush()


def print_command(console: Console, command: str, *, indent: int = 2) -> None:
    """A shell command wrapped to the console's width with `\\` continuations: it still pastes as one."""
    out = LinePrinter(console)
    for line in wrap_command(printable(command), console.width, indent=indent):
        out.print_line(line)
    out.flush()


@dataclass
class FieldPanel:
    """A titled box of `label: value` rows, a dim note under them and an optional block of text (one
    disagreement of the adjudication report). Every string but the labels is data: it is shown through
    `printable`. `rich()` is the rich panel; `print_panels` prints many of them."""

    title: str
    rows: list[tuple[str, str]]
    """(label, value); labels are ours (rich markup), values are data."""
    note: str
    body: str | None
    border_style: str

    def rich(self) -> Panel:
        fields = Table.grid(padding=(0, 1))
        fields.add_column(style="bold", justify="right", no_wrap=True)
        fields.add_column()
        for label, value in self.rows:
            fields.add_row(label, Text(printable(value)))
        fields.add_row("", Text(printable(self.note), style="dim"))
        body: list[RenderableType] = [fields]
        if self.body:
            body.append(Text(printable_block(self.body), style="cyan"))
        return Panel(Group(*body), title=escape(printable(self.title)), title_align="left",
                     border_style=self.border_style)

    def plain(self, console: Console, labels: dict[str, str]) -> str | None:
        """The characters rich prints for `rich()` on a console that shows no style (`plain_panel`), or
        None when rich must lay it out. `labels`: the labels as rich renders them (a cache)."""
        return plain_panel(console, printable(self.title), [(label, printable(value)) for label, value in self.rows],
                           printable(self.note), printable_block(self.body) if self.body else None, labels)


def print_panels(console: Console, panels: Sequence[FieldPanel]) -> None:
    """Print the panels: on a console that shows no style (a pipe, a file), laid out by `FieldPanel.plain`;
    else, or for a panel it does not cover, by rich."""
    plain = shows_no_style(console)
    labels: dict[str, str] = {}
    for panel in panels:
        text = panel.plain(console, labels) if plain else None
        console.print(panel.rich() if text is None else Prerendered(text), soft_wrap=False)




def print_table(console: Console, table: Table, *, soft_wrap: bool | None = None) -> None:
    """`console.print(table, soft_wrap=soft_wrap)`, laid out by `plain_table` when the console shows no style
    (a pipe, a file: the same characters, without rich's per-cell cost), else by rich. A plain table is
    printed PRINTED_LINES lines at a time as it is laid out (the same characters: rich prints line by line)."""
    lines = plain_table_lines(console, table, soft_wrap=soft_wrap)
    if lines is None:
        console.print(table, soft_wrap=soft_wrap)
        return
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= PRINTED_LINES and line.endswith("\n"):
            console.print(Prerendered("".join(chunk)), soft_wrap=soft_wrap)
            chunk = []
    if chunk:
        console.print(Prerendered("".join(chunk)), soft_wrap=soft_wrap)


@dataclass
class TextTable:
    """A table of plain strings that prints in the terminal and renders as a markdown table."""

    title: str
    columns: Sequence[str]
    rows: list[list[str]] = field(default_factory=list)
    right_from: int = 1
    """Columns from this index on are right-aligned (numbers)."""

    def rich(self, widths: Sequence[int] | None = None) -> Table:
        """The terminal table; every cell is data, shown through `printable`. `widths`: each column's text
        width (`fit.spread`), else rich sizes them."""
        table = Table(title=escape(printable(self.title)), title_justify="left", title_style="bold")
        for i, name in enumerate(self.columns):
            table.add_column(escape(printable(name)), justify="right" if i >= self.right_from else "left",
                             width=None if widths is None else widths[i])
        for row in self.rows:
            table.add_row(*(Text(printable(c)) for c in row))
        return table

    def print(self, console: Console) -> None:
        """Print the table fitted to the console's width, no number or word cut: as it is when it fits; else
        with its columns narrowed (text wraps at words); else as several tables, each repeating the first
        column; else, when not even two columns fit side by side, one block per row (`stacked_lines`)."""
        cells = [[self.columns[i], *(row[i] for row in self.rows)] for i in range(len(self.columns))]
        needs = column_needs([[printable(c) for c in column] for column in cells])
        groups = column_groups(needs, console.width)
        if groups is None:
            if self.title:
                print_wrapped(console, self.title, "bold")
            for line in self.stacked_lines(console.width):
                console.print(Text(line), soft_wrap=True)
            return
        for n, group in enumerate(groups):
            # the title is a line of its own, wrapped at words: as a rich table title it would be padded
            # with spaces to the table's width (trailing spaces in every log) and cut to it
            if self.title:
                print_wrapped(console, self.title if n == 0 else f"{self.title} (continued)", "bold")
            part = TextTable("", [self.columns[i] for i in group], [[row[i] for i in group] for row in self.rows],
                             right_from=sum(1 for i in group if i < self.right_from))
            widths = spread([needs[i] for i in group], console.width)
            natural = widths == [needs[i].natural for i in group]
            print_table(console, part.rich(None if natural else widths), soft_wrap=False)

    def stacked_lines(self, width: int) -> list[str]:
        """The table as one block per row: its first cell, then `column: value` for the others, wrapped."""
        out = []
        for row in self.rows:
            out += wrap_words(printable(row[0]), width, indent=0, hang=2)
            for name, value in zip(self.columns[1:], row[1:]):
                out += wrap_words(printable(f"{name}: {value}"), width, indent=2, hang=4)
        return out

    def markdown(self) -> str:
        """The markdown table; every cell is data, escaped by `markdown_cell`."""
        head = "| " + " | ".join(markdown_cell(c) for c in self.columns) + " |"
        rule = "|" + "|".join("---:" if i >= self.right_from else "---" for i in range(len(self.columns))) + "|"
        body = ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in self.rows]
        return "\n".join([f"**{markdown_text(self.title)}**", "", head, rule, *body])
