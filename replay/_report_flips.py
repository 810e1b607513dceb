"""Renders a FlipReport for people: rich text, markdown (PR comment), JSON (SPEC shape), one HTML page."""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape as rich_escape

from ._flips import shown_verdict
from ._io import model_json_pieces, printable
from ._render import markdown_cell
from ._page_diff import side_by_side, word_diff
from ._plain_table import PRINTED_LINES, LinePrinter
from ._records import Flip, FlipReport

CAUSE_ORDER = ("prompt", "page", "prompt+page", "evidence_path", "model", "unknown")
CAUSE_TITLES = {
    "prompt": "the prompt moved it",
    "page": "a page moved it",
    "prompt+page": "prompt and page both changed",
    "evidence_path": "the judge read different pages",
    "model": "the model moved it (same inputs)",
    "unknown": "not enough recorded to tell",
}


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
    if not p:
        return ""
    a, b = p.get("a", {}), p.get("b", {})
    head = f"prompt {a.get('name')} ({(a.get('sha256') or '?')[:8]}) → {b.get('name')} ({(b.get('sha256') or '?')[:8]})"
    if p.get("changed") is False:
        return head + ": unchanged"
    bits = []
    if p.get("rules_added"):
        bits.append("+rules " + ", ".join(p["rules_added"]))
    if p.get("rules_removed"):
        bits.append("-rules " + ", ".join(p["rules_removed"]))
    n = len(p.get("sections_added", [])) + len(p.get("sections_removed", [])) + len(p.get("sections_changed", []))
    if n:
        bits.append(f"{n} sections differ")
    return head + (": " + "; ".join(bits) if bits else "")


# --------------------------------------------------------------------------- text


def _t(text: str | None) -> str:
    """A data string for the rich console: control characters shown as escapes, markup escaped."""
    return rich_escape(printable(text or ""))


def _controlled_lines(report: FlipReport) -> list[str]:
    """Which other runs the causes rest on, and why each was used (one line each)."""
    out = []
    for c in report.controlled_runs:
        found = "given with --with" if c.get("found") == "given" else "found as a sibling folder"
        out.append(f"{c.get('why')} [{found}: {c.get('path')}]")
    return out


def render_text(report: FlipReport, *, color: bool = False, width: int = 110) -> str:
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


def write_text(report: FlipReport, write: Callable[[str], object], *, color: bool = False, width: int = 110) -> None:
    """`render_text`'s characters, handed to `write` a few hundred lines at a time as they are laid out
    (a report of thousands of flips is never held whole)."""
    console = Console(file=_Handed(write), width=width, force_terminal=color, no_color=not color, highlight=False,
                      color_system="standard" if color else None)
    lines = LinePrinter(console)
    for note in report.notes:
        lines.print(f"[bold yellow]{_t(note)}[/]", soft_wrap=True)
    lines.print(f"[bold]judge-replay diff[/]  {_t(report.run_a)} → {_t(report.run_b)}", soft_wrap=True)
    if _prompt_line(report):
        lines.print("  " + _t(_prompt_line(report)))
    if report.controlled_runs:
        lines.print("  other runs used to tell the causes apart:")
        for line in _controlled_lines(report):
            lines.print("    " + _t(line), soft_wrap=True)
    for cause, flips in by_cause(report):
        lines.print()
        lines.print(f"[bold]{cause}[/] ({len(flips)}): {CAUSE_TITLES[cause]}")
        for f in flips:
            gold = f"  [dim]{_t(_gold(f))}[/]" if f.gold else ""
            lines.print(f"  {_t(f.file)} [bold]{_t(f.id)}[/]  "
                          f"{shown_verdict(f.verdict_a)} → {shown_verdict(f.verdict_b)}{gold}")
            lines.print(f"      {_t(f.summary)}", soft_wrap=True)
    if report.held_despite_page_change:
        lines.print()
        lines.print(f"[bold]held despite a page change[/] ({len(report.held_despite_page_change)})")
        elsewhere: dict[str, int] = {}
        for h in report.held_despite_page_change:
            if h["where"] == "page changed elsewhere":  # listed one by one only when the change came near the claim
                elsewhere[h["url"]] = elsewhere.get(h["url"], 0) + 1
                continue
            lines.print(f"  {_t(h['file'])} {_t(h['id'])}  {h['verdict']}  "
                          f"({_t(h['url'])}: {_t(h['where'])})", soft_wrap=True)
        for url, n in sorted(elsewhere.items()):
            lines.print(f"  {n} claim(s) on {_t(url)}: the page changed away from their values and quotes",
                          soft_wrap=True)
    if report.unpaired:
        lines.print()
        lines.print(f"[bold]unpaired[/] ({len(report.unpaired)})")
        for u in report.unpaired:
            lines.print(f"  {_t(u['file'])} {_t(u['id'])}  only in {u['only_in'].upper()}")
    if report.confirm_commands:
        lines.print()
        lines.print("[bold]to confirm causes, record the missing controlled runs:[/]")
        for cmd in report.confirm_commands:
            lines.print("  " + _t(cmd), soft_wrap=True)
    lines.print()
    lines.print(_counts_line(report))
    lines.flush()


# --------------------------------------------------------------------------- markdown


def _md(text: str | None) -> str:
    """A data string for markdown prose or a table cell: terminal controls escaped, HTML escaped (so a
    claim cannot inject markup into a pull-request comment), `|` escaped, on one line."""
    return markdown_cell(text or "")


def _code(text: str | None) -> str:
    """A data string as an inline code span, fenced with more backticks than it holds."""
    text = printable(text or "").replace("\n", " ").replace("|", "\\|")
    ticks = "`"
    while ticks in text:
        ticks += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _fence(text: str, lang: str = "") -> str:
    text = printable(text)
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
                   f"| **{f.primary_cause}** | {_md(_gold(f))} | {_md(f.summary)} |")
        yield ""
        yield from ["### Details", ""]
        for f in report.flips:
            yield from _markdown_details(f)
    else:
        yield from ["No verdict moved.", ""]
    if report.held_despite_page_change:
        yield from ["### Held despite a page change", ""]
        yield from (f"- {_code(h['file'])} {_code(h['id'])} stayed **{h['verdict']}**: {_md(h['url'])} ({_md(h['where'])})"
                    for h in report.held_despite_page_change)
        yield ""
    if report.unpaired:
        yield from ["### Unpaired", ""]
        yield from [f"- {_code(u['file'])} {_code(u['id'])} only in {u['only_in'].upper()}" for u in report.unpaired]
        yield ""
    if report.confirm_commands:
        yield from ["### To confirm causes", "", _fence("\n".join(report.confirm_commands), "sh"), ""]


def _markdown_details(f: Flip) -> list[str]:
    ev = f.evidence
    out = [f"<details><summary><code>{_md(f.id)}</code> ({_md(f.file)}): "
           f"{shown_verdict(f.verdict_a)} → {shown_verdict(f.verdict_b)}, <b>{f.primary_cause}</b></summary>", "",
           f"{_md(f.summary)}", ""]
    if ev.get("claim"):
        out += [f"Claim: {_md(ev['claim'])}", ""]
    for side in ("a", "b"):
        verdict = f.verdict_a if side == "a" else f.verdict_b
        rule = ev.get("rules", {}).get(side)
        error = ev["no_verdict"]["error"] if ev.get("no_verdict", {}).get("side") == side else None
        out.append(f"**{side.upper()}**: {shown_verdict(verdict)}" + (f": {_md(error)}" if error else "")
                   + (f" (rule {_md(rule)})" if rule else "")
                   + (f", {_md(ev['evidence_urls'][side])}" if ev.get("evidence_urls", {}).get(side) else ""))
        quote = ev.get("quotes", {}).get(side)
        out += ["", _fence(quote) if quote else "_no quote_", ""]
    for page in ev.get("pages", []):
        sha = f"sha {(page.get('sha256_a') or 'none')[:8]} → {(page.get('sha256_b') or 'none')[:8]}"
        out.append(f"Page {_md(page['url'])}: {sha}" + (f"; {_md(page['note'])}" if page.get("note") else ""))
        flags = [f"A's quote in B's page: {page['quote_a_in_b']}" if "quote_a_in_b" in page else "",
                 f"B's quote in A's page: {page['quote_b_in_a']}" if "quote_b_in_a" in page else ""]
        if any(flags):
            out.append("; ".join(x for x in flags if x))
        out.append("")
        if page.get("diff"):
            out += [_fence(page["diff"], "diff"), ""]
    out += ["</details>", ""]
    return out


# --------------------------------------------------------------------------- json


def render_json(report: FlipReport) -> str:
    """SPEC's shape first ({run_a, run_b, paired, flips: [...]}), then our extra keys."""
    return "".join(json_pieces(report))


def json_pieces(report: FlipReport) -> Iterator[str]:
    """`render_json`'s text in whole lines, each flip's dumped as it comes (`_io.dump_json_pieces`)."""
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


# --------------------------------------------------------------------------- html

_CSS = """
:root{--a:#b42318;--b:#1f6feb;--ink:#1d2127;--mute:#5b6470;--line:#d9dee4;--bg:#f6f8fa;--del:#ffebe9;
--delw:#ffc1bc;--ins:#e6ffec;--insw:#abf2bc}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:#fff}
header{padding:24px 32px 16px;border-bottom:1px solid var(--line);background:var(--bg)}
h1{font-size:22px;margin:0 0 6px}
h1 code{font-size:20px}
.meta{color:var(--mute);margin:2px 0}
.note{color:#9a6700;background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:4px 10px;margin:6px 0}
.chips{display:flex;flex-wrap:wrap;gap:8px;margin-top:12px}
.chip{border:1px solid var(--line);border-radius:999px;padding:2px 12px;background:#fff;text-decoration:none;color:var(--ink)}
.chip b{margin-right:4px}
main{padding:8px 32px 40px}
h2{font-size:18px;margin:28px 0 8px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h2 small{color:var(--mute);font-weight:normal}
article{border:1px solid var(--line);border-radius:8px;margin:14px 0;overflow:hidden}
article>header{padding:10px 16px;background:#fff;border-bottom:1px solid var(--line)}
.fid{font-weight:700;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}
.file{color:var(--mute);margin-left:8px}
.verdicts{float:right}
.v{display:inline-block;border-radius:4px;padding:0 8px;font-size:13px;font-weight:600;color:#fff}
.v-grounded{background:#1a7f37}.v-not_grounded{background:#cf222e}.v-source_silent{background:#6e7781}.v-none{background:#999}
.gold{font-size:13px;color:var(--mute);margin-left:8px}
.summary{margin:6px 0 0;font-weight:500}
.body{padding:12px 16px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.side{border:1px solid var(--line);border-radius:6px;padding:8px 12px;min-width:0}
.side h4{margin:0 0 4px;font-size:13px;text-transform:uppercase;letter-spacing:.04em}
.side.a h4{color:var(--a)}.side.b h4{color:var(--b)}
blockquote{margin:6px 0;padding:6px 10px;background:var(--bg);border-left:3px solid var(--line);
font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
.reason{color:var(--mute);font-size:13px}
.small{font-size:13px;color:var(--mute);overflow-wrap:anywhere}
h3{font-size:14px;margin:14px 0 6px}
table.diff{width:100%;border-collapse:collapse;table-layout:fixed;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace}
table.diff td{vertical-align:top;padding:1px 6px;white-space:pre-wrap;overflow-wrap:anywhere;border-bottom:1px solid #f0f2f4}
table.diff td.n{width:44px;color:#8c959f;text-align:right;user-select:none;background:#fafbfc}
table.diff th{font:600 12px system-ui,sans-serif;text-align:left;padding:4px 6px;background:var(--bg)}
tr.hunk td{background:#ddf4ff;color:#57606a}
td.del{background:var(--del)}td.ins{background:var(--ins)}
td.del del{background:var(--delw);text-decoration:none}td.ins ins{background:var(--insw);text-decoration:none}
.flags{font-size:13px;margin:4px 0}
.ok{color:#1a7f37}.bad{color:#cf222e}
ul.tight{margin:4px 0;padding-left:20px}
details>summary{cursor:pointer;color:var(--mute);font-size:13px}
pre.cmd{background:var(--bg);padding:10px;border-radius:6px;white-space:pre-wrap;font-size:12px}
"""


def html_text(value: Any) -> str:
    """A data string for HTML, in every HTML report: terminal controls made visible and secrets redacted
    (`printable`, on the whole string), then HTML-escaped."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


_e = html_text


def _badge(verdict: str | None) -> str:
    return f'<span class="v v-{_e(verdict or "none")}">{_e(shown_verdict(verdict))}</span>'


def anchor(flip: Flip) -> str:
    """The HTML id of a flip's article (file and claim id, made safe)."""
    import re

    return "flip-" + re.sub(r"[^A-Za-z0-9_-]+", "-", f"{flip.file}--{flip.id}").strip("-")


def _diff_table(unified: str) -> str:
    rows = ['<table class="diff"><colgroup><col style="width:44px"><col><col style="width:44px"><col></colgroup>',
            "<tr><th></th><th>old (A)</th><th></th><th>new (B)</th></tr>"]
    for r in side_by_side(unified):
        if r.kind == "hunk":
            rows.append(f'<tr class="hunk"><td class="n">⋯</td><td colspan="3">{_e(r.old)}</td></tr>')
            continue
        old, new = _e(r.old or ""), _e(r.new or "")
        if r.kind == "change":
            # printable on whole lines first: a secret split across diff words is still redacted
            pa, pb = word_diff(printable(r.old or ""), printable(r.new or ""))
            old = "".join(f"<del>{_e(t)}</del>" if ch else _e(t) for t, ch in pa)
            new = "".join(f"<ins>{_e(t)}</ins>" if ch else _e(t) for t, ch in pb)
        cls_old = "del" if r.kind in ("change", "delete") else ""
        cls_new = "ins" if r.kind in ("change", "insert") else ""
        rows.append(f'<tr><td class="n">{r.old_no or ""}</td><td class="{cls_old}">{old}</td>'
                    f'<td class="n">{r.new_no or ""}</td><td class="{cls_new}">{new}</td></tr>')
    rows.append("</table>")
    return "\n".join(rows)


def _flag(label: str, value: bool | None) -> str:
    if value is None:
        return ""
    cls, word = ("ok", "yes") if value else ("bad", "no")
    return f'{_e(label)}: <b class="{cls}">{word}</b>'


def _html_flip(f: Flip) -> str:
    ev = f.evidence
    gold = f'<span class="gold">{_e(_gold(f))}</span>' if f.gold else ""
    parts = [f'<article id="{_e(anchor(f))}"><header>',
             f'<span class="verdicts">{_badge(f.verdict_a)} → {_badge(f.verdict_b)}{gold}</span>',
             f'<span class="fid">{_e(f.id)}</span><span class="file">{_e(f.file)}</span>',
             f'<p class="summary">{_e(f.summary)}</p></header><div class="body">']
    if ev.get("claim"):
        parts.append(f'<p class="small">Claim: {_e(ev["claim"])}</p>')
    parts.append('<div class="cols">')
    for side in ("a", "b"):
        verdict = f.verdict_a if side == "a" else f.verdict_b
        rule = ev.get("rules", {}).get(side)
        quote = ev.get("quotes", {}).get(side)
        url = ev.get("evidence_urls", {}).get(side)
        parts.append(f'<div class="side {side}"><h4>Run {side.upper()} · {_badge(verdict)}'
                     + (f" · rule {_e(rule)}" if rule else "") + "</h4>")
        parts.append(f"<blockquote>{_e(quote)}</blockquote>" if quote else '<p class="small">no quote</p>')
        if url:
            parts.append(f'<div class="small">{_e(url)}</div>')
        if ev.get("reasons", {}).get(side):
            parts.append(f'<div class="reason">{_e(ev["reasons"][side])}</div>')
        parts.append("</div>")
    parts.append("</div>")
    prompt = ev.get("prompt", {})
    if prompt.get("changed"):
        items = []
        for key in ("rule_a", "rule_b"):
            r = prompt.get(key)
            if r:
                where = "both" if r["in_a"] and r["in_b"] else "only B" if r["in_b"] else "only A" if r["in_a"] else "neither"
                items.append(f"{key[-1].upper()} cites {_e(r['rule'])} ({_e(r.get('title') or '?')}): defined in {where}")
        items.append('the prompt changed: <a href="#prompt">what differs</a>')
        parts.append("<h3>Prompt</h3><ul class=\"tight\">" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    for page in ev.get("pages", []):
        sha = f"sha {(page.get('sha256_a') or 'none')[:8]} → {(page.get('sha256_b') or 'none')[:8]}"
        parts.append(f'<h3>Page <span class="small">{_e(page["url"])}</span></h3>')
        flags = [f"<span>{_e(sha)}</span>", _flag("A's quote on B's page", page.get("quote_a_in_b")),
                 _flag("B's quote on A's page", page.get("quote_b_in_a"))]
        if page.get("note"):
            flags.append(f"<span>{_e(page['note'])}</span>")
        parts.append('<div class="flags">' + " · ".join(x for x in flags if x) + "</div>")
        if page.get("diff"):
            parts.append(_diff_table(page["diff"]))
    path = ev.get("path", {})
    if path.get("differs"):
        parts.append("<h3>Evidence path</h3><div class=\"cols\">")
        for side in ("a", "b"):
            p = path[side]
            items = [f"read {_e(u)}" for u in p["read"]] + [f"searched “{_e(q)}”" for q in p["searched"]]
            parts.append(f'<div class="side {side}"><h4>Run {side.upper()}</h4><ul class="tight">'
                         + "".join(f"<li class=\"small\">{i}</li>" for i in items) + "</ul></div>")
        parts.append("</div>")
    if f.primary_cause == "model" or ev.get("repeats") or ev.get("confirmations"):
        m = ev.get("model", {})
        items = [f"A: {_e(m.get('a', {}).get('model'))} {_e(_versions(m.get('a', {})))}",
                 f"B: {_e(m.get('b', {}).get('model'))} {_e(_versions(m.get('b', {})))}"]
        for side, rep in ev.get("repeats", {}).items():
            items.append(f"repeats ({_e(side)}): {rep['n']} runs {_e(', '.join(rep['runs']))}: "
                         f"{_e(rep['verdicts'])}, flip rate {rep['flip_rate']:.2f}")
        for c in ev.get("confirmations", []):
            items.append(f"confirmed by {_e(c['run'])}: {_e(c['combination'])} gives {_e(c['verdict'])} → "
                         f"{_e(c['points_to'])}")
        parts.append("<h3>Model and controlled runs</h3><ul class=\"tight\">"
                     + "".join(f"<li class=\"small\">{i}</li>" for i in items) + "</ul>")
    parts.append("</div></article>")
    return "\n".join(parts)


def _prompt_items(prompt: dict[str, Any]) -> list[str]:
    """The run-level prompt differences, as HTML list items."""
    items = []
    if prompt.get("rules_added"):
        items.append("rules added: " + _e(", ".join(f"{k} {v}" for k, v in prompt["rules_added"].items())))
    if prompt.get("rules_removed"):
        items.append("rules removed: " + _e(", ".join(prompt["rules_removed"])))
    if prompt.get("rules_changed"):
        items.append("rules reworded: " + _e(", ".join(prompt["rules_changed"])))
    for key, label in (("sections_added", "sections added"), ("sections_removed", "sections removed")):
        if prompt.get(key):
            items.append(f"{label}: " + _e("; ".join(prompt[key])))
    if prompt.get("sections_changed"):
        items.append("sections changed: " + _e("; ".join(c["heading"] for c in prompt["sections_changed"])))
    return items


def _versions(side: dict[str, Any]) -> str:
    v = side.get("versions") or {}
    return "(" + ", ".join(f"{k} {v[k]}" for k in sorted(v)) + ")" if v else ""


def render_html(report: FlipReport) -> str:
    """One self-contained page: inline CSS, no script, no external asset."""
    return "".join(html_pieces(report))


def html_pieces(report: FlipReport) -> Iterator[str]:
    """`render_html`'s text in pieces (each cut before a line break), each flip's article made as it comes."""
    title = f"judge-replay diff {report.run_a} → {report.run_b}"
    parts = _joined(_html_parts(report))
    yield (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
           f'<meta name="viewport" content="width=device-width,initial-scale=1"><title>{_e(title)}</title>'
           f"<style>{_CSS}</style></head><body>\n") + next(parts)
    yield from parts
    yield "\n</body></html>\n"


def _html_parts(report: FlipReport) -> Iterator[str]:
    """The page's body, part by part (the page joins them with line breaks)."""
    groups = by_cause(report)
    chips = "".join(f'<a class="chip" href="#cause-{_e(c.replace("+", "-"))}"><b>{len(fs)}</b>{_e(c)}</a>'
                    for c, fs in groups)
    yield f'<header><h1>Verdict flips: <code>{_e(report.run_a)}</code> → <code>{_e(report.run_b)}</code></h1>'
    yield from (f'<p class="note"><b>{_e(note)}</b></p>' for note in report.notes)
    if _prompt_line(report):
        yield (f'<p class="meta">{_e(_prompt_line(report))}</p>')
    runs = report.runs
    if runs:
        yield (f'<p class="meta">model A {_e(runs["a"].get("model"))} · model B {_e(runs["b"].get("model"))}</p>')
    if report.controlled_runs:
        yield ('<p class="meta">other runs used to tell the causes apart:</p><ul class="tight meta">'
                    + "".join(f"<li>{_e(line)}</li>" for line in _controlled_lines(report)) + "</ul>")
    yield (f'<p class="meta">{_e(_counts_line(report))}</p><div class="chips">{chips}</div>')
    if report.prompt.get("changed"):  # once here, not in every flip: it is the same for all of them
        yield (f'<details id="prompt" open><summary>what differs between the prompts</summary>'
                    f'<ul class="tight">{"".join(f"<li>{i}</li>" for i in _prompt_items(report.prompt))}</ul></details>')
    yield ("</header><main>")
    if not report.flips:
        yield ("<h2>No verdict moved</h2>")
    for cause, flips in groups:
        yield (f'<section id="cause-{_e(cause.replace("+", "-"))}"><h2>{_e(cause)} '
                    f"<small>({len(flips)}) {_e(CAUSE_TITLES[cause])}</small></h2>")
        yield from (_html_flip(f) for f in flips)
        yield ("</section>")
    if report.held_despite_page_change:
        yield (f"<h2>Held despite a page change <small>({len(report.held_despite_page_change)})</small></h2>"
                    "<ul>" + "".join(f"<li><b>{_e(h['id'])}</b> <span class=\"small\">{_e(h['file'])}</span> stayed "
                                     f"{_badge(h['verdict'])} — {_e(h['url'])}: {_e(h['where'])}</li>"
                                     for h in report.held_despite_page_change) + "</ul>")
    if report.unpaired:
        yield (f"<h2>Unpaired <small>({len(report.unpaired)})</small></h2><ul>"
                    + "".join(f"<li>{_e(u['file'])} <b>{_e(u['id'])}</b> only in {_e(u['only_in'].upper())}</li>"
                              for u in report.unpaired) + "</ul>")
    if report.confirm_commands:
        yield ("<h2>To confirm causes</h2><pre class=\"cmd\">" + _e("\n".join(report.confirm_commands)) + "</pre>")
    yield ("</main>")


flip_article = _html_flip
"""One flip's `<article id="{anchor(flip)}">` with its evidence, for pages that embed the flip report's detail
(the bake-off page, `_report_bakeoff`); `PAGE_CSS` is the stylesheet it needs."""
PAGE_CSS = _CSS
prompt_items = _prompt_items
