"""Flip explanation output: one flip and the report of all of them (`diff --format json`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from replay.schema.common import FlipCause, GoldLabel, Verdict
from replay.schema.field_docs import DescribedRecord
from replay.schema.flip_evidence import (
    Absent,
    FlipEvidence,
    PromptComparison,
    Side,
    SparseRecord,
    absent,
)

ControlRole = Literal["A's prompt with B's pages", "B's prompt with A's pages", "a repeat of A", "a repeat of B"]
"""How another run holds one side of an A → B comparison fixed, most telling first."""

# --------------------------------------------------------------------------- flips


class Flip(DescribedRecord):
    """One claim whose verdict differs between two runs, and why."""


    file: str
    """The claims file (as the runs name it)."""
    id: str
    """The claim's id in that file."""
    verdict_a: Verdict | None
    """Run A's verdict; null when it gave none."""
    verdict_b: Verdict | None
    """Run B's verdict; null when it gave none."""
    primary_cause: FlipCause
    """What moved the verdict: the one input that changed, or `model` (same inputs, or the flip is within the
    noise of repeats), `prompt+page` (both changed and no controlled run tells them apart), or `unknown` (not
    enough recorded to tell, a side without a verdict, or a claim edited between the runs)."""
    causes: list[FlipCause]
    """Every input that differs between the two runs for this claim."""
    gold: GoldLabel | None = None
    """The claim's gold label, when a gold set was given and labels it."""
    right: Literal["a", "b", "neither"] | None = None
    """Which run's verdict the gold label expects; null without a gold label."""
    evidence: FlipEvidence = Field(default_factory=FlipEvidence)
    """What the cause was decided on."""
    summary: str = ""
    """One line a person can read: why this verdict moved."""


class HeldClaim(SparseRecord):
    """A claim whose verdict stayed the same although a page it rests on changed."""

    file: str
    """The claims file."""
    id: str
    """The claim's id."""
    verdict: Verdict
    """The verdict both runs gave."""
    url: str
    """The first changed page the claim rests on."""
    sha256_a: str | Absent = absent()
    """sha256 of the page in run A (`missing` when it could not be retrieved; absent in a report made for the
    text output, which does not show it)."""
    sha256_b: str | Absent = absent()
    """sha256 of the page in run B (as `sha256_a`)."""
    where: str
    """Where the page changed: `near the claim`, `page changed elsewhere`, or what the page comparison noted."""


class UnpairedClaim(DescribedRecord):
    """A claim only one of the two runs judged."""


    file: str
    """The claims file."""
    id: str
    """The claim's id."""
    only_in: Side
    """The run that judged it."""


class RunSummary(DescribedRecord):
    """One of the two compared runs."""


    name: str
    """The run's name (its folder's name)."""
    path: str
    """The run folder as given."""
    prompt: str | None
    """The prompt its manifest names."""
    prompt_sha256: str | None
    """sha256 of its prompt's text (the manifest's when the folder has no `prompt.md`)."""
    model: str | None
    """Its model id."""
    versions: dict[str, str]
    """Library -> version it was recorded with."""
    pages_from: str | None
    """The run that served its Learn calls (`judge --pages-from`), when another did."""
    stand_ins: list[str]
    """Which of its services were the local stand-ins (`learn`, `model`): test equipment, not the real ones."""


class ComparedRuns(DescribedRecord):
    """The two runs of the report."""


    a: RunSummary
    """Run A (the first run given to `diff`)."""
    b: RunSummary
    """Run B (the second)."""


class ControlledRun(DescribedRecord):
    """A run other than A and B that was considered to tell causes apart, and why it was (or was not) used."""


    run: str
    """Its name."""
    path: str
    """Its folder."""
    stand_ins: list[str]
    """Which of its services were the local stand-ins."""
    role: ControlRole | None
    """The most telling side it holds fixed for some flipped claim; null when it holds neither (its prompt
    or pages differ from both, or only its model kept it from holding one)."""
    claims: dict[ControlRole, int]
    """Role -> how many flipped claims it plays that role for."""
    why: str
    """One line: what it was used for, or why not."""
    found: Literal["given", "sibling folder"]
    """How it came in: named with `--with` (`given`), or found beside A or B (`sibling folder`)."""


class FlipReport(DescribedRecord):
    """`judge-replay diff` output: every verdict that differs between run A and run B, and why."""


    run_a: str
    """Run A as given."""
    run_b: str
    """Run B as given."""
    paired: int
    """How many claims both runs judged."""
    flips: list[Flip]
    """The paired claims whose verdict differs, by claims file and id."""
    held_despite_page_change: list[HeldClaim] = []
    """Claims whose page changed but whose verdict did not move."""
    unpaired: list[UnpairedClaim] = []
    """Claims only one run judged."""
    confirm_commands: list[str] = []
    """`judge` commands that would record the controlled runs (crossed prompt/pages, repeats) still missing."""
    counts: dict[FlipCause, int] = {}
    """Flips per primary cause (causes without a flip left out)."""
    prompt: PromptComparison
    """How the two runs' prompts compare."""
    runs: ComparedRuns
    """The two runs."""
    extra_runs: list[str] = []
    """Other runs used to confirm causes (crossed prompt/pages runs) or to measure repeat noise."""
    controlled_runs: list[ControlledRun] = []
    """Each of `extra_runs`, and why it was used; and sibling runs left out only for their model."""
    notes: list[str] = []
    """What a reader must know first (runs made against the local stand-ins, test equipment)."""
