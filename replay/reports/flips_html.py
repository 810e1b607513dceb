"""The flip report as one self-contained HTML page."""

from __future__ import annotations

import html
from collections.abc import Iterator
from typing import Any

from replay.core.display import printable_block
from replay.core.flips.causes import shown_verdict
from replay.core.page_diff import side_by_side, word_diff
from replay.reports.flips import (
    CAUSE_TITLES,
    SIDES,
    _controlled_lines,
    _counts_line,
    _gold,
    _joined,
    _prompt_line,
    by_cause,
    of_side,
)
from replay.schema.flip_evidence import PromptComparison, RunModel
from replay.schema.flips import Flip, FlipReport

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
    (`printable_block`, on the whole string: its line breaks kept, where a quote is shown as lines), then
    HTML-escaped."""
    return html.escape(printable_block("" if value is None else str(value)), quote=True)


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
            pa, pb = word_diff(printable_block(r.old or ""), printable_block(r.new or ""))
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
    if ev.claim:
        parts.append(f'<p class="small">Claim: {_e(ev.claim)}</p>')
    parts.append('<div class="cols">')
    for side in SIDES:
        verdict = f.verdict_a if side == "a" else f.verdict_b
        rule = of_side(ev.rules, side)
        quote = of_side(ev.quotes, side)
        url = of_side(ev.evidence_urls, side)
        reason = of_side(ev.reasons, side)
        parts.append(f'<div class="side {side}"><h4>Run {side.upper()} · {_badge(verdict)}'
                     + (f" · rule {_e(rule)}" if rule else "") + "</h4>")
        parts.append(f"<blockquote>{_e(quote)}</blockquote>" if quote else '<p class="small">no quote</p>')
        if url:
            parts.append(f'<div class="small">{_e(url)}</div>')
        if reason:
            parts.append(f'<div class="reason">{_e(reason)}</div>')
        parts.append("</div>")
    parts.append("</div>")
    prompt = ev.prompt
    if prompt is not None and prompt.changed:
        items = []
        for letter, r in (("A", prompt.rule_a), ("B", prompt.rule_b)):
            if r:
                where = "both" if r.in_a and r.in_b else "only B" if r.in_b else "only A" if r.in_a else "neither"
                items.append(f"{letter} cites {_e(r.rule)} ({_e(r.title or '?')}): defined in {where}")
        items.append('the prompt changed: <a href="#prompt">what differs</a>')
        parts.append("<h3>Prompt</h3><ul class=\"tight\">" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
    for page in ev.pages:
        sha = f"sha {(page.sha256_a or 'none')[:8]} → {(page.sha256_b or 'none')[:8]}"
        parts.append(f'<h3>Page <span class="small">{_e(page.url)}</span></h3>')
        flags = [f"<span>{_e(sha)}</span>", _flag("A's quote on B's page", page.quote_a_in_b),
                 _flag("B's quote on A's page", page.quote_b_in_a)]
        if page.note:
            flags.append(f"<span>{_e(page.note)}</span>")
        parts.append('<div class="flags">' + " · ".join(x for x in flags if x) + "</div>")
        if page.diff:
            parts.append(_diff_table(page.diff))
    path = ev.path
    if path is not None and path.differs:
        parts.append("<h3>Evidence path</h3><div class=\"cols\">")
        for side, p in (("a", path.a), ("b", path.b)):
            items = [f"read {_e(u)}" for u in p.read] + [f"searched “{_e(q)}”" for q in p.searched]
            parts.append(f'<div class="side {side}"><h4>Run {side.upper()}</h4><ul class="tight">'
                         + "".join(f"<li class=\"small\">{i}</li>" for i in items) + "</ul></div>")
        parts.append("</div>")
    if f.primary_cause == "model" or ev.repeats or ev.confirmations:
        m = ev.model
        items = [f"A: {_e(m.a.model if m else None)} {_e(_versions(m.a if m else None))}",
                 f"B: {_e(m.b.model if m else None)} {_e(_versions(m.b if m else None))}"]
        rs = ev.repeats
        groups = [(name, g) for name, g in (("a_and_b", rs.a_and_b), ("a", rs.a), ("b", rs.b)) if g] if rs else []
        for name, rep in groups:
            items.append(f"repeats ({_e(name)}): {rep.n} runs {_e(', '.join(rep.runs))}: "
                         f"{_e(rep.verdicts)}, flip rate {rep.flip_rate:.2f}")
        for c in ev.confirmations:
            items.append(f"confirmed by {_e(c.run)}: {_e(c.combination)} gives {_e(c.verdict)} → "
                         f"{_e(c.points_to)}")
        parts.append("<h3>Model and controlled runs</h3><ul class=\"tight\">"
                     + "".join(f"<li class=\"small\">{i}</li>" for i in items) + "</ul>")
    parts.append("</div></article>")
    return "\n".join(parts)


def _prompt_items(prompt: PromptComparison) -> list[str]:
    """The run-level prompt differences, as HTML list items."""
    items = []
    if prompt.rules_added:
        items.append("rules added: " + _e(", ".join(f"{k} {v}" for k, v in prompt.rules_added.items())))
    if prompt.rules_removed:
        items.append("rules removed: " + _e(", ".join(prompt.rules_removed)))
    if prompt.rules_changed:
        items.append("rules reworded: " + _e(", ".join(prompt.rules_changed)))
    for headings, label in ((prompt.sections_added, "sections added"), (prompt.sections_removed, "sections removed")):
        if headings:
            items.append(f"{label}: " + _e("; ".join(headings)))
    if prompt.sections_changed:
        items.append("sections changed: " + _e("; ".join(c.heading for c in prompt.sections_changed)))
    return items


def _versions(side: RunModel | None) -> str:
    v = side.versions if side else {}
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
    yield (f'<p class="meta">model A {_e(runs.a.model)} · model B {_e(runs.b.model)}</p>')
    if report.controlled_runs:
        yield ('<p class="meta">other runs used to tell the causes apart:</p><ul class="tight meta">'
                    + "".join(f"<li>{_e(line)}</li>" for line in _controlled_lines(report)) + "</ul>")
    yield (f'<p class="meta">{_e(_counts_line(report))}</p><div class="chips">{chips}</div>')
    if report.prompt.changed:  # once here, not in every flip: it is the same for all of them
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
                    "<ul>" + "".join(f"<li><b>{_e(h.id)}</b> <span class=\"small\">{_e(h.file)}</span> stayed "
                                     f"{_badge(h.verdict)} — {_e(h.url)}: {_e(h.where)}</li>"
                                     for h in report.held_despite_page_change) + "</ul>")
    if report.unpaired:
        yield (f"<h2>Unpaired <small>({len(report.unpaired)})</small></h2><ul>"
                    + "".join(f"<li>{_e(u.file)} <b>{_e(u.id)}</b> only in {_e(u.only_in.upper())}</li>"
                              for u in report.unpaired) + "</ul>")
    if report.confirm_commands:
        yield ("<h2>To confirm causes</h2><pre class=\"cmd\">" + _e("\n".join(report.confirm_commands)) + "</pre>")
    yield ("</main>")


flip_article = _html_flip
"""One flip's `<article id="{anchor(flip)}">` with its evidence, for pages that embed the flip report's detail
(the bake-off page, `reports.bakeoff_html`); `PAGE_CSS` is the stylesheet it needs."""
PAGE_CSS = _CSS
prompt_items = _prompt_items
