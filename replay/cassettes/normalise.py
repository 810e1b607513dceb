"""A recording normalised before it is written, so two recordings of the same exchanges are byte-identical."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replay.cassettes.bodies import is_sse, map_strings, rewrite_sse_json
from replay.cassettes.interaction import Interaction
from replay.cassettes.matching import canonical_request
from replay.cassettes.scrub import (
    cassette_redactor,
    content_type_of,
    holds_no_secret,
    scrub_interaction,
    scrub_interactions,
)
from replay.learn.wire import STAND_IN_HEADER
from replay.secrets.registry import Redactor
from replay.urls import LEARN_STAND_IN_PORT, MODEL_STAND_IN_PORT, canonical_endpoint

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
    escaped it); a loopback URI in canonical form (`urls.canonical_endpoint`: the stand-ins'
    default ports), so a re-record against stand-ins on other ports changes no byte. Secrets are removed
    first (`cassettes.scrub.scrub_interactions`), while the credential headers that carry them (and are dropped
    here) are still there to say what they are, and again once normalised, as every cassette write
    does: the result is `scrub_interactions(_normalised(scrub_interactions(interactions)))`, computed
    with each body that the first pass finds holds no secret (nearly all) left alone by both passes
    (`_normalised_once`). `kinds`: each request's kind ("model", "learn", "other"), when the recorder
    knows them already (`cassettes.matching.canonical_request`, which would otherwise parse every body again)."""
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
    each header on its own (`cassettes.scrub.scrub_headers`), the first pass writes the kept ones the same."""
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
