"""How two prompts differ: their sections and calibration rules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from replay.core.flips.inputs import RunInput
from replay.core.prompts import calibration_rules
from replay.core.text import normalise_ws
from replay.schema.flip_evidence import PromptComparison, PromptSide, SectionChange

# --------------------------------------------------------------------------- prompt changes

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
PREAMBLE = "(before the first heading)"


def prompt_sections(text: str) -> dict[str, str]:
    """Markdown heading -> the section's body (fenced code is not searched for headings)."""
    sections: dict[str, list[str]] = {PREAMBLE: []}
    current = PREAMBLE
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        m = None if fenced else _HEADING.match(line)
        if m:
            current = m.group(2)
            sections.setdefault(current, [])
        else:
            sections[current].append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items() if k != PREAMBLE or "\n".join(v).strip()}


def _rule_paragraphs(text: str) -> dict[str, str]:
    out = {}
    for para in re.split(r"\n\s*\n", text):
        m = re.match(r"\s*\*\*(R\d+) —", para)
        if m:
            out[m.group(1)] = normalise_ws(para)
    return out


def _similar(x: str, y: str) -> bool:
    import difflib

    x, y = x.lower(), y.lower()
    return x.startswith(y) or y.startswith(x) or difflib.SequenceMatcher(None, x, y).ratio() >= 0.6


@dataclass(frozen=True)
class PromptChanges:
    """Which sections and calibration rules were added, removed or changed from prompt A to prompt B."""

    sections_added: list[str]
    sections_removed: list[str]
    sections_changed: list[SectionChange]
    rules_added: dict[str, str]
    rules_removed: dict[str, str]
    rules_changed: dict[str, str]
    rules_a: dict[str, str]
    """Every calibration rule prompt A defines: id -> title."""
    rules_b: dict[str, str]
    """Every calibration rule prompt B defines."""


def prompt_changes(text_a: str, text_b: str) -> PromptChanges:
    """Which sections and calibration rules were added, removed or changed from prompt A to prompt B."""
    sa, sb = prompt_sections(text_a), prompt_sections(text_b)
    added = [h for h in sb if h not in sa]
    removed = [h for h in sa if h not in sb]
    changed = [SectionChange(heading=h) for h in sa if h in sb and sa[h] != sb[h]]
    for old in list(removed):  # a renamed heading is a changed section, not one removed and one added
        new = next((h for h in added if _similar(old, h)), None)
        if new is not None:
            removed.remove(old)
            added.remove(new)
            changed.append(SectionChange(heading=new, was=old))
    ra, rb = calibration_rules(text_a), calibration_rules(text_b)
    pa, pb = _rule_paragraphs(text_a), _rule_paragraphs(text_b)
    return PromptChanges(
        sections_added=added,
        sections_removed=removed,
        sections_changed=changed,
        rules_added={r: rb[r] for r in rb if r not in ra},
        rules_removed={r: ra[r] for r in ra if r not in rb},
        rules_changed={r: rb[r] for r in rb if r in ra and (ra[r] != rb[r] or pa.get(r) != pb.get(r))},
        rules_a=ra,
        rules_b=rb,
    )


@dataclass(frozen=True)
class PromptState:
    """The two runs' prompts compared: as the report writes it, and each prompt's calibration rules (which
    the flips' summaries cite)."""

    changed: bool | None
    """Whether the prompt changed; None when nothing recorded tells."""
    comparison: PromptComparison
    rules_a: Mapping[str, str] = field(default_factory=dict)
    """Every calibration rule prompt A defines (known only when both texts are and differ)."""
    rules_b: Mapping[str, str] = field(default_factory=dict)


def prompt_state(a: RunInput, b: RunInput) -> PromptState:
    """How run A's prompt compares with run B's: by text when both are known, else by sha256."""
    side_a = PromptSide(name=a.prompt_name, sha256=a.prompt_id)
    side_b = PromptSide(name=b.prompt_name, sha256=b.prompt_id)
    if a.prompt_text is not None and b.prompt_text is not None:
        if a.prompt_text == b.prompt_text:
            return PromptState(False, PromptComparison(a=side_a, b=side_b, changed=False))
        c = prompt_changes(a.prompt_text, b.prompt_text)
        return PromptState(True, PromptComparison(
            a=side_a, b=side_b, sections_added=c.sections_added, sections_removed=c.sections_removed,
            sections_changed=c.sections_changed, rules_added=c.rules_added, rules_removed=c.rules_removed,
            rules_changed=c.rules_changed, changed=True,
        ), c.rules_a, c.rules_b)
    if a.prompt_id and b.prompt_id:
        changed = a.prompt_id != b.prompt_id
        return PromptState(changed, PromptComparison(a=side_a, b=side_b, changed=changed,
                                                     note="compared by sha256 only: a run has no prompt.md"))
    return PromptState(None, PromptComparison(a=side_a, b=side_b, changed=None,
                                              note="no prompt text nor sha256 recorded on one side"))
