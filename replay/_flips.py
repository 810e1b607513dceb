"""Why a claim's verdict moved between two runs: prompt, page, evidence path or the model (pure core).

Inputs are plain data built at the edge (`replay._flip_inputs`, whose `explain_flips(Run, Run, ...)` is
the entry point) from run folders; nothing here reads a file or the network.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._commands import judge_command
from ._drift import claim_line_pair, formatting_free, quote_in
from ._mcp import normalise_learn_url, page_name, page_names
from ._page_diff import changed_values, claim_values_on, line_values, region_diff
from ._prompts import calibration_rules
from ._records import GOLD_TO_VERDICT, AnyClaim, ClaimResult, Flip, FlipCause, FlipReport, GoldSet, ResultRow, as_judged
from ._text import normalise_ws, quote_occurs, sha256_text, subject_words, value_tokens, without_thousands

Key = tuple[str, str]
"""(claims file, claim id): the pairing key."""
Result = ClaimResult | ResultRow
"""One verdict: as read, or as the edge holds a run's thousands (`ResultRow`, the same fields)."""

NO_VERDICT = "no verdict"
"""How every output names the absence of a verdict (a failed or cut-off conversation)."""


def shown_verdict(verdict: str | None) -> str:
    """A verdict as people read it: `no verdict` when the judge gave none."""
    return verdict or NO_VERDICT


def no_verdict_summary(side: str, error: str) -> str:
    """The summary of a flip where one side (`A`/`B`) has no verdict: no judge flip, so its cause is unknown."""
    return f"unknown: {NO_VERDICT} in {side}: {error}"


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class PageRead:
    """A page as one run's judge got it (sha256/text None: the page could not be retrieved)."""

    url: str
    sha256: str | None
    text: str | None


@dataclass(frozen=True, slots=True)
class SearchMade:
    """A `microsoft_docs_search` call and the URLs it returned, in rank order."""

    query: str
    result_urls: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """The recorded Learn traffic of one claims file's conversation."""

    fetches: tuple[PageRead, ...] = ()
    searches: tuple[SearchMade, ...] = ()
    _last_fetch: dict[str, PageRead] = field(init=False, repr=False, compare=False)
    """Normalised URL -> its last fetch (made once: every claim of the file asks)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_last_fetch", {normalise_learn_url(page.url): page for page in self.fetches})

    def fetched(self, url: str) -> PageRead | None:
        """The last fetch of a URL in this conversation."""
        return self._last_fetch.get(normalise_learn_url(url))


@dataclass(frozen=True)
class RunInput:
    """One run, as the explainer needs it."""

    name: str
    label: str
    """How the user named the run (its path as given)."""
    prompt_name: str | None = None
    prompt_text: str | None = None
    prompt_sha256: str | None = None
    model: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    pages_from: str | None = None
    """The run that served this run's Learn calls, as an alias comparable with `aliases`."""
    aliases: frozenset[str] = frozenset()
    """Every way a manifest's `pages_from` may name this run (name, path as given, resolved path)."""
    results: Mapping[Key, Result] = field(default_factory=dict)
    claims: Mapping[Key, AnyClaim] = field(default_factory=dict)
    conversations: Mapping[str, Conversation] = field(default_factory=dict)
    """claims file -> its recorded Learn traffic; a file missing here was not recorded."""
    pages: Mapping[str, PageRead] = field(default_factory=dict)
    """normalised URL -> the page anywhere in the run (last fetch wins)."""

    prompt_arg: str | None = None
    """What to pass to `judge --prompt` to run this run's prompt again."""
    claims_paths: Mapping[str, str] = field(default_factory=dict)
    """claims file -> its claims file path, as a command run from the current folder takes it."""
    anthropic_base_url: str | None = None
    """The Messages API endpoint the run was recorded against (a stand-in's, stored canonically), if not the SDK's."""
    stand_ins: tuple[str, ...] = ()
    """Which services of the run were the local stand-ins (`learn`, `model`)."""
    file_errors: Mapping[str, str] = field(default_factory=dict)
    """claims file -> why its conversation failed, for the files that did."""

    @functools.cached_property
    def prompt_id(self) -> str | None:
        """What identifies the prompt: the sha of its text, else the manifest's sha."""
        return sha256_text(self.prompt_text) if self.prompt_text is not None else self.prompt_sha256


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


def prompt_changes(text_a: str, text_b: str) -> dict[str, Any]:
    """Which sections and calibration rules were added, removed or changed from prompt A to prompt B."""
    sa, sb = prompt_sections(text_a), prompt_sections(text_b)
    added = [h for h in sb if h not in sa]
    removed = [h for h in sa if h not in sb]
    changed = [{"heading": h} for h in sa if h in sb and sa[h] != sb[h]]
    for old in list(removed):  # a renamed heading is a changed section, not one removed and one added
        new = next((h for h in added if _similar(old, h)), None)
        if new is not None:
            removed.remove(old)
            added.remove(new)
            changed.append({"heading": new, "was": old})
    ra, rb = calibration_rules(text_a), calibration_rules(text_b)
    pa, pb = _rule_paragraphs(text_a), _rule_paragraphs(text_b)
    return {
        "sections_added": added,
        "sections_removed": removed,
        "sections_changed": changed,
        "rules_added": {r: rb[r] for r in rb if r not in ra},
        "rules_removed": {r: ra[r] for r in ra if r not in rb},
        "rules_changed": {r: rb[r] for r in rb if r in ra and (ra[r] != rb[r] or pa.get(r) != pb.get(r))},
        "rules_a": ra,
        "rules_b": rb,
    }


def _prompt_state(a: RunInput, b: RunInput) -> tuple[bool | None, dict[str, Any]]:
    """(prompt changed? None when nothing recorded tells, the run-level prompt evidence)."""
    info: dict[str, Any] = {
        "a": {"name": a.prompt_name, "sha256": a.prompt_id},
        "b": {"name": b.prompt_name, "sha256": b.prompt_id},
    }
    if a.prompt_text is not None and b.prompt_text is not None:
        changed = a.prompt_text != b.prompt_text
        if changed:
            info.update(prompt_changes(a.prompt_text, b.prompt_text))
        info["changed"] = changed
        return changed, info
    if a.prompt_id and b.prompt_id:
        info["changed"] = a.prompt_id != b.prompt_id
        info["note"] = "compared by sha256 only: a run has no prompt.md"
        return info["changed"], info
    info["changed"] = None
    info["note"] = "no prompt text nor sha256 recorded on one side"
    return None, info


# --------------------------------------------------------------------------- the pages a claim rests on


@dataclass
class ClaimTrace:
    """The pages one run's verdict on one claim rests on."""

    recorded: bool
    """The claim's conversation was recorded (its Learn traffic is known)."""
    read: list[str]
    """Normalised URLs fetched for this claim, in first-fetch order."""
    cited: str | None
    """Normalised `evidence_url` of the verdict."""
    searched: list[str]
    """Search queries made for this claim."""
    pages: dict[str, PageRead]
    """Normalised URL -> the version this run holds (from the conversation, else anywhere in the run)."""
    found: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Search query -> the normalised URLs Learn returned for it, in rank order (the last such search)."""

    @property
    def path(self) -> set[str]:
        return set(self.read) | ({self.cited} if self.cited else set())


def _matches_claim(query: str, claim_text: str | None) -> bool:
    if not claim_text:
        return False
    q, c = normalise_ws(query).lower(), normalise_ws(claim_text).lower()
    return bool(q) and (q == c or c in q or q in c)


def claim_trace(run: RunInput, key: Key) -> ClaimTrace:
    """Which pages run's verdict on the claim rests on: the claim's cited URL, the verdict's evidence_url,
    and pages reached through a search for the claim's text."""
    file, _ = key
    claim, result = run.claims.get(key), run.results.get(key)
    conv = run.conversations.get(file)
    wanted: list[str] = []
    for url in (claim.evidence_url if claim else None, result.evidence_url if result else None):
        if url:
            wanted.append(url)
    searched: list[str] = []
    found: dict[str, tuple[str, ...]] = {}
    if conv is not None:
        for search in conv.searches:
            if _matches_claim(search.query, claim.claim if claim else None):
                searched.append(search.query)
                found[search.query] = tuple(normalise_learn_url(u) for u in search.result_urls)
                wanted.extend(u for u in search.result_urls if conv.fetched(u) is not None)
    read: list[str] = []
    pages: dict[str, PageRead] = {}
    for url in wanted:
        k = normalise_learn_url(url)
        got = conv.fetched(url) if conv is not None else None
        if got is not None and k not in read:
            read.append(k)
        page = got or run.pages.get(k)
        if page is not None and k not in pages:
            pages[k] = page
    cited = normalise_learn_url(result.evidence_url) if result and result.evidence_url else None
    return ClaimTrace(conv is not None, read, cited, searched, pages, found)


def searches_changed(ta: ClaimTrace, tb: ClaimTrace) -> dict[str, dict[str, list[str]]]:
    """The searches both runs made for the claim (the same query) whose results differ: Learn's index
    changed, so the pages available did, even where no page's content changed."""
    return {q: {"a": list(ta.found[q]), "b": list(tb.found[q])} for q in ta.found if q in tb.found
            and ta.found[q] != tb.found[q]}


def _version(run: RunInput, trace: ClaimTrace, url: str) -> PageRead | None:
    return trace.pages.get(url) or run.pages.get(url)


def _sha(page: PageRead | None) -> str | None:
    if page is None:
        return None
    return page.sha256 or "missing"


@dataclass
class PageCompare:
    url: str
    a: PageRead | None
    b: PageRead | None

    @property
    def compared(self) -> bool:
        return self.a is not None and self.b is not None

    @property
    def changed(self) -> bool:
        return self.compared and _sha(self.a) != _sha(self.b)


def _compare_pages(a: RunInput, b: RunInput, ta: ClaimTrace, tb: ClaimTrace) -> list[PageCompare]:
    urls = list(dict.fromkeys([*ta.pages, *tb.pages, *ta.read, *tb.read]))
    return [PageCompare(u, _version(a, ta, u), _version(b, tb, u)) for u in urls]


def _rests_unchanged(cmp: PageCompare, ra: Result, rb: Result) -> bool:
    """Whether a changed page kept the text both verdicts rest on: each run's quote occurs in both
    versions (formatting aside), or the versions differ only in their formatting."""
    if not cmp.compared or cmp.a.text is None or cmp.b.text is None:  # type: ignore[union-attr]
        return False
    text_a, text_b = cmp.a.text, cmp.b.text  # type: ignore[union-attr]
    if formatting_free(text_a) == formatting_free(text_b):
        return True
    quotes = [q for q in (ra.evidence_quote, rb.evidence_quote) if q and q.strip()]
    return len(quotes) == 2 and all(quote_in(q, text_a) and quote_in(q, text_b) for q in quotes)


def _page_evidence(
    cmp: PageCompare, ta: ClaimTrace, tb: ClaimTrace, claim: AnyClaim | None, ra: Result | None,
    rb: Result | None, a: RunInput, b: RunInput, *, detail: bool = True, hunks: bool = True,
) -> dict[str, Any]:
    """What one page says about a claim in the two runs. `detail=False`: only whether and where the page
    changed (`near_claim`, `note`), without the diff's text and the changed line (a verdict that held).
    `hunks=False`: the diff's text left empty (a report that does not show it)."""
    quote_a = ra.evidence_quote if ra else ""
    quote_b = rb.evidence_quote if rb else ""
    ev: dict[str, Any] = {
        "url": (cmp.a or cmp.b or cmp).url,
        "read_by": [side for side, t in (("a", ta), ("b", tb)) if cmp.url in t.read],
        "cited_by": [side for side, t in (("a", ta), ("b", tb)) if cmp.url == t.cited],
        "sha256_a": cmp.a.sha256 if cmp.a else None,
        "sha256_b": cmp.b.sha256 if cmp.b else None,
        "changed": cmp.changed if cmp.compared else None,
    }
    if not cmp.compared:
        ev["note"] = f"only run {'a' if cmp.a else 'b'} holds this page"
        return ev
    text_a, text_b = cmp.a.text or "", cmp.b.text or ""  # type: ignore[union-attr]
    if quote_a and cmp.b.text is not None:  # type: ignore[union-attr]
        ev["quote_a_in_b"] = quote_occurs(quote_a, text_b)
    if quote_b and cmp.a.text is not None:  # type: ignore[union-attr]
        ev["quote_b_in_a"] = quote_occurs(quote_b, text_a)
    if not cmp.changed:
        ev["note"] = "page unchanged"
        return ev
    if cmp.a.text is None or cmp.b.text is None:  # type: ignore[union-attr]
        ev["note"] = "page could not be retrieved in run " + ("a" if cmp.a.text is None else "b")  # type: ignore[union-attr]
        return ev
    claim_text = claim.claim if claim else ""
    name = page_name(ev["url"])
    diff = region_diff(
        text_a, text_b, values=value_tokens(claim_text), quotes=[q for q in (quote_a, quote_b) if q],
        subjects=subject_words(claim_text),
        old_label=f"{name} in {a.name} (sha {short_hash_of(cmp.a)})",
        new_label=f"{name} in {b.name} (sha {short_hash_of(cmp.b)})", hunks=detail and hunks,
    )
    ev["diff"] = diff.unified
    ev["near_claim"] = diff.near_claim
    if diff.note:
        ev["note"] = diff.note
    if diff.near_claim and detail:
        b_first = bool(quote_b) and not quote_in(quote_b, text_a)  # B rests on a line A's page lacked: that one
        old_line, new_line = claim_line_pair(text_a, text_b, claim_text, quote_a, quote_b, b_first=b_first)
        if old_line is not None or new_line is not None:
            ev["old_line"], ev["new_line"] = old_line, new_line
    return ev


def short_hash_of(page: PageRead | None) -> str:
    return (page.sha256 or "missing")[:8] if page else "none"


# --------------------------------------------------------------------------- repeats and controlled re-runs


def _same_pages(x: RunInput, tx: ClaimTrace, y: RunInput, ty: ClaimTrace) -> bool:
    """Every page either run rests on for the claim is the same version in both (where both hold it)."""
    urls = set(tx.pages) | set(ty.pages)
    compared = 0
    for u in urls:
        px, py = _version(x, tx, u), _version(y, ty, u)
        if px is None or py is None:
            continue
        compared += 1
        if _sha(px) != _sha(py):
            return False
    if searches_changed(tx, ty):
        return False
    return compared > 0 or (not urls and tx.recorded and ty.recorded)


def _has_pages_of(x: RunInput, tx: ClaimTrace, y: RunInput, ty: ClaimTrace) -> bool:
    """x's pages for the claim are y's: x was recorded with `--pages-from y`, or its versions equal y's."""
    return (x.pages_from is not None and x.pages_from in y.aliases) or _same_pages(x, tx, y, ty)


def _flip_rate(verdicts: Sequence[str | None]) -> float:
    """Share of repeats that disagree with the most common verdict."""
    counts = Counter(verdicts)
    return round(1 - max(counts.values()) / len(verdicts), 3) if verdicts else 0.0


def _same_claim(x: RunInput, y: RunInput, key: Key) -> bool:
    """Whether two runs judged the same claim under this (file, id): its text, type and cited page (a run
    that does not say what it judged is taken to have judged the same)."""
    cx, cy = x.claims.get(key), y.claims.get(key)
    return cx is None or cy is None or as_judged(cx) == as_judged(cy)


def _repeat_group(ref: RunInput, tref: ClaimTrace, runs: Sequence[RunInput], traces: Sequence[ClaimTrace],
                  key: Key) -> list[int]:
    """Indexes of runs that repeat ref for the claim: same claim, prompt, model, page versions and pages read."""
    return [
        i for i, (r, t) in enumerate(zip(runs, traces))
        if key in r.results and r.prompt_id is not None and r.prompt_id == ref.prompt_id and r.model == ref.model
        and _same_claim(ref, r, key) and _same_pages(ref, tref, r, t) and t.path == tref.path
    ]


def _repeats_evidence(runs: Sequence[RunInput], traces: Sequence[ClaimTrace], group: list[int],
                      key: Key) -> dict[str, Any]:
    verdicts = [runs[i].results[key].judge_verdict for i in group]
    return {
        "runs": [runs[i].name for i in group],
        "n": len(group),
        "verdicts": dict(Counter(v or "none" for v in verdicts)),
        "flip_rate": _flip_rate(verdicts),
    }


ROLES = ("A's prompt with B's pages", "B's prompt with A's pages", "a repeat of A", "a repeat of B")
"""How another run can hold one side of an A → B comparison fixed, most telling first."""


def flipped_keys(a: RunInput, b: RunInput) -> list[Key]:
    """The paired claims whose verdict differs."""
    return sorted(k for k in a.results.keys() & b.results.keys()
                  if a.results[k].judge_verdict != b.results[k].judge_verdict)


def _role_for(x: RunInput, tx: ClaimTrace, a: RunInput, ta: ClaimTrace, b: RunInput, tb: ClaimTrace,
              key: Key) -> str | None:
    """Which of ROLES x plays for one claim, its model aside: the same claim as both sides, the same prompt
    (by sha) as one side and the same page versions as the other side (a crossed run) or as the same
    side (a repeat)."""
    if not (_same_claim(x, a, key) and _same_claim(x, b, key)):
        return None
    prompt_a, prompt_b = x.prompt_id == a.prompt_id, x.prompt_id == b.prompt_id
    if prompt_a and _same_pages(x, tx, a, ta):
        return ROLES[2]
    if prompt_b and _same_pages(x, tx, b, tb):
        return ROLES[3]
    if prompt_a and not prompt_b and _has_pages_of(x, tx, b, tb):
        return ROLES[0]
    if prompt_b and not prompt_a and _has_pages_of(x, tx, a, ta):
        return ROLES[1]
    return None


def _models_held(role: str, x: RunInput, a: RunInput, b: RunInput) -> bool:
    """A controlled run moves one input only: a repeat has its side's model, a crossed run the model of
    both sides (when A and B differ in model, no crossed run isolates the prompt or the page)."""
    if role == ROLES[2]:
        return x.model == a.model
    if role == ROLES[3]:
        return x.model == b.model
    return x.model == a.model == b.model


def controlled_role(x: RunInput, a: RunInput, b: RunInput, keys: Sequence[Key]) -> dict[str, Any] | None:
    """How run x holds one side of A → B fixed for the flipped claims `keys` it judged: the same prompt
    (by sha) as one side, the same model, and, claim by claim, the same page versions as the other side
    (a crossed run) or as the same side (a repeat). None when it plays no role for any of them; else
    {run, path, role (the first of ROLES it plays; None when only its model kept it from playing one),
    claims (per role, how many), why (one line, naming the model)}."""
    if x.prompt_id is None:
        return None
    counts: Counter[str] = Counter()
    other_model = 0
    for key in keys:
        if key not in x.results or key not in a.results or key not in b.results:
            continue
        role_of_x = _role_for(x, claim_trace(x, key), a, claim_trace(a, key), b, claim_trace(b, key), key)
        if role_of_x is not None and _models_held(role_of_x, x, a, b):
            counts[role_of_x] += 1
        elif role_of_x is not None:
            other_model += 1
    side = "A" if x.prompt_id == a.prompt_id else "B"
    entry = {"run": x.name, "path": x.label, "stand_ins": list(x.stand_ins)}
    if not counts:
        if not other_model:
            return None
        models = a.model if a.model == b.model else f"A {a.model}, B {b.model}"
        why = (f"{x.name}: not used: recorded with model {x.model}, not the compared runs' ({models}), so it "
               f"does not hold {side}'s side fixed ({side}'s prompt, sha {x.prompt_id[:8]})")
        return {**entry, "role": None, "claims": {}, "why": why}
    role = next(r for r in ROLES if counts[r])
    pinned = f", recorded with --pages-from {x.pages_from}" if x.pages_from else ""
    uses = ", ".join(f"{r} for {counts[r]}" for r in ROLES if counts[r])
    why = (f"{x.name}: {uses} flipped claim{'s' if sum(counts.values()) != 1 else ''} ({side}'s prompt, sha "
           f"{x.prompt_id[:8]}, model {x.model}; page versions compared claim by claim{pinned})")
    return {**entry, "role": role, "claims": dict(counts), "why": why}


# --------------------------------------------------------------------------- one flip


def _verdict(result: Result | None) -> str | None:
    return result.judge_verdict if result else None


def _cite(rule: str, rules: Mapping[str, str]) -> str:
    return f"{rule} ({rules[rule]})" if rule in rules else rule


def _prompt_reason(info: dict[str, Any], ra: Result | None, rb: Result | None) -> tuple[str, bool]:
    """(the prompt part of a summary, whether a cited rule exists on one side only)."""
    name_b = info["b"]["name"] or "B"
    name_a = info["a"]["name"] or "A"
    rules_a, rules_b = info.get("rules_a", {}), info.get("rules_b", {})
    rule_a, rule_b = (ra.rule if ra else ""), (rb.rule if rb else "")
    if rule_b and rule_b in rules_b and rule_b not in rules_a:
        return f"B cites {_cite(rule_b, rules_b)}, new in {name_b}", True
    if rule_a and rule_a in rules_a and rule_a not in rules_b:
        return f"A cites {_cite(rule_a, rules_a)}, dropped in {name_b}", True
    if rule_b and rule_b in info.get("rules_changed", {}):
        return f"B cites {_cite(rule_b, rules_b)}, reworded in {name_b}", False
    parts = []
    if info.get("rules_added"):
        parts.append("adds " + ", ".join(info["rules_added"]))
    if info.get("rules_removed"):
        parts.append("drops " + ", ".join(info["rules_removed"]))
    n_sections = len(info.get("sections_added", [])) + len(info.get("sections_changed", [])) + len(
        info.get("sections_removed", []))
    if n_sections:
        parts.append(f"{n_sections} section{'s' if n_sections != 1 else ''} differ")
    detail = f" ({'; '.join(parts)})" if parts else ""
    return f"{name_a} → {name_b}{detail}", False


def _page_reason(pages: list[dict[str, Any]], claim: AnyClaim | None) -> str:
    changed = [p for p in pages if p.get("changed")]
    if not changed:
        return ""
    p = next((p for p in changed if p.get("near_claim")), changed[0])
    name = page_name(p["url"])
    shas = f"sha {(p['sha256_a'] or '')[:4] or 'missing'}→{(p['sha256_b'] or '')[:4] or 'missing'}"
    if p["sha256_a"] is None or p["sha256_b"] is None:
        gone = "could no longer be retrieved" if p["sha256_b"] is None else "could not be retrieved in A"
        return f"{name} {gone} ({shas})"
    if not p.get("near_claim"):
        note = p.get("note") or "page changed"
        return f"{name} changed, not near the claim ({note}; {shas})"
    old: str | None = p.get("old_line")
    new: str | None = p.get("new_line")
    if old is None:
        return f"a line now in {name} reads '{_clip(new)}' ({shas})" if new else f"{name} changed near the claim ({shas})"
    if new is None:
        return f"the claim's line was removed from {name}: '{_clip(old)}' ({shas})"
    removed, added = changed_values(old, new)
    values = value_tokens(claim.claim) if claim else []
    anchor = next((v for v in claim_values_on(old, values) if not v.replace(".", "").isdigit()), None)
    head = f"{anchor} … " if anchor else "… "
    kept = [v for v in line_values(old) if v not in removed and without_thousands(v.lower()) in values
            and without_thousands(v.lower()) != anchor]
    if added and (kept or removed) or removed:
        was = ", ".join([*kept[:1], *removed])
        now = ", ".join([*kept[:1], *added]) or "(no value)"
        return f"'{head}{was}' → '{head}{now}' in {name} ({shas})"
    return f"the claim's line changed in {name}: '{_clip(old, new)}' → '{_clip(new, old)}' ({shas})"


def _search_reason(searches: dict[str, dict[str, list[str]]]) -> str:
    if not searches:
        return ""
    query, found = next(iter(searches.items()))

    def names(urls: list[str]) -> str:
        return " + ".join(page_name(u) for u in urls[:3]) + (" …" if len(urls) > 3 else "") or "nothing"

    return f"Learn's search for '{_clip(query)}' returned other pages ({names(found['a'])} → {names(found['b'])})"


def _clip(text: str, other: str | None = None, n: int = 70) -> str:
    """A line cut to n characters; with `other`, starting a little before where the two lines differ."""
    text = normalise_ws(text)
    start = 0
    if other is not None:
        other = normalise_ws(other)
        first = next((i for i, (x, y) in enumerate(zip(text, other)) if x != y), min(len(text), len(other)))
        start = max(0, first - 25)
    cut = text[start:start + n]
    return ("…" if start else "") + cut + ("…" if start + n < len(text) else "")


def _path_reason(ta: ClaimTrace, tb: ClaimTrace) -> str:
    def urls(t: ClaimTrace) -> list[str]:
        return [*t.read, *([t.cited] if t.cited and t.cited not in t.read else [])]

    names = page_names([*urls(ta), *urls(tb)])  # two pages of one name are told apart

    def side(t: ClaimTrace) -> str:
        return " + ".join(names[u] for u in urls(t)) or "nothing"

    return f"A read {side(ta)}, B read {side(tb)}"


def explain_flip(
    key: Key, a: RunInput, b: RunInput, prompt_changed: bool | None, prompt_info: dict[str, Any],
    extras: Sequence[RunInput], gold: Mapping[Key, str], *, hunks: bool = True,
) -> tuple[Flip | None, dict[str, str] | None]:
    """(the flip, when the verdict moved; the held-despite-page-change entry, when it did not and a page
    the claim rests on changed). `hunks=False`: its pages' diff texts left empty."""
    ra, rb = a.results[key], b.results[key]
    claim = a.claims.get(key) or b.claims.get(key)
    ta, tb = claim_trace(a, key), claim_trace(b, key)
    compares = _compare_pages(a, b, ta, tb)
    page_changed_any = any(c.changed for c in compares)
    if ra.judge_verdict == rb.judge_verdict:
        if not page_changed_any or ra.judge_verdict is None:  # no verdict on either side: nothing held
            return None, None
        first = next(c for c in compares if c.changed)
        ev = _page_evidence(first, ta, tb, claim, ra, rb, a, b, detail=False)
        return None, {
            "file": key[0], "id": key[1], "verdict": ra.judge_verdict, "url": ev["url"],
            "sha256_a": ev["sha256_a"] or "missing", "sha256_b": ev["sha256_b"] or "missing",
            "where": "near the claim" if ev.get("near_claim") else (ev.get("note") or "page changed elsewhere"),
        }

    if ra.judge_verdict is None or rb.judge_verdict is None:
        return _no_verdict_flip(key, a, b, claim, gold), None
    if not _same_claim(a, b, key):
        return _claim_changed_flip(key, a, b, gold), None

    pages = [_page_evidence(c, ta, tb, claim, ra, rb, a, b, hunks=hunks) for c in compares]
    both_recorded = ta.recorded and tb.recorded
    searches = searches_changed(ta, tb)
    # the pages changed, but not the text either verdict rests on: not the page content the verdicts rest on
    elsewhere = page_changed_any and not searches and all(_rests_unchanged(c, ra, rb) for c in compares if c.changed)
    if (page_changed_any and not elsewhere) or searches:
        page_changed: bool | None = True
    elif any(c.compared for c in compares) or both_recorded:
        page_changed = False
    else:
        page_changed = None
    path_differs = (ta.path != tb.path) if both_recorded else None
    model_differs = a.model != b.model or dict(a.versions) != dict(b.versions)

    evidence: dict[str, Any] = {
        "claim": claim.claim if claim else None,
        "claim_values": value_tokens(claim.claim) if claim else [],
        "quotes": {"a": ra.evidence_quote, "b": rb.evidence_quote},
        "rules": {"a": ra.rule, "b": rb.rule},
        "reasons": {"a": ra.reason, "b": rb.reason},
        "evidence_urls": {"a": ra.evidence_url, "b": rb.evidence_url},
        "prompt": _flip_prompt_evidence(prompt_info, ra, rb),
        "pages": pages,
        **({"searches_changed": searches} if searches else {}),
        "path": {
            "a": {"read": ta.read, "cited": ta.cited, "searched": ta.searched, "recorded": ta.recorded},
            "b": {"read": tb.read, "cited": tb.cited, "searched": tb.searched, "recorded": tb.recorded},
            "differs": path_differs,
        },
        "model": {
            "a": {"model": a.model, "versions": dict(a.versions)},
            "b": {"model": b.model, "versions": dict(b.versions)},
            "differs": model_differs,
        },
    }

    causes: list[FlipCause] = []
    if prompt_changed:
        causes.append("prompt")
    if page_changed:
        causes.append("page")
    if path_differs:
        causes.append("evidence_path")
    if model_differs:
        causes.append("model")

    if prompt_changed is None or page_changed is None or (elsewhere and not (prompt_changed or path_differs
                                                                              or model_differs)):
        primary: FlipCause = "unknown"
    elif prompt_changed and page_changed:
        primary = "prompt+page"
    elif prompt_changed:
        primary = "prompt"
    elif page_changed:
        primary = "page"
    elif path_differs:
        primary = "evidence_path"
    else:
        primary = "model"

    # Repeats: runs with the same prompt and the same page versions as A (or B).
    runs = [a, b, *extras]
    traces = [ta, tb, *(claim_trace(x, key) for x in extras)]
    group_a = _repeat_group(a, ta, runs, traces, key)
    group_b = _repeat_group(b, tb, runs, traces, key)
    within_noise = False
    repeats: dict[str, Any] = {}
    if group_a == group_b and len(group_a) >= 2:
        repeats["a_and_b"] = _repeats_evidence(runs, traces, group_a, key)
        within_noise = True
    else:
        for side, group, other in (("a", group_a, rb.judge_verdict), ("b", group_b, ra.judge_verdict)):
            if len(group) >= 2:
                repeats[side] = _repeats_evidence(runs, traces, group, key)
                if any(runs[i].results[key].judge_verdict == other for i in group):
                    within_noise = True
    if repeats:
        evidence["repeats"] = repeats
    noise_note = ""
    if within_noise and primary != "model" and (primary != "unknown" or elsewhere):
        noise_note = _noise_note(repeats)
        primary = "model"
        if "model" not in causes:
            causes.append("model")

    # Controlled re-runs: A's prompt with B's pages, B's prompt with A's pages.
    confirmations = _confirmations(key, a, b, ta, tb, extras, traces[2:], prompt_changed, page_changed)
    if confirmations:
        evidence["confirmed_by"] = confirmations[0]["run"]
        evidence["confirmations"] = confirmations
        # one cause only when every crossed run points to it; a third verdict ("neither") says the two
        # inputs moved it together
        points = {c["points_to"] for c in confirmations}
        evidence["confirmed_cause"] = (points.pop() if len(points) == 1 and "neither" not in points
                                       else "prompt+page")

    if not causes and primary == "model":
        causes.append("model")
    if primary not in causes and primary not in ("unknown", "prompt+page"):
        causes.insert(0, primary)

    summary = _summary(primary, evidence, prompt_info, ra, rb, claim, ta, tb, a, b, page_changed,
                       prompt_changed, noise_note)
    if primary == "unknown" and elsewhere and page_changed is not None and prompt_changed is not None:
        names = " and ".join(dict.fromkeys(page_name(p["url"]) for p in pages if p.get("changed")))
        summary = (f"unknown: {names} changed, but not where either verdict rests (each quote occurs in both "
                   "versions, or only the formatting changed); same prompt and evidence path: model noise, or the "
                   "page's change elsewhere (diff --confirm re-records the claim to tell)")
    confirmed = evidence.get("confirmed_cause")
    if primary == "prompt+page" and confirmed in ("prompt", "page"):
        # Both inputs changed, but a controlled re-run held one fixed: it says which one moved the verdict.
        primary = confirmed
        summary = f"{confirmed} (confirmed by a controlled run; the " + (
            "page" if confirmed == "prompt" else "prompt") + " changed too): " + summary.removeprefix("prompt+page: ")
    flip = Flip(
        file=key[0], id=key[1], verdict_a=ra.judge_verdict, verdict_b=rb.judge_verdict,
        primary_cause=primary, causes=causes, evidence=evidence, summary=summary,
    )
    return _with_gold(flip, gold.get(key)), None


def _with_gold(flip: Flip, label: str | None) -> Flip:
    """The flip with its gold label and which side got it right."""
    if label is not None:
        expected = GOLD_TO_VERDICT[label]
        flip.gold = label  # type: ignore[assignment]
        flip.right = "a" if flip.verdict_a == expected else "b" if flip.verdict_b == expected else "neither"
    return flip


def _no_verdict_error(run: RunInput, key: Key) -> str:
    """Why run has no verdict on the claim: its result's error, else its conversation's."""
    result = run.results.get(key)
    return (result.error if result else None) or run.file_errors.get(key[0]) or "no error recorded"


def _no_verdict_flip(key: Key, a: RunInput, b: RunInput, claim: AnyClaim | None, gold: Mapping[Key, str]) -> Flip:
    """A claim with a verdict on one side only. The judge did not change its verdict (it gave none), so no
    input is a cause: `unknown`, with the silent side's error as the evidence."""
    ra, rb = a.results[key], b.results[key]
    side, run = ("a", a) if ra.judge_verdict is None else ("b", b)
    error = _no_verdict_error(run, key)
    reasons = {"a": ra.reason, "b": rb.reason, side: f"{NO_VERDICT}: {error}"}
    evidence: dict[str, Any] = {
        "claim": claim.claim if claim else None,
        "no_verdict": {"side": side, "error": error},
        "quotes": {"a": ra.evidence_quote, "b": rb.evidence_quote},
        "rules": {"a": ra.rule, "b": rb.rule},
        "reasons": reasons,
        "evidence_urls": {"a": ra.evidence_url, "b": rb.evidence_url},
    }
    flip = Flip(file=key[0], id=key[1], verdict_a=ra.judge_verdict, verdict_b=rb.judge_verdict,
                primary_cause="unknown", causes=[], evidence=evidence,
                summary=no_verdict_summary(side.upper(), error))
    return _with_gold(flip, gold.get(key))


def _claim_changed_flip(key: Key, a: RunInput, b: RunInput, gold: Mapping[Key, str]) -> Flip:
    """A flip where the two runs judged different claims under the same (file, id): neither prompt, page,
    evidence path nor model can be told apart from the edit of the claim, so the cause is `unknown`, with
    both claims as the evidence."""
    ra, rb, ca, cb = a.results[key], b.results[key], a.claims[key], b.claims[key]
    changed = {side: {"claim": c.claim, "claim_type": c.claim_type, "evidence_url": c.evidence_url}
               for side, c in (("a", ca), ("b", cb))}
    evidence: dict[str, Any] = {
        "claim": ca.claim,
        "claim_changed": changed,
        "quotes": {"a": ra.evidence_quote, "b": rb.evidence_quote},
        "rules": {"a": ra.rule, "b": rb.rule},
        "reasons": {"a": ra.reason, "b": rb.reason},
        "evidence_urls": {"a": ra.evidence_url, "b": rb.evidence_url},
    }
    what = [shown for name, shown in (("claim", "text"), ("claim_type", "type"), ("evidence_url", "cited page"))
            if changed["a"][name] != changed["b"][name]]
    summary = (f"unknown: the runs judged different claims under this id (its {' and '.join(what)} changed: "
               f"A '{_clip(ca.claim, cb.claim)}', B '{_clip(cb.claim, ca.claim)}'), so the flip says nothing "
               "about the prompt, the pages or the model")
    flip = Flip(file=key[0], id=key[1], verdict_a=ra.judge_verdict, verdict_b=rb.judge_verdict,
                primary_cause="unknown", causes=[], evidence=evidence, summary=summary)
    return _with_gold(flip, gold.get(key))


def _noise_note(repeats: dict[str, Any]) -> str:
    group: dict[str, Any] = repeats.get("a_and_b") or repeats.get("a") or repeats["b"]
    counts = ", ".join(f"{v} {n}" for v, n in group["verdicts"].items())
    return f"within noise: {group['n']} runs with the same prompt and pages gave {counts} (flip rate {group['flip_rate']:.2f})"


def _flip_prompt_evidence(info: dict[str, Any], ra: Result, rb: Result) -> dict[str, Any]:
    ev = {k: v for k, v in info.items() if k not in ("rules_a", "rules_b")}
    rules_a, rules_b = info.get("rules_a", {}), info.get("rules_b", {})
    if rb.rule:
        ev["rule_b"] = {"rule": rb.rule, "title": rules_b.get(rb.rule), "in_a": rb.rule in rules_a,
                        "in_b": rb.rule in rules_b}
    if ra.rule:
        ev["rule_a"] = {"rule": ra.rule, "title": rules_a.get(ra.rule), "in_a": ra.rule in rules_a,
                        "in_b": ra.rule in rules_b}
    return ev


def _confirmations(
    key: Key, a: RunInput, b: RunInput, ta: ClaimTrace, tb: ClaimTrace, extras: Sequence[RunInput],
    extra_traces: Sequence[ClaimTrace], prompt_changed: bool | None, page_changed: bool | None,
) -> list[dict[str, Any]]:
    if not (prompt_changed and page_changed):
        return []  # a crossed run only separates prompt from page when both differ
    va, vb = a.results[key].judge_verdict, b.results[key].judge_verdict
    out = []
    for x, tx in zip(extras, extra_traces):
        if (key not in x.results or x.prompt_id is None or not x.model == a.model == b.model
                or not (_same_claim(x, a, key) and _same_claim(x, b, key))):
            continue
        vx = x.results[key].judge_verdict
        if x.prompt_id == a.prompt_id and _has_pages_of(x, tx, b, tb) and not _same_pages(x, tx, a, ta):
            combo, moved = "A's prompt with B's pages", {vb: "page", va: "prompt"}
        elif x.prompt_id == b.prompt_id and _has_pages_of(x, tx, a, ta) and not _same_pages(x, tx, b, tb):
            combo, moved = "B's prompt with A's pages", {vb: "prompt", va: "page"}
        else:
            continue
        out.append({"run": x.name, "combination": combo, "verdict": vx, "points_to": moved.get(vx, "neither")})
    return out


def _summary(
    primary: FlipCause, ev: dict[str, Any], info: dict[str, Any], ra: Result, rb: Result,
    claim: AnyClaim | None, ta: ClaimTrace, tb: ClaimTrace, a: RunInput, b: RunInput,
    page_changed: bool | None, prompt_changed: bool | None, noise_note: str,
) -> str:
    prompt_part, _ = _prompt_reason(info, ra, rb) if prompt_changed else ("", False)
    page_part = _page_reason(ev["pages"], claim) or _search_reason(ev.get("searches_changed", {}))
    n_pages = sum(1 for p in ev["pages"] if p.get("changed") is False)
    same_pages = ("page unchanged" if n_pages == 1 else "pages unchanged") if n_pages else "no page compared"
    moved = list(dict.fromkeys(page_name(p["url"]) for p in ev["pages"] if p.get("changed")))
    if page_changed is False and moved:  # `_rests_unchanged`
        same_pages = f"{' and '.join(moved)} changed, not where either verdict rests"
    if primary == "prompt":
        line = f"prompt: {prompt_part}; {same_pages}"
        if ev["path"]["differs"]:
            line += f"; {_path_reason(ta, tb)}"
    elif primary == "page":
        line = f"page: {page_part}; prompt unchanged"
    elif primary == "prompt+page":
        line = f"prompt+page: {prompt_part}; and {page_part}"
    elif primary == "evidence_path":
        line = f"evidence_path: {_path_reason(ta, tb)}; same prompt and page versions"
    elif primary == "model":
        if noise_note:
            line = f"model: {noise_note}"
        else:
            ma, mb = ev["model"]["a"]["model"], ev["model"]["b"]["model"]
            who = f"{ma} → {mb}" if ma != mb else f"same model {ma}"
            sdk = _sdk_change(ev["model"]["a"]["versions"], ev["model"]["b"]["versions"])
            line = f"model: same prompt, pages and evidence path; {who}{sdk}"
    else:
        missing = []
        if prompt_changed is None:
            missing.append("no prompt text nor sha256 on one side")
        if page_changed is None:
            sides = [s for s, t in (("A", ta), ("B", tb)) if not t.recorded]
            missing.append(f"no Learn traffic recorded for this claim in {' and '.join(sides) or 'either run'}")
        known = f" (prompt {'changed: ' + prompt_part if prompt_changed else 'unchanged'})" if prompt_changed is not None else ""
        line = f"unknown: {'; '.join(missing)}{known}"
    conf = ev.get("confirmations")
    if conf and ev.get("confirmed_cause") in ("prompt", "page"):
        c = conf[0]
        line += f" — confirmed by {c['run']}: {c['combination']} gives {c['verdict']} → the {c['points_to']} moved it"
    elif conf:
        said = "; ".join(f"{c['run']}: {c['combination']} gives {c['verdict']}" for c in conf)
        line += f" — the controlled runs do not single out one input ({said}): prompt and page moved it together"
    return line


def _sdk_change(va: Mapping[str, str], vb: Mapping[str, str]) -> str:
    diffs = [f"{k} {va.get(k, '?')}→{vb.get(k, '?')}" for k in sorted(set(va) | set(vb)) if va.get(k) != vb.get(k)]
    return f" ({', '.join(diffs)})" if diffs else ""


# --------------------------------------------------------------------------- the report


TEXT_EVIDENCE = ("repeats", "confirmations")
"""What the text report and its `--confirm` commands read of a flip's evidence."""
TEXT_HELD = ("file", "id", "verdict", "url", "where")
"""What the text report reads of a claim held despite a page change."""


def flip_report(
    a: RunInput, b: RunInput, gold: Mapping[Key, str] | None = None, extras: Sequence[RunInput] = (), *,
    text_only: bool = False,
) -> FlipReport:
    """Pair the two runs' claims on (file, id) and explain every verdict that differs. `text_only=True`: for
    the text report, each flip keeps only the evidence it reads (`TEXT_EVIDENCE`) and each held claim what it
    reads of it (`TEXT_HELD`), the rest let go of as the claim is explained; the changed pages' diff texts are
    not made."""
    gold = gold or {}
    prompt_changed, prompt_info = _prompt_state(a, b)
    keys_a, keys_b = a.results.keys(), b.results.keys()
    paired = sorted(keys_a & keys_b)
    # explained page by page (what each page's caches serve), reported in claim order
    by_page = sorted(paired, key=lambda k: _cited_page(a.results[k]) or _cited_page(b.results[k]))
    flipped: dict[Key, Flip] = {}
    held_at: dict[Key, dict[str, str]] = {}
    for key in by_page:
        flip, kept = explain_flip(key, a, b, prompt_changed, prompt_info, extras, gold, hunks=not text_only)
        if flip is not None:
            if text_only:
                flip.evidence = {name: flip.evidence[name] for name in TEXT_EVIDENCE if name in flip.evidence}
            flipped[key] = flip
        if kept is not None:
            held_at[key] = {name: kept[name] for name in TEXT_HELD} if text_only else kept
    del by_page
    flips = [flipped[key] for key in paired if key in flipped]
    held = [held_at[key] for key in paired if key in held_at]
    del flipped, held_at
    unpaired = [{"file": f, "id": i, "only_in": "a"} for f, i in sorted(keys_a - keys_b)]
    unpaired += [{"file": f, "id": i, "only_in": "b"} for f, i in sorted(keys_b - keys_a)]
    counts = Counter(f.primary_cause for f in flips)
    run_prompt = {k: v for k, v in prompt_info.items() if k not in ("rules_a", "rules_b")}
    # made of values of the record's types, here: not validated, which would copy every held entry
    return FlipReport.model_construct(
        run_a=a.label, run_b=b.label, paired=len(paired), flips=flips,
        held_despite_page_change=held, unpaired=unpaired,
        counts={c: counts[c] for c in ("prompt", "page", "prompt+page", "evidence_path", "model", "unknown")
                if counts[c]},
        prompt=run_prompt,
        runs={side: {"name": r.name, "path": r.label, "prompt": r.prompt_name, "prompt_sha256": r.prompt_id,
                     "model": r.model, "versions": dict(r.versions), "pages_from": r.pages_from,
                     "stand_ins": list(r.stand_ins)}
              for side, r in (("a", a), ("b", b))},
        extra_runs=[x.name for x in extras],
    )


def _cited_page(result: Result) -> str:
    return normalise_learn_url(result.evidence_url) if result.evidence_url else ""


def gold_labels(gold: GoldSet | None) -> dict[Key, str]:
    """(file, id) -> gold label; files and ids held once with the results' (`sys.intern`)."""
    return {(sys.intern(item.file), sys.intern(item.id)): item.label for item in gold.items} if gold else {}


def confirm_commands(a: RunInput, b: RunInput, report: FlipReport, parent: str) -> list[str]:
    """`judge` commands that would record the missing controlled runs for this report's flips: A's prompt
    with B's pages and the crossed one (for flips where both changed, when A and B share their model: else
    no crossed run holds everything but one input), else a repeat of A and of B on their own pages (to
    measure noise). `parent` is the folder the new runs go in (their sibling folder,
    where `diff` finds them); each command runs the prompt side's model at its recorded endpoint."""
    crossed = {f.file for f in report.flips if f.primary_cause in ("prompt+page", "page") and
               not f.evidence.get("confirmations")}
    repeat = {f.file for f in report.flips if f.primary_cause in ("prompt", "model", "evidence_path") and
              not f.evidence.get("repeats")}
    out = []

    def command(prompt_of: RunInput, pages_of: RunInput, files: set[str], run_name: str) -> str:
        claims = [prompt_of.claims_paths.get(f) or pages_of.claims_paths.get(f) or f for f in sorted(files)]
        folder = f"{parent.rstrip('/')}/{run_name}" if parent else run_name
        return judge_command(prompt=prompt_of.prompt_arg or prompt_of.prompt_name or "?", claims=claims, run=folder,
                             model=prompt_of.model, anthropic_base_url=prompt_of.anthropic_base_url,
                             pages_from=pages_of.label)

    if crossed and a.model == b.model:  # a crossed run isolates prompt from page only when the model is held too
        out.append(command(a, b, crossed, f"{a.name}-prompt-{b.name}-pages"))
        out.append(command(b, a, crossed, f"{b.name}-prompt-{a.name}-pages"))
    if repeat:
        out.append(command(a, a, repeat, f"{a.name}-repeat"))
        out.append(command(b, b, repeat, f"{b.name}-repeat"))
    return out
