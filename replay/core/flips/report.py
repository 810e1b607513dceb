"""The flip report of two runs: every flip, its summary, and the commands that confirm a cause."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel

from replay.core.commands import NO_ENDPOINTS, Endpoints, judge_command
from replay.core.flips.causes import explain_flip
from replay.core.flips.inputs import Key, Result, RunInput
from replay.core.flips.prompt_diff import prompt_state
from replay.schema.flips import (
    ComparedRuns,
    Flip,
    FlipReport,
    HeldClaim,
    RunSummary,
    UnpairedClaim,
)
from replay.schema.gold import GoldSet
from replay.urls import normalise_learn_url

# --------------------------------------------------------------------------- the report


TEXT_EVIDENCE = ("repeats", "confirmations")
"""What the text report and its `--confirm` commands read of a flip's evidence."""
TEXT_HELD = ("file", "id", "verdict", "url", "where")
"""What the text report reads of a claim held despite a page change."""
R = TypeVar("R", bound=BaseModel)


def flip_report(
    a: RunInput, b: RunInput, gold: Mapping[Key, str] | None = None, extras: Sequence[RunInput] = (), *,
    text_only: bool = False,
) -> FlipReport:
    """Pair the two runs' claims on (file, id) and explain every verdict that differs. `text_only=True`: for
    the text report, each flip keeps only the evidence it reads (`TEXT_EVIDENCE`) and each held claim what it
    reads of it (`TEXT_HELD`), the rest let go of as the claim is explained; the changed pages' diff texts are
    not made."""
    gold = gold or {}
    prompts = prompt_state(a, b)
    keys_a, keys_b = a.results.keys(), b.results.keys()
    paired = sorted(keys_a & keys_b)
    # explained page by page (what each page's caches serve), reported in claim order
    by_page = sorted(paired, key=lambda k: _cited_page(a.results[k]) or _cited_page(b.results[k]))
    flipped: dict[Key, Flip] = {}
    held_at: dict[Key, HeldClaim] = {}
    for key in by_page:
        flip, kept = explain_flip(key, a, b, prompts, extras, gold, hunks=not text_only)
        if flip is not None:
            if text_only:
                flip.evidence = _kept(flip.evidence, TEXT_EVIDENCE)
            flipped[key] = flip
        if kept is not None:
            held_at[key] = _kept(kept, TEXT_HELD) if text_only else kept
    del by_page
    flips = [flipped[key] for key in paired if key in flipped]
    held = [held_at[key] for key in paired if key in held_at]
    del flipped, held_at
    unpaired = [UnpairedClaim(file=f, id=i, only_in="a") for f, i in sorted(keys_a - keys_b)]
    unpaired += [UnpairedClaim(file=f, id=i, only_in="b") for f, i in sorted(keys_b - keys_a)]
    counts = Counter(f.primary_cause for f in flips)
    # made of values of the record's types, here: not validated, which would copy every held entry
    return FlipReport.model_construct(
        run_a=a.label, run_b=b.label, paired=len(paired), flips=flips,
        held_despite_page_change=held, unpaired=unpaired,
        counts={c: counts[c] for c in ("prompt", "page", "prompt+page", "evidence_path", "model", "unknown")
                if counts[c]},
        prompt=prompts.comparison,
        runs=ComparedRuns(a=_summary_of(a), b=_summary_of(b)),
        extra_runs=[x.name for x in extras],
    )


def _kept(record: R, names: tuple[str, ...]) -> R:
    """The record with only the fields `names` of those it has (the rest unset: left out of its JSON)."""
    kept = set(names) & record.model_fields_set
    return type(record).model_construct(kept, **{name: getattr(record, name) for name in kept})


def _summary_of(run: RunInput) -> RunSummary:
    return RunSummary(name=run.name, path=run.label, prompt=run.prompt_name, prompt_sha256=run.prompt_id,
                      model=run.model, versions=dict(run.versions), pages_from=run.pages_from,
                      stand_ins=list(run.stand_ins))


def _cited_page(result: Result) -> str:
    return normalise_learn_url(result.evidence_url) if result.evidence_url else ""


def gold_labels(gold: GoldSet | None) -> dict[Key, str]:
    """(file, id) -> gold label; files and ids held once with the results' (`sys.intern`)."""
    return {(sys.intern(item.file), sys.intern(item.id)): item.label for item in gold.items} if gold else {}


def confirm_commands(a: RunInput, b: RunInput, report: FlipReport, parent: str,
                     endpoints: Endpoints = NO_ENDPOINTS) -> list[str]:
    """`judge` commands that would record the missing controlled runs for this report's flips: A's prompt
    with B's pages and the crossed one (for flips where both changed, when A and B share their model: else
    no crossed run holds everything but one input), else a repeat of A and of B on their own pages (to
    measure noise). `parent` is the folder the new runs go in (their sibling folder,
    where `diff` finds them); each command runs the prompt side's model at the endpoint the user gave
    (`endpoints`), else at its recorded one."""
    crossed = {f.file for f in report.flips if f.primary_cause in ("prompt+page", "page") and
               not f.evidence.confirmations}
    repeat = {f.file for f in report.flips if f.primary_cause in ("prompt", "model", "evidence_path") and
              not f.evidence.repeats}
    out = []

    def command(prompt_of: RunInput, pages_of: RunInput, files: set[str], run_name: str) -> str:
        claims = [prompt_of.claims_paths.get(f) or pages_of.claims_paths.get(f) or f for f in sorted(files)]
        folder = f"{parent.rstrip('/')}/{run_name}" if parent else run_name
        return judge_command(prompt=prompt_of.prompt_arg or prompt_of.prompt_name or "?", claims=claims, run=folder,
                             model=prompt_of.model,
                             anthropic_base_url=endpoints.anthropic_base_url or prompt_of.anthropic_base_url,
                             pages_from=pages_of.label)

    if crossed and a.model == b.model:  # a crossed run isolates prompt from page only when the model is held too
        out.append(command(a, b, crossed, f"{a.name}-prompt-{b.name}-pages"))
        out.append(command(b, a, crossed, f"{b.name}-prompt-{a.name}-pages"))
    if repeat:
        out.append(command(a, a, repeat, f"{a.name}-repeat"))
        out.append(command(b, b, repeat, f"{b.name}-repeat"))
    return out
