"""Renders a FlipReport for people: rich text, and JSON (`diff --format json`); markdown and HTML have their own."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator

from rich.console import Console
from rich.markup import escape as rich_escape
from rich.text import Text

from replay.core.display import printable
from replay.core.flips.causes import shown_verdict
from replay.files.json_text import model_json_pieces
from replay.reports.fit import PIPED_WIDTH, wrap_command
from replay.reports.plain_table import PRINTED_LINES, LinePrinter
from replay.schema.flip_evidence import RunTexts, Side
from replay.schema.flips import Flip, FlipReport

CAUSE_ORDER = ("prompt", "page", "prompt+page", "evidence_path", "model", "unknown")
CAUSE_TITLES = {
    "prompt": "the prompt moved it",
    "page": "a page moved it",
    "prompt+page": "prompt and page both changed",
    "evidence_path": "the judge read different pages",
    "model": "the model moved it (same inputs)",
    "unknown": "not enough recorded to tell",
}


SIDES: tuple[Side, Side] = ("a", "b")


def of_side(texts: RunTexts | None, side: Side) -> str:
    """Run A's or run B's text of a verdict's (empty when the evidence has none)."""
    if texts is None:
        return ""
    return texts.a if side == "a" else texts.b


def by_cause(report: FlipReport) -> list[tuple[str, list[Flip]]]:
    return [(c, [f for f in report.flips if f.primary_cause == c]) for c in CAUSE_ORDER
            if any(f.primary_cause == c for f in report.flips)]


def _gold(flip: Flip) -> str:
    if flip.gold is None:
        return ""
    who = {"a": "A right", "b": "B right", "neither": "neither right"}[flip.right or "neither"]
    return f"gold {flip.gold}: {who}"


def _counts_line(report: FlipReport) -> str:
    parts = [f"{report.paired} paired", f"{len(report.flips)} flipped"]
    parts += [f"{c} {n}" for c, n in report.counts.items()]
    parts.append(f"{len(report.held_despite_page_change)} held despite a page change")
    parts.append(f"{len(report.unpaired)} unpaired")
    return " · ".join(parts)


def _prompt_line(report: FlipReport) -> str:
    p = report.prompt
    head = f"prompt {p.a.name} ({(p.a.sha256 or '?')[:8]}) → {p.b.name} ({(p.b.sha256 or '?')[:8]})"
    if p.changed is False:
        return head + ": unchanged"
    bits = []
    if p.rules_added:
        bits.append("+rules " + ", ".join(p.rules_added))
    if p.rules_removed:
        bits.append("-rules " + ", ".join(p.rules_removed))
    n = len(p.sections_added) + len(p.sections_removed) + len(p.sections_changed)
    if n:
        bits.append("1 section differs" if n == 1 else f"{n} sections differ")
    return head + (": " + "; ".join(bits) if bits else "")


# --------------------------------------------------------------------------- text


def _t(text: str | None) -> str:
    """A data string for the rich console: control characters shown as escapes, markup escaped."""
    return rich_escape(printable(text or ""))


def _controlled_lines(report: FlipReport) -> list[str]:
    """Which other runs the causes rest on, and why each was used (one line each)."""
    out = []
    for c in report.controlled_runs:
        found = "given with --with" if c.found == "given" else "found as a sibling folder"
        out.append(f"{c.why} [{found}: {c.path}]")
    return out


def render_text(report: FlipReport, *, color: bool = False, width: int | None = PIPED_WIDTH) -> str:
    out = io.StringIO()
    write_text(report, out.write, color=color, width=width)
    return out.getvalue()


class _Handed(io.StringIO):
    """A text file (as a `StringIO` is to rich: UTF-8, no terminal) that hands each piece written to it on,
    keeping none."""

    def __init__(self, write: Callable[[str], object]) -> None:
        super().__init__()
        self._write = write

    def write(self, text: str) -> int:
        self._write(text)
        return len(text)


def write_text(report: FlipReport, write: Callable[[str], object], *, color: bool = False,
               width: int | None = PIPED_WIDTH) -> None:
    """`render_text`'s characters, handed to `write` a few hundred lines at a time as they are laid out
    (a report of thousands of flips is never held whole). `width`: the columns to fit (None: the terminal's);
    long lines wrap at words, commands with `\\` continuations."""
    console = Console(file=_Handed(write), width=width, force_terminal=color, no_color=not color, highlight=False,
                      color_system="standard" if color else None)
    lines = LinePrinter(console)
    for note in report.notes:
        lines.print(f"[bold yellow]{_t(note)}[/]", hang=2)
    lines.print(f"[bold]judge-replay diff[/]  {_t(report.run_a)} → {_t(report.run_b)}", hang=2)
    if _prompt_line(report):
        lines.print("  " + _t(_prompt_line(report)), hang=4)
    if report.controlled_runs:
        lines.print("  other runs used to tell the causes apart:")
        for line in _controlled_lines(report):
            lines.print("    " + _t(line), hang=6)
    for cause, flips in by_cause(report):
        lines.print()
        lines.print(f"[bold]{cause}[/] ({len(flips)}): {CAUSE_TITLES[cause]}", hang=2)
        for f in flips:
            gold = f"  [dim]{_t(_gold(f))}[/]" if f.gold else ""
            lines.print(f"  {_t(f.file)} [bold]{_t(f.id)}[/]  "
                        f"{shown_verdict(f.verdict_a)} → {shown_verdict(f.verdict_b)}{gold}", hang=4)
            lines.print(f"      {_t(f.summary)}", hang=6)
    if report.held_despite_page_change:
        lines.print()
        lines.print(f"[bold]held despite a page change[/] ({len(report.held_despite_page_change)})")
        elsewhere: dict[str, int] = {}
        for h in report.held_despite_page_change:
            if h.where == "page changed elsewhere":  # listed one by one only when the change came near the claim
                elsewhere[h.url] = elsewhere.get(h.url, 0) + 1
                continue
            lines.print(f"  {_t(h.file)} {_t(h.id)}  {h.verdict}  "
                        f"({_t(h.url)}: {_t(h.where)})", hang=4)
        for url, n in sorted(elsewhere.items()):
            lines.print(f"  {n} claim(s) on {_t(url)}: the page changed away from their values and quotes", hang=4)
    if report.unpaired:
        lines.print()
        lines.print(f"[bold]unpaired[/] ({len(report.unpaired)})")
        for u in report.unpaired:
            lines.print(f"  {_t(u.file)} {_t(u.id)}  only in {u.only_in.upper()}", hang=4)
    if report.confirm_commands:
        lines.print()
        lines.print("[bold]to confirm causes, record the missing controlled runs:[/]")
        for cmd in report.confirm_commands:
            for line in wrap_command(printable(cmd), console.width, indent=2):
                lines.print_text(Text(line))
    lines.print()
    lines.print(_counts_line(report), hang=2)
    lines.flush()


# --------------------------------------------------------------------------- json


def render_json(report: FlipReport) -> str:
    """The report's JSON: {run_a, run_b, paired, flips: [...]} first, then the other fields (`FlipReport`)."""
    return "".join(json_pieces(report))


def json_pieces(report: FlipReport) -> Iterator[str]:
    """`render_json`'s text in whole lines, each flip's dumped as it comes (`files.json_text.dump_json_pieces`)."""
    return model_json_pieces(report, "flips")


_PIECE_CHARS = 1 << 16
"""Characters of a report piece past which it is handed on (`_joined`)."""


def _joined(parts: Iterable[str], sep: str = "\n") -> Iterator[str]:
    """`sep.join(parts)` in pieces of PRINTED_LINES parts or about _PIECE_CHARS characters (each piece after the
    first starting with `sep`), made as the parts come."""
    batch: list[str] = []
    size = 0
    first = True
    for part in parts:
        batch.append(part)
        size += len(part)
        if len(batch) >= PRINTED_LINES or size >= _PIECE_CHARS:
            yield ("" if first else sep) + sep.join(batch)
            first, batch, size = False, [], 0
    if batch or first:
        yield ("" if first else sep) + sep.join(batch)
