"""Every record judge-replay reads or writes, defined once (pydantic); JSON schemas come from here."""

from __future__ import annotations

import zlib
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict

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
"""The gold-to-verdict map (docs: Scoring)."""

VERDICTS: tuple[Verdict, ...] = ("grounded", "not_grounded", "source_silent")


class _Open(BaseModel):
    """Base for records whose files may carry extra fields: they are kept and ignored."""

    model_config = ConfigDict(extra="allow")


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
