"""Recorded HTTP bodies changed as structures (JSON parsed, SSE split into events), never edited as text.

Whatever we change in a stored body (a secret removed, a request id renumbered, a JSON-RPC id
rewritten) is changed in the parsed strings and the body is serialised again, so JSON escapes and SSE
framing cannot break, and every string we do not change keeps its exact value (a Learn page's text,
and the hashes and quotes computed from it).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from replay.files.json_text import MAX_JSON_DEPTH, compact_json, deeper_than, parse_json_noting_floats

StringFix = Callable[[str], str]


def rewrite_sse_json(body: str, change: Callable[[Any], Any] | None = None, *, as_mapped: bool = False) -> str:
    """An SSE body with each `data:` line that holds JSON written compactly (`ensure_ascii=False`), after
    `change` when given. Line ends and the space after `data:` are kept; other lines are untouched.

    `as_mapped`: the body as `map_strings` then writes it with a fix that changes no string (what a
    cassette write's scrubbing does to a body that holds no secret, without parsing it again): each
    rewritten line with its space after `data:` twice, as `map_strings` writes back a line whose JSON
    it finds unchanged (all but a lone NaN, which is not equal to itself). Raises ValueError for JSON
    nested more than MAX_JSON_DEPTH levels, whose parse may depend on how deep in the stack it runs.
    Without `change`, the last bodies are remembered: a recording stores the same reply (a page other
    conversations read too) many times."""
    if change is None:
        return _rewritten(body, as_mapped)
    return _rewrite(body, change, as_mapped)


@functools.lru_cache(maxsize=64)
def _rewritten(body: str, as_mapped: bool) -> str:
    return _rewrite(body, None, as_mapped)


def _rewrite(body: str, change: Callable[[Any], Any] | None, as_mapped: bool) -> str:
    lines = body.split("\n")
    for n, line in enumerate(lines):
        if not line.startswith("data:"):
            continue
        end = "\r" if line.endswith("\r") else ""
        payload = line[5:].removesuffix("\r")
        try:
            message, float_free = parse_json_noting_floats(payload)
        except (ValueError, RecursionError):  # not JSON, or a number of more than 4300 digits
            continue
        if change is not None:
            message, float_free = change(message), False
        lead = " " if payload.startswith(" ") else ""
        if as_mapped:
            if deeper_than(message, MAX_JSON_DEPTH):
                raise ValueError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
            if message == message:
                lead += lead
        lines[n] = "data:" + lead + compact_json(message, float_free=float_free) + end
    return "\n".join(lines)


def is_sse(body: str, content_type: str | None) -> bool:
    return "text/event-stream" in (content_type or "").lower() or body.lstrip().startswith(("event:", "data:"))


def map_strings(body: str, content_type: str | None, fix: StringFix) -> str:
    """`body` with `fix` applied to every string in it: each JSON string (keys too) of a JSON body or
    of an SSE event's data, re-serialised; each line of an SSE body that is not JSON; the whole text of
    any other body. Returns `body` itself when nothing changed."""
    if not body:
        return body
    if is_sse(body, content_type):
        lines = body.split("\n")
        for n, line in enumerate(lines):
            if line.startswith("data:"):
                end = "\r" if line.endswith("\r") else ""
                payload = line[5:].removesuffix("\r")
                changed = _map_json_text(payload, fix, compact=True)
                if changed is not None:
                    lead = " " if payload.startswith(" ") else ""
                    lines[n] = "data:" + lead + changed + end
                    continue
            lines[n] = fix(line)
        out = "\n".join(lines)
    else:
        changed = _map_json_text(body, fix, compact=False) if body.lstrip()[:1] in ("{", "[") else None
        out = changed if changed is not None else fix(body)
    return body if out == body else out


def _map_json_text(text: str, fix: StringFix, *, compact: bool) -> str | None:
    """`text` parsed as JSON, fixed and serialised again (the original text when nothing changed); None
    when it is not JSON."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or a number of more than 4300 digits
        return None
    fixed = map_json_strings(data, fix)
    if fixed == data:
        return text
    if compact:
        return json.dumps(fixed, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(fixed, ensure_ascii=False)


def map_json_strings(value: Any, fix: StringFix) -> Any:
    """A copy of parsed JSON with `fix` applied to every string, keys included (walked without recursion)."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, slot, node = stack.pop()
        if isinstance(node, str):
            parent[slot] = fix(node)
        elif isinstance(node, list):
            copy: list[Any] = list(node)
            parent[slot] = copy
            stack.extend((copy, i, item) for i, item in enumerate(node))
        elif isinstance(node, dict):
            fixed: dict[str, Any] = {}
            for key, item in node.items():
                fixed[fix(key) if isinstance(key, str) else key] = item
            parent[slot] = fixed
            stack.extend((fixed, key, fixed[key]) for key in list(fixed))
    return root[0]
