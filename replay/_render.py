"""Tables for the terminal (rich) and markdown, the score tables grade and bakeoff share, markdown escaping of data."""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ._grading import NO_VERDICT
from ._io import MAX_LISTED, listed, printable
from ._plain_table import PRINTED_LINES, Prerendered, plain_panel, plain_table_lines, shows_no_style
from ._records import VERDICTS, ClaimError, GateDecision, Scores

REPORT_WIDTH = 160
"""Terminal width assumed when the output is not a terminal (pipes, files, CI logs)."""


def console_for(file: TextIO | None = None) -> Console:
    """A console on `file` (default stdout): full width on a terminal, 160 columns and no colour elsewhere."""
    out = file or sys.stdout
    tty = out.isatty()
    return Console(file=out, width=None if tty else REPORT_WIDTH, no_color=not tty, highlight=False,
                   soft_wrap=True)


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
            body.append(Text(printable(self.body), style="cyan"))
        return Panel(Group(*body), title=escape(printable(self.title)), title_align="left",
                     border_style=self.border_style)

    def plain(self, console: Console, labels: dict[str, str]) -> str | None:
        """The characters rich prints for `rich()` on a console that shows no style (`plain_panel`), or
        None when rich must lay it out. `labels`: the labels as rich renders them (a cache)."""
        return plain_panel(console, printable(self.title), [(label, printable(value)) for label, value in self.rows],
                           printable(self.note), printable(self.body) if self.body else None, labels)


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


def ratio_text(value: float | None, digits: int = 3) -> str:
    """A ratio for people: `0.833`, or `n/a` when undefined."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def markdown_text(value: Any) -> str:
    """A data string for markdown prose: terminal-safe (`printable`), HTML from the data escaped, one line."""
    return html.escape(printable(str(value)), quote=False).replace("\n", " ")


def markdown_cell(value: Any) -> str:
    """A data string for a markdown table cell: as `markdown_text`, and its pipes escaped."""
    return markdown_text(value).replace("|", "\\|")


def markdown_code(value: Any) -> str:
    """A data string as inline markdown code: terminal-safe, one line, delimited by more backticks than it
    holds in a row (code spans show HTML as text, so none is escaped)."""
    text = printable(str(value)).replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_fence(text: str) -> str:
    """A fence for a block of data text: three backticks, or more than the longest run of them in it."""
    return "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)


@dataclass
class TextTable:
    """A table of plain strings that prints in the terminal and renders as a markdown table."""

    title: str
    columns: Sequence[str]
    rows: list[list[str]] = field(default_factory=list)
    right_from: int = 1
    """Columns from this index on are right-aligned (numbers)."""

    def rich(self) -> Table:
        """The terminal table; every cell is data, shown through `printable`."""
        table = Table(title=escape(printable(self.title)), title_justify="left", title_style="bold")
        for i, name in enumerate(self.columns):
            table.add_column(escape(printable(name)), justify="right" if i >= self.right_from else "left")
        for row in self.rows:
            table.add_row(*(Text(printable(c)) for c in row))
        return table

    def markdown(self) -> str:
        """The markdown table; every cell is data, escaped by `markdown_cell`."""
        head = "| " + " | ".join(markdown_cell(c) for c in self.columns) + " |"
        rule = "|" + "|".join("---:" if i >= self.right_from else "---" for i in range(len(self.columns))) + "|"
        body = ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in self.rows]
        return "\n".join([f"**{markdown_text(self.title)}**", "", head, rule, *body])


def headline(scores: Scores) -> str:
    """One line of a version's scores."""
    return (
        f"P {ratio_text(scores.precision)}  R {ratio_text(scores.recall)}  F1 {ratio_text(scores.f1)}  "
        f"accuracy {ratio_text(scores.accuracy)}  |  TP {scores.tp}  FP {scores.fp}  FN {scores.fn}  "
        f"TN {scores.tn}  no verdict {scores.no_verdict}  |  graded {scores.graded}  "
        f"quotes not verified {scores.quote_unverified}"
    )


def confusion_table(scores: Scores) -> TextTable:
    table = TextTable("Confusion (rows: verdict the gold label expects; columns: judge verdict)",
                      ["expected \\ judge", *VERDICTS, "no verdict"])
    for expected in VERDICTS:
        row = scores.confusion.get(expected, {})
        table.rows.append([expected, *(str(row.get(v, 0)) for v in (*VERDICTS, NO_VERDICT))])
    return table


def breakdown_table(title: str, key_name: str, breakdown: dict[str, dict[str, Any]]) -> TextTable:
    table = TextTable(title, [key_name, "graded", "P", "R", "F1", "accuracy", "TP", "FP", "FN", "TN",
                              "no verdict"])
    for key, t in breakdown.items():
        table.rows.append([
            key, str(t["graded"]), ratio_text(t["precision"]), ratio_text(t["recall"]), ratio_text(t["f1"]),
            ratio_text(t["accuracy"]), str(t["tp"]), str(t["fp"]), str(t["fn"]), str(t["tn"]),
            str(t.get("no_verdict", 0)),
        ])
    return table


def score_tables(scores: Scores) -> list[TextTable]:
    """Confusion matrix and the breakdowns by claim type and by gold failure mode."""
    return [
        confusion_table(scores),
        breakdown_table("By claim type", "claim type", scores.by_claim_type),
        breakdown_table("By gold failure mode", "mode", scores.by_mode),
    ]


def no_verdict_errors(scores: Scores) -> list[ClaimError]:
    return [e for e in scores.errors if e.kind == "no_verdict"]


def no_verdict_lines(scores: Scores) -> list[str]:
    """The claims without a verdict, grouped by claims file and error: `file: id, id — error` (raw data:
    pass each line through `printable` or `markdown_text`)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for e in no_verdict_errors(scores):
        groups.setdefault((e.file, e.judge_error or "no verdict given"), []).append(e.id)
    lines = [f"{file}: {listed(ids)} — {error}" for (file, error), ids in groups.items()]
    return lines[:MAX_LISTED] + ([f"... and {len(lines) - MAX_LISTED:,} more files (--json lists every claim)"]
                                 if len(lines) > MAX_LISTED else [])


def no_verdict_heading(scores: Scores) -> str:
    return (f"{scores.no_verdict} claim(s) without a verdict (never TP, FP or TN; FN where the gold says "
            f"outdated/wrong; against accuracy)")


def unmatched_lines(scores: Scores) -> list[str]:
    """Gold items with no result and results with no gold item, one line each (raw data, as above)."""
    lines = []
    if scores.unmatched_gold:
        lines.append(f"{len(scores.unmatched_gold)} gold item(s) have no result (graded as no verdict): "
                     + listed(scores.unmatched_gold, _file_and_id))
    if scores.unmatched_results:
        lines.append(f"{len(scores.unmatched_results)} result(s) have no gold item (not graded): "
                     + listed(scores.unmatched_results, _file_and_id))
    return lines


def _file_and_id(item: Mapping[str, str]) -> str:
    return f"{item['file']}:{item['id']}"


def gate_lines(decision: GateDecision) -> list[str]:
    """The gate decision, its reason, and the statistics behind it."""
    verdict = "ADOPT" if decision.adopt else "DO NOT ADOPT"
    noise = {True: "yes: do not read much into these differences", False: "no", None: "n/a"}[decision.within_noise]

    def delta(name: str, value: float | None, ci: tuple[float, float] | None) -> str:
        text = f"{name} {'n/a' if value is None else f'{value:+.3f}'}"
        return text + (f" (95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}])" if ci else "")

    stats = (
        f"paired on {decision.paired} gold claims: only the candidate right on {decision.only_candidate_right}, "
        f"only the baseline on {decision.only_baseline_right}; exact McNemar p="
        f"{'n/a' if decision.mcnemar_p is None else f'{decision.mcnemar_p:.3g}'}; "
        f"{delta('ΔP', decision.delta_precision, decision.delta_precision_ci)}; "
        f"{delta('ΔR', decision.delta_recall, decision.delta_recall_ci)} "
        f"(paired bootstrap, {decision.bootstrap_resamples} resamples, fixed seed)"
    )
    return [f"gate: {verdict}", decision.reason, stats, f"within noise: {noise}"]
