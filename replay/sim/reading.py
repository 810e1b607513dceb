"""How the model stand-in reads what a client sends: the claims batch in a prompt, a Learn tool's result,
and a request with its caching breakpoints taken out.

The stand-in's own readers, written from the wire formats rather than taken from the product, so that a
change in what the product sends is seen by a stand-in that still reads the formats as they are.
"""

from __future__ import annotations

import json
import re
from typing import Any

FETCH_TOOL = "microsoft_docs_fetch"
SEARCH_TOOL = "microsoft_docs_search"
_BATCH_FENCE = re.compile(r"## Batch to judge[^\n]*\n+```json\n(.*?)\n```", re.S)
_NOT_LEARN = "the provided url is not a valid microsoft documentation webpage link."
_MISSING = "could not be retrieved"


def claims_in(text: str) -> list[dict[str, Any]] | None:
    """The claims of the `## Batch to judge` JSON block of a prompt, or None when it holds none."""
    found = _BATCH_FENCE.search(text)
    if not found:
        return None
    try:
        claims = json.loads(found.group(1))
    except json.JSONDecodeError:
        return None
    return [c for c in claims if isinstance(c, dict)] if isinstance(claims, list) else None


def no_page(text: str, is_error: bool) -> bool:
    """Whether a fetch result is no page: a tool error, nothing, a refusal, or "could not be retrieved"."""
    head = text.strip()[:400].lower()
    return is_error or not head or _NOT_LEARN in head or _MISSING in head


def search_urls(text: str) -> list[str]:
    """The `contentUrl`s of a search result (`{"results": [...]}`), in rank order."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    results = data.get("results") if isinstance(data, dict) else None
    return [str(r["contentUrl"]) for r in results or [] if isinstance(r, dict) and r.get("contentUrl")]


def unmarked(value: Any) -> Any:
    """`value` with every `cache_control` key taken out, at any depth."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def plain_request(request: dict[str, Any]) -> dict[str, Any]:
    """A request as it would be without caching: no `cache_control`, and a system or message content
    that is a single plain text block read as its string (what a client writes to place a breakpoint)."""
    value: dict[str, Any] = unmarked(request)
    if (text := _single_text(value.get("system"))) is not None:
        value["system"] = text
    messages = value.get("messages")
    if isinstance(messages, list):
        value["messages"] = [{**m, "content": t} if isinstance(m, dict) and (t := _single_text(m.get("content")))
                             is not None else m for m in messages]
    return value


def _single_text(content: Any) -> str | None:
    if (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)
            and set(content[0]) == {"type", "text"} and content[0]["type"] == "text"
            and isinstance(content[0]["text"], str)):
        return content[0]["text"]
    return None
