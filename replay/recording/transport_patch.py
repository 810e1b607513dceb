"""The one process-wide patch of a run's HTTP: the `handle_request` of httpx's and httpx2's transports
replaced by vcrpy's httpx stubs behind a router (see `replay.recording.recorder` for how a recorder uses
it), and the page-fetch claim each patched call settles on its way out."""

from __future__ import annotations

import functools
import importlib
import threading
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol

from replay.cassettes.matching import CanonicalRequest
from replay.recording.tape import _Played, _Tape


class Recorder(Protocol):
    """What the patch needs of an open recorder (`replay.recording.recorder.HttpRecorder`)."""

    mode: str
    _current: ContextVar[_Tape | None]

    def _replayed(self, tape: _Tape | None, request: Any) -> _Played: ...

    def _from_memory(self, request: Any) -> tuple[_Played | None, CanonicalRequest]: ...

    def _recorded(self, request: Any, response: dict[str, Any]) -> None: ...

    def _release(self, claim: _PageFetch) -> None: ...


_CANON_ATTR = "_judge_replay_request"


class _Router:
    """What vcrpy's httpx stubs take for a cassette: routes each exchange that goes out to the recorder
    (and it to the tape) of the conversation running in the calling thread. Every answer from memory
    (cassette, page pool, page cache) was given before the stub (`_replaying`): the stub plays none."""

    write_protected = False  # misses are raised before the stub, never by vcrpy

    def can_play_response_for(self, request: Any) -> bool:
        setattr(request, _RECORDER_ATTR, _patch.owner())
        setattr(request, _CANON_ATTR, _going_out.get())
        return False

    def play_response(self, request: Any) -> dict[str, Any]:
        raise AssertionError("every answer from memory is given before vcrpy's stub")

    def filter_request(self, request: Any) -> Any:
        return request

    def append(self, request: Any, response: dict[str, Any]) -> None:
        recorder: Recorder | None = getattr(request, _RECORDER_ATTR, None)
        if recorder is not None:
            recorder._recorded(request, response)


_going_out: ContextVar[CanonicalRequest | None] = ContextVar("judge_replay_going_out", default=None)
"""The canonical form of the request the HTTP call running in this context sends to the network (made
when it was decided that no answer from memory is given: `Recorder._from_memory`)."""


_RECORDER_ATTR = "_judge_replay_recorder"


class _ProcessPatch:
    """The transports of httpx and httpx2 patched while at least one intercepting recorder is open."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: tuple[Recorder, ...] = ()
        """Replaced whole under the lock, so `owner` reads it without one."""
        self._saved: list[tuple[type, str, Any]] = []
        self._router = _Router()

    def add(self, recorder: Recorder) -> None:
        with self._lock:
            if not self._open:
                self._install()
            self._open = (*self._open, recorder)

    def remove(self, recorder: Recorder) -> None:
        with self._lock:
            self._open = tuple(r for r in self._open if r is not recorder)
            if not self._open:
                self._uninstall()

    def owner(self) -> Recorder | None:
        """The newest open recorder with a conversation in this context, else the newest open one."""
        open_now = self._open
        for recorder in reversed(open_now):
            if recorder._current.get() is not None:
                return recorder
        return open_now[-1] if open_now else None

    def _install(self) -> None:
        from vcr.stubs.httpx_stubs import vcr_handle_async_request, vcr_handle_request  # type: ignore[import-untyped]

        for name in ("httpx", "httpx2"):
            try:
                module = importlib.import_module(name)
            except ImportError:
                continue
            for cls, method, stub, replaying in (
                    (module.HTTPTransport, "handle_request", vcr_handle_request, _replaying),
                    (module.AsyncHTTPTransport, "handle_async_request", vcr_handle_async_request, _replaying_async)):
                original = cls.__dict__[method]
                self._saved.append((cls, method, original))
                setattr(cls, method, replaying(stub(self._router, original, module), module))

    def _uninstall(self) -> None:
        while self._saved:
            cls, method, original = self._saved.pop()
            setattr(cls, method, original)


def _replaying(stub: Any, module: Any) -> Any:
    """The patched `handle_request`: a call an open recorder answers from memory (a replay's cassette, a
    recording's page cache, a page pool) is answered at once (`_answered`), any other goes through
    vcrpy's stub; on any way out (answer, error, Ctrl-C) the page fetch the call claimed is released."""

    @functools.wraps(stub)
    def handle_request(transport: Any, request: Any) -> Any:
        token = None
        try:
            recorder = _patch.owner()
            if recorder is not None:
                answered, token = _answered(recorder, request, b"".join(request.stream), module)
                if answered is not None:
                    return answered
            return stub(transport, request)
        finally:
            if token is not None:
                _going_out.reset(token)
            _settle_claim()

    return handle_request


def _replaying_async(stub: Any, module: Any) -> Any:
    @functools.wraps(stub)
    async def handle_async_request(transport: Any, request: Any) -> Any:
        token = None
        try:
            recorder = _patch.owner()
            if recorder is not None:
                body = b"".join([part async for part in request.stream])
                answered, token = _answered(recorder, request, body, module)
                if answered is not None:
                    return answered
            return await stub(transport, request)
        finally:
            if token is not None:
                _going_out.reset(token)
            _settle_claim()

    return handle_async_request


def _answered(recorder: Recorder, request: Any, body: bytes, module: Any) -> tuple[Any, Any]:
    """(the response when `recorder` answers this httpx (or httpx2, `module`) request from memory, else
    None; the token of `_going_out` set for the stub, else None). The request's stream is replaced by
    `body`, its bytes, as vcrpy's stub does."""
    request.stream = module.ByteStream(body)
    sent = _Sent(request.method, str(request.url), body, request.headers)
    if recorder.mode == "replay":
        return _response(recorder._replayed(recorder._current.get(), sent), module), None
    played, creq = recorder._from_memory(sent)
    if played is not None:
        return _response(played, module), None
    return None, _going_out.set(creq)


def _response(played: _Played, module: Any) -> Any:
    """An answer from memory as the httpx (or httpx2, `module`) response vcrpy's stub would build of it
    (`vcr.stubs.httpx_stubs._deserialize_response` of the played dict: status, headers in order with each
    value of a multi-valued one, the body as a `ByteStream`, the reason phrase as `extensions` when there
    is one; the client then attaches the request), without the stub's vcrpy `Request` and the dict round
    trip."""
    return module.Response(
        played.status,
        headers=[(name, value) for name, values in played.headers.items() for value in values],
        stream=module.ByteStream(played.body),
        extensions={"reason_phrase": played.reason.encode("ascii")} if played.reason else None,
    )


class _Sent(NamedTuple):
    """A request as replay reads it (what a vcrpy `Request` offers of it: method, URL, body bytes, and
    headers with case-insensitive `get` and `items` joining repeated values, as `httpx.Headers` does)."""

    method: str
    uri: str
    body: bytes
    headers: Any


_patch = _ProcessPatch()


class _PageFetch:
    """A page fetch one conversation of a recording sent, which others wait for."""

    def __init__(self, recorder: Recorder, url: str) -> None:
        self.recorder = recorder
        self.url = url
        self.settled = threading.Event()


_claim: ContextVar[_PageFetch | None] = ContextVar("judge_replay_page_claim", default=None)
"""The page fetch the HTTP call running in this context claimed (at most one)."""


def _settle_claim() -> None:
    """Wake whoever waits for the page this context's call claimed; they find its answer in the page
    cache, or, when it failed, go out themselves."""
    claim = _claim.get()
    if claim is not None:
        _claim.set(None)
        claim.recorder._release(claim)
