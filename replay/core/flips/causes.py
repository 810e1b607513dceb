"""Why a claim's verdict moved between two runs: prompt, page, evidence path or the model (pure core).

Inputs are plain data built at the edge (`replay._flip_inputs`, whose `explain_flips(Run, Run, ...)` is
the entry point) from run folders; nothing here reads a file or the network.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from replay.core.flips.evidence import (
    ClaimTrace,
    _compare_pages,
    _has_pages_of,
    _page_evidence,
    _rests_unchanged,
    _same_pages,
    claim_trace,
    searches_changed,
)
from replay.core.flips.inputs import Key, Result, RunInput
from replay.core.flips.prompt_diff import PromptState
from replay.core.flips.repeats import _flip_rate, _repeat_group, _repeats_evidence, _same_claim
from replay.core.samples import is_stable, sample_verdicts
from replay.core.page_diff import changed_values, claim_values_on, line_values
from replay.core.text import normalise_ws, value_tokens, without_thousands
from replay.schema.claims import AnyClaim
from replay.schema.common import GOLD_TO_VERDICT, FlipCause, Verdict
from replay.schema.flip_evidence import (
    CitedRule,
    ClaimChange,
    Combination,
    Confirmation,
    FlipEvidence,
    FlipPromptEvidence,
    JudgedClaim,
    ModelEvidence,
    NoVerdict,
    PageEvidence,
    PathEvidence,
    PointsTo,
    Repeats,
    RepeatsEvidence,
    RunModel,
    RunPath,
    RunTexts,
    SearchResults,
    Side,
)
from replay.schema.flips import Flip, HeldClaim
from replay.urls import page_name, page_names
from replay.secrets.excerpts import clean, excerpt, first_difference, shows_secret
from replay.secrets.registry import PLACEHOLDER

NO_VERDICT = "no verdict"
"""How every output names the absence of a verdict (a failed or cut-off conversation)."""


def shown_verdict(verdict: str | None) -> str:
    """A verdict as people read it: `no verdict` when the judge gave none."""
    return verdict or NO_VERDICT


def no_verdict_summary(side: str, error: str) -> str:
    """The summary of a flip where one side (`A`/`B`) has no verdict: no judge flip, so its cause is unknown."""
    return f"unknown: {NO_VERDICT} in {side}: {error}"


# --------------------------------------------------------------------------- one flip


def _verdict(result: Result | None) -> str | None:
    return result.judge_verdict if result else None


def _cite(rule: str, rules: Mapping[str, str]) -> str:
    return f"{rule} ({rules[rule]})" if rule in rules else rule


def _prompt_reason(prompts: PromptState, ra: Result | None, rb: Result | None) -> tuple[str, bool]:
    """(the prompt part of a summary, whether a cited rule exists on one side only)."""
    info = prompts.comparison
    name_b = info.b.name or "B"
    name_a = info.a.name or "A"
    rules_a, rules_b = prompts.rules_a, prompts.rules_b
    rule_a, rule_b = (ra.rule if ra else ""), (rb.rule if rb else "")
    if rule_b and rule_b in rules_b and rule_b not in rules_a:
        return f"B cites {_cite(rule_b, rules_b)}, new in {name_b}", True
    if rule_a and rule_a in rules_a and rule_a not in rules_b:
        return f"A cites {_cite(rule_a, rules_a)}, dropped in {name_b}", True
    if rule_b and rule_b in info.rules_changed:
        return f"B cites {_cite(rule_b, rules_b)}, reworded in {name_b}", False
    parts = []
    if info.rules_added:
        parts.append("adds " + ", ".join(info.rules_added))
    if info.rules_removed:
        parts.append("drops " + ", ".join(info.rules_removed))
    n_sections = len(info.sections_added) + len(info.sections_changed) + len(info.sections_removed)
    if n_sections:
        parts.append(f"{n_sections} section differs" if n_sections == 1 else f"{n_sections} sections differ")
    detail = f" ({'; '.join(parts)})" if parts else ""
    return f"{name_a} → {name_b}{detail}", False


def _page_reason(pages: list[PageEvidence], claim: AnyClaim | None) -> str:
    changed = [p for p in pages if p.changed]
    if not changed:
        return ""
    p = next((p for p in changed if p.near_claim), changed[0])
    name = page_name(p.url)
    shas = f"sha {(p.sha256_a or '')[:4] or 'missing'}→{(p.sha256_b or '')[:4] or 'missing'}"
    if p.sha256_a is None or p.sha256_b is None:
        gone = "could no longer be retrieved" if p.sha256_b is None else "could not be retrieved in A"
        return f"{name} {gone} ({shas})"
    if not p.near_claim:
        note = p.note or "page changed"
        return f"{name} changed, not near the claim ({note}; {shas})"
    old, new = p.old_line, p.new_line
    if old is None:
        return f"a line now in {name} reads '{_clip(new)}' ({shas})" if new else f"{name} changed near the claim ({shas})"
    if new is None:
        return f"the claim's line was removed from {name}: '{_clip(old)}' ({shas})"
    removed, added = changed_values(old, new)
    values = value_tokens(claim.claim) if claim else []
    anchor = next((v for v in claim_values_on(old, values) if not v.replace(".", "").isdigit() and not shows_secret(v)),
                  None)
    head = f"{anchor} … " if anchor else "… "
    kept = [v for v in line_values(old) if v not in removed and without_thousands(v.lower()) in values
            and without_thousands(v.lower()) != anchor]
    if added and (kept or removed) or removed:
        was = ", ".join([*kept[:1], *removed])
        now = ", ".join([*kept[:1], *added]) or "(no value)"
        return f"'{head}{was}' → '{head}{now}' in {name} ({shas})"
    return f"the claim's line changed in {name}: '{_clip(old, new)}' → '{_clip(new, old)}' ({shas})"


def _search_reason(searches: Mapping[str, SearchResults]) -> str:
    if not searches:
        return ""
    query, found = next(iter(searches.items()))

    def names(urls: list[str]) -> str:
        return " + ".join(page_name(u) for u in urls[:3]) + (" …" if len(urls) > 3 else "") or "nothing"

    return f"Learn's search for '{_clip(query)}' returned other pages ({names(found.a)} → {names(found.b)})"


def _clip(text: str, other: str | None = None, n: int = 70) -> str:
    """A line cut to n characters; with `other`, starting a little before where the two lines differ (both
    cleaned of secrets first: `secrets.excerpts`)."""
    text = clean(normalise_ws(text))
    start = 0
    if other is not None:
        start = max(0, first_difference(text, clean(normalise_ws(other))) - 25)
    return excerpt(text, n, start=start)


def _path_reason(ta: ClaimTrace, tb: ClaimTrace) -> str:
    def urls(t: ClaimTrace) -> list[str]:
        return [*t.read, *([t.cited] if t.cited and t.cited not in t.read else [])]

    names = page_names([*urls(ta), *urls(tb)])  # two pages of one name are told apart

    def side(t: ClaimTrace) -> str:
        return " + ".join(names[u] for u in urls(t)) or "nothing"

    return f"A read {side(ta)}, B read {side(tb)}"


def explain_flip(
    key: Key, a: RunInput, b: RunInput, prompts: PromptState, extras: Sequence[RunInput], gold: Mapping[Key, str],
    *, hunks: bool = True,
) -> tuple[Flip | None, HeldClaim | None]:
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
        return None, HeldClaim(
            file=key[0], id=key[1], verdict=ra.judge_verdict, url=ev.url,
            sha256_a=ev.sha256_a or "missing", sha256_b=ev.sha256_b or "missing",
            where="near the claim" if ev.near_claim else (ev.note or "page changed elsewhere"),
        )

    if ra.judge_verdict is None or rb.judge_verdict is None:
        return _no_verdict_flip(key, a, b, claim, gold), None
    if not _same_claim(a, b, key):
        return _claim_changed_flip(key, a, b, gold), None

    prompt_changed = prompts.changed
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

    evidence = FlipEvidence(
        claim=claim.claim if claim else None,
        claim_values=[PLACEHOLDER if shows_secret(v) else v for v in value_tokens(claim.claim)] if claim else [],
        **_both_verdicts(ra, rb),
        prompt=_flip_prompt_evidence(prompts, ra, rb),
        pages=pages,
        path=PathEvidence(a=_run_path(ta), b=_run_path(tb), differs=path_differs),
        model=ModelEvidence(a=RunModel(model=a.model, versions=dict(a.versions)),
                            b=RunModel(model=b.model, versions=dict(b.versions)), differs=model_differs),
    )
    if searches:
        evidence.searches_changed = searches

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
    repeats = RepeatsEvidence()
    if group_a == group_b and len(group_a) >= 2:
        repeats.a_and_b = _repeats_evidence(runs, traces, group_a, key)
        within_noise = True
    else:
        if len(group_a) >= 2:
            repeats.a = _repeats_evidence(runs, traces, group_a, key)
            within_noise = any(runs[i].results[key].judge_verdict == rb.judge_verdict for i in group_a)
        if len(group_b) >= 2:
            repeats.b = _repeats_evidence(runs, traces, group_b, key)
            if any(runs[i].results[key].judge_verdict == ra.judge_verdict for i in group_b):
                within_noise = True
    own_noise = _own_samples(repeats, a, ra, b, rb)  # a run's own samples repeat it: no sibling needed
    within_noise = within_noise or own_noise
    if repeats.model_fields_set:
        evidence.repeats = repeats
    noise_note = ""
    if within_noise and primary != "model" and (primary != "unknown" or elsewhere):
        noise_note = _noise_note(repeats)
        primary = "model"
        if "model" not in causes:
            causes.append("model")

    # Controlled re-runs: A's prompt with B's pages, B's prompt with A's pages.
    confirmations = _confirmations(key, a, b, ta, tb, extras, traces[2:], prompt_changed, page_changed)
    if confirmations:
        evidence.confirmed_by = confirmations[0].run
        evidence.confirmations = confirmations
        # one cause only when every crossed run points to it; a third verdict ("neither") says the two
        # inputs moved it together
        points = {c.points_to for c in confirmations}
        single = points.pop() if len(points) == 1 else "neither"
        evidence.confirmed_cause = single if single != "neither" else "prompt+page"

    if not causes and primary == "model":
        causes.append("model")
    if primary not in causes and primary not in ("unknown", "prompt+page"):
        causes.insert(0, primary)

    summary = _summary(primary, evidence, prompts, ra, rb, claim, ta, tb, page_changed, noise_note)
    if primary == "unknown" and elsewhere and page_changed is not None and prompt_changed is not None:
        names = " and ".join(dict.fromkeys(page_name(p.url) for p in pages if p.changed))
        summary = (f"unknown: {names} changed, but not where either verdict rests (each quote occurs in both "
                   "versions, or only the formatting changed); same prompt and evidence path: model noise, or the "
                   "page's change elsewhere (diff --confirm re-records the claim to tell)")
    if repeats.unstable:
        sides = " and ".join(side.upper() for side in repeats.unstable)
        summary += f" [unstable claim: run {sides}'s own samples disagree on it]"
    confirmed = evidence.confirmed_cause
    if primary == "prompt+page" and confirmed in ("prompt", "page"):
        # Both inputs changed, but a controlled re-run held one fixed: it says which one moved the verdict.
        primary = "prompt" if confirmed == "prompt" else "page"
        summary = f"{confirmed} (confirmed by a controlled run; the " + (
            "page" if confirmed == "prompt" else "prompt") + " changed too): " + summary.removeprefix("prompt+page: ")
    flip = Flip(
        file=key[0], id=key[1], verdict_a=ra.judge_verdict, verdict_b=rb.judge_verdict,
        primary_cause=primary, causes=causes, evidence=evidence, summary=summary,
    )
    return _with_gold(flip, gold.get(key)), None


class _BothVerdicts(TypedDict):
    """`FlipEvidence`'s fields that every flip has: what each verdict says."""

    quotes: RunTexts
    rules: RunTexts
    reasons: RunTexts
    evidence_urls: RunTexts


def _both_verdicts(ra: Result, rb: Result, reason_a: str | None = None, reason_b: str | None = None) -> _BothVerdicts:
    """Each verdict's quote, rule, reason (or the one given for it) and evidence URL."""
    return _BothVerdicts(
        quotes=RunTexts(a=ra.evidence_quote, b=rb.evidence_quote),
        rules=RunTexts(a=ra.rule, b=rb.rule),
        reasons=RunTexts(a=ra.reason if reason_a is None else reason_a, b=rb.reason if reason_b is None else reason_b),
        evidence_urls=RunTexts(a=ra.evidence_url, b=rb.evidence_url),
    )


def _run_path(t: ClaimTrace) -> RunPath:
    return RunPath(read=t.read, cited=t.cited, searched=t.searched, recorded=t.recorded)


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
    side: Side = "a" if ra.judge_verdict is None else "b"
    error = _no_verdict_error(a if side == "a" else b, key)
    silent = f"{NO_VERDICT}: {error}"
    evidence = FlipEvidence(
        claim=claim.claim if claim else None,
        no_verdict=NoVerdict(side=side, error=error),
        **_both_verdicts(ra, rb, *((silent, None) if side == "a" else (None, silent))),
    )
    flip = Flip(file=key[0], id=key[1], verdict_a=ra.judge_verdict, verdict_b=rb.judge_verdict,
                primary_cause="unknown", causes=[], evidence=evidence,
                summary=no_verdict_summary(side.upper(), error))
    return _with_gold(flip, gold.get(key))


def _claim_changed_flip(key: Key, a: RunInput, b: RunInput, gold: Mapping[Key, str]) -> Flip:
    """A flip where the two runs judged different claims under the same (file, id): neither prompt, page,
    evidence path nor model can be told apart from the edit of the claim, so the cause is `unknown`, with
    both claims as the evidence."""
    ra, rb, ca, cb = a.results[key], b.results[key], a.claims[key], b.claims[key]
    changed = ClaimChange(a=JudgedClaim(claim=ca.claim, claim_type=ca.claim_type, evidence_url=ca.evidence_url),
                          b=JudgedClaim(claim=cb.claim, claim_type=cb.claim_type, evidence_url=cb.evidence_url))
    evidence = FlipEvidence(claim=ca.claim, claim_changed=changed, **_both_verdicts(ra, rb))
    what = [shown for name, shown in (("claim", "text"), ("claim_type", "type"), ("evidence_url", "cited page"))
            if getattr(changed.a, name) != getattr(changed.b, name)]
    summary = (f"unknown: the runs judged different claims under this id (its {' and '.join(what)} changed: "
               f"A '{_clip(ca.claim, cb.claim)}', B '{_clip(cb.claim, ca.claim)}'), so the flip says nothing "
               "about the prompt, the pages or the model")
    flip = Flip(file=key[0], id=key[1], verdict_a=ra.judge_verdict, verdict_b=rb.judge_verdict,
                primary_cause="unknown", causes=[], evidence=evidence, summary=summary)
    return _with_gold(flip, gold.get(key))


def _noise_note(repeats: RepeatsEvidence) -> str:
    group = repeats.a_and_b or repeats.a or repeats.b
    if group is None:  # within noise by a run's own samples
        own = repeats.samples_a if repeats.samples_a and len(repeats.samples_a.verdicts) > 1 else repeats.samples_b
        assert own is not None
        counts = ", ".join(f"{v} {n}" for v, n in own.verdicts.items())
        side = "A" if own is repeats.samples_a else "B"
        return (f"within noise: run {side}'s own {own.n} samples of the claim gave {counts} "
                f"(flip rate {own.flip_rate:.2f})")
    counts = ", ".join(f"{v} {n}" for v, n in group.verdicts.items())
    return f"within noise: {group.n} runs with the same prompt and pages gave {counts} (flip rate {group.flip_rate:.2f})"


def _own_samples(repeats: RepeatsEvidence, a: RunInput, ra: Result, b: RunInput, rb: Result) -> bool:
    """Record each side's own samples of the claim (a run judged K >= 2 times) as its repeats, and which sides
    are unstable on it; whether the flip is within that noise: one side's samples gave the other's verdict."""
    within = False
    unstable: list[Literal["a", "b"]] = []
    for side, run, mine, other in (("a", a, ra, rb), ("b", b, rb, ra)):
        verdicts = sample_verdicts(mine)
        if len(verdicts) < 2:
            continue
        counted: Counter[Verdict | Literal["none"]] = Counter(v or "none" for v in verdicts)
        own = Repeats(runs=[f"{run.name} sample {i}" for i in range(1, len(verdicts) + 1)], n=len(verdicts),
                      verdicts=dict(counted), flip_rate=_flip_rate(verdicts))
        setattr(repeats, f"samples_{side}", own)
        if not is_stable(verdicts):
            unstable.append(side)  # type: ignore[arg-type]
        within = within or other.judge_verdict in verdicts
    if unstable:
        repeats.unstable = unstable
    return within


def _flip_prompt_evidence(prompts: PromptState, ra: Result, rb: Result) -> FlipPromptEvidence:
    rules_a, rules_b = prompts.rules_a, prompts.rules_b
    run_level = prompts.comparison
    set_there = set(run_level.model_fields_set)
    # the report's comparison, its values shared by every flip rather than copied into each
    ev = FlipPromptEvidence.model_construct(set_there, **{name: getattr(run_level, name) for name in set_there})

    def cited(rule: str, rules: Mapping[str, str]) -> CitedRule:
        return CitedRule(rule=rule, title=rules.get(rule), in_a=rule in rules_a, in_b=rule in rules_b)

    if rb.rule:
        ev.rule_b = cited(rb.rule, rules_b)
    if ra.rule:
        ev.rule_a = cited(ra.rule, rules_a)
    return ev


def _confirmations(
    key: Key, a: RunInput, b: RunInput, ta: ClaimTrace, tb: ClaimTrace, extras: Sequence[RunInput],
    extra_traces: Sequence[ClaimTrace], prompt_changed: bool | None, page_changed: bool | None,
) -> list[Confirmation]:
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
            combo: Combination = "A's prompt with B's pages"
            moved: dict[Verdict | None, PointsTo] = {vb: "page", va: "prompt"}
        elif x.prompt_id == b.prompt_id and _has_pages_of(x, tx, a, ta) and not _same_pages(x, tx, b, tb):
            combo, moved = "B's prompt with A's pages", {vb: "prompt", va: "page"}
        else:
            continue
        out.append(Confirmation(run=x.name, combination=combo, verdict=vx, points_to=moved.get(vx, "neither")))
    return out


def _summary(
    primary: FlipCause, ev: FlipEvidence, prompts: PromptState, ra: Result, rb: Result,
    claim: AnyClaim | None, ta: ClaimTrace, tb: ClaimTrace, page_changed: bool | None, noise_note: str,
) -> str:
    prompt_changed = prompts.changed
    prompt_part, _ = _prompt_reason(prompts, ra, rb) if prompt_changed else ("", False)
    page_part = _page_reason(ev.pages, claim) or _search_reason(ev.searches_changed)
    n_pages = sum(1 for p in ev.pages if p.changed is False)
    same_pages = ("page unchanged" if n_pages == 1 else "pages unchanged") if n_pages else "no page compared"
    moved = list(dict.fromkeys(page_name(p.url) for p in ev.pages if p.changed))
    if page_changed is False and moved:  # `_rests_unchanged`
        same_pages = f"{' and '.join(moved)} changed, not where either verdict rests"
    assert ev.path is not None and ev.model is not None  # a flip both runs gave a verdict on
    if primary == "prompt":
        line = f"prompt: {prompt_part}; {same_pages}"
        if ev.path.differs:
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
            ma, mb = ev.model.a.model, ev.model.b.model
            who = f"{ma} → {mb}" if ma != mb else f"same model {ma}"
            sdk = _sdk_change(ev.model.a.versions, ev.model.b.versions)
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
    conf = ev.confirmations
    if conf and ev.confirmed_cause in ("prompt", "page"):
        c = conf[0]
        line += f" — confirmed by {c.run}: {c.combination} gives {c.verdict} → the {c.points_to} moved it"
    elif conf:
        said = "; ".join(f"{c.run}: {c.combination} gives {c.verdict}" for c in conf)
        line += f" — the controlled runs do not single out one input ({said}): prompt and page moved it together"
    return line


def _sdk_change(va: Mapping[str, str], vb: Mapping[str, str]) -> str:
    diffs = [f"{k} {va.get(k, '?')}→{vb.get(k, '?')}" for k in sorted(set(va) | set(vb)) if va.get(k) != vb.get(k)]
    return f" ({', '.join(diffs)})" if diffs else ""
