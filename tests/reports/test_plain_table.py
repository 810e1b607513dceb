"""Tables printed without rich's layout (a pipe, a file) are the characters rich prints, and drift's table takes that path."""

import io
import random
from pathlib import Path

import pytest
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from replay.cli import drift
from replay.cli.main import main
from replay.reports.plain_table import LinePrinter, plain_table
from replay.schema.drift import DriftClaim, DriftReport
from replay.reports.tables import TextTable, console_for, print_table
from locations import REPO

ROOT = REPO

WORDS = ["gpt-4o", "128,000", "tokens", "the", "context", "window", "of", "`o4-mini`", "|", "—", "→", "…", "≠", "*",
         "[", "]", "a", "", "docs/models.md:m-1", "/azure/ai-services/openai/concepts/models"]
RARE = ["https://learn.microsoft.com/azure/ai-services/openai/concepts/models?tabs=global-standard%2Cstandard-chat",
        "a" * 39, "b" * 40, "c" * 41, "d" * 200, "概要", "数据区域漢字テキスト", "emoji🙂", "🙂🙂🙂", "e\u0301", "n\u0303o",
        "👩\u200d💻", "❤\ufe0f", "x\u200dy", "\u00a0", "a\u3000b", "\u2003", "ﾊﾝｶｸ", "\u200b", "end  ", "  start"]
MARKUP = ["[bold]bold[/bold]", "[red]x[/]", ":smile:", ":thumbs_up: ok", "\\[not markup]"]
BOXES = [box.HEAVY_HEAD, box.HEAVY_HEAD, box.ROUNDED, box.SQUARE, box.SIMPLE, box.MINIMAL, box.ASCII,
         box.DOUBLE_EDGE, None]


def plain_console(file: io.StringIO, width: int = 160, soft_wrap: bool = True) -> Console:
    """What `console_for` gives for a file that is no terminal, at another width."""
    return Console(file=file, width=width, no_color=True, highlight=False, soft_wrap=soft_wrap)


def word(rng: random.Random) -> str:
    return rng.choice(RARE if rng.random() < 0.08 else WORDS)


def cell_text(rng: random.Random, words: int) -> str:
    shape = rng.random()
    if shape < 0.08:
        return ""
    lines = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        lines.append(" " * rng.choice([0, 0, 0, 1, 3]) + (" " * rng.choice([1, 1, 1, 2])).join(
            word(rng) for _ in range(rng.randint(0, words))) + " " * rng.choice([0, 0, 0, 2]))
    text = "\n".join(lines)
    return text + "\n" if rng.random() < 0.05 else text


def cell(rng: random.Random, words: int) -> str | Text:
    """A str cell (console markup), or a Text: one style, spans of styles, its own justify, overflow or no_wrap."""
    kind = rng.random()
    if kind < 0.15:
        return rng.choice(MARKUP) if rng.random() < 0.3 else cell_text(rng, words)
    text = Text(cell_text(rng, words), style=rng.choice(["", "bold red", "dim", "green"]))
    if kind < 0.3:
        text.append(cell_text(rng, 3), style="cyan")
        text.append("\n→ ")
        text.append(cell_text(rng, words), style="yellow")
    if rng.random() < 0.1:
        text.justify = rng.choice(["left", "right", "center", "full"])
    if rng.random() < 0.1:
        text.overflow = rng.choice(["fold", "crop", "ellipsis", "ignore"])
    if rng.random() < 0.05:
        text.no_wrap = rng.choice([True, False])
    return text


def random_table(rng: random.Random, rows: int | None = None) -> Table:
    table = Table(box=rng.choice(BOXES), show_header=rng.random() < 0.85, show_edge=rng.random() < 0.85,
                  show_lines=rng.random() < 0.1)
    if rng.random() < 0.1:
        table.title = rng.choice(["Title", "By claim type", "[bold]a[/] " + cell_text(rng, 20)])
        table.title_justify = rng.choice(["left", "center", "right"])
    if rng.random() < 0.05:
        table.caption = cell_text(rng, 8)
    for i in range(rng.choice([1, 2, 3, 4, 5, 5, 6, 8])):
        table.add_column(
            rng.choice([f"column {i}", "status", "old → new", "", "a header long enough to be folded over lines",
                        ":smile: [b]x[/b]", "漢字"]),
            no_wrap=rng.random() < 0.25, overflow=rng.choice(["fold", "fold", "ellipsis", "crop", "ignore"]),
            justify=rng.choice(["left", "left", "left", "right", "center", "full", "default"]),
            vertical=rng.choice(["top", "top", "top", "middle", "bottom"]),
            max_width=rng.choice([None, None, None, 5, 12, 40]), min_width=rng.choice([None, None, None, 3, 20]),
            ratio=rng.choice([None, None, 1]))
    words = [rng.choice([1, 2]) if c.no_wrap else rng.choice([2, 6, 15, 40]) for c in table.columns]
    for _ in range(rows if rows is not None else rng.choice([0, 1, 1, 3, 8, 20])):
        table.add_row(*(cell(rng, n) for n in words))
        if rng.random() < 0.15:
            table.add_section()
    return table


def by_rich(table: Table, width: int = 160, soft_wrap: bool = True) -> str:
    out = io.StringIO()
    plain_console(out, width, soft_wrap).print(table, soft_wrap=soft_wrap)
    return out.getvalue()


def by_print_table(table: Table, width: int = 160, soft_wrap: bool = True) -> str:
    out = io.StringIO()
    print_table(plain_console(out, width, soft_wrap), table, soft_wrap=soft_wrap)
    return out.getvalue()


def laid_out(table: Table, width: int = 160, soft_wrap: bool = True) -> str | None:
    return plain_table(plain_console(io.StringIO(), width, soft_wrap), table, soft_wrap=soft_wrap)


def test_random_tables_print_as_rich_prints_them():
    rng = random.Random(13)
    fast = 0
    for n in range(150):
        seed = rng.random()
        width = rng.choice([160, 160, 160, 120, 80, 60, 40])
        soft_wrap = rng.random() < 0.7
        expected = by_rich(random_table(random.Random(seed)), width, soft_wrap)
        text = laid_out(random_table(random.Random(seed)), width, soft_wrap)
        assert text is None or text == expected, f"table {n} (seed {seed}, width {width}, soft_wrap {soft_wrap})"
        assert by_print_table(random_table(random.Random(seed)), width, soft_wrap) == expected
        fast += text is not None
    assert fast >= 120  # the layout covers most of them: it is not rich printing them both times


def test_cells_exactly_at_the_column_width_and_one_over():
    for width in range(1, 30):
        for extra in (0, 1):
            table = Table()
            table.add_column("a", max_width=width)
            table.add_column("b", overflow="fold", max_width=width)
            table.add_column("c", no_wrap=True, max_width=width)
            table.add_column("d", overflow="ellipsis", max_width=width)
            for text in ("x" * (width + extra), "漢" * ((width + extra) // 2 + extra), "a " * width, "y" * width + " z"):
                table.add_row(*(Text(text) for _ in range(4)))
            assert laid_out(table) == by_rich(table), width


def test_columns_squeezed_to_no_room_print_as_rich_prints_them():
    table = Table()
    table.add_column("wide", no_wrap=True)
    for name in ("status", "", "漢字"):
        table.add_column(name)
    table.add_row(Text("x" * 147), Text("a b c"), Text(""), Text("  "))  # the others get no room for text
    table.add_row(Text("y"), "[b]bold[/b]", Text("漢字 漢字"), Text("\n"))
    text = laid_out(table)
    assert text is not None and text == by_rich(table)


def test_a_thousand_row_table_with_sections_prints_as_rich_prints_it():
    rng = random.Random(1000)
    table = Table(title="A long table")
    table.add_column("kind", no_wrap=True)
    table.add_column("name", overflow="fold")
    table.add_column("count", justify="right")
    table.add_column("where", overflow="fold", max_width=30)
    table.add_column("text", ratio=1, justify=rng.choice(["left", "center"]))
    table.add_column("end", overflow="ellipsis", vertical="bottom")
    for i in range(1000):
        kind = Text(rng.choice(["page-gone", "value-changed", "漢字", "🙂", "e\u0301", ""]), style="red")
        table.add_row(kind, cell(rng, 6), str(i), cell(rng, 6), cell(rng, 40), cell(rng, 4))
        if i % 37 == 0:
            table.add_section()
    text = laid_out(table)
    assert text is not None and text == by_rich(table)


def drift_claim(rng: random.Random, i: int) -> DriftClaim:
    status = rng.choice(["page-gone", "value-changed", "value-changed", "quote-gone", "unchecked"])
    row = "| " + " | ".join(rng.choice(["`gpt-4o` (2024-11-20)", "128,000", "16,384", "Global Standard",
                                         "East US 2, Sweden Central", "数据区域", "-"]) for _ in range(rng.randint(2, 12))) + " |"
    changed = row.replace("128,000", "256,000").replace("-", "n/a")
    return DriftClaim(
        file=f"docs/area-{i % 50}/{rng.choice(['models', 'quotas', 'regions-and-availability'])}.md",
        id=f"c-{i}", status=status, verdict=rng.choice(["grounded", "not_grounded", "source_silent", None]),
        evidence_url=rng.choice([None, f"https://learn.microsoft.com/azure/ai-services/openai/concepts/page-{i % 9}",
                                 "https://learn.microsoft.com/" + "very-long-segment/" * 6 + "x"]),
        old=row if status == "value-changed" else None, new=changed if status == "value-changed" else None,
        note=None if status == "value-changed" else rng.choice(["the quote is no longer on the page",
                                                                  "page returned an error", "x" * 90]))


def test_a_large_drift_report_table_is_laid_out_here_as_rich_lays_it_out():
    rng = random.Random(500)
    report = DriftReport(run="runs/before", against="runs/after", at_risk=[],
                         claims=[drift_claim(rng, i) for i in range(1500)])
    text = laid_out(drift.claims_table(report))
    assert text is not None, "drift's table fell back to rich"
    assert text == by_rich(drift.claims_table(report))


def test_the_demo_drift_report_prints_its_table_as_rich_prints_it(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    main(["drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09", "--json"])
    report = DriftReport.model_validate_json(capsys.readouterr().out)
    table = drift.claims_table(report)
    assert table.row_count and plain_table(console_for(io.StringIO()), table) is not None
    main(["drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09"])
    printed = capsys.readouterr().out
    assert by_rich(drift.claims_table(report), 1000) in printed  # COLUMNS=1000 (tests/conftest.py)


@pytest.mark.parametrize("content", [Panel("a panel"), Text("tab\there"), Text("a\u2028b"), Text("x", end="")])
def test_what_the_layout_does_not_cover_is_printed_by_rich(content):
    table = Table()
    table.add_column("a")
    table.add_row(content)
    assert laid_out(table) is None
    assert by_print_table(table) == by_rich(table)


def test_a_console_that_shows_colour_is_printed_by_rich():
    def coloured(out: io.StringIO) -> Console:
        return Console(file=out, width=100, force_terminal=True, color_system="truecolor")

    table = random_table(random.Random(7), rows=5)
    assert plain_table(coloured(io.StringIO()), table) is None
    rich_out, ours = io.StringIO(), io.StringIO()
    coloured(rich_out).print(table)
    print_table(coloured(ours), table)
    assert "\x1b[" in ours.getvalue() and ours.getvalue() == rich_out.getvalue()


def test_grades_score_tables_are_laid_out_here_as_rich_lays_them_out():
    table = TextTable("By claim type: a title long enough to wrap " * 5, ["claim type", "graded", "P", "no verdict"])
    table.rows += [["region", "4", "1.000", "0"], ["漢字 [b]x[/b] :smile:", "10", "n/a", "12"]]
    for width in (160, 60):
        text = laid_out(table.rich(), width, soft_wrap=False)
        assert text is not None and text == by_rich(table.rich(), width, soft_wrap=False)


# --------------------------------------------------------------------------- lines of markup


def markup_line(rng: random.Random) -> str:
    """A line as our reports print them: words, data escaped as markup, some of ours (bold, dim)."""
    parts = []
    for _ in range(rng.choice([0, 1, 3, 8, 20, 40])):
        w = word(rng)
        kind = rng.random()
        parts.append(f"[bold]{escape(w)}[/]" if kind < 0.1 else f"[dim]{escape(w)}[/dim]" if kind < 0.15
                     else rng.choice(MARKUP) if kind < 0.2 else escape(w))
    line = (" " * rng.choice([0, 0, 2, 6])).join(parts) if rng.random() < 0.1 else " ".join(parts)
    if rng.random() < 0.05:
        line += rng.choice(["\t", "\n", "\x1b", "\u2028", "  "])
    return (" " * rng.choice([0, 0, 2, 4, 6])) + line


@pytest.mark.parametrize("width", [110, 60, 23])
def test_lines_printed_through_the_line_printer_are_the_characters_rich_prints(width: int) -> None:
    rng = random.Random(width)
    for _ in range(40):
        lines = [(markup_line(rng), rng.random() < 0.3) for _ in range(rng.randint(1, 30))]
        by_rich, by_us = io.StringIO(), io.StringIO()
        rich_console, our_console = plain_console(by_rich, width, False), plain_console(by_us, width, False)
        printer = LinePrinter(our_console)
        for markup, soft in lines:
            rich_console.print(markup, soft_wrap=soft)
            printer.print(markup, soft_wrap=soft)
        printer.flush()
        assert by_us.getvalue() == by_rich.getvalue(), lines


def test_the_line_printer_keeps_lines_that_fit_and_leaves_the_rest_to_rich_in_order() -> None:
    out = io.StringIO()
    printer = LinePrinter(plain_console(out, 20, False))
    printer.print("[bold]short[/]")
    assert printer.pending == ["short"] and out.getvalue() == ""  # kept, not yet printed by rich
    printer.print("a line much longer than twenty columns")  # rich wraps it: the kept line goes first
    printer.print("tab\there")
    printer.flush()
    assert out.getvalue() == "short\na line much longer \nthan twenty columns\ntab     here\n"
    colour = Console(file=io.StringIO(), width=20, force_terminal=True, color_system="standard")
    assert LinePrinter(colour).plain is False


@pytest.mark.parametrize("text", ["see cafe\u0301 menu\xa0", "e\u0301" * 30 + "\u3000", "x\u200b" * 12 + "\xa0 ",
                                  "e\u0301" * 60 + "  "])
def test_a_line_that_fits_in_cells_but_not_in_characters_loses_trailing_whitespace_as_in_rich(text: str) -> None:
    """Zero-width characters: rich drops trailing whitespace from a line longer than the width in
    characters, even when it fits in cells (`Text.rstrip_end`)."""
    width = len(text) - 2
    table = Table("a")
    table.add_row(Text(text))
    by_rich, by_us = io.StringIO(), io.StringIO()
    plain_console(by_rich, width + 4, False).print(table)
    print_table(plain_console(by_us, width + 4, False), table)
    assert by_us.getvalue() == by_rich.getvalue()
    lines_rich, lines_us = io.StringIO(), io.StringIO()
    plain_console(lines_rich, width, False).print(escape(text))
    printer = LinePrinter(plain_console(lines_us, width, False))
    printer.print(escape(text))
    printer.flush()
    assert lines_us.getvalue() == lines_rich.getvalue()


@pytest.mark.parametrize("width", [110, 60, 23])
def test_plain_lines_printed_through_the_line_printer_are_the_characters_rich_prints(width: int) -> None:
    """`print_line`: what `console.print(Text(line, style=...), soft_wrap=True)` prints (print_wrapped's lines),
    lines of any length, with trailing spaces, tabs, controls, joiners and wide characters among them."""
    rng = random.Random(width)
    for _ in range(40):
        lines = [(cell_text(rng, 30).replace("\n", rng.choice(["", "\t", "\x1b", "\u2028", "\u200d", "\n"])),
                  rng.choice(["", "bold", "dim red"])) for _ in range(rng.randint(1, 30))]
        by_rich, by_us = io.StringIO(), io.StringIO()
        rich_console, our_console = plain_console(by_rich, width), plain_console(by_us, width)
        printer = LinePrinter(our_console)
        for line, style in lines:
            rich_console.print(Text(line, style=style), soft_wrap=True)
            printer.print_line(line, style)
        printer.flush()
        assert by_us.getvalue() == by_rich.getvalue(), lines
