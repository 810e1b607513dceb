"""The adjudication panels printed without rich's layout (a pipe, a file) are the characters rich prints."""

import io
import random

import pytest
from rich.console import Console

from replay.reports.tables import FieldPanel, console_for, print_panels

COMMON = ["gpt-4o", "128,000", "tokens", "the", "context", "window", "of", "`o4-mini`", "|", "—", "·", "…", "≠",
          "*", "`", "\\", "[", "]", "  ", "[bold]not markup[/bold]", ":smile:", "\x1b[31mred"]
RARE = ["https://learn.microsoft.com/azure/ai-services/openai/concepts/models?tabs=global-standard%2Cstandard-chat",
        "a" * 70, "b" * 200, "概要", "数据区域", "emoji🙂", "e\u0301", "x\ty", "\u2028", "end\n"]


def word(rng: random.Random) -> str:
    return rng.choice(RARE if rng.random() < 0.02 else COMMON)
LABELS = ["claim:", "gold:", "judge:", "evidence:", "quote:", "reason:"]


def text(rng: random.Random, lines: int = 1, words: int = 30) -> str:
    out = []
    for _ in range(rng.randint(1, lines)):
        out.append((" " * rng.choice([0, 0, 1, 4])) + " ".join(word(rng) for _ in range(rng.randint(0, words))))
    return "\n".join(out)


def panel(rng: random.Random) -> FieldPanel:
    rows = [(label, text(rng, lines=3)) for label in rng.sample(LABELS, rng.randint(1, len(LABELS)))]
    body = text(rng, lines=8, words=40) if rng.random() < 0.8 else None
    return FieldPanel(text(rng, words=rng.choice([3, 12, 40])), rows, text(rng, words=15), body,
                      rng.choice(["red", "yellow"]))


def console(file: io.StringIO, width: int) -> Console:
    """What `console_for` gives for a file that is no terminal, at another width."""
    return Console(file=file, width=width, no_color=True, highlight=False, soft_wrap=True)


def by_rich(panels: list[FieldPanel], width: int) -> str:
    out = io.StringIO()
    c = console(out, width)
    for p in panels:
        c.print(p.rich(), soft_wrap=False)
    return out.getvalue()


def by_print_panels(panels: list[FieldPanel], width: int) -> str:
    out = io.StringIO()
    print_panels(console(out, width), panels)
    return out.getvalue()


@pytest.mark.parametrize("width", [160, 100, 61, 40])
def test_panels_laid_out_directly_are_what_rich_prints(width):
    rng = random.Random(width)
    panels = [panel(rng) for _ in range(150)]
    c = console(io.StringIO(), width)
    laid_out = [p for p in panels if p.plain(c, {}) is not None]
    assert len(laid_out) > 40  # most panels take the direct layout: the comparison is not rich against rich
    for p in panels:  # one at a time, so that a failure names the panel
        assert by_print_panels([p], width) == by_rich([p], width), p


def test_a_typical_disagreement_is_laid_out_without_rich():
    p = FieldPanel("docs/a.md · a-1 — FN: gold wrong (expects not_grounded), judge grounded",
                   [("claim:", "GPT-4.1 offers a 200k+ token context window.  [capability]"), ("gold:", "wrong"),
                    ("quote:", "\"" + "a long quote " * 20 + "\" — found in the recorded page")],
                   "page region of https://learn.microsoft.com/x: around the quote (line 3)",
                   ">    3 | | gpt-4.1 | 1,047,576 | 32,768 |\n     4 | " + "wide table cell " * 12, "red")
    assert p.plain(console_for(io.StringIO()), {}) is not None
    assert by_print_panels([p], 160) == by_rich([p], 160)


def test_a_terminal_gets_rich_styles():
    out = io.StringIO()
    c = Console(file=out, width=100, force_terminal=True, color_system="standard", highlight=False, soft_wrap=True)
    print_panels(c, [FieldPanel("title", [("claim:", "value")], "note", "body", "red")])
    assert "\x1b[" in out.getvalue()  # styled by rich, not laid out as plain characters


def test_a_value_that_fits_in_cells_but_not_in_characters_is_laid_out_as_rich_does() -> None:
    p = FieldPanel("title", [("claim:", "see cafe\u0301 menu\xa0" + "e\u0301" * 70 + "\u3000")], "note", None, "red")
    for width in (60, 100, 160):
        assert by_print_panels([p], width) == by_rich([p], width)


@pytest.mark.parametrize("title", ["docs/kb/article-0000.md · kb0000-07 — FN: gold wrong (expects not_grounded), judge grounded",
                                   "概要 " * 30, "a" * 75 + "概要", "x" * 76, "x" * 77])
@pytest.mark.parametrize("width", [80, 81, 40])
def test_a_title_wider_than_the_box_is_cut_as_rich_cuts_it_without_rich(title: str, width: int) -> None:
    p = FieldPanel(title, [("claim:", "a claim"), ("gold:", "wrong")], "a note", "a body", "red")
    c = console(io.StringIO(), width)
    assert p.plain(c, {}) is not None
    assert by_print_panels([p], width) == by_rich([p], width)
