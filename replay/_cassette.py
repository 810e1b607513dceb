"""The cassette file: vcrpy's YAML format (stock vcrpy loads it), written deterministically and atomically.

Layout (vcrpy `version: 1`):

    interactions:
    - request:  {method, uri, headers: {name: [values]}, body: <text or null>}
      response: {status: {code, message}, headers: {name: [values]}, body: {string: <text>}}
    version: 1

Readability rules: JSON bodies are re-indented (2 spaces, key order kept) and written as YAML block
strings; SSE is kept as text. Header names are lower-cased; keys are sorted. Interactions keep the order
in which the conversation made them.

Every write is scrubbed of secrets (`_scrub`). A recording is also normalised before it is written
(`normalise_recording`): headers reduced to allow-lists, session and request ids renumbered in order of
appearance, rate-limit values and `retry-after` fixed, so two recordings of the same exchanges are
byte-identical and a replay can never be told to sleep. The loader also reads pydantic-ai's variant of
the format (JSON bodies as a `parsed_body` mapping).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any

import yaml

from ._errors import InputError
from ._io import atomic_write_text
from ._mcp import FETCH_TOOL, STAND_IN_HEADER, is_missing_page, parse_jsonrpc_reply, tool_result_text
from ._scrub import scrub_interaction

CASSETTE_SUFFIX = ".yaml"

try:  # libyaml is ~10x faster; fall back to pure Python where it is missing
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader, _Dumper = yaml.SafeLoader, yaml.SafeDumper


@dataclass
class Interaction:
    """One HTTP exchange as stored in a cassette."""

    method: str
    uri: str
    request_body: str | None
    status: int
    response_body: str
    request_headers: dict[str, list[str]] = field(default_factory=dict)
    response_headers: dict[str, list[str]] = field(default_factory=dict)
    reason: str = ""

    def header(self, name: str) -> str | None:
        values = self.response_headers.get(name.lower())
        return values[0] if values else None

    def request_json(self) -> Any:
        """The request body parsed as JSON, or None."""
        if not self.request_body:
            return None
        try:
            return json.loads(self.request_body)
        except json.JSONDecodeError:
            return None

    def to_vcr(self) -> dict[str, Any]:
        return {
            "request": {
                "method": self.method,
                "uri": self.uri,
                "headers": {k: list(v) for k, v in sorted(self.request_headers.items())},
                "body": _readable(self.request_body),
            },
            "response": {
                "status": {"code": self.status, "message": self.reason},
                "headers": {k: list(v) for k, v in sorted(self.response_headers.items())},
                "body": {"string": _readable(self.response_body)},
            },
        }

    @classmethod
    def from_vcr(cls, d: dict[str, Any]) -> Interaction:
        req, resp = d["request"], d["response"]
        body = resp.get("body", {})
        rbody = body.get("string", "") if isinstance(body, dict) else body
        if "parsed_body" in resp:  # pydantic-ai's variant
            rbody = json.dumps(resp["parsed_body"], ensure_ascii=False)
        if isinstance(rbody, bytes):
            rbody = rbody.decode("utf-8", "replace")
        qbody = req.get("body")
        if "parsed_body" in req:
            qbody = json.dumps(req["parsed_body"], ensure_ascii=False)
        if isinstance(qbody, bytes):
            qbody = qbody.decode("utf-8", "replace")
        return cls(
            method=req["method"],
            uri=req["uri"],
            request_body=qbody,
            status=int(resp["status"]["code"]),
            reason=resp["status"].get("message") or "",
            response_body=rbody or "",
            request_headers=_headers(req.get("headers")),
            response_headers=_headers(resp.get("headers")),
        )


def _headers(raw: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in (raw or {}).items():
        out.setdefault(str(k).lower(), []).extend(v if isinstance(v, list) else [v])
    return {k: [str(x) for x in v] for k, v in out.items()}


def _readable(body: str | None) -> str | None:
    """JSON bodies re-indented for people and diffs; anything else unchanged."""
    if not body or body[:1] not in "{[":
        return body
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except json.JSONDecodeError:
        return body


class _BlockDumper(_Dumper):  # type: ignore[misc]
    pass


def _str_representer(dumper: Any, value: str) -> Any:
    # Block style where YAML can round-trip it exactly; quoted otherwise (CR, tabs, trailing spaces).
    if "\n" in value and "\r" not in value and not any(l != l.rstrip() for l in value.split("\n")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_BlockDumper.add_representer(str, _str_representer)


def dumps_cassette(interactions: list[Interaction], *, scrub: bool = True) -> str:
    """The cassette text; secrets are scrubbed unless `scrub=False` (tests planting secrets only)."""
    if scrub:
        interactions = [scrub_interaction(i) for i in interactions]
    data = {"interactions": [i.to_vcr() for i in interactions], "version": 1}
    text: str = yaml.dump(data, Dumper=_BlockDumper, sort_keys=True, allow_unicode=True, width=100_000)
    return text


def save_cassette(path: str | Path, interactions: list[Interaction], *, scrub: bool = True) -> None:
    """Write atomically: a crash mid-write leaves the previous file (or none), never half of one."""
    atomic_write_text(path, dumps_cassette(interactions, scrub=scrub))


# --------------------------------------------------------------------------- normalising a recording

REQUEST_HEADERS = frozenset(
    {"content-type", "accept", "anthropic-version", "anthropic-beta", "mcp-protocol-version", "mcp-session-id"}
)
"""Request headers a recording keeps (the rest vary with SDK version, machine, retries, or are secrets)."""
RESPONSE_HEADERS = frozenset(
    {"content-type", "request-id", "mcp-session-id", "retry-after", STAND_IN_HEADER, "anthropic-organization-id"}
)
"""Response headers a recording keeps, besides the `anthropic-ratelimit-*` family."""
_RATELIMIT = "anthropic-ratelimit-"
_SESSION = "mcp-session-id"
_REQUEST_ID = "request-id"


def rewrite_sse_json(body: str, change: Callable[[Any], Any] | None = None) -> str:
    """An SSE body with each `data:` line that holds JSON written compactly (`ensure_ascii=False`), after
    `change` when given. Line ends and the space after `data:` are kept; other lines are untouched."""
    lines = body.split("\n")
    for n, line in enumerate(lines):
        if not line.startswith("data:"):
            continue
        end = "\r" if line.endswith("\r") else ""
        payload = line[5:].removesuffix("\r")
        try:
            message = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if change is not None:
            message = change(message)
        lead = " " if payload.startswith(" ") else ""
        lines[n] = "data:" + lead + json.dumps(message, ensure_ascii=False, separators=(",", ":")) + end
    return "\n".join(lines)


def normalise_recording(interactions: list[Interaction]) -> list[Interaction]:
    """The interactions as a recording stores them: allow-listed lower-case headers; MCP session ids
    renumbered `session-1`, `session-2`... and request ids `req_recorded_0001`... in order of first
    appearance (also where a body echoes a request id); rate limits `0`; `retry-after` `0`; no dates;
    SSE events' JSON written compactly (a page served from another conversation of the recording, its
    JSON-RPC id rewritten, is then stored with the same bytes as one fetched live, however the server
    escaped it)."""
    sessions: dict[str, str] = {}
    request_ids: dict[str, str] = {}

    def session(value: str) -> str:
        return sessions.setdefault(value, f"session-{len(sessions) + 1}")

    out = []
    for it in interactions:
        req_headers: dict[str, list[str]] = {}
        for name, values in it.request_headers.items():
            name = name.lower()
            if name in REQUEST_HEADERS:
                req_headers[name] = [session(v) for v in values] if name == _SESSION else list(values)
        resp_headers: dict[str, list[str]] = {}
        body = it.response_body
        for name, values in it.response_headers.items():
            name = name.lower()
            if name == _SESSION:
                resp_headers[name] = [session(v) for v in values]
            elif name == _REQUEST_ID:
                new = [request_ids.setdefault(v, f"req_recorded_{len(request_ids) + 1:04d}") for v in values]
                for old, placeholder in zip(values, new):
                    if old and old in body:
                        body = body.replace(old, placeholder)
                resp_headers[name] = new
            elif name.startswith(_RATELIMIT) or name == "retry-after":
                resp_headers[name] = ["0" for _ in values]
            elif name in RESPONSE_HEADERS:
                resp_headers[name] = list(values)
        if "text/event-stream" in (it.header("content-type") or "").lower():
            body = rewrite_sse_json(body)
        out.append(
            Interaction(
                method=it.method.upper(),
                uri=it.uri,
                request_body=it.request_body,
                status=it.status,
                response_body=body,
                request_headers=req_headers,
                response_headers=resp_headers,
                reason=it.reason,
            )
        )
    return out


def load_cassette(path: str | Path) -> list[Interaction]:
    """Load a vcrpy YAML cassette (ours or stock) into interactions."""
    path = Path(path)
    try:
        data = yaml.load(path.read_text("utf-8"), Loader=_Loader)
    except FileNotFoundError as exc:
        raise InputError(path, "no such cassette") from exc
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(path, f"not a readable cassette ({str(exc).splitlines()[0]})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise InputError(path, "not a vcrpy cassette: no 'interactions' list")
    try:
        return [Interaction.from_vcr(d) for d in data["interactions"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(path, f"malformed interaction in cassette ({exc!r})") from exc


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
        return self.tool == FETCH_TOOL and (self.is_error or is_missing_page(self.text))


def learn_calls(interactions: list[Interaction]) -> list[LearnCall]:
    """Every Learn tool call of a cassette, in order."""
    out = []
    for it in interactions:
        req = it.request_json()
        if not isinstance(req, dict) or req.get("method") != "tools/call":
            continue
        params = req.get("params") or {}
        try:
            message = parse_jsonrpc_reply(it.response_body, it.header("content-type"))
        except (ValueError, json.JSONDecodeError):
            out.append(LearnCall(params.get("name", ""), params.get("arguments") or {}, "", True))
            continue
        text, is_error = tool_result_text(message)
        out.append(LearnCall(params.get("name", ""), params.get("arguments") or {}, text, is_error))
    return out
