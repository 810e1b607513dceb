"""The cassette file: vcrpy's YAML format (stock vcrpy loads it), written deterministically and atomically.

Layout (vcrpy `version: 1`):

    interactions:
    - request:  {method, uri, headers: {name: [values]}, body: <text or null>}
      response: {status: {code, message}, headers: {name: [values]}, body: {string: <text>}}
    version: 1

Readability rules: JSON bodies are re-indented (2 spaces, key order kept) and written as YAML block
strings; SSE is kept as text. Header names are lower-cased; keys are sorted. Interactions keep the order
in which the conversation made them.

Every write is scrubbed of secrets (`_scrub.scrub_interactions`: credential headers by name, known
secrets by value, bodies changed only as parsed structures, page text never). A recording is also
normalised before it is written (`normalise_recording`): headers reduced to allow-lists, session and
request ids renumbered in order of appearance, rate-limit values and `retry-after` fixed, loopback
URIs stored with the stand-ins' default ports, so two recordings of the same exchanges are
byte-identical and a replay can never be told to sleep. The loader (YAML aliases and nesting bounded,
`_yaml`) also reads stock vcrpy's cassettes (compressed bodies as `!!binary`) and pydantic-ai's variant
(JSON bodies as a `parsed_body` mapping); anything malformed is an InputError naming the file.
`derived` keeps what a caller derives from a cassette's interactions (replay's index and responses) in
an entry of its own of the parsed-cassette cache, so a replay reads one entry per cassette.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from ._bodies import is_sse, map_strings, rewrite_sse_json
from ._cassette_cache import Cassette, cached, text_of
from ._cassette_yaml import WIDTH, block_yaml
from ._commands import LEARN_STAND_IN_PORT, MODEL_STAND_IN_PORT, canonical_endpoint
from ._errors import InputError, UsageError
from ._io import atomic_write_text, indented_json, parse_json_noting_floats, reading_error
from ._matching import canonical_request, is_model_uri
from ._mcp import FETCH_TOOL, STAND_IN_HEADER, is_missing_page, parse_jsonrpc_reply, tool_result_text
from ._scrub import MAX_BODY, cassette_redactor, content_type_of, gunzip, holds_no_secret, scrub_interaction, scrub_interactions
from ._secrets import Redactor
from ._yaml import Dumper, load_yaml

CASSETTE_SUFFIX = ".yaml"
T = TypeVar("T")


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
        except (ValueError, RecursionError):  # not JSON, or a number of more than 4300 digits
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
    def from_vcr(cls, d: Any) -> Interaction:
        """One interaction of a vcrpy cassette (ours, stock vcrpy's with `!!binary` gzip bodies, or
        pydantic-ai's `parsed_body` variant). Raises _Malformed saying what is wrong."""
        item = _mapping(d, "the interaction")
        req = _mapping(item.get("request"), "request")
        resp = _mapping(item.get("response"), "response")
        status = _mapping(resp.get("status"), "response.status")
        code = status.get("code")
        if isinstance(code, bool) or not isinstance(code, (int, str)) or not str(code).isdigit():
            raise _Malformed(f"response.status.code is {code!r}, not an HTTP status")
        method, uri = req.get("method"), req.get("uri")
        if not isinstance(method, str) or not method:
            raise _Malformed("request.method is missing or not text")
        if not isinstance(uri, str) or not uri:
            raise _Malformed("request.uri is missing or not text")
        request_headers = _headers(req.get("headers"), "request.headers")
        response_headers = _headers(resp.get("headers"), "response.headers")
        body = resp.get("body", {})
        rbody = body.get("string", "") if isinstance(body, dict) else body
        if "parsed_body" in resp:  # pydantic-ai's variant
            rbody = json.dumps(resp["parsed_body"], ensure_ascii=False)
        rtext = _body_text(rbody, response_headers, "response.body")
        qbody = req.get("body")
        if isinstance(qbody, dict) and "string" in qbody:
            qbody = qbody["string"]
        if "parsed_body" in req:
            qbody = json.dumps(req["parsed_body"], ensure_ascii=False)
        message = status.get("message")
        return cls(
            method=method,
            uri=uri,
            request_body=_body_text(qbody, {}, "request.body") or None,
            status=int(code),
            reason=message if isinstance(message, str) else "",
            response_body=rtext,
            request_headers=request_headers,
            response_headers=response_headers,
        )


class _Malformed(ValueError):
    """What is wrong with one interaction of a cassette."""


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} is {type(value).__name__ if value is not None else 'missing'}, expected a mapping")
    return value


def _body_text(body: Any, headers: dict[str, list[str]], what: str) -> str:
    """A stored body as text. Stock vcrpy keeps a compressed body as bytes (`!!binary`) beside its
    `content-encoding` header: it is decoded, and the header (with `content-length`) dropped."""
    if body is None:
        return ""
    if isinstance(body, str):
        return body
    if isinstance(body, (bytes, bytearray)):
        raw = bytes(body)
        encodings = [e.strip().lower() for v in headers.get("content-encoding", []) for e in v.split(",") if e.strip()]
        if encodings == ["gzip"]:  # stock vcrpy's usual case, decompressed within a size bound
            unzipped = gunzip(raw)
            if unzipped is None:
                raise _Malformed(f"{what}: not valid gzip data, or larger than {MAX_BODY // 2**20} MB once decompressed")
            raw = unzipped
            headers.pop("content-encoding", None)
            headers.pop("content-length", None)
        elif encodings:
            try:
                raw = decode_content(raw, encodings)
            except UsageError as exc:
                raise _Malformed(f"{what}: {exc}") from None
            except Exception as exc:  # a decoder's own error on a corrupt body (httpx.DecodingError, zlib.error)
                raise _Malformed(f"{what}: not valid {'/'.join(encodings)} data ({exc})") from None
            headers.pop("content-encoding", None)
            headers.pop("content-length", None)
        elif raw[:2] == b"\x1f\x8b":
            raw = gunzip(raw) or raw
        return raw.decode("utf-8", "replace")
    raise _Malformed(f"{what} is {type(body).__name__}, expected text")


def decode_content(raw: bytes, encodings: list[str]) -> bytes:
    """Undo content encodings (last applied first) with httpx's decoders: a client only asks for
    encodings it can decode, and these are the decoders it uses."""
    from httpx._decoders import SUPPORTED_DECODERS

    for encoding in reversed(encodings):
        if encoding == "identity":
            continue
        decoder_class = SUPPORTED_DECODERS.get(encoding)
        if decoder_class is None:
            raise UsageError(f"cannot store a response sent with content-encoding {encoding!r}: record without it")
        decoder = decoder_class()
        raw = decoder.decode(raw) + decoder.flush()
    return raw


def _headers(raw: Any, what: str) -> dict[str, list[str]]:
    if raw is None:
        return {}
    out: dict[str, list[str]] = {}
    for k, v in _mapping(raw, what).items():
        values = v if isinstance(v, list) else [v]
        if any(isinstance(x, (dict, list)) for x in values):
            raise _Malformed(f"{what}.{k} is not a header value")
        out.setdefault(str(k).lower(), []).extend(values)
    return {k: [str(x) for x in v] for k, v in out.items()}


def _readable(body: str | None) -> str | None:
    """JSON bodies re-indented for people and diffs (`_io.indented_json`); anything else unchanged."""
    if not body or body[:1] not in "{[":
        return body
    try:
        data, float_free = parse_json_noting_floats(body)
        readable = indented_json(data, float_free=float_free)
        if not body.isascii() or "\\ud" in body or "\\uD" in body:  # else no surrogate can be in it
            readable.encode("utf-8")  # a lone surrogate (raw, or escaped) cannot be written as text: keep the body as sent
        return readable
    except (ValueError, RecursionError):  # not JSON, a number too long to read, a lone surrogate
        return body


class _BlockDumper(Dumper):  # type: ignore[misc]
    pass


def _str_representer(dumper: Any, value: str) -> Any:
    # Block style where YAML can round-trip it exactly; quoted otherwise (CR, tabs, trailing spaces).
    if "\n" in value and "\r" not in value and not any(l != l.rstrip() for l in value.split("\n")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_BlockDumper.add_representer(str, _str_representer)


def dumps_cassette(interactions: list[Interaction], *, scrub: bool = True) -> str:
    """The cassette text; secrets are scrubbed (`_scrub.scrub_interactions`) unless `scrub=False`
    (tests planting secrets only)."""
    return _yaml_text(scrub_interactions(interactions) if scrub else interactions)


def _yaml_text(interactions: list[Interaction]) -> str:
    """The cassette's YAML: `_cassette_yaml.block_yaml` where it writes what `yaml.dump` would (nearly
    always, at a fraction of its cost), else `yaml.dump` itself."""
    data = {"interactions": [i.to_vcr() for i in interactions], "version": 1}
    text = block_yaml(data, _BlockDumper)
    if text is None:
        text = yaml.dump(data, Dumper=_BlockDumper, sort_keys=True, allow_unicode=True, width=WIDTH)
    return text


def save_cassette(path: str | Path, interactions: list[Interaction], *, scrub: bool = True) -> list[Interaction]:
    """Write atomically: a crash mid-write leaves the previous file (or none), never half of one.
    Returns the interactions as written (scrubbed): loading the file gives them back, JSON bodies
    re-indented. `scrub=False`: the interactions are scrubbed already (`normalise_recording`'s), or a
    test plants secrets."""
    written = scrub_interactions(interactions) if scrub else interactions
    atomic_write_text(path, _yaml_text(written))
    return written


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


def normalise_recording(interactions: list[Interaction], kinds: Sequence[str] | None = None) -> list[Interaction]:
    """The interactions as a recording stores them, scrubbed (write them with `save_cassette(...,
    scrub=False)`): allow-listed lower-case headers; MCP session ids renumbered `session-1`,
    `session-2`... and request ids `req_recorded_0001`... in order of first appearance (also where a
    body echoes a request id, changed in the parsed body); rate limits `0`; `retry-after` `0`; no dates;
    SSE events' JSON written compactly (a page served from another conversation of the recording, its
    JSON-RPC id rewritten, is then stored with the same bytes as one fetched live, however the server
    escaped it); a loopback URI in canonical form (`_commands.canonical_endpoint`: the stand-ins'
    default ports), so a re-record against stand-ins on other ports changes no byte. Secrets are removed
    first (`_scrub.scrub_interactions`), while the credential headers that carry them (and are dropped
    here) are still there to say what they are, and again once normalised, as every cassette write
    does: the result is `scrub_interactions(_normalised(scrub_interactions(interactions)))`, computed
    with each body that the first pass finds holds no secret (nearly all) left alone by both passes
    (`_normalised_once`). `kinds`: each request's kind ("model", "learn", "other"), when the recorder
    knows them already (`_matching.canonical_request`, which would otherwise parse every body again)."""
    redactor = cassette_redactor(interactions)
    once = _normalised_once(interactions, kinds, redactor) if redactor else None
    if once is not None:
        return once
    return scrub_interactions(_normalised(scrub_interactions(interactions), kinds))


def _normalised_once(interactions: list[Interaction], kinds: Sequence[str] | None, redactor: Redactor) -> list[Interaction] | None:
    """`normalise_recording`, with each body that holds no value of `redactor` (`cassette_redactor` of
    the interactions: the first pass's) passed over by both scrubbing passes: what they would do to it
    is known. A request body stays as it is (neither pass changes it); so does a response body, but an
    event stream, which the first pass writes back with a second space after each `data:` (`_bodies.
    map_strings`), normalising writes compactly again, and the second pass writes back with that space:
    normalising writes it so (`rewrite_sse_json(as_mapped=True)`), each event parsed once instead of
    three times. That needs the second pass's redactor to remove no value the first's does not, and the
    first pass to leave each content type as it is and to write no request id a response body echoes
    (nor one with a space, which could span the space it adds); where any of this fails (or the JSON
    nests too deeply to be sure of parsing it again), None: both passes then run in full."""
    interactions = [_kept_headers_only(it) for it in interactions]  # scrubbing a header normalising drops is work lost
    types = [(content_type_of(it.request_headers), content_type_of(it.response_headers)) for it in interactions]
    keep = [_left_alone(it, redactor, *both) for it, both in zip(interactions, types)]
    first = [scrub_interaction(it, redactor, keep=kept) for it, kept in zip(interactions, keep)]
    for it, scrubbed, (_, response_kept), (request_type, response_type) in zip(interactions, first, keep, types):
        if (content_type_of(scrubbed.request_headers) != request_type
                or content_type_of(scrubbed.response_headers) != response_type
                or scrubbed.header("content-type") != response_type):
            return None
        if response_kept and any(value and (" " in value or value in it.response_body)
                                 for name, values in scrubbed.response_headers.items() if name.lower() == _REQUEST_ID
                                 for value in values):
            return None
    try:
        normalised = _normalised(first, kinds, as_scrubbed=[response_kept for _, response_kept in keep])
    except ValueError:  # an event's JSON nests too deeply (`rewrite_sse_json`)
        return None
    again = cassette_redactor(normalised)
    if not again or not redactor.holds_all_of(again):
        return None
    return [scrub_interaction(it, again, keep=kept) for it, kept in zip(normalised, keep)]


def _kept_headers_only(it: Interaction) -> Interaction:
    """The interaction with only the headers `_normalised` keeps (by name, in their order): scrubbing
    each header on its own (`_scrub.scrub_headers`), the first pass writes the kept ones the same."""
    return Interaction(
        it.method, it.uri, it.request_body, it.status, it.response_body,
        {name: values for name, values in it.request_headers.items() if name.lower() in REQUEST_HEADERS},
        {name: values for name, values in it.response_headers.items() if _keeps_response_header(name.lower())},
        it.reason,
    )


def _keeps_response_header(name: str) -> bool:
    """Whether normalising keeps a response header (`name` in lower case)."""
    return name in RESPONSE_HEADERS or name in (_SESSION, _REQUEST_ID, "retry-after") or name.startswith(_RATELIMIT)


def _left_alone(it: Interaction, redactor: Redactor, request_type: str | None, response_type: str | None) -> tuple[bool, bool]:
    """Whether the request and the response body of an exchange pass the scrubbing of a recording
    unchanged but for what `_normalised_once` knows: no value of `redactor` in them, and no event stream
    the first pass would write back (but one of the response that normalising rewrites). The types:
    the exchange's content types (`content_type_of`)."""
    request = holds_no_secret(it.request_body, redactor) and not (it.request_body and is_sse(it.request_body, request_type))
    response = holds_no_secret(it.response_body, redactor) and (
        not is_sse(it.response_body, response_type) or "text/event-stream" in (response_type or "").lower())
    return request, response


def _normalised(interactions: list[Interaction], kinds: Sequence[str] | None,
                as_scrubbed: Sequence[bool] | None = None) -> list[Interaction]:
    """The normalising of `normalise_recording`, without its scrubbing. `as_scrubbed`: per interaction,
    whether its event-stream response is written as the second scrubbing pass leaves a body holding no
    secret (`rewrite_sse_json(as_mapped=True)`)."""
    sessions: dict[str, str] = {}
    request_ids: dict[str, str] = {}

    def session(value: str) -> str:
        return sessions.setdefault(value, f"session-{len(sessions) + 1}")

    out = []
    for n, it in enumerate(interactions):
        req_headers: dict[str, list[str]] = {}
        for name, values in it.request_headers.items():
            name = name.lower()
            if name in REQUEST_HEADERS:
                req_headers[name] = [session(v) for v in values] if name == _SESSION else list(values)
        resp_headers: dict[str, list[str]] = {}
        body = it.response_body
        content_type = it.header("content-type")
        for name, values in it.response_headers.items():
            name = name.lower()
            if not _keeps_response_header(name):
                continue
            if name == _SESSION:
                resp_headers[name] = [session(v) for v in values]
            elif name == _REQUEST_ID:
                new = [request_ids.setdefault(v, f"req_recorded_{len(request_ids) + 1:04d}") for v in values]
                for old, placeholder in zip(values, new):
                    if old and old in body:
                        body = map_strings(body, content_type, _replacing(old, placeholder))
                resp_headers[name] = new
            elif name.startswith(_RATELIMIT) or name == "retry-after":
                resp_headers[name] = ["0" for _ in values]
            elif name in RESPONSE_HEADERS:
                resp_headers[name] = list(values)
        if "text/event-stream" in (content_type or "").lower():
            body = rewrite_sse_json(body, as_mapped=bool(as_scrubbed and as_scrubbed[n]))
        out.append(
            Interaction(
                method=it.method.upper(),
                uri=canonical_uri(it.method, it.uri, it.request_body, kinds[n] if kinds else None),
                request_body=it.request_body,
                status=it.status,
                response_body=body,
                request_headers=req_headers,
                response_headers=resp_headers,
                reason=it.reason,
            )
        )
    return out


def _replacing(old: str, new: str) -> Callable[[str], str]:
    return lambda text: text.replace(old, new)


def canonical_uri(method: str, uri: str, body: str | None, kind: str | None = None) -> str:
    """The URI as a cassette stores it: a loopback endpoint with the default port of the stand-in of its
    kind (model or Learn; `kind` when known), any other URI unchanged."""
    kind = kind or canonical_request(method, uri, body).kind
    if kind == "other":
        return uri
    return canonical_endpoint(uri, MODEL_STAND_IN_PORT if kind == "model" else LEARN_STAND_IN_PORT)


_YAML_PARSER = "yaml safe, bounded aliases, v1"


def load_cassette(path: str | Path | Cassette) -> list[Interaction]:
    """Load a vcrpy YAML cassette (ours or stock) into interactions; anything malformed is an
    InputError naming the file and the interaction. Given a `Cassette`, what it has read is reused."""
    source = path if isinstance(path, Cassette) else Cassette(Path(path))
    try:
        data = cached(source, "", lambda: load_yaml(text_of(source.raw()), source.path), parser=_YAML_PARSER)
    except (OSError, UnicodeDecodeError) as exc:
        raise reading_error(source.path, exc, "cassette") from exc
    return _interactions(source.path, data)


def derived(source: Cassette, derive: Callable[[list[Interaction]], T], *, tag: str, code: str) -> T:
    """`derive(interactions)` of a cassette, kept in an entry of its own in the parsed-cassette cache
    (`tag` names it, `code` is the sha256 of the source that derives it: `_cassette_cache.source_sha256`),
    so a valid entry (and the cassette's stamp) is all that is read; the cassette is loaded (as
    `load_cassette`) only to derive it again."""
    try:
        value: T = cached(source, tag, lambda: derive(load_cassette(source)), parser=f"{tag}; code {code}")
    except OSError as exc:
        raise reading_error(source.path, exc, "cassette") from exc
    return value


def _interactions(path: Path, data: Any) -> list[Interaction]:
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise InputError(path, "not a vcrpy cassette: no 'interactions' list")
    out = []
    for index, item in enumerate(data["interactions"]):
        try:
            out.append(Interaction.from_vcr(item))
        except _Malformed as exc:
            raise InputError(path, f"interaction {index}: {exc}") from None
    return out


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
    """(text, isError) of a `tools/call` reply (`_mcp.tool_result_text`), remembered: the same page
    reply comes in many cassettes of a run."""
    return tool_result_text(parse_jsonrpc_reply(body, content_type))
