"""Judge output: a claim's result, a claims file's results, a results file, and their compact forms."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, PrivateAttr, SerializerFunctionWrapHandler, model_serializer

from replay.schema.common import VERDICTS, Verdict, _Open, held, restored

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
    samples: list[ClaimResult] | None = None
    """Ours, in a run of K >= 2 samples: every sample's verdict record of this claim, in sample order (the
    fields above are then those of the majority sample: `core.majority`); absent in a run of one sample."""

    @model_serializer(mode="wrap")
    def _samples_absent_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), "samples")

    def sample_verdicts(self) -> list[Verdict | None]:
        """This claim's verdict in each sample (one sample: its own verdict)."""
        return [s.judge_verdict for s in self.samples] if self.samples else [self.judge_verdict]


SAMPLES = "samples"
"""The key of a claim result's per-sample verdict records in a run judged K >= 2 times (the top-level fields
are those of the majority sample's record)."""


def recorded_sample_verdicts(result: ClaimResult) -> tuple[Verdict | None, ...] | None:
    """The verdict of each of a claim result's sample records, in sample order; None when it has none (a
    claim judged once). A record with no valid verdict gives None."""
    records = getattr(result, SAMPLES, None)
    if records is None and result.model_extra:
        records = result.model_extra.get(SAMPLES)
    if not isinstance(records, list) or not records:
        return None
    out: list[Verdict | None] = []
    for record in records:
        value = record.get("judge_verdict") if isinstance(record, dict) else getattr(record, "judge_verdict", None)
        out.append(value if value in VERDICTS else None)
    return tuple(out)


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
    """The result's extra fields (a results file may carry the claim's `claim` and `claim_type`); None: none.
    Not its sample records: their verdicts are `sample_verdicts`."""
    sample_verdicts: tuple[Verdict | None, ...] | None = None
    """Each sample's verdict, in sample order, for a claim judged K >= 2 times; None: judged once."""
    samples: list[ClaimResult] | None = None
    """Every sample's record, in a run of K >= 2 samples (`ClaimResult.samples`); None: one sample."""

    @classmethod
    def of(cls, result: ClaimResult) -> ResultRow:
        """The row of a result; its claim id, rule, page URL, quote and reason held once however many runs and
        verdicts hold them (`sys.intern`: many claims quote the same page line)."""
        extra = result.model_extra or None
        if extra and SAMPLES in extra:
            extra = {k: v for k, v in extra.items() if k != SAMPLES} or None
        return cls(sys.intern(result.id), result.judge_verdict, sys.intern(result.rule), sys.intern(result.evidence_url),
                   sys.intern(result.evidence_quote), sys.intern(result.reason), result.quote_verified, result.error,
                   extra, recorded_sample_verdicts(result), result.samples)


LONG_PROMPT_TOKENS = 100_000
"""A request whose prompt (input + cache writes + cache reads) is over this many tokens is kept apart in its
conversation's `Usage` (`long_prompts`): the price list's lowest price step (Claude Haiku 5.5 prices such a
request higher, output included), so that the request can be priced on its own from the recording."""


def _count(value: Any) -> int:
    """A token count as a response reports it (anything else counts 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class Tokens(BaseModel):
    """The token counts of one or more Messages requests, as the API reports them."""

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
        """Every input token: uncached, written to the cache, read from it (a request's prompt length)."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @classmethod
    def of_response(cls, reported: dict[str, Any]) -> Tokens:
        """The counts of one response's `usage` object."""
        creation = reported.get("cache_creation")
        return cls(input_tokens=_count(reported.get("input_tokens")),
                   output_tokens=_count(reported.get("output_tokens")),
                   cache_creation_input_tokens=_count(reported.get("cache_creation_input_tokens")),
                   cache_read_input_tokens=_count(reported.get("cache_read_input_tokens")),
                   cache_write_1h_tokens=_count(creation.get("ephemeral_1h_input_tokens"))
                   if isinstance(creation, dict) else 0)


class Usage(Tokens):
    """Tokens used by one conversation: its requests' counts summed, and what pricing needs beside them."""

    inference_geo: str | None = None
    """Where inference ran, as the responses' `usage.inference_geo` said (`"us"`: US-only, priced 1.1x on Claude
    4.6 and later; `"global"`); absent when none said. Should responses differ, `"us"` if any said it (priced
    as the dearer)."""
    long_prompts: list[Tokens] | None = None
    """Each request whose prompt was over `LONG_PROMPT_TOKENS`, with its own counts (also counted in the sums
    above); absent when there was none."""

    @model_serializer(mode="wrap")
    def _absent_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a run whose responses said nothing of these is written as it was before they were kept
        data: dict[str, Any] = handler(self)
        for name in ("inference_geo", "long_prompts"):
            if data.get(name) is None:
                data.pop(name, None)
        return data

    def add(self, reported: Any) -> None:
        """Add one response's `usage` object (input, output, cache writes and reads, where inference ran)."""
        if not isinstance(reported, dict):
            return
        for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            value = reported.get(name)
            if isinstance(value, int):
                setattr(self, name, getattr(self, name) + value)
        creation = reported.get("cache_creation")  # the split of the cache writes by lifetime (priced apart)
        written_1h = creation.get("ephemeral_1h_input_tokens") if isinstance(creation, dict) else None
        if isinstance(written_1h, int):
            self.cache_write_1h_tokens += written_1h
        geo = reported.get("inference_geo")
        if isinstance(geo, str) and (self.inference_geo is None or geo == "us"):
            self.inference_geo = geo
        request = Tokens.of_response(reported)
        if request.total_input > LONG_PROMPT_TOKENS:
            self.long_prompts = [*(self.long_prompts or []), request]


def _without_none(data: dict[str, Any], *names: str) -> dict[str, Any]:
    """A serialised record without these keys when they are None (written as before they were kept)."""
    if isinstance(data, dict):
        for name in names:
            if name in data and data[name] is None:
                del data[name]
    return data


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


class SampleConversation(_Open):
    """One sample's conversation of a claims file, in a run of K >= 2 samples: what `FileResult` says of a
    conversation besides its verdicts (those are in each claim's `samples`)."""

    usage: Usage | None = None
    tool_calls: list[ToolCall] | None = None
    turns: int | None = None
    error: str | None = None
    warnings: list[str] | None = None
    cost_usd: float | None = None
    batch: bool | None = None


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
    (`replay.core.cost`); None when the model had no price. Commands show the usage priced with the current
    table (`core.cost.results_cost`), not this figure."""
    batch: bool | None = None
    """Ours: whether the conversation's model calls went through Message Batches (half price); None in a
    file written before it was kept (then the run's `batch_ids` says)."""
    samples: list[SampleConversation] | None = None
    """Ours, in a run of K >= 2 samples: each sample's conversation (its usage, Learn calls, turns, error), in
    sample order; the fields above then sum them up (`judge.samples`). Absent in a run of one sample."""
    _failed_on_answer: bool = PrivateAttr(default=False)

    @model_serializer(mode="wrap")
    def _samples_absent_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), "samples")

    @property
    def needs_recording_again(self) -> bool:
        """The conversation failed, or left a claim without a verdict (what `--retry-failed` records again);
        with samples, in any sample."""
        return bool(self.error) or any(v is None for r in self.results for v in r.sample_verdicts())

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
    samples: int | None = None
    """How many samples (independent conversations) the run judged each claims file with, when more than
    one (`judge --samples K`); absent for one."""
    files: list[FileResult]

    @model_serializer(mode="wrap")
    def _samples_absent_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), "samples")


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
