"""Every record judge-replay reads or writes, defined once (pydantic); JSON schemas come from here."""

from __future__ import annotations

import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from ._mcp import split_url

ClaimType = Literal["version", "tpm", "sku", "region", "status", "taxonomy"]
Verdict = Literal["grounded", "not_grounded", "source_silent"]
GoldLabel = Literal["correct", "outdated", "wrong", "unsourced"]
FlipCause = Literal["prompt", "page", "prompt+page", "evidence_path", "model", "unknown"]
DriftStatus = Literal["unchanged", "changed-quote-intact", "quote-gone", "value-changed", "page-gone", "no-page",
                      "unchecked"]
RunMode = Literal["live", "record", "replay"]

GOLD_TO_VERDICT: dict[str, Verdict] = {
    "correct": "grounded",
    "outdated": "not_grounded",
    "wrong": "not_grounded",
    "unsourced": "source_silent",
}
"""SPEC.md's gold-to-verdict map."""

VERDICTS: tuple[Verdict, ...] = ("grounded", "not_grounded", "source_silent")
LEARN_MCP_URL = "https://learn.microsoft.com/api/mcp"
"""The public Learn MCP endpoint, the default `--learn-url`."""


def endpoint_problem(url: str) -> str | None:
    """What makes `url` unusable as an endpoint (`--learn-url`, `--anthropic-base-url`, their settings and
    run.json fields), or None: the one rule. An http(s) scheme, a host, a port that parses, and no
    whitespace or control character (NUL included). The message never shows the URL: it may hold a
    password that did not parse."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return "not an http(s) URL: it holds whitespace or a control character"
    parts = split_url(url)
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL (http:// or https://, a host, then an optional :port and path)"
    try:
        parts.port  # reading it parses it
    except ValueError:
        return ("not an http(s) URL: what stands for its port is no number from 0 to 65535 (a password with "
                "/, ? or # in it must be percent-encoded)")
    return None


class _Open(BaseModel):
    """Base for records whose files may carry extra fields: they are kept and ignored."""

    model_config = ConfigDict(extra="allow")


# --------------------------------------------------------------------------- inputs


class Claim(_Open):
    """One factual claim extracted from a documentation file."""

    id: str = Field(min_length=1)
    """Claim id, unique within its file (e.g. `models-003`)."""
    claim: str = Field(min_length=1)
    """The claim text."""
    claim_type: ClaimType
    """What kind of volatile value the claim asserts."""
    evidence_url: str | None = None
    """The Learn page the claim cites; missing or null means the judge searches."""


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """A `Claim` as diff holds a run's thousands: the same fields, without the bookkeeping a pydantic model
    keeps per instance."""

    id: str
    claim: str
    claim_type: ClaimType
    evidence_url: str | None

    @classmethod
    def of(cls, claim: Claim) -> ClaimRow:
        return cls(claim.id, claim.claim, claim.claim_type, claim.evidence_url)


AnyClaim = Claim | ClaimRow
"""One claim: as read, or as grade and diff hold a run's thousands (`ClaimRow`, the same fields)."""


def as_judged(claim: AnyClaim) -> tuple[str, str, str | None]:
    """What of a claim its verdict rests on: its text, type and cited page (two runs judged the same claim
    when these are equal, whatever its id)."""
    return claim.claim, claim.claim_type, claim.evidence_url


class ClaimsBatch(_Open):
    """A claims file: every claim of one documentation file, judged in one conversation."""

    file: str = Field(min_length=1)
    """The documentation file the claims come from (the pairing key with `id`)."""
    claims: list[Claim] = Field(min_length=1)
    """The claims, in file order (at least one: a conversation about no claim would be paid for nothing)."""


class GoldItem(_Open):
    """One adjudicated label of the gold set."""

    file: str
    id: str
    label: GoldLabel
    mode: str | None = None
    """Failure mode this item exercises (FN2..FN6, FP3..FP5), if any."""
    note: str | None = None
    """Why the label is what it is."""


class GoldSet(_Open):
    """A gold correctness set (`gold-correctness-set.json`)."""

    name: str | None = None
    items: list[GoldItem]


@dataclass(frozen=True, slots=True)
class GoldRow:
    """A `GoldItem` as grade holds a gold set's thousands: the same fields, without the bookkeeping a pydantic
    model keeps per instance."""

    file: str
    id: str
    label: GoldLabel
    mode: str | None
    note: str | None


@dataclass(frozen=True)
class CompactGold:
    """A gold set as grade holds it: its items as `GoldRow`s (their files and ids held once with the
    results' and claims', `sys.intern`)."""

    name: str | None
    items: tuple[GoldRow, ...]

    @classmethod
    def of(cls, gold: GoldSet) -> CompactGold:
        return cls(gold.name, tuple(GoldRow(sys.intern(item.file), sys.intern(item.id), item.label, item.mode, item.note)
                                    for item in gold.items))


# --------------------------------------------------------------------------- judge output


class ClaimResult(_Open):
    """One verdict, exactly the prompt's schema plus fields of ours."""

    id: str
    judge_verdict: Verdict | None = None
    """None only when the judge gave no usable verdict (see `error`)."""
    rule: str = ""
    evidence_url: str = ""
    evidence_quote: str = ""
    reason: str = ""
    quote_verified: bool | None = None
    """Ours: the quote occurs (whitespace-normalised) in a page fetched from `evidence_url` in this
    conversation. None when there is nothing to check (empty quote) ."""
    error: str | None = None
    """Ours: why this claim has no valid verdict (missing id, invalid verdict, unparseable answer...)."""


@dataclass(frozen=True, slots=True)
class ResultRow:
    """A `ClaimResult` as the commands that only read results (grade, diff, drift) hold every one of a run's: the
    same fields under the same names, in a third of the memory (a pydantic model keeps a set and two dicts
    per instance)."""

    id: str
    judge_verdict: Verdict | None
    rule: str
    evidence_url: str
    evidence_quote: str
    reason: str
    quote_verified: bool | None
    error: str | None
    model_extra: dict[str, Any] | None
    """The result's extra fields (a results file may carry the claim's `claim` and `claim_type`); None: none."""

    @classmethod
    def of(cls, result: ClaimResult) -> ResultRow:
        """The row of a result; its claim id, rule, page URL, quote and reason held once however many runs and
        verdicts hold them (`sys.intern`: many claims quote the same page line)."""
        return cls(sys.intern(result.id), result.judge_verdict, sys.intern(result.rule), sys.intern(result.evidence_url),
                   sys.intern(result.evidence_quote), sys.intern(result.reason), result.quote_verified, result.error,
                   result.model_extra or None)


class Usage(BaseModel):
    """Tokens used by one conversation."""

    input_tokens: int = 0
    """Input tokens not read from or written to the prompt cache (the API's `input_tokens`)."""
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of `cache_creation_input_tokens`, those written with the 1-hour lifetime (the response's
    `usage.cache_creation.ephemeral_1h_input_tokens`; priced 2x input against 1.25x)."""

    @property
    def total_input(self) -> int:
        """Every input token: uncached, written to the cache, read from it."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


class ToolCall(BaseModel):
    """One Learn tool call the judge made, in conversation order."""

    tool: str
    """`microsoft_docs_fetch` or `microsoft_docs_search`."""
    arguments: dict[str, Any]
    url: str | None = None
    """For a fetch: the URL fetched."""
    page_sha256: str | None = None
    """For a fetch: sha256 of the returned page text; None when the page could not be retrieved."""
    result_urls: list[str] = []
    """For a search: the `contentUrl`s returned, in rank order."""
    error: str | None = None
    """The Learn error the judge was told about instead of a result, if the call failed."""


class FileResult(_Open):
    """The judge output for one claims file (the prompt's JSON plus fields of ours)."""

    file: str
    results: list[ClaimResult]
    usage: Usage | None = None
    """Ours: tokens used by the conversation."""
    tool_calls: list[ToolCall] | None = None
    """Ours: every Learn call of the conversation, in order."""
    turns: int | None = None
    """Ours: model turns taken."""
    error: str | None = None
    """Ours: why the conversation failed as a whole, if it did."""
    warnings: list[str] | None = None
    """Ours: what the judge's answer held that was ignored (unknown claim ids, repeated verdicts)."""
    cost_usd: float | None = None
    """Ours: USD the conversation was priced at when written, from `usage` and the price table
    (`replay._cost`); None when the model had no price. Commands show the usage priced with the current
    table (`_cost.results_cost`), not this figure."""
    batch: bool | None = None
    """Ours: whether the conversation's model calls went through Message Batches (half price); None in a
    file written before it was kept (then the run's `batch_ids` says)."""
    _failed_on_answer: bool = PrivateAttr(default=False)

    @property
    def needs_recording_again(self) -> bool:
        """The conversation failed, or left a claim without a verdict (what `--retry-failed` records again)."""
        return bool(self.error) or any(r.judge_verdict is None for r in self.results)

    @property
    def failed_on_answer(self) -> bool:
        """Not stored: the conversation just judged failed on a model answer (a refusal, a cut-off or
        unreadable answer, the turn limit, claims left without a verdict: asking again may change it),
        not on a service after one (Learn, the API, `--max-cost`)."""
        return self._failed_on_answer or (self.error is None and self.needs_recording_again)


class ResultsFile(_Open):
    """A results file (`results.json` of a run, `judge-bakeoff-results-<prompt>.json`)."""

    prompt: str | None = None
    prompt_sha256: str | None = None
    model: str | None = None
    recorded_at: str | None = None
    frozen: bool = False
    """A frozen results file is never overwritten (nor its run re-recorded) unless forced."""
    stand_ins: list[str] = []
    """Which services were the local stand-ins (`learn`, `model`): test equipment, not the real thing."""
    cost_usd: float | None = None
    """USD the whole run was billed (the files' `cost_usd` summed; None when any is unknown)."""
    files: list[FileResult]


@dataclass(frozen=True, slots=True)
class FileRows:
    """A `FileResult`'s verdicts as `ResultRow`s, with the error of its conversation."""

    file: str
    error: str | None
    results: tuple[ResultRow, ...]

    @classmethod
    def of(cls, result: FileResult) -> FileRows:
        return cls(result.file, result.error, tuple(map(ResultRow.of, result.results)))


@dataclass(frozen=True)
class CompactResults:
    """A results file as grade, diff and drift hold it: every verdict as a `ResultRow` (`files`), and the rest of the
    file (`header`: the results file with no verdicts nor tool calls in its files: prompt, model, stand_ins,
    frozen, each file's usage for its cost...)."""

    header: ResultsFile
    files: tuple[FileRows, ...]

    @classmethod
    def of(cls, results: ResultsFile) -> CompactResults:
        return cls.joined(results, results.files)

    @classmethod
    def joined(cls, header: ResultsFile, files: Iterable[FileResult]) -> CompactResults:
        """`header`'s fields with these files, each made compact as it comes (a caller that reads them one
        at a time never holds them all)."""
        kept, rows = [], []
        for result in files:
            kept.append(result.model_copy(update={"results": [], "tool_calls": None}))
            rows.append(FileRows.of(result))
        return cls(header.model_copy(update={"files": kept}), tuple(rows))


M = TypeVar("M", bound=BaseModel)


def held(record: M) -> bytes | M:
    """A record as a long run holds it until it is read again (`restored`): its JSON, compressed (a
    tenth of the objects' memory for a claims file's results), when that reads back equal; else the
    record itself (a NaN among a tool call's arguments, a lone surrogate)."""
    try:
        text = record.model_dump_json().encode("utf-8")
        if type(record).model_validate_json(text) == record:
            return zlib.compress(text, 1)
    except (ValueError, RecursionError):
        pass
    return record


def restored(kept: bytes | M, kind: type[M]) -> M:
    """The record `held` kept (equal to the one it was given)."""
    return kind.model_validate_json(zlib.decompress(kept)) if isinstance(kept, bytes) else kept


class HeldFiles:
    """The results of a run's claims files, in order, as the runner holds them until the run is written
    and shown: each `held` (compressed JSON), made back into a `FileResult` when read, one at a time, so
    that a 500-file run never holds its 5,000 verdicts as objects at once. Iterate it as often as needed."""

    def __init__(self, results: Iterable[FileResult] = ()) -> None:
        self._held: list[bytes | FileResult] = [held(r) for r in results]

    @classmethod
    def of_held(cls, kept: Iterable[bytes | FileResult]) -> HeldFiles:
        """The results `held` made of each (in this order)."""
        out = cls()
        out._held = list(kept)
        return out

    def append(self, result: FileResult) -> None:
        self._held.append(held(result))

    def __len__(self) -> int:
        return len(self._held)

    def __iter__(self) -> Iterator[FileResult]:
        return (restored(kept, FileResult) for kept in self._held)


# --------------------------------------------------------------------------- runs


class ClaimsFileEntry(BaseModel):
    """One claims file of a run."""

    file: str
    """The batch's `file` field."""
    path: str
    """Where the claims file was read from (as given)."""
    sha256: str
    """sha256 of the claims file bytes."""
    cassette: str
    """The cassette file name inside the run folder."""
    cost_usd: float | None = None
    """USD this file's conversation was billed (None: the model has no price)."""


class RunStats(BaseModel):
    """Counters of one recording."""

    interactions: int = 0
    model_calls: int = 0
    learn_calls: int = 0
    page_cache_hits: int = 0
    """Learn fetches served from pages already fetched earlier in the same recording."""
    retries_dropped: int = 0
    """Transient failures (408/409/429/5xx) that were retried and are not kept in the cassette."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_1h_tokens: int = 0
    learn_retries: int = 0
    """Learn requests our client retried after a transient failure (408, 429, 5xx, a reset, a timeout)."""


MANIFEST_VERSIONS = (1,)
"""The `run.json` versions this judge-replay reads."""
_ISO_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|\+00:00)")


class RunManifest(BaseModel):
    """`run.json`: everything needed to say what a run was."""

    version: int = 1
    run_id: str
    prompt: str
    """Bundled prompt name (`v1`, `v2`, `v3`) or the prompt file's path."""
    prompt_sha256: str
    model: str
    mode: RunMode = "record"
    recorded_at: str
    """UTC, ISO 8601 with `Z`."""
    learn_url: str = LEARN_MCP_URL
    anthropic_base_url: str | None = None
    pages_from: str | None = None
    """Run whose cassettes served every Learn call (page-pinned comparison), if any."""
    stand_ins: list[str] = []
    """Which services were the local stand-ins (`learn`, `model`): test equipment, not the real thing."""
    versions: dict[str, str] = {}
    """Versions of Python, judge-replay, anthropic, httpx, httpx2, vcrpy."""
    claims: list[ClaimsFileEntry] = []
    stats: RunStats = RunStats()
    frozen: bool = False
    batch_ids: list[str] | None = None
    """The Message Batches the model requests went through (`judge --batch`); None: direct calls."""
    cache: bool | None = None
    """Whether the model requests carried prompt-caching breakpoints (False: `--no-cache`; None: not kept)."""
    max_cost_usd: float | None = None
    """The run's `--max-cost` (None: no limit): the re-record commands we print keep it."""
    cost_usd: float | None = None
    """USD the run was billed: the price table (`replay._cost`, `[tool.judge-replay.prices]`) applied to the
    recorded usage, with the batch discount when `batch_ids` is set; None when the model has no price."""

    @field_validator("version")
    @classmethod
    def _a_version_we_read(cls, version: int) -> int:
        if version not in MANIFEST_VERSIONS:
            known = ", ".join(str(v) for v in MANIFEST_VERSIONS)
            raise ValueError(f"version {version} is not one this judge-replay reads (it reads version {known})")
        return version

    @field_validator("recorded_at")
    @classmethod
    def _iso_8601_utc(cls, recorded_at: str) -> str:
        problem = ValueError(f"{recorded_at[:40]!r} is not an ISO 8601 UTC time like 2026-06-15T09:00:00Z")
        if not _ISO_UTC.fullmatch(recorded_at):
            raise problem
        try:
            datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))  # a real date: no month 13
        except ValueError:
            raise problem from None
        return recorded_at

    @field_validator("learn_url", "anthropic_base_url")
    @classmethod
    def _an_endpoint(cls, url: str | None) -> str | None:
        problem = None if url is None else endpoint_problem(url)
        if problem:
            raise ValueError(problem)
        return url


# --------------------------------------------------------------------------- grading


class ClaimError(BaseModel):
    """One judge-vs-gold disagreement (or a claim with no verdict), with what adjudication needs."""

    file: str
    id: str
    gold: GoldLabel | None = None
    expected: Verdict | None = None
    verdict: Verdict | None = None
    kind: Literal["FP", "FN", "mismatch", "no_verdict", "no_gold"] = "mismatch"
    claim: str | None = None
    claim_type: str | None = None
    mode: str | None = None
    note: str | None = None
    rule: str = ""
    evidence_url: str = ""
    evidence_quote: str = ""
    quote_verified: bool | None = None
    reason: str = ""
    page_region: str | None = None
    """The page text around the quote, from the run's cassette."""
    outcome: Literal["TP", "FP", "FN", "TN"] | None = None
    """The claim's binary outcome (positive = flagged `not_grounded`); None for a result with no gold, and
    for a claim with no verdict whose gold label is correct/unsourced (it is neither TN nor FP)."""
    judge_error: str | None = None
    """Why the claim has no verdict (the result's error, its file's error, or no result at all)."""
    quote_in_page: bool | None = None
    """The quote occurs in the page recorded for `evidence_url`; None when no page or no quote."""
    page_url: str | None = None
    """The recorded page `page_region` comes from."""
    page_note: str | None = None
    """What `page_region` is centred on (the quote, the claim's values), or why there is none."""


class Scores(BaseModel):
    """Scores of one results file against a gold set (SPEC.md's `grade --json`)."""

    precision: float | None
    recall: float | None
    f1: float | None
    accuracy: float | None
    tp: int
    fp: int
    fn: int
    tn: int
    no_verdict: int = 0
    """Graded claims without a verdict (an API failure, a cut-off answer, no result at all): never TP, FP
    or TN; FN when the gold says outdated/wrong; always against accuracy."""
    graded: int = 0
    errors: list[ClaimError] = []
    confusion: dict[str, dict[str, int]] = {}
    """gold-mapped verdict -> judge verdict (or `none`) -> count."""
    by_claim_type: dict[str, dict[str, Any]] = {}
    by_mode: dict[str, dict[str, Any]] = {}
    unmatched_gold: list[dict[str, str]] = []
    """Gold items with no result."""
    unmatched_results: list[dict[str, str]] = []
    """Results with no gold item."""
    quote_unverified: int = 0
    """Results whose quote was not found in the page fetched for them."""


class GateDecision(BaseModel):
    """The adoption gate, candidate against baseline."""

    adopt: bool
    reason: str
    within_noise: bool | None = None
    """True when the P/R differences are not distinguishable from noise on this gold set."""
    mcnemar_p: float | None = None
    only_candidate_right: int = 0
    only_baseline_right: int = 0
    delta_precision_ci: tuple[float, float] | None = None
    delta_recall_ci: tuple[float, float] | None = None
    paired: int = 0
    """Gold claims both versions were compared on."""
    delta_precision: float | None = None
    """P_candidate - P_baseline; None when either is undefined."""
    delta_recall: float | None = None
    """R_candidate - R_baseline; None when either is undefined."""
    bootstrap_resamples: int = 0
    """Paired bootstrap resamples behind the CIs (fixed seed: the same inputs give the same CIs)."""


# --------------------------------------------------------------------------- flips and drift


class Flip(BaseModel):
    """One claim whose verdict differs between two runs, and why (SPEC.md `diff --format json`)."""

    file: str
    id: str
    verdict_a: Verdict | None
    verdict_b: Verdict | None
    primary_cause: FlipCause
    causes: list[FlipCause]
    gold: GoldLabel | None = None
    right: Literal["a", "b", "neither"] | None = None
    evidence: dict[str, Any] = {}
    summary: str = ""
    """One line a person can read: why this verdict moved."""


class FlipReport(BaseModel):
    """`judge-replay diff` output."""

    run_a: str
    run_b: str
    paired: int
    flips: list[Flip]
    held_despite_page_change: list[dict[str, str]] = []
    """Claims whose page changed but whose verdict did not move."""
    unpaired: list[dict[str, str]] = []
    confirm_commands: list[str] = []
    """`judge` commands that would record the controlled runs (crossed prompt/pages, repeats) still missing."""
    counts: dict[str, int] = {}
    """Flips per primary cause."""
    prompt: dict[str, Any] = {}
    """Run-level prompt comparison: names, sha256s, changed, sections and calibration rules that differ."""
    runs: dict[str, dict[str, Any]] = {}
    """`a` and `b`: name, path, prompt, prompt_sha256, model, versions, pages_from of each run."""
    extra_runs: list[str] = []
    """Other runs used to confirm causes (crossed prompt/pages runs) or to measure repeat noise."""
    controlled_runs: list[dict[str, Any]] = []
    """Each of `extra_runs`, and why it was used: run, path, found (`given` with --with, or `sibling folder`),
    role (which side it holds fixed: A's prompt with B's pages, ...; None when it holds neither), claims
    (flipped claims per role), why (one line), stand_ins."""
    notes: list[str] = []
    """What a reader must know first (runs made against the local stand-ins, test equipment)."""


class DriftClaim(BaseModel):
    """Drift status of one claim's evidence."""

    file: str
    id: str
    evidence_url: str | None
    status: DriftStatus
    old: str | None = None
    new: str | None = None
    old_sha256: str | None = None
    new_sha256: str | None = None
    verdict: Verdict | None = None
    """The claim's verdict in the run whose pages drifted."""
    quote: str = ""
    """The evidence quote that verdict recorded."""
    note: str | None = None
    """Why the status is what it is, in a few words (which line moved, what is missing)."""


class DriftPage(BaseModel):
    """One page a run read, against its later version."""

    url: str
    old_sha256: str | None
    """None when the run could not retrieve the page."""
    new_sha256: str | None
    """None when the later version could not be retrieved."""
    state: Literal["unchanged", "changed", "gone", "appeared", "no-page", "unchecked"]
    claims: int = 0
    """How many claims rest on this page."""


class DriftReport(BaseModel):
    """`judge-replay drift` output."""

    run: str
    against: str
    claims: list[DriftClaim]
    at_risk: list[dict[str, str]]
    rerecord_commands: list[str] = []
    """Commands that re-record only the claims files with a claim at risk (empty when none is)."""
    rerecord_note: str | None = None
    """Where the re-record command records, and what a run folder there does to the project."""
    pages: list[DriftPage] = []
    """Every page the claims rest on, old and new content hash."""
    snapshot: str | None = None
    """With `--live`: the page snapshot folder the fetched pages were recorded into (usable as `--against`)."""
    stand_ins: dict[str, list[str]] = {}
    """`run` and `against`: which services of each were the local stand-ins (`learn`, `model`)."""
    notes: list[str] = []
    """What a reader must know first (runs made against the local stand-ins, test equipment)."""


# --------------------------------------------------------------------------- JSON schemas

SCHEMAS: dict[str, type[BaseModel]] = {
    "claims": ClaimsBatch,
    "gold": GoldSet,
    "results": ResultsFile,
    "run": RunManifest,
    "grade": Scores,
    "diff": FlipReport,
    "drift": DriftReport,
}
"""The files and outputs whose JSON Schema `judge-replay schema NAME` prints, generated from the records."""


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one record (a key of SCHEMAS), as pydantic generates it."""
    return SCHEMAS[name].model_json_schema()
