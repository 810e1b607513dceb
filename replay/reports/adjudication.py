"""The adjudication report rendered: each disagreement as a panel or in markdown."""

from __future__ import annotations

from replay.analysis.adjudication import with_a_result, without_a_result_note
from replay.core.display import printable_block
from replay.reports.markdown import markdown_fence, markdown_text
from replay.reports.tables import FieldPanel
from replay.schema.scores import ClaimError

# --------------------------------------------------------------------------- rendering


def _title(e: ClaimError) -> str:
    judged = e.verdict or "no verdict"
    return f"{e.file} · {e.id} — {e.kind}: gold {e.gold} (expects {e.expected}), judge {judged}"


def _quote_status(e: ClaimError) -> str:
    if not e.evidence_quote.strip():
        return "(no quote)"
    found = {True: "found in the recorded page", False: "NOT found in the recorded page",
             None: "not checked (no recorded page)"}[e.quote_in_page]
    at_run = {True: "verified", False: "NOT verified", None: "not checked"}[e.quote_verified]
    return f"{found}; at run time: {at_run}"


def _fields(e: ClaimError) -> list[tuple[str, str]]:
    gold: str = e.gold or "-"
    if e.mode:
        gold += f" · mode {e.mode}"
    if e.note:
        gold += f" · {e.note}"
    judge: str = e.verdict or "no verdict"
    if e.rule:
        judge += f" · rule {e.rule}"
    if e.judge_error:
        judge += f" · {e.judge_error}"
    rows = [
        ("claim", f"{e.claim or '(claim text not known)'}" + (f"  [{e.claim_type}]" if e.claim_type else "")),
        ("gold", gold),
        ("judge", judge),
        ("evidence", e.evidence_url or "(none)"),
        ("quote", f"\"{e.evidence_quote}\" — {_quote_status(e)}" if e.evidence_quote.strip() else "(no quote)"),
        ("reason", e.reason or "(none)"),
    ]
    return rows


def _region_caption(e: ClaimError) -> str:
    where = f" of {e.page_url}" if e.page_url and e.page_region else ""
    return f"page region{where}: {e.page_note or 'none'}"


def adjudication_markdown(errors: list[ClaimError], heading: str = "###") -> str:
    """Every disagreement the results hold something of (`with_a_result`) as a markdown section (claim,
    gold, verdict, quote, reason, page region); data is escaped (`markdown_text`), the page region is a
    fenced block of `printable` text."""
    if not errors:
        return "No disagreement with the gold set."
    note = without_a_result_note(errors)
    parts = [] if note is None else [markdown_text(note)]
    for e in with_a_result(errors):
        lines = [f"{heading} {markdown_text(_title(e))}", ""]
        lines += [f"- **{name}:** {markdown_text(value)}" for name, value in _fields(e)]
        lines += [f"- **{markdown_text(_region_caption(e))}**"]
        if e.page_region:
            region = printable_block(e.page_region)
            fence = markdown_fence(region)
            lines += ["", f"{fence}text", region, fence]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def adjudication_panels(errors: list[ClaimError]) -> list[FieldPanel]:
    """Every disagreement the results hold something of (`with_a_result`) as a terminal panel (every data
    string through `printable`; print them with `reports.tables.print_panels`)."""
    return [FieldPanel(_title(e), [(f"{name}:", value) for name, value in _fields(e)], _region_caption(e),
                       e.page_region or None, "red" if e.kind in ("FP", "FN", "no_verdict") else "yellow")
            for e in with_a_result(errors)]
