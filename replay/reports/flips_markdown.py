"""The flip report as markdown (a pull request comment)."""

from __future__ import annotations

from collections.abc import Iterator

from replay.core.display import printable, printable_block
from replay.core.flips.causes import shown_verdict
from replay.reports.flips import (
    CAUSE_ORDER,
    SIDES,
    _controlled_lines,
    _counts_line,
    _gold,
    _joined,
    _prompt_line,
    of_side,
)
from replay.reports.markdown import markdown_cell, markdown_html, markdown_text
from replay.schema.flips import Flip, FlipReport

# --------------------------------------------------------------------------- markdown


def _md(text: str | None) -> str:
    """A data string for markdown prose, on one line, rendering as itself (`reports.markdown`)."""
    return markdown_text(text or "")


def _code(text: str | None) -> str:
    """A data string as an inline code span, fenced with more backticks than it holds."""
    text = printable(text or "").replace("\n", " ").replace("|", "\\|")
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str, lang: str = "") -> str:
    text = printable_block(text)
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def render_markdown(report: FlipReport) -> str:
    return "".join(markdown_pieces(report))


def markdown_pieces(report: FlipReport) -> Iterator[str]:
    """`render_markdown`'s text in pieces (each cut before a line break), each flip's lines made as it comes."""
    return _joined(_markdown_lines(report))


def _markdown_lines(report: FlipReport) -> Iterator[str]:
    yield from [f"## judge-replay diff: {_code(report.run_a)} → {_code(report.run_b)}", ""]
    yield from [f"> **{_md(note)}**\n" for note in report.notes]
    if _prompt_line(report):
        yield from [_md(_prompt_line(report)), ""]
    yield from [_counts_line(report), ""]
    if report.controlled_runs:
        yield from ["Other runs used to tell the causes apart:", ""]
        yield from [f"- {_md(line)}" for line in _controlled_lines(report)]
        yield ""
    if report.flips:
        yield from ["| claim | A | B | cause | gold | why |", "|---|---|---|---|---|---|"]
        for f in sorted(report.flips, key=lambda f: (CAUSE_ORDER.index(f.primary_cause), f.file, f.id)):
            yield (f"| {_code(f.file)} {_code(f.id)} | {shown_verdict(f.verdict_a)} | {shown_verdict(f.verdict_b)} "
                   f"| **{f.primary_cause}** | {markdown_cell(_gold(f))} | {markdown_cell(f.summary)} |")
        yield ""
        yield from ["### Details", ""]
        for f in report.flips:
            yield from _markdown_details(f)
    else:
        yield from ["No verdict moved.", ""]
    if report.held_despite_page_change:
        yield from ["### Held despite a page change", ""]
        yield from (f"- {_code(h.file)} {_code(h.id)} stayed **{h.verdict}**: {_md(h.url)} ({_md(h.where)})"
                    for h in report.held_despite_page_change)
        yield ""
    if report.unpaired:
        yield from ["### Unpaired", ""]
        yield from [f"- {_code(u.file)} {_code(u.id)} only in {u.only_in.upper()}" for u in report.unpaired]
        yield ""
    if report.confirm_commands:
        yield from ["### To confirm causes", "", _fence("\n".join(report.confirm_commands), "sh"), ""]


def _markdown_details(f: Flip) -> list[str]:
    ev = f.evidence
    out = [f"<details><summary><code>{markdown_html(f.id)}</code> ({markdown_html(f.file)}): "
           f"{shown_verdict(f.verdict_a)} → {shown_verdict(f.verdict_b)}, <b>{f.primary_cause}</b></summary>", "",
           f"{_md(f.summary)}", ""]
    if ev.claim:
        out += [f"Claim: {_md(ev.claim)}", ""]
    for side in SIDES:
        verdict = f.verdict_a if side == "a" else f.verdict_b
        rule = of_side(ev.rules, side)
        error = ev.no_verdict.error if ev.no_verdict and ev.no_verdict.side == side else None
        url = of_side(ev.evidence_urls, side)
        out.append(f"**{side.upper()}**: {shown_verdict(verdict)}" + (f": {_md(error)}" if error else "")
                   + (f" (rule {_md(rule)})" if rule else "") + (f", {_md(url)}" if url else ""))
        quote = of_side(ev.quotes, side)
        out += ["", _fence(quote) if quote else "_no quote_", ""]
    for page in ev.pages:
        sha = f"sha {(page.sha256_a or 'none')[:8]} → {(page.sha256_b or 'none')[:8]}"
        out.append(f"Page {_md(page.url)}: {sha}" + (f"; {_md(page.note)}" if page.note else ""))
        flags = [f"A's quote in B's page: {page.quote_a_in_b}" if page.quote_a_in_b is not None else "",
                 f"B's quote in A's page: {page.quote_b_in_a}" if page.quote_b_in_a is not None else ""]
        if any(flags):
            out.append("; ".join(x for x in flags if x))
        out.append("")
        if page.diff:
            out += [_fence(page.diff, "diff"), ""]
    out += ["</details>", ""]
    return out
