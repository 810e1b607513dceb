"""The recording transport: the one place a conversation's HTTP traffic is answered from memory or sent on
and kept. A recorder hands one to each client a conversation builds (`Seam.transport`); no library class
is patched and no other library's wrapper is looked behind.

    with recorder.conversation(claims_file) as seam:
        httpx.Client(transport=seam.transport(httpx.HTTPTransport()))      # the Learn client's library
        httpx2.Client(transport=seam.transport(httpx2.HTTPTransport()))    # the anthropic SDK's

A request is answered from memory (a replay's cassette, a recording's page cache, a page pool) without
reaching `inner`; any other goes through `inner`, and the exchange is handed to the conversation's tape
in the form vcrpy's httpx stubs give a cassette (`_serialized`), so cassettes are byte for byte what
they were when vcrpy's stubs carried the traffic. A page fetch this conversation claimed (others wait
for its answer) is released on every way out: answer, error, Ctrl-C."""

from __future__ import annotations

import threading
from contextlib import suppress
from typing import Any, NamedTuple, Protocol, overload

import httpx
import httpx2

from replay.cassettes.matching import CanonicalRequest
from replay.recording.tape import _Played, _Tape


class Recorder(Protocol):
    """What a recording transport needs of an open recorder (`replay.recording.recorder.HttpRecorder`)."""

    mode: str

    @property
    def intercepting(self) -> bool: ...

    def _replayed(self, tape: _Tape | None, request: Any) -> _Played: ...

    def _from_memory(self, tape: _Tape | None, request: Any,
                     claims: list[_PageFetch]) -> tuple[_Played | None, CanonicalRequest]: ...

    def _recorded(self, tape: _Tape | None, creq: CanonicalRequest, request: Any, response: dict[str, Any]) -> None: ...

    def _release(self, claim: _PageFetch) -> None: ...


class _PageFetch:
    """A page fetch one conversation of a recording sent, which others wait for."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.settled = threading.Event()


class Seam:
    """One conversation's way into a recorder: the transports its clients are built on. `tape` is the
    conversation's tape while the conversation runs, None once it ended (a request then is one made
    outside any conversation: a replay refuses it, a recording only counts it)."""

    def __init__(self, recorder: Recorder, tape: _Tape | None) -> None:
        self.recorder = recorder
        self.tape = tape

    @overload
    def transport(self, inner: httpx2.BaseTransport) -> httpx2.BaseTransport: ...

    @overload
    def transport(self, inner: httpx.BaseTransport) -> httpx.BaseTransport: ...

    def transport(self, inner: httpx.BaseTransport | httpx2.BaseTransport) -> httpx.BaseTransport | httpx2.BaseTransport:
        """A transport that answers this conversation's requests from memory or sends them through
        `inner` (closed with it) and keeps the exchange; `inner` itself when the recorder intercepts
        nothing (live, with no page pool)."""
        if not self.recorder.intercepting:
            return inner
        if isinstance(inner, httpx2.BaseTransport):
            return Httpx2Recording(self, inner)
        return HttpxRecording(self, inner)


class _Sent(NamedTuple):
    """A request as replay reads it (what a vcrpy `Request` offers of it: method, URL, body bytes, and
    headers with case-insensitive `get` and `items` joining repeated values, as `httpx.Headers` does)."""

    method: str
    uri: str
    body: bytes
    headers: Any


def _handle(seam: Seam, inner: Any, request: Any, module: Any) -> Any:
    """The response to `request` (an httpx or httpx2 one, `module`): from memory, or from `inner`."""
    body = request.read()
    sent = _Sent(request.method, str(request.url), body, request.headers)
    recorder, tape = seam.recorder, seam.tape
    if recorder.mode == "replay":
        return _response(recorder._replayed(tape, sent), module)
    claims: list[_PageFetch] = []
    try:
        played, creq = recorder._from_memory(tape, sent, claims)
        if played is not None:
            return _response(played, module)
        response = inner.handle_request(request)
        raw = _read_raw(response)
        recorder._recorded(tape, creq, sent, _serialized(response, raw))
        return module.Response(response.status_code, headers=response.headers, stream=module.ByteStream(raw),
                               extensions=response.extensions)
    finally:
        for claim in claims:
            recorder._release(claim)


def _read_raw(response: Any) -> bytes:
    """The response body as it came (still encoded), the response closed, its connection released; a
    failure while reading closes it too (the client never got it, so cannot)."""
    try:
        return b"".join(response.iter_raw())
    except BaseException:
        with suppress(Exception):
            response.close()
        raise


def _serialized(response: Any, raw: bytes) -> dict[str, Any]:
    """A response as vcrpy's httpx stubs hand it to a cassette: status code and reason phrase, each header
    name (as httpx lists it) with all its values in order, the body as it came."""
    headers: dict[str, list[str]] = {}
    for name, value in response.headers.multi_items():
        headers.setdefault(name, []).append(value)
    return {"status": {"code": response.status_code, "message": response.reason_phrase}, "headers": headers,
            "body": {"string": raw}}


def _response(played: _Played, module: Any) -> Any:
    """An answer from memory as the httpx (or httpx2, `module`) response vcrpy's stub would build of it
    (`vcr.stubs.httpx_stubs._deserialize_response` of the played dict: status, headers in order with each
    value of a multi-valued one, the body as a `ByteStream`, the reason phrase as `extensions` when there
    is one; the client then attaches the request)."""
    return module.Response(
        played.status,
        headers=[(name, value) for name, values in played.headers.items() for value in values],
        stream=module.ByteStream(played.body),
        extensions={"reason_phrase": played.reason.encode("ascii")} if played.reason else None,
    )


class HttpxRecording(httpx.BaseTransport):
    """The recording transport for an `httpx` client (our Learn client's library)."""

    def __init__(self, seam: Seam, inner: httpx.BaseTransport) -> None:
        self.seam, self.inner = seam, inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _handle(self.seam, self.inner, request, httpx)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.inner.close()


class Httpx2Recording(httpx2.BaseTransport):
    """The recording transport for an `httpx2` client (the anthropic SDK's library)."""

    def __init__(self, seam: Seam, inner: httpx2.BaseTransport) -> None:
        self.seam, self.inner = seam, inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return _handle(self.seam, self.inner, request, httpx2)  # type: ignore[no-any-return]

    def close(self) -> None:
        self.inner.close()

