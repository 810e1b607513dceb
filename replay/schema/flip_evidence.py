"""What one verdict flip rests on: the claim, both verdicts' quotes and rules, the prompts, the pages, the evidence
path, the model, repeats and controlled runs (the `evidence` of a `diff --format json` flip)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import SkipJsonSchema

from replay.schema.common import ClaimType, Verdict
from replay.schema.field_docs import DescribedRecord

Side = Literal["a", "b"]
"""Run A (the first run of `diff`) or run B (the second)."""
Combination = Literal["A's prompt with B's pages", "B's prompt with A's pages"]
"""What a crossed run holds: one side's prompt with the other side's page versions."""
PointsTo = Literal["prompt", "page", "neither"]
"""The input a crossed run's verdict says moved a flip (`neither`: its verdict is neither side's)."""


Absent = SkipJsonSchema[None]
"""The type of a field's "not set" (None in Python), left out of the JSON Schema: the key is then absent."""


def absent() -> Any:
    """The default of a field written only when set (`SparseRecord`): None, and no default in the JSON Schema."""
    return Field(default=None, json_schema_extra=_without_default)


def _without_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class SparseRecord(DescribedRecord):
    """A record whose fields with a default are written only when the explainer set them: an absent key
    says "does not apply here", a null one "applies, and is not known" (as `diff --format json` has always
    written them)."""


    @model_serializer(mode="wrap")
    def written_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in type(self).model_fields.keys() - self.model_fields_set:
            data.pop(name, None)
        return data


# --------------------------------------------------------------------------- per run


class RunTexts(DescribedRecord):
    """One text of each run's verdict on the claim (empty when the verdict has none)."""


    a: str
    """Run A's."""
    b: str
    """Run B's."""


# --------------------------------------------------------------------------- the claim


class NoVerdict(DescribedRecord):
    """The side that gave no verdict (a failed or cut-off conversation), and why."""


    side: Side
    """The run without a verdict."""
    error: str
    """Its result's error, else its conversation's, else `no error recorded`."""


class JudgedClaim(DescribedRecord):
    """A claim as one run judged it."""


    claim: str
    """The claim's text."""
    claim_type: ClaimType
    """The claim's type."""
    evidence_url: str | None
    """The page the claims file cites for it, if any."""


class ClaimChange(DescribedRecord):
    """The two claims judged under one (file, id) when the claim was edited between the runs."""


    a: JudgedClaim
    """The claim run A judged."""
    b: JudgedClaim
    """The claim run B judged."""


# --------------------------------------------------------------------------- the prompts


class PromptSide(DescribedRecord):
    """Which prompt one run was judged with."""


    name: str | None
    """The prompt as the run's manifest names it (a bundled prompt's name or a file path)."""
    sha256: str | None
    """sha256 of the prompt's text (of the manifest's, when the run folder has no `prompt.md`); null when
    neither is recorded."""


class SectionChange(SparseRecord):
    """A section of prompt B whose body differs from prompt A's."""

    heading: str
    """Its heading in prompt B."""
    was: str | Absent = absent()
    """Its heading in prompt A, when it was renamed (absent when the heading is the same)."""


class PromptComparison(SparseRecord):
    """How the two runs' prompts compare: by text when both are recorded, else by sha256."""

    a: PromptSide
    """Run A's prompt."""
    b: PromptSide
    """Run B's prompt."""
    sections_added: list[str] = []
    """Headings of the sections only prompt B has (markdown headings; fenced code is not searched). This and
    the five fields after it are present only when both prompts' texts are known and differ."""
    sections_removed: list[str] = []
    """Headings of the sections only prompt A has."""
    sections_changed: list[SectionChange] = []
    """The sections both prompts have (a renamed heading included) whose bodies differ."""
    rules_added: dict[str, str] = {}
    """Calibration rules only prompt B defines: rule id (`R1`) -> its title."""
    rules_removed: dict[str, str] = {}
    """Calibration rules only prompt A defines: rule id -> its title in A."""
    rules_changed: dict[str, str] = {}
    """Calibration rules both prompts define whose title or paragraph differs: rule id -> its title in B."""
    changed: bool | None
    """Whether the prompt changed; null when nothing recorded tells (no text nor sha256 on one side)."""
    note: str | Absent = absent()
    """How the prompts were compared when not by their texts (absent when they were)."""


class CitedRule(DescribedRecord):
    """A calibration rule one verdict cites, and which prompt defines it."""


    rule: str
    """The rule id the verdict gives (`R3`)."""
    title: str | None
    """Its title in the citing run's prompt; null when that prompt does not define it."""
    in_a: bool
    """Prompt A defines it."""
    in_b: bool
    """Prompt B defines it."""


class FlipPromptEvidence(PromptComparison):
    """The prompts' comparison (the report's `prompt`) and the rule each verdict cites."""

    rule_b: CitedRule | Absent = absent()
    """The rule run B's verdict cites (absent when it cites none)."""
    rule_a: CitedRule | Absent = absent()
    """The rule run A's verdict cites (absent when it cites none)."""


# --------------------------------------------------------------------------- the pages


class PageEvidence(SparseRecord):
    """One page either run's verdict rests on (the page the claim cites, the page the verdict cites, pages a
    search for the claim's text led to), as the two runs got it."""

    url: str
    """The page's URL as fetched (normalised when only the claim or the verdict names it)."""
    read_by: list[Side]
    """The runs whose judge fetched this page for the claim."""
    cited_by: list[Side]
    """The runs whose verdict cites this page as its evidence."""
    sha256_a: str | None
    """sha256 of the page's content in run A; null when run A does not hold the page or could not retrieve it."""
    sha256_b: str | None
    """sha256 of the page's content in run B; null as for `sha256_a`."""
    changed: bool | None
    """Whether the content differs between the runs; null when only one run holds the page."""
    quote_a_in_b: bool | Absent = absent()
    """Run A's quote occurs (whitespace normalised) in run B's version of the page (absent when A has no quote
    or B's text is unknown)."""
    quote_b_in_a: bool | Absent = absent()
    """Run B's quote occurs in run A's version of the page (absent as for `quote_a_in_b`)."""
    diff: str | Absent = absent()
    """Unified diff of the changed region around the claim's values, subjects and the quotes (A's version as
    old, B's as new); empty when the report does not show it. Present only when both versions' texts are
    known and differ."""
    near_claim: bool | Absent = absent()
    """The change touches a line holding the claim's values, subjects or a quote (present with `diff`)."""
    note: str | Absent = absent()
    """Why there is no diff, or where the change is when not near the claim (absent when the diff says it)."""
    old_line: str | None = None
    """The line of run A's version the claim rests on; null when B's version added it. Present, with
    `new_line`, when the change is near the claim and such a line was found."""
    new_line: str | None = None
    """That line in run B's version; null when B's version removed it."""


class SearchResults(DescribedRecord):
    """What Learn's search returned for one query in each run, in rank order (normalised URLs)."""


    a: list[str]
    """Run A's results."""
    b: list[str]
    """Run B's results."""


# --------------------------------------------------------------------------- the evidence path and the model


class RunPath(DescribedRecord):
    """The pages one run's verdict on the claim rests on."""


    read: list[str]
    """Normalised URLs fetched for the claim, in first-fetch order."""
    cited: str | None
    """The normalised `evidence_url` of the verdict; null when it gives none."""
    searched: list[str]
    """Search queries made for the claim (those matching its text)."""
    recorded: bool
    """The claim's conversation was recorded, so its Learn traffic is known."""


class PathEvidence(DescribedRecord):
    """Which pages each run read and cited for the claim."""


    a: RunPath
    """Run A's evidence path."""
    b: RunPath
    """Run B's evidence path."""
    differs: bool | None
    """The two runs rest on different pages; null when one run's Learn traffic was not recorded."""


class RunModel(DescribedRecord):
    """The model one run was judged with."""


    model: str | None
    """The model id of the run's manifest."""
    versions: dict[str, str]
    """Library -> version the run was recorded with (python, anthropic, httpx, ...)."""


class ModelEvidence(DescribedRecord):
    """The models and library versions of the two runs."""


    a: RunModel
    """Run A's."""
    b: RunModel
    """Run B's."""
    differs: bool
    """The model or a library version differs."""


# --------------------------------------------------------------------------- repeats and controlled runs


class Repeats(DescribedRecord):
    """Runs that repeat one side for the claim: the same claim, prompt, model, page versions and pages read."""


    runs: list[str]
    """Their names (the side itself first)."""
    n: int
    """How many."""
    verdicts: dict[Verdict | Literal["none"], int]
    """Verdict -> how many of them gave it (`none`: no verdict)."""
    flip_rate: float
    """Share of them that disagree with the most common verdict (3 decimals)."""


class RepeatsEvidence(SparseRecord):
    """Repeats of either side: when A's and B's repeats are the same runs, one group (`a_and_b`)."""

    a_and_b: Repeats | Absent = absent()
    """A and B repeat each other (with other runs): the flip is within the model's noise."""
    a: Repeats | Absent = absent()
    """Repeats of run A (absent when fewer than two runs)."""
    b: Repeats | Absent = absent()
    """Repeats of run B (absent when fewer than two runs)."""
    samples_a: Repeats | Absent = absent()
    """Run A's own samples of the claim (a run judged K >= 2 times): repeats with no sibling run needed;
    absent for a run judged once."""
    samples_b: Repeats | Absent = absent()
    """Run B's own samples of the claim."""
    unstable: list[Literal["a", "b"]] | Absent = absent()
    """The sides whose samples gave the claim more than one verdict: a flip on a claim the judge is unsure of."""


class Confirmation(DescribedRecord):
    """A crossed run that holds one input of the flip fixed, and what its verdict says moved the flip."""


    run: str
    """The crossed run's name."""
    combination: Combination
    """Which side's prompt it was judged with, on which side's page versions."""
    verdict: Verdict | None
    """Its verdict on the claim; null when it gave none."""
    points_to: PointsTo
    """The input its verdict says moved the flip: its verdict is the one of the side whose prompt (`prompt`)
    or pages (`page`) it holds; `neither` when it is neither side's verdict."""


# --------------------------------------------------------------------------- one flip


class FlipEvidence(SparseRecord):
    """What a flip's cause was decided on. A flip where both runs gave a verdict on the same claim has
    `claim_values`, `prompt`, `pages`, `path` and `model`; a flip where one run gave no verdict has
    `no_verdict` instead, and one whose claim was edited between the runs `claim_changed`."""

    claim: str | None = None
    """The claim's text; null when neither run says what it judged."""
    no_verdict: NoVerdict | Absent = absent()
    """The run that gave no verdict, and why (only when one did not)."""
    claim_changed: ClaimChange | Absent = absent()
    """Both claims, when the runs judged different claims under this (file, id)."""
    claim_values: list[str] = []
    """The values the claim states (numbers, versions, names), as the page comparison looks for them."""
    quotes: RunTexts | Absent = absent()
    """Each verdict's `evidence_quote`."""
    rules: RunTexts | Absent = absent()
    """Each verdict's calibration `rule`."""
    reasons: RunTexts | Absent = absent()
    """Each verdict's `reason` (the silent side's: `no verdict: <error>`)."""
    evidence_urls: RunTexts | Absent = absent()
    """Each verdict's `evidence_url`."""
    prompt: FlipPromptEvidence | Absent = absent()
    """How the prompts compare, and the rule each verdict cites."""
    pages: list[PageEvidence] = []
    """Every page either verdict rests on, compared between the runs."""
    searches_changed: dict[str, SearchResults] = {}
    """Searches both runs made for the claim (the same query) whose results differ: query -> each run's
    results (absent when none differ)."""
    path: PathEvidence | Absent = absent()
    """Which pages each run read and cited."""
    model: ModelEvidence | Absent = absent()
    """The models and library versions of the runs."""
    repeats: RepeatsEvidence | Absent = absent()
    """Repeats of A and of B among the other runs (absent when no side has two)."""
    confirmed_by: str | Absent = absent()
    """The first crossed run in `confirmations` (present with it)."""
    confirmations: list[Confirmation] = []
    """Crossed runs that hold one input fixed, when both the prompt and the pages changed (absent when none)."""
    confirmed_cause: Literal["prompt", "page", "prompt+page"] | Absent = absent()
    """The input the crossed runs single out; `prompt+page` when they disagree or one gives a third verdict
    (present with `confirmations`)."""
