"""A claims file judged in K samples, as one result: each claim's majority record with every sample's
record beside it, the conversations' usage summed (so that every cost counts every sample); and back."""

from __future__ import annotations

from collections.abc import Sequence

from replay.core.majority import majority_index
from replay.schema.results import ClaimResult, FileResult, SampleConversation, Tokens, Usage

_SUMMED = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
           "cache_write_1h_tokens")


def combined(samples: Sequence[FileResult]) -> FileResult:
    """One claims file's result over its samples, in sample order (one sample: that result, unchanged).

    Each claim's top-level fields are those of its majority sample (`core.majority.majority_index`) and
    `samples` holds every sample's record. The file's `usage` and `turns` are the samples' sums and its
    `tool_calls` every sample's in turn; `error` and `warnings` name the sample they come from; `samples`
    keeps each conversation as it was (`split` gives the samples back). `cost_usd` is left to the caller
    (priced from the summed usage)."""
    if len(samples) == 1:
        return samples[0]
    if not samples:
        raise ValueError("a claims file has at least one sample")
    first = samples[0]
    results = []
    for i, claim in enumerate(first.results):
        records = [_record(s, i, claim.id) for s in samples]
        top = records[majority_index([r.judge_verdict for r in records])]
        results.append(top.model_copy(update={"samples": records}))
    errors = [f"sample {k}: {s.error}" for k, s in enumerate(samples, 1) if s.error]
    warnings = [f"sample {k}: {w}" for k, s in enumerate(samples, 1) for w in s.warnings or []]
    calls = [c for s in samples for c in s.tool_calls or []]
    turns = [s.turns for s in samples if s.turns is not None]
    return FileResult(
        file=first.file,
        results=results,
        usage=summed([s.usage for s in samples]),
        tool_calls=calls if any(s.tool_calls is not None for s in samples) else None,
        turns=sum(turns) if turns else None,
        error=errors[0] if errors else None,
        warnings=warnings or None,
        batch=first.batch,
        samples=[_conversation(s) for s in samples],
        **(first.model_extra or {}),
    )


def split(result: FileResult) -> list[FileResult]:
    """The samples `combined` made `result` of, in sample order (a result of one sample: itself)."""
    if not result.samples:
        return [result]
    out = []
    for k, conversation in enumerate(result.samples):
        records = [(r.samples[k] if r.samples and k < len(r.samples) else r) for r in result.results]
        out.append(FileResult(file=result.file, results=[r.model_copy(update={"samples": None}) for r in records],
                              **conversation.model_dump(exclude_unset=False)))
    return out


def summed(usages: Sequence[Usage | None]) -> Usage | None:
    """The usage of several conversations together (None when none reported any)."""
    known = [u for u in usages if u is not None]
    if not known:
        return None
    total = Usage()
    long_prompts: list[Tokens] = []
    for usage in known:
        for name in _SUMMED:
            setattr(total, name, getattr(total, name) + getattr(usage, name))
        if usage.inference_geo is not None and (total.inference_geo is None or usage.inference_geo == "us"):
            total.inference_geo = usage.inference_geo
        long_prompts.extend(usage.long_prompts or [])
    total.long_prompts = long_prompts or None
    return total


def _record(sample: FileResult, index: int, claim_id: str) -> ClaimResult:
    """A sample's record of the claim at `index` of sample 1 (found by its id should the orders differ)."""
    if index < len(sample.results) and sample.results[index].id == claim_id:
        return sample.results[index]
    found = next((r for r in sample.results if r.id == claim_id), None)
    return found if found is not None else ClaimResult(id=claim_id, error="this sample gave no record of the claim")


def _conversation(sample: FileResult) -> SampleConversation:
    return SampleConversation(usage=sample.usage, tool_calls=sample.tool_calls, turns=sample.turns, error=sample.error,
                              warnings=sample.warnings, cost_usd=sample.cost_usd, batch=sample.batch)
