"""Wire details of the Learn MCP endpoint shared by client, stand-in and cassette reader: SSE, JSON-RPC, URLs."""

from __future__ import annotations

import json
from typing import Any

FETCH_TOOL = "microsoft_docs_fetch"
SEARCH_TOOL = "microsoft_docs_search"
SUPPORTED_PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26")
"""MCP revisions our client speaks, newest first: it asks for the first and accepts any of them."""
PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]
SESSION_HEADER = "Mcp-Session-Id"
PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
MISSING_PAGE_MARKER = "could not be retrieved"
NOT_LEARN_REFUSAL = "The provided URL is not a valid Microsoft documentation webpage link."
"""The real server's answer (no `isError`) to a fetch of a URL outside Microsoft Learn."""
STAND_IN_HEADER = "x-judge-replay-stand-in"
STAND_IN_NOTE_HEADER = "x-judge-replay-stand-in-note"
"""What a stand-in says of itself that its runs must carry (the model stand-in's simulated noise)."""
"""Response header by which the local stand-ins say they are test equipment (value: `learn` or `model`)."""
from replay.schema.pages import NoPage


def is_missing_page(text: str, is_error: bool = False) -> bool:
    """Whether a `microsoft_docs_fetch` reply is "no page" (the one place that decides it): a tool error
    (`isError`), an empty text, the refusal of a URL outside Learn, or the "could not be retrieved"
    answer. The judge still reads the server's words; no page version, hash or quote check comes of them."""
    stripped = text.strip()
    if is_error or not stripped:
        return True
    head = stripped[:400].lower()
    return NOT_LEARN_REFUSAL.lower() in head or MISSING_PAGE_MARKER in head




def no_page_reason(text: str, is_error: bool = False) -> NoPage | None:
    """Why a `microsoft_docs_fetch` reply is no page (`is_missing_page`), or None when it is a page."""
    if not is_missing_page(text, is_error):
        return None
    head = text.strip()[:400].lower()
    if NOT_LEARN_REFUSAL.lower() in head:
        return "refused"
    return "not-found" if MISSING_PAGE_MARKER in head and not is_error else "failed"


def missing_page_text(url: str) -> str:
    return f"The page at {url} could not be retrieved. It may not exist, or a network error occurred."


def sse_message(payload: dict[str, Any]) -> str:
    """One SSE `event: message` carrying a JSON-RPC message, with CRLF line ends (as Learn sends)."""
    return f"event: message\r\ndata: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\r\n\r\n"


def parse_jsonrpc_reply(body: str, content_type: str | None) -> dict[str, Any]:
    """The JSON-RPC message of a reply, whether sent as `application/json` or as one SSE event.

    Raises ValueError when the body holds no JSON-RPC message, or JSON that is not text we can keep
    (nested too deeply, a number too long, a lone surrogate).
    """
    ctype = (content_type or "").lower()
    text = body.strip()
    if "text/event-stream" in ctype or text.startswith(("event:", "data:", "id:", ":")):
        data_lines: list[str] = []
        for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
            if line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
            elif not line and data_lines:
                break  # end of the first event
        if not data_lines:
            raise ValueError("the event stream holds no data line")
        text = "\n".join(data_lines)
    try:
        message = json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
    if not isinstance(message, dict):
        raise ValueError("the reply is not a JSON-RPC object")
    if _may_hold_surrogate(text):
        try:
            json.dumps(message, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("the JSON holds a lone surrogate escape (not Unicode text)") from None
    return message


def _may_hold_surrogate(text: str) -> bool:
    """Whether JSON parsed from `text` may hold a surrogate: only a `\\uD800`-`\\uDFFF` escape, or one
    in the text itself, makes one (a page is too long to write out again just to find out)."""
    if "\\ud" in text or "\\uD" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def tool_result_text(message: dict[str, Any]) -> tuple[str, bool]:
    """(text of the tool result's content items joined, isError) of a `tools/call` reply.

    Raises ValueError when the result is not the shape MCP defines (an object whose `content` is a list
    of content items, a text item's `text` a string): the one check of a tool reply's shape."""
    result = message.get("result") or {}
    content = result.get("content", []) if isinstance(result, dict) else None
    if not isinstance(content, list) or not all(isinstance(c, dict) for c in content):
        raise ValueError("the tool result's content is not a list of content items")
    parts = [c.get("text", "") for c in content if c.get("type") == "text"]
    if not all(isinstance(p, str) for p in parts):
        raise ValueError("a text content item's text is not a string")
    return "\n".join(parts), bool(result.get("isError"))


def search_result_urls(text: str) -> list[str]:
    """The `contentUrl`s of a search result text, in rank order (empty when it is not the JSON we know)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    results = data.get("results") if isinstance(data, dict) else None
    return [r["contentUrl"] for r in results or [] if isinstance(r, dict) and r.get("contentUrl")]
