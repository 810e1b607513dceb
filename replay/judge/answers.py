"""The judge's final answer read: its JSON, one verdict per claim, each quote checked against the pages read."""

from __future__ import annotations

import json
import re
from typing import Any

from replay.core.text import quote_occurs
from replay.schema.claims import ClaimsBatch
from replay.schema.common import VERDICTS
from replay.schema.results import ClaimResult
from replay.urls import normalise_learn_url
from replay.secrets.excerpts import excerpt

NO_VERDICT = "the judge returned no verdict for this claim"


# --------------------------------------------------------------------------- the answer


def extract_json_object(text: str) -> dict[str, Any] | list[Any] | None:
    """The JSON answer in a model's text: the whole text, a ```json fence, or the first JSON object (or
    array) found among prose. None when there is none."""
    stripped = text.strip()
    candidates = [stripped]
    candidates += [m.group(1) for m in re.finditer(r"```(?:json)?\s*\n?(.*?)```", text, re.S)]
    for candidate in candidates:
        try:
            value = _json_text(json.loads(candidate))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, (dict, list)):
            return value
    decoder = json.JSONDecoder()
    first_list: list[Any] | None = None
    for match in re.finditer(r"[{\[]", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
            value = _json_text(value)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and ("results" in value or "id" in value):
            return value
        if isinstance(value, list) and first_list is None:
            first_list = value
    return first_list


def _json_text(value: Any) -> Any:
    """`value` when it can be kept as text (ValueError for a lone surrogate escape in a string)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a lone surrogate escape") from None
    return value


def verdicts_from_answer(text: str, batch: ClaimsBatch) -> tuple[list[ClaimResult], list[str]]:
    """A result for every claim of the batch, in batch order, from the model's final text; and warnings
    about what was ignored. Never raises on model output."""
    value = extract_json_object(text)
    items: Any = value.get("results") if isinstance(value, dict) and "results" in value else value
    if isinstance(value, dict) and "results" not in value and "id" in value:
        items = [value]
    if not isinstance(items, list):
        reason = "the judge's answer holds no JSON results list" if value is not None else (
            "the judge's answer is not JSON: " + (_snippet(text) or "(empty answer)")
        )
        return [ClaimResult(id=c.id, error=reason) for c in batch.claims], []
    wanted = {c.id for c in batch.claims}
    found: dict[str, ClaimResult] = {}
    warnings: list[str] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), (str, int)):
            warnings.append(f"ignored a result without an id: {_snippet(json.dumps(item, ensure_ascii=False))}")
            continue
        cid = str(item["id"])
        if cid not in wanted:
            warnings.append(f"ignored a verdict for unknown claim id {cid!r}")
            continue
        if cid in found:
            warnings.append(f"ignored a second verdict for claim {cid!r}")
            continue
        found[cid] = _claim_result(cid, item)
    results = [found.get(c.id) or ClaimResult(id=c.id, error=NO_VERDICT) for c in batch.claims]
    return results, warnings


def _claim_result(cid: str, item: dict[str, Any]) -> ClaimResult:
    verdict = item.get("judge_verdict")
    result = ClaimResult(
        id=cid,
        rule=_as_text(item.get("rule")),
        evidence_url=_as_text(item.get("evidence_url")),
        evidence_quote=_as_text(item.get("evidence_quote")),
        reason=_as_text(item.get("reason")),
    )
    if verdict in VERDICTS:
        result.judge_verdict = verdict
    else:
        result.error = f"invalid verdict {verdict!r}"
    return result


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _quote_verified(result: ClaimResult, pages: dict[str, list[str]]) -> bool | None:
    if not result.evidence_quote.strip():
        return None
    if not result.evidence_url:
        return False
    texts = pages.get(normalise_learn_url(result.evidence_url), [])
    return any(quote_occurs(result.evidence_quote, t) for t in texts)


def _snippet(text: str, limit: int = 160) -> str:
    return excerpt(" ".join(text.split()), limit, mark="...")
