"""The Learn tool calls of a cassette: each fetch or search with its reply."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from replay.cassettes.interaction import Interaction
from replay.cassettes.matching import is_model_uri
from replay.learn.wire import FETCH_TOOL, is_missing_page, parse_jsonrpc_reply, tool_result_text

# --------------------------------------------------------------------------- reading Learn traffic


@dataclass(frozen=True)
class LearnCall:
    """One Learn `tools/call` found in a cassette, with its reply text."""

    tool: str
    arguments: dict[str, Any]
    text: str
    is_error: bool

    @property
    def page_missing(self) -> bool:
        return self.tool == FETCH_TOOL and is_missing_page(self.text, self.is_error)


def learn_calls(interactions: list[Interaction]) -> list[LearnCall]:
    """Every Learn tool call of a cassette, in order (a model request, which carries every page read so
    far, is passed over without reading its body: `canonical_request` never takes it for a Learn one)."""
    out = []
    for it in interactions:
        if is_model_uri(it.uri):
            continue
        req = it.request_json()
        if not isinstance(req, dict) or req.get("method") != "tools/call":
            continue
        params = req.get("params") or {}
        try:
            text, is_error = _tool_reply(it.response_body, it.header("content-type"))
        except (ValueError, RecursionError):  # a malformed reply: the judge was told it failed
            out.append(LearnCall(params.get("name", ""), params.get("arguments") or {}, "", True))
            continue
        out.append(LearnCall(params.get("name", ""), params.get("arguments") or {}, text, is_error))
    return out


@functools.lru_cache(maxsize=64)
def _tool_reply(body: str, content_type: str | None) -> tuple[str, bool]:
    """(text, isError) of a `tools/call` reply (`learn.wire.tool_result_text`), remembered: the same page
    reply comes in many cassettes of a run."""
    return tool_result_text(parse_jsonrpc_reply(body, content_type))
