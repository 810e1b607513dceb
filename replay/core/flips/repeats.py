"""Repeats and controlled runs: other runs that hold all inputs but one fixed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from replay.core.flips.evidence import ClaimTrace, _has_pages_of, _same_pages, claim_trace
from replay.core.flips.inputs import Key, RunInput
from replay.schema.claims import as_judged
from replay.schema.common import Verdict
from replay.schema.flip_evidence import Repeats
from replay.schema.flips import ControlledRun, ControlRole


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
                      key: Key) -> Repeats:
    verdicts = [runs[i].results[key].judge_verdict for i in group]
    counted: Counter[Verdict | Literal["none"]] = Counter(v or "none" for v in verdicts)
    return Repeats(runs=[runs[i].name for i in group], n=len(group), verdicts=dict(counted),
                   flip_rate=_flip_rate(verdicts))


ROLES: tuple[ControlRole, ...] = (
    "A's prompt with B's pages", "B's prompt with A's pages", "a repeat of A", "a repeat of B")
"""How another run can hold one side of an A → B comparison fixed, most telling first."""


def flipped_keys(a: RunInput, b: RunInput) -> list[Key]:
    """The paired claims whose verdict differs."""
    return sorted(k for k in a.results.keys() & b.results.keys()
                  if a.results[k].judge_verdict != b.results[k].judge_verdict)


def _role_for(x: RunInput, tx: ClaimTrace, a: RunInput, ta: ClaimTrace, b: RunInput, tb: ClaimTrace,
              key: Key) -> ControlRole | None:
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


def _models_held(role: ControlRole, x: RunInput, a: RunInput, b: RunInput) -> bool:
    """A controlled run moves one input only: a repeat has its side's model, a crossed run the model of
    both sides (when A and B differ in model, no crossed run isolates the prompt or the page)."""
    if role == ROLES[2]:
        return x.model == a.model
    if role == ROLES[3]:
        return x.model == b.model
    return x.model == a.model == b.model


def controlled_role(
    x: RunInput, a: RunInput, b: RunInput, keys: Sequence[Key], found: Literal["given", "sibling folder"],
) -> ControlledRun | None:
    """How run x holds one side of A → B fixed for the flipped claims `keys` it judged: the same prompt
    (by sha) as one side, the same model, and, claim by claim, the same page versions as the other side
    (a crossed run) or as the same side (a repeat). None when it plays no role for any of them; else its
    role (the first of ROLES it plays; None when only its model kept it from playing one), the flipped
    claims per role, and why (one line, naming the model). `found`: how x came in."""
    if x.prompt_id is None:
        return None
    counts: Counter[ControlRole] = Counter()
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
    if not counts:
        if not other_model:
            return None
        models = a.model if a.model == b.model else f"A {a.model}, B {b.model}"
        why = (f"{x.name}: not used: recorded with model {x.model}, not the compared runs' ({models}), so it "
               f"does not hold {side}'s side fixed ({side}'s prompt, sha {x.prompt_id[:8]})")
        return ControlledRun(run=x.name, path=x.label, stand_ins=list(x.stand_ins), role=None, claims={}, why=why,
                             found=found)
    role = next(r for r in ROLES if counts[r])
    pinned = f", recorded with --pages-from {x.pages_from}" if x.pages_from else ""
    uses = ", ".join(f"{r} for {counts[r]}" for r in ROLES if counts[r])
    why = (f"{x.name}: {uses} flipped claim{'s' if sum(counts.values()) != 1 else ''} ({side}'s prompt, sha "
           f"{x.prompt_id[:8]}, model {x.model}; page versions compared claim by claim{pinned})")
    return ControlledRun(run=x.name, path=x.label, stand_ins=list(x.stand_ins), role=role, claims=dict(counts),
                         why=why, found=found)
