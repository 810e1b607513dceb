"""The bake-off as one self-contained HTML page: scores and cost, a P/R-against-cost chart, gates, every flip."""

from __future__ import annotations

from collections.abc import Callable

from replay.analysis.bakeoff import Bakeoff, FlipLine, GateReport, Version
from replay.core.cost import format_usd
from replay.files.paths import display_path
from replay.reports.flips_html import PAGE_CSS, anchor, flip_article, html_text, prompt_items
from replay.reports.scores import counts_text, gate_lines, range_text, ratio_text, ratio_with_range, unstable_claims

CHART_WIDTH, CHART_HEIGHT = 640, 340
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 150, 16, 44
"""Margins of the plot area inside the chart: axis labels left and below, version labels right."""
_COLOURS = ("#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e")

_CSS = PAGE_CSS + """
table.scores{border-collapse:collapse;margin:8px 0;font-size:14px}
table.scores th,table.scores td{border:1px solid var(--line);padding:3px 8px;text-align:right}
table.scores th:first-child,table.scores td:first-child,table.scores .l{text-align:left}
table.scores th{background:var(--bg)}
svg.chart{background:#fff;border:1px solid var(--line);border-radius:8px;max-width:100%;height:auto}
svg.chart text{font:12px system-ui,sans-serif;fill:#57606a}
svg.chart .axis{stroke:#8c959f}svg.chart .grid{stroke:#eaeef2}
.adopt{color:#1a7f37}.reject{color:#cf222e}
"""


_e = html_text


def _role(i: int) -> str:
    return "baseline" if i == 0 else "candidate"


def _scores_table(b: Bakeoff) -> str:
    head = ["prompt", "run", "model", "P", "R", "F1", "accuracy", "TP", "FP", "FN", "TN", "no verdict", "cost"]
    rows = ['<table class="scores" id="versions"><tr>'
            + "".join(f'<th{" class=l" if i < 3 else ""}>{h}</th>' for i, h in enumerate(head)) + "</tr>"]
    for i, v in enumerate(b.versions):
        s = v.scores
        batch = " (batch)" if v.run.manifest.batch_ids is not None else ""
        k = s.samples
        cells = [ratio_with_range(s.precision, s.precision_range, k), ratio_with_range(s.recall, s.recall_range, k),
                 ratio_with_range(s.f1, s.f1_range, k), ratio_with_range(s.accuracy, s.accuracy_range, k),
                 s.tp, s.fp, s.fn, s.tn, s.no_verdict, format_usd(v.cost_usd) + batch]
        rows.append(f"<tr><td>{_e(v.prompt)} ({_role(i)})</td><td class=\"l\">{_e(v.label)}</td>"
                    f"<td class=\"l\">{_e(v.run.manifest.model)}</td>" + "".join(f"<td>{_e(c)}</td>" for c in cells)
                    + "</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _samples_section(b: Bakeoff) -> str:
    """Each version's samples per claim and its unstable claims with their verdict counts ("" when every
    version was judged once)."""
    if all(v.scores.samples < 2 for v in b.versions):
        return ""
    out = ['<section id="samples"><h2>Samples and unstable claims</h2><p class="meta">P, R, F1 and accuracy '
           "above are means over a version's samples, [min–max] beside them; TP to TN count the majority "
           "verdicts. A claim is unstable when its samples gave more than one verdict (a missing one counts).</p>"]
    for v in b.versions:
        s = v.scores
        if s.samples < 2:
            out.append(f"<p><b>{_e(v.prompt)}</b> ({_e(v.label)}): 1 sample per claim, model noise not measured</p>")
            continue
        out.append(f"<p><b>{_e(v.prompt)}</b> ({_e(v.label)}): {s.samples} samples per claim, "
                   f"{s.unstable} unstable claim{'' if s.unstable == 1 else 's'}</p>")
        rows = "".join(f'<tr><td class="l">{_e(c.file)}</td><td class="l">{_e(c.id)}</td>'
                       f'<td class="l">{_e(c.verdict or "none")}</td><td class="l">{_e(counts_text(c.verdicts))}</td></tr>'
                       for c in unstable_claims(s))
        if rows:
            out.append('<table class="scores unstable"><tr><th class=l>file</th><th class=l>claim</th>'
                       f"<th class=l>majority</th><th class=l>verdicts of the samples</th></tr>{rows}</table>")
    out.append("</section>")
    return "\n".join(out)


def _ticks(top: float) -> list[float]:
    """Five evenly spaced ticks from 0 to `top`."""
    return [top * i / 4 for i in range(5)]


def cost_chart(versions: list[Version]) -> str:
    """Inline SVG: precision (circle) and recall (square) of each version against what its run cost. A
    version whose cost is unknown, or whose precision and recall are both undefined, is not plotted (the
    caption says so)."""
    plotted = [v for v in versions if v.cost_usd is not None
               and (v.scores.precision is not None or v.scores.recall is not None)]
    left_out = [v for v in versions if v not in plotted]
    top = max((v.cost_usd or 0.0 for v in plotted), default=0.0) * 1.15 or 1.0
    plot_w, plot_h = CHART_WIDTH - _LEFT - _RIGHT, CHART_HEIGHT - _TOP - _BOTTOM

    def x(cost: float) -> float:
        return _LEFT + plot_w * cost / top

    def y(score: float) -> float:
        return _TOP + plot_h * (1 - score)

    parts = [f'<svg class="chart" id="cost-chart" xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" '
             f'height="{CHART_HEIGHT}" viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img" '
             'aria-label="precision and recall of each prompt version against the cost of its run">']
    for score in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line class="grid" x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y(score):.1f}" y2="{y(score):.1f}"/>'
                     f'<text x="{_LEFT - 6}" y="{y(score) + 4:.1f}" text-anchor="end">{score:.2f}</text>')
    for cost in _ticks(top):
        parts.append(f'<line class="axis" x1="{x(cost):.1f}" x2="{x(cost):.1f}" y1="{_TOP + plot_h}" '
                     f'y2="{_TOP + plot_h + 4}"/><text x="{x(cost):.1f}" y="{_TOP + plot_h + 17}" '
                     f'text-anchor="middle">{_e(format_usd(cost))}</text>')
    parts.append(f'<line class="axis" x1="{_LEFT}" x2="{_LEFT}" y1="{_TOP}" y2="{_TOP + plot_h}"/>'
                 f'<line class="axis" x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{_TOP + plot_h}" y2="{_TOP + plot_h}"/>'
                 f'<text x="{_LEFT + plot_w / 2:.1f}" y="{CHART_HEIGHT - 6}" text-anchor="middle">cost of the run '
                 f'(USD)</text><text x="14" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {_TOP + plot_h / 2:.1f})">score</text>')
    for i, v in enumerate(plotted):
        colour = _COLOURS[i % len(_COLOURS)]
        cx = x(v.cost_usd or 0.0)
        p, r = v.scores.precision, v.scores.recall
        name = _e(v.prompt)
        parts.append(f'<g class="version" data-prompt="{name}">')
        if v.scores.samples > 1:
            parts += _ranges(v, cx, colour, y)
        elif p is not None and r is not None:
            parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(p):.1f}" y2="{y(r):.1f}" stroke="{colour}" '
                         'stroke-dasharray="3 3"/>')
        if p is not None and v.scores.samples < 2:
            parts.append(f'<circle class="precision" cx="{cx:.1f}" cy="{y(p):.1f}" r="6" fill="{colour}">'
                         f"<title>{name}: precision {ratio_text(p)} at {_e(format_usd(v.cost_usd))}</title></circle>")
        if r is not None and v.scores.samples < 2:
            parts.append(f'<rect class="recall" x="{cx - 5:.1f}" y="{y(r) - 5:.1f}" width="10" height="10" '
                         f'fill="none" stroke="{colour}" stroke-width="2.5"><title>{name}: recall {ratio_text(r)} '
                         f"at {_e(format_usd(v.cost_usd))}</title></rect>")
        label_y = y(p if p is not None else r or 0.0)
        parts.append(f'<text x="{cx + 10:.1f}" y="{label_y + 4:.1f}" fill="{colour}" style="fill:{colour}">'
                     f"{name}</text></g>")
    legend_x = _LEFT + plot_w + 20
    parts.append(f'<circle cx="{legend_x}" cy="{_TOP + 10}" r="6" fill="#57606a"/>'
                 f'<text x="{legend_x + 12}" y="{_TOP + 14}">precision</text>'
                 f'<rect x="{legend_x - 5}" y="{_TOP + 27}" width="10" height="10" fill="none" stroke="#57606a" '
                 f'stroke-width="2.5"/><text x="{legend_x + 12}" y="{_TOP + 36}">recall</text>')
    parts.append("</svg>")
    caption = "Precision (circle) and recall (square) of each prompt version against what its run cost."
    if any(v.scores.samples > 1 for v in plotted):
        caption += (" A version judged several times per claim shows each as a bar from its lowest to its highest "
                    "sample (precision filled, left; recall outlined, right), marked at the mean.")
    if left_out:
        caption += " Not plotted: " + ", ".join(
            f"{v.prompt} ({'cost unknown' if v.cost_usd is None else 'precision and recall undefined'})"
            for v in left_out) + "."
    return "<figure>" + "".join(parts) + f'<figcaption class="meta">{_e(caption)}</figcaption></figure>'


def _ranges(v: Version, cx: float, colour: str, y: Callable[[float], float]) -> list[str]:
    """A version with samples: precision and recall each as a bar over its range across the samples (filled
    left of the version's cost, outlined right of it), with a line across at the mean."""
    out = []
    s, name, cost = v.scores, _e(v.prompt), _e(format_usd(v.cost_usd))
    for kind, mean, span, x0, style in (
            ("precision", s.precision, s.precision_range, cx - 9, f'fill="{colour}" fill-opacity="0.45"'),
            ("recall", s.recall, s.recall_range, cx + 2, f'fill="none" stroke="{colour}" stroke-width="2"')):
        if mean is None or span is None:
            continue
        top, bottom = y(span[1]), y(span[0])
        out.append(f'<rect class="{kind} range" x="{x0:.1f}" y="{top:.1f}" width="7" height="{max(bottom - top, 1.0):.1f}" '
                   f'{style}><title>{name}: {kind} {ratio_text(mean)} (mean of {s.samples} samples, '
                   f"{range_text(span)}) at {cost}</title></rect>"
                   f'<line class="{kind} mean" x1="{x0 - 2:.1f}" x2="{x0 + 9:.1f}" y1="{y(mean):.1f}" y2="{y(mean):.1f}" '
                   f'stroke="{colour}" stroke-width="2.5"/>')
    return out


def _gate_section(n: int, g: GateReport) -> str:
    d = g.decision
    lines = gate_lines(d)
    cls = "adopt" if d.adopt else "reject"
    items = "".join(f"<li>{_e(line)}</li>" for line in lines[1:])
    return (f'<section id="gate-{n}"><h2>Gate: {_e(g.candidate.prompt)} <small>({_e(g.candidate.label)})</small> '
            f'against {_e(g.baseline.prompt)} <small>({_e(g.baseline.label)})</small></h2>'
            f'<p class="{cls}"><b>{_e(lines[0])}</b></p><ul class="tight">{items}</ul>'
            f'<p class="meta">cost: {_e(format_usd(g.baseline.cost_usd))} (baseline) → '
            f'{_e(format_usd(g.candidate.cost_usd))} (candidate)</p></section>')


def _flip_row(f: FlipLine, ids: dict[tuple[str, str], str]) -> str:
    target = ids.get((f.file, f.id))
    claim_id = f'<a href="#{_e(target)}">{_e(f.id)}</a>' if target else _e(f.id)
    right = f.right or "unknown"
    return (f"<tr><td>{claim_id}</td><td class=\"l\">{_e(f.file)}</td><td class=\"l\">{_e(f.claim or '')}</td>"
            f"<td class=\"l\">{_e(f.baseline or 'no verdict')} → {_e(f.candidate or 'no verdict')}</td>"
            f"<td class=\"l\">{_e(f.gold or '')}</td><td class=\"l\">{_e(right)}</td>"
            f"<td class=\"l\"><b>{_e(f.cause)}</b> {_e(f.summary.removeprefix(f'{f.cause}:').strip())}</td></tr>")


def _flips_section(n: int, g: GateReport) -> str:
    """The gate's flips: a table of every flip with its cause, each linked to its evidence below (the flip
    report's article for it, under an id made unique to this gate)."""
    prefix = f"g{n}-"
    ids: dict[tuple[str, str], str] = {}
    articles = []
    for flip in g.flip_report.flips if g.flip_report else []:
        own = anchor(flip)
        ids[(flip.file, flip.id)] = prefix + own
        articles.append(flip_article(flip).replace(f'id="{own}"', f'id="{prefix}{own}"', 1)
                        .replace('href="#prompt"', f'href="#{prefix}prompt"'))
    head = "".join(f"<th class=l>{h}</th>" for h in ("claim", "file", "text", "verdict", "gold", "right", "cause"))
    rows = "".join(_flip_row(f, ids) for f in g.flips)
    out = [f'<section id="flips-{n}"><h2>Verdict flips {_e(g.baseline.prompt)} → {_e(g.candidate.prompt)} '
           f"<small>({len(g.flips)})</small></h2>"]
    out.append(f'<table class="scores flips"><tr>{head}</tr>{rows}</table>' if g.flips else "<p>No verdict moved.</p>")
    prompt = g.flip_report.prompt if g.flip_report else None
    if prompt is not None and prompt.changed:
        out.append(f'<details id="{prefix}prompt"><summary>what differs between the prompts</summary>'
                   f'<ul class="tight">{"".join(f"<li>{i}</li>" for i in prompt_items(prompt))}</ul></details>')
    if articles:
        out.append(f"<h3>Why each verdict moved (the flip report's evidence: run A is the baseline "
                   f"{_e(g.baseline.prompt)}, run B the candidate {_e(g.candidate.prompt)})</h3>")
        out.extend(articles)
    out.append("</section>")
    return "\n".join(out)


def render_html(b: Bakeoff, cost_note: str) -> str:
    """One self-contained page: inline CSS and SVG, no script, no external asset; every data string escaped."""
    body = ["<header><h1>Judge prompt bake-off</h1>"]
    body += [f'<p class="note"><b>{"<br>".join(_e(line) for line in note.splitlines())}</b></p>' for note in b.notes]
    body.append(f'<p class="meta">gold set {_e(display_path(b.gold_path))}'
                + (f" ({_e(b.gold.name)})" if b.gold.name else "") + f", {len(b.gold.items)} claims</p></header><main>")
    body += ["<h2>Prompt versions</h2>", _scores_table(b), f'<p class="meta">{_e(cost_note)}</p>',
             *filter(None, [_samples_section(b)]), "<h2>Precision and recall against cost</h2>",
             cost_chart(b.versions)]
    for n, g in enumerate(b.gates, 1):
        body += [_gate_section(n, g), _flips_section(n, g)]
    body.append("</main>")
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1"><title>judge-replay bake-off</title>'
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
