"""Record and replay every HTTP exchange of a judge run: one cassette per conversation (claims file).

    with HttpRecorder(mode, run_dir, pages_from=None, rerecord_hint="judge-replay judge ...") as rec:
        with rec.conversation(claims_file):   # this thread's httpx / httpx2 traffic -> that cassette
            ...
        rec.stats                              # RunStats

How: one patch for the whole process, installed while any intercepting recorder is open (counted, so
recorders that close in any order leave `httpx`/`httpx2` exactly as they found them). It replaces the
`handle_request` / `handle_async_request` of the `HTTPTransport` and `AsyncHTTPTransport` of `httpx`
(our Learn client) and `httpx2` (anthropic 2.x) with vcrpy's httpx stubs
(`vcr.stubs.httpx_stubs.vcr_handle_request` / `vcr_handle_async_request`, whose signature is the one of
vcrpy 8.2 on, when httpx2 came), given a duck-typed router instead of a vcrpy `Cassette`
(`can_play_response_for`, `play_response`, `write_protected`, `filter_request`, `append`). The router
sends each exchange to the recorder whose conversation runs in the calling thread, and that recorder to
the tape of that conversation (a ContextVar, so each worker thread, or asyncio task, has its own). A call
answered from memory skips the stub (`_replaying`): a replay's every call (from the tape), a recording's
fetch of a page another conversation fetched (the page cache), a Learn call a page pool serves. It gets
the response the stub would have built (`_response`), without the stub's per-request vcrpy `Request` and
dict round trip; only an exchange that goes to the network goes through the stub, which records it.
Nothing else of the process is patched: an `http.client` or `urllib` request inside a conversation
goes out unrecorded. These stubs and that protocol are all we use of vcrpy besides its cassette format.

- live (no `pages_from`): no patch at all.
- record: requests go to the network; each exchange is appended to the conversation's tape, which is
  normalised, scrubbed and written atomically (`_cassette.save_cassette`) when its `conversation` block
  exits without an exception. A crash or Ctrl-C writes nothing and leaves earlier cassettes as they were.
  A `microsoft_docs_fetch` of a page another conversation of this recording already fetched is
  answered from that response (JSON-RPC id rewritten) without going out, and still written to this
  conversation's cassette (`stats.page_cache_hits`). A fetch of a page another conversation is fetching
  right now waits for that answer, so live fetches = unique pages at any concurrency; when that fetch
  fails (not 200, an error reply, an exception, Ctrl-C) a waiter goes out itself. (Each patched
  transport call releases the page it claimed on any way out: `_replaying`.)
- replay: every request is answered from the cassette through a dict index (canonical key -> deque of
  interactions in recorded order: O(1), identical requests replay in recorded order) or raises
  `CassetteMiss`; nothing reaches the network or needs DNS, also on a thread with no conversation. A
  model or Learn request is first looked up by its exact bytes (`_matching.sent_form`), which leads to
  the same deque; the index and each response as played (a Learn reply with its recorded JSON-RPC id
  set) come from one entry of the parsed-cassette cache (`_replay_index`), found by the cassette's
  stamp without reading the cassette. The recorded requests are read only for a miss message, to
  describe unused interactions, or to answer a Learn request sent with another id. A conversation's tape
  is dropped when it ends; what `verify` needs of it (`unused_requests`, `recorded_interactions`) is
  kept instead.
- `pages_from=RUN` (live or record): every Learn request is served from that run's cassettes, pooled;
  model calls go live (and are recorded in record mode, together with the Learn answers served).
  In replay it is ignored: a run recorded that way already holds its Learn answers.

`_verify.verify_run(run_dir)` replays a run through the runner and checks it against its results.json
and for unused interactions (`HttpRecorder.unused_requests()`, found via `recorders_created()`).

Retries. Replay never sleeps nor retries (the runner builds the anthropic client with max_retries=0,
and a replayed `retry-after` is always `0`). A recording keeps only what a replay needs: a transient
failure (408, 409, 429, 5xx incl. 529) that the client retried is dropped when the retry (the same
canonical request) is made, counted in `stats.retries_dropped`; a failure that was the final answer
(the client gave up, or a 400-type error) is kept. Stored `retry-after` is normalised to `0`.

Playback rewrites what must follow the live request: the JSON-RPC `id` of an MCP reply (JSON or SSE)
becomes the request's id, and an MCP reply's session header the request's session.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
import threading
from collections import deque
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, NamedTuple

from ._bodies import rewrite_sse_json
from ._cassette import (
    CASSETTE_SUFFIX,
    Interaction,
    decode_content,
    learn_calls,
    derived,
    load_cassette,
    normalise_recording,
    save_cassette,
)
from ._errors import CassetteMiss, InputError, UsageError
from ._matching import (
    CanonicalRequest,
    RequestKey,
    SentKey,
    canonical_request,
    closest,
    key_digest,
    sent_form,
    sent_key,
)
from ._mcp import normalise_learn_url, parse_jsonrpc_reply
from ._cassette_cache import Cassette, source_sha256
from ._records import RunStats
from ._runs import cassette_name, in_folder
from ._scrub import scrub_interaction

if TYPE_CHECKING:
    from ._pagestore import PageFetched

MODES = ("live", "record", "replay")
_HOP_HEADERS = ("content-encoding", "content-length", "transfer-encoding", "retry-after-ms", "x-should-retry")
_SESSION = "mcp-session-id"
_CANON_ATTR = "_judge_replay_request"
NO_CONVERSATION = "(no conversation)"


def is_transient(status: int) -> bool:
    """Statuses an HTTP client retries: 408, 409, 429 and every 5xx (incl. 529 overloaded)."""
    return status in (408, 409, 429) or status >= 500


@dataclass
class _Written:
    request: CanonicalRequest
    interaction: Interaction
    transient: bool


class _Tape:
    """One conversation's cassette: what replay serves from, or what recording appends to."""

    def __init__(self, claims_file: str, path: Path) -> None:
        self.claims_file = claims_file
        self.path = path
        self.answers: list[_Stored] = []
        """Replay: each recorded interaction's response, as played."""
        self.index: dict[bytes, deque[int]] = {}
        """Replay: key digest (`_matching.key_digest`) -> the interactions with that key, in recorded
        order, not played yet."""
        self.sent: dict[SentKey, _SentAs] = {}
        """Replay: a recorded request's exact-bytes key (`_matching.sent_form`) -> what it stands for."""
        self.played: list[bool] = []
        self.replayed = {"model": 0, "learn": 0, "other": 0}
        """Replay: requests answered, by kind (added to the recorder's stats when the conversation ends)."""
        self._source: Cassette | None = None
        self._recorded: list[Interaction] | None = None
        self._requests: list[CanonicalRequest] | None = None
        self.file_missing = False
        self.written: list[_Written] = []
        self._transient_keys: set[RequestKey] = set()

    def load(self) -> None:
        if not self.path.is_file():
            self.file_missing = True
            self._recorded = []
            return
        self._source = Cassette(self.path)
        index = derived(self._source, _replay_index, tag="replay-index", code=source_sha256(*_INDEXED_BY))
        for i, (digest, sent_forms, kind, rpc_method, rpc_id, *stored) in enumerate(index):
            self.index.setdefault(digest, deque()).append(i)
            for sent in sent_forms:
                self.sent[sent] = _SentAs(digest, kind, (rpc_method, rpc_id) if kind == "learn" else None)
            self.answers.append(_Stored(*stored))
        self.played = [False] * len(self.answers)

    @property
    def recorded(self) -> list[Interaction]:
        """The recorded interactions in full (their requests too), read on first use: only a miss, or
        describing the interactions no request used, needs them."""
        if self._recorded is None:
            indexed_as = self._source.sha256() if self._source is not None else None
            self._recorded = load_cassette(self._source or self.path)
            if self._source is not None and self._source.sha256() != indexed_as:  # rewritten since `load`
                raise InputError(self.path, "the cassette changed while it was being replayed: replay again")
        return self._recorded

    def recorded_body(self, i: int) -> Callable[[], str]:
        """Reads interaction `i`'s response body as recorded (see `_Stored`)."""
        return lambda: self.recorded[i].response_body

    @property
    def requests(self) -> list[CanonicalRequest]:
        """The recorded requests in canonical form, made on first use (only a miss message needs them)."""
        if self._requests is None:
            self._requests = [canonical_request(it.method, it.uri, it.request_body) for it in self.recorded]
        return self._requests

    def take_sent(self, request: Any) -> tuple[int, _SentAs] | None:
        """The next unplayed interaction for a request whose exact bytes a recorded one has (the same as
        `take` by its canonical key, without computing that key), and what those bytes stand for; else None."""
        found = self.sent.get(sent_key(request.method, request.uri, request.body)) if self.sent else None
        i = self._take(found.digest) if found is not None else None
        return None if i is None or found is None else (i, found)

    def take(self, creq: CanonicalRequest) -> int | None:
        return self._take(key_digest(creq.key))

    def _take(self, digest: bytes) -> int | None:
        queue = self.index.get(digest)
        if not queue:
            return None
        i = queue.popleft()
        self.played[i] = True
        return i

    def write(self, creq: CanonicalRequest, it: Interaction) -> int:
        """Append an exchange; returns how many earlier transient failures it retried (now dropped)."""
        dropped = 0
        transient = is_transient(it.status)
        if transient or self._transient_keys:
            key = _retry_key(creq, it)
            if key in self._transient_keys:
                kept = [w for w in self.written if not (w.transient and _retry_key(w.request, w.interaction) == key)]
                dropped = len(self.written) - len(kept)
                self.written = kept
                self._transient_keys.discard(key)
            if transient:
                self._transient_keys.add(key)
        self.written.append(_Written(creq, it, transient))
        return dropped

    def unused(self) -> list[int]:
        return [i for i, played in enumerate(self.played) if not played]


class _Stored(NamedTuple):
    """A recorded response as replay plays it (`_stored`): headers without the hop-by-hop ones and with
    `retry-after` 0, the body as bytes (as text when it cannot be encoded: playing it fails as before).
    For the answer to a Learn request with a JSON-RPC id: that id, and the body with it set (`reply`,
    what a request with that id is played; made once per cassette change), which stands for the body
    (None then: the rare request with another id is answered from the cassette's own body)."""

    status: int
    reason: str
    headers: dict[str, list[str]]
    body: bytes | str | None
    rpc_id: Any = None
    reply: bytes | str | None = None


class _SentAs(NamedTuple):
    """What a recorded request's exact bytes stand for: its key digest, kind, and for a Learn request its
    JSON-RPC (method, id)."""

    digest: bytes
    kind: str
    learn: tuple[str | None, Any] | None


_INDEXED_BY = ("_recorder.py", "_matching.py", "_cache_control.py", "_cassette.py", "_bodies.py", "_io.py", "_scrub.py",
               "_mcp.py", "_yaml.py", "_commands.py")
"""The modules whose code makes `_replay_index` (an edit of one rebuilds its cache entries)."""


def _replay_index(interactions: list[Interaction]) -> list[tuple[Any, ...]]:
    """Per recorded interaction, what replay finds and plays it by: its key digest, the exact-bytes keys
    of its request (`_matching.sent_form`), its kind, JSON-RPC method and id, and its response as
    played (`_Stored`, with a Learn reply's id rewrite made once per cassette change). The requests
    themselves are not kept: a replay reads them only when it needs them (`_Tape.recorded`)."""
    out: list[tuple[Any, ...]] = []
    for it in interactions:
        creq, sent_forms = sent_form(it.method, it.uri, it.request_body)
        out.append((key_digest(creq.key), sent_forms, creq.kind, creq.rpc_method, creq.rpc_id, *_stored(it, creq)))
    return out


def _stored(it: Interaction, creq: CanonicalRequest | None = None) -> _Stored:
    """`it`'s response as played (see `_Stored`); `creq`: its request's canonical form, when the reply to
    its JSON-RPC id should be made now."""
    headers = {name: list(values) for name, values in it.response_headers.items() if name not in _HOP_HEADERS}
    if "retry-after" in headers:
        headers["retry-after"] = ["0"]
    if creq is None or creq.kind != "learn" or creq.rpc_id is None:
        return _Stored(it.status, it.reason, headers, _encoded(it.response_body))
    return _Stored(it.status, it.reason, headers, None, creq.rpc_id, _encoded(_with_rpc_id(it.response_body, creq.rpc_id)))


def _encoded(text: str) -> bytes | str:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: played (and failing) as before
        return text


class _PagePool:
    """Every Learn exchange of another run's cassettes, pooled: the pages of a page-pinned run."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise InputError(folder, "no such run folder (given as --pages-from)")
        files = sorted(folder.glob("*" + CASSETTE_SUFFIX))
        if not files:
            raise InputError(folder, "holds no cassettes to serve pages from")
        self.folder = folder
        self.interactions: list[Interaction] = []
        self.requests: list[CanonicalRequest] = []
        self.index: dict[RequestKey, int] = {}
        for path in files:
            for it in load_cassette(path):
                creq = canonical_request(it.method, it.uri, it.request_body)
                if creq.kind != "learn":
                    continue
                self.index.setdefault(creq.key, len(self.interactions))
                self.interactions.append(it)
                self.requests.append(creq)

    def get(self, creq: CanonicalRequest) -> Interaction | None:
        i = self.index.get(creq.key)
        return None if i is None else self.interactions[i]


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
        recorder: HttpRecorder | None = getattr(request, _RECORDER_ATTR, None)
        if recorder is not None:
            recorder._recorded(request, response)


_going_out: ContextVar[CanonicalRequest | None] = ContextVar("judge_replay_going_out", default=None)
"""The canonical form of the request the HTTP call running in this context sends to the network (made
when it was decided that no answer from memory is given: `HttpRecorder._from_memory`)."""


_RECORDER_ATTR = "_judge_replay_recorder"


class _ProcessPatch:
    """The transports of httpx and httpx2 patched while at least one intercepting recorder is open."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: tuple[HttpRecorder, ...] = ()
        """Replaced whole under the lock, so `owner` reads it without one."""
        self._saved: list[tuple[type, str, Any]] = []
        self._router = _Router()

    def add(self, recorder: HttpRecorder) -> None:
        with self._lock:
            if not self._open:
                self._install()
            self._open = (*self._open, recorder)

    def remove(self, recorder: HttpRecorder) -> None:
        with self._lock:
            self._open = tuple(r for r in self._open if r is not recorder)
            if not self._open:
                self._uninstall()

    def owner(self) -> HttpRecorder | None:
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


def _answered(recorder: HttpRecorder, request: Any, body: bytes, module: Any) -> tuple[Any, Any]:
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


_observers: list[list[HttpRecorder]] = []
_observers_lock = threading.Lock()


@contextmanager
def recorders_created() -> Iterator[list[HttpRecorder]]:
    """Collects every HttpRecorder created inside the block (lets `verify` inspect a replay it did not
    set up itself)."""
    seen: list[HttpRecorder] = []
    with _observers_lock:
        _observers.append(seen)
    try:
        yield seen
    finally:
        with _observers_lock:
            _observers.remove(seen)


class HttpRecorder:
    """The one place a run's HTTP mode is chosen; see the module docstring."""

    def __init__(
        self,
        mode: str,
        run_dir: str | Path,
        pages_from: str | Path | None = None,
        rerecord_hint: str = "judge-replay judge ... --mode record",
    ) -> None:
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}: expected one of {', '.join(MODES)}")
        self.mode = mode
        self.run_dir = Path(run_dir)
        self.rerecord_hint = rerecord_hint
        self.stats = RunStats()
        self._pool = _PagePool(Path(pages_from)) if pages_from is not None and mode != "replay" else None
        self._current: ContextVar[_Tape | None] = ContextVar(f"judge_replay_tape_{id(self)}", default=None)
        self._unused: dict[str, list[tuple[int, str]]] = {}
        """Replay: per finished conversation with any, its interactions no request used, described."""
        self.recorded_interactions = 0
        """Replay: interactions in the cassettes of the finished conversations."""
        self.found_by_secret = False
        """Replay: some request was found only as the cassette stores it scrubbed (`_as_stored`), which
        depends on the secrets this process knows: such a replay leaves no receipt (`_receipts`)."""
        self._page_cache: dict[str, tuple[str, Interaction]] = {}
        """Normalised URL -> (claims file that fetched it live, the exchange)."""
        self._stored_answers: dict[tuple[int, type, Any], _Stored] = {}
        """(id of a page pool's or the page cache's exchange, its request's JSON-RPC id type and id) ->
        the answer as played (`_stored_answer`); those exchanges are kept as long as the recorder."""
        self._in_flight: dict[str, _PageFetch] = {}
        """Normalised URL -> the live fetch of that page under way, which other conversations wait for."""
        self._waiting = 0
        self.pages_read: dict[str, list[PageFetched]] = {}
        """Record: the page fetches of each claims file's cassette as written (what the page store indexes)."""
        self._page_texts: dict[str, str] = {}
        self._lock = threading.Lock()
        self._patched = False
        with _observers_lock:
            for seen in _observers:
                seen.append(self)

    @property
    def intercepting(self) -> bool:
        return self.mode != "live" or self._pool is not None

    def __enter__(self) -> HttpRecorder:
        if self.intercepting:
            _patch.add(self)
            self._patched = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._patched:
            _patch.remove(self)
            self._patched = False

    @contextmanager
    def conversation(self, claims_file: str) -> Iterator[None]:
        """Route this thread's HTTP traffic to `claims_file`'s cassette for the duration of the block."""
        tape = _Tape(claims_file, in_folder(self.run_dir, cassette_name(claims_file)))
        if self.mode == "replay":
            tape.load()
        token = self._current.set(tape)
        try:
            yield
        finally:
            self._current.reset(token)
            if self.mode == "replay":
                self._finished(tape)
        # Reached only when the block exited without an exception.
        if self.mode == "record":
            from ._pagestore import pages_fetched

            interactions = [w.interaction for w in tape.written]
            kinds = [w.request.kind for w in tape.written]
            written = save_cassette(tape.path, normalise_recording(interactions, kinds), scrub=False)  # scrubbed by normalising
            calls = learn_calls(_maybe_tool_calls(written, [w.request for w in tape.written]))
            pages = [(url, self._one_copy(text), no_page) for url, text, no_page in pages_fetched(calls)]
            with self._lock:
                self.pages_read[claims_file] = pages
                self.stats.interactions += len(interactions)
                self.stats.model_calls += sum(1 for w in tape.written if w.request.kind == "model")
                self.stats.learn_calls += sum(1 for w in tape.written if w.request.kind == "learn")

    def unused(self) -> dict[str, list[int]]:
        """Replay: indices of recorded interactions no request used, per claims file (only files with any)."""
        return {file: [i for i, _ in found] for file, found in self.unused_requests().items()}

    def unused_requests(self) -> dict[str, list[tuple[int, str]]]:
        """Replay: (index, what the request was) of the recorded interactions no request used, per claims
        file (only files with any)."""
        with self._lock:
            return dict(self._unused)

    def _finished(self, tape: _Tape) -> None:
        """Replay: keep what `verify` asks of a finished conversation, and let its tape go (memory holds
        one conversation per worker, not the run)."""
        unused = [(i, canonical_request(it.method, it.uri, it.request_body).describe())
                  for i in tape.unused() for it in (tape.recorded[i],)]
        with self._lock:
            self.recorded_interactions += len(tape.answers)
            self.stats.interactions += sum(tape.replayed.values())
            self.stats.model_calls += tape.replayed["model"]
            self.stats.learn_calls += tape.replayed["learn"]
            if unused:
                self._unused[tape.claims_file] = unused

    # ------------------------------------------------------------------ called by the patched transports

    def _from_memory(self, request: _Sent) -> tuple[_Played | None, CanonicalRequest]:
        """Record, or live with a page pool: (the answer when it comes from us (page pool, page cache)
        rather than the network, else None; the request's canonical form). An answer given is written to
        the conversation's tape (record) or counted."""
        creq = _sent_request(request) if self.mode == "record" else canonical_request(request.method, request.uri, request.body)
        tape = self._current.get()
        if creq.kind == "learn" and self._pool is not None:
            served = self._pool.get(creq)
            if served is None and (stored := _as_stored(request, creq)) is not None:
                served = self._pool.get(stored)
            if served is None:
                raise self._miss(tape, creq, pool=self._pool)
        elif self.mode == "record" and self._answered_by_another(creq):
            served = self._cached_page(creq)
            assert served is not None  # _answered_by_another said so
            with self._lock:
                self.stats.page_cache_hits += 1
        else:
            return None, creq
        played = _played(self._stored_answer(served, creq), request, _learn_of(creq))
        if self.mode == "record" and tape is not None:
            self._write(tape, creq, _interaction(request, _vcr_response(played)))
        else:
            self._count(creq)
        return played, creq

    def _stored_answer(self, served: Interaction, creq: CanonicalRequest) -> _Stored:
        """`_stored(served, creq)`: a page pool's or the page cache's answer as played to a request with
        creq's JSON-RPC id, made once per answer and id (conversations fetch the same pages, mostly with
        the same id), not once per fetch."""
        key = (id(served), type(creq.rpc_id), creq.rpc_id)
        try:
            found = self._stored_answers.get(key)
        except TypeError:  # an id that is no JSON-RPC id (a list, an object): made every time
            return _stored(served, creq)
        if found is None:
            found = self._stored_answers[key] = _stored(served, creq)
        return found

    def _recorded(self, request: Any, response: dict[str, Any]) -> None:
        """A live exchange completed: keep it (record mode, inside a conversation)."""
        creq: CanonicalRequest = getattr(request, _CANON_ATTR, None) or canonical_request(request.method, request.uri, request.body)
        tape = self._current.get()
        if self.mode != "record" or tape is None:
            self._count(creq)
            return
        it = _interaction(request, response)
        self._write(tape, creq, it)
        if creq.is_learn_fetch and _is_page_answer(it):
            url = _fetch_url(creq)
            if url:
                with self._lock:
                    self._page_cache.setdefault(url, (tape.claims_file, it))

    def _replayed(self, tape: _Tape | None, request: Any) -> _Played:
        """Replay: the recorded answer, found by the request's exact bytes (a request sent again as
        recorded), else by its canonical key, else by its key as a cassette stores it (scrubbed). Counted
        on the tape (`_Tape.replayed`)."""
        if tape is not None and (found := tape.take_sent(request)) is not None:
            tape.replayed[found[1].kind] += 1
            return _played(tape.answers[found[0]], request, found[1].learn, tape.recorded_body(found[0]))
        creq = canonical_request(request.method, request.uri, request.body)
        if tape is None:
            raise self._miss(None, creq, detail="it was made outside any conversation, and replay answers only a conversation's requests")
        i = tape.take(creq)
        if i is None and (stored := _as_stored(request, creq)) is not None:
            i = tape.take(stored)
            self.found_by_secret = self.found_by_secret or i is not None
        if i is None:
            raise self._miss(tape, creq)
        tape.replayed[creq.kind] += 1
        return _played(tape.answers[i], request, _learn_of(creq), tape.recorded_body(i))

    # ------------------------------------------------------------------ helpers

    def _write(self, tape: _Tape, creq: CanonicalRequest, it: Interaction) -> None:
        dropped = tape.write(creq, it)
        if dropped:
            with self._lock:
                self.stats.retries_dropped += dropped

    def _count(self, creq: CanonicalRequest) -> None:
        with self._lock:
            self.stats.interactions += 1
            if creq.kind == "model":
                self.stats.model_calls += 1
            elif creq.kind == "learn":
                self.stats.learn_calls += 1

    def _answered_by_another(self, creq: CanonicalRequest) -> bool:
        """Record mode: whether a page fetch is answered from another conversation's live fetch of the
        page, made before (`_page_cache`) or under way (waited for: live fetches = unique pages at any
        concurrency). Otherwise the fetch goes out, and when no other is under way this call claims the
        page: other conversations wait for it until it is settled (`_settle_claim`), answered or not. A
        waiter whose fetch failed (not 200, an error reply, an exception, Ctrl-C) goes out itself; so does
        a call from an asyncio task, which must not block its event loop."""
        tape = self._current.get()
        url = _fetch_url(creq) if tape is not None and creq.is_learn_fetch else None
        if tape is None or url is None:
            return False
        while True:
            with self._lock:
                cached = self._page_cache.get(url)
                if cached is not None:
                    return cached[0] != tape.claims_file  # its own page again goes out, as before
                under_way = self._in_flight.get(url)
                if under_way is None:
                    claim = _PageFetch(self, url)
                    self._in_flight[url] = claim
                    _claim.set(claim)
                    return False
                if _in_event_loop():
                    return False  # waiting would block the loop the fetch under way may run on
                self._waiting += 1
            try:
                under_way.settled.wait()
            finally:
                with self._lock:
                    self._waiting -= 1

    def _release(self, claim: _PageFetch) -> None:
        with self._lock:
            if self._in_flight.get(claim.url) is claim:
                del self._in_flight[claim.url]
        claim.settled.set()

    def _one_copy(self, text: str) -> str:
        """One string object per distinct page text, however many conversations read the page."""
        with self._lock:
            return self._page_texts.setdefault(text, text)

    def waiting_for_pages(self) -> int:
        """How many conversations wait now for a page another one is fetching."""
        with self._lock:
            return self._waiting

    def _cached_page(self, creq: CanonicalRequest) -> Interaction | None:
        """The live answer another conversation of this recording got for the same page, if any."""
        tape = self._current.get()
        if tape is None or not creq.is_learn_fetch or not self._page_cache:
            return None
        url = _fetch_url(creq)
        with self._lock:
            cached = self._page_cache.get(url) if url else None
        return cached[1] if cached and cached[0] != tape.claims_file else None

    def _miss(self, tape: _Tape | None, creq: CanonicalRequest, *, detail: str = "", pool: _PagePool | None = None) -> CassetteMiss:
        closest_text: str | None = None
        details = [detail] if detail else []
        if pool is not None:
            found = closest(creq, enumerate(pool.requests))
            if found:
                closest_text = f"{found[0]}: {pool.requests[found[0]].describe()} (in the pooled cassettes of {pool.folder})"
                details.extend(found[1])
            details.append(f"Learn calls are served from {pool.folder}, which never made this request")
        elif tape is not None:
            same = [i for i, r in enumerate(tape.requests) if r.key == creq.key]
            if same:
                closest_text = f"interaction {same[-1]}: {tape.requests[same[-1]].describe()}"
                details.append(f"the cassette holds this request {len(same)} time(s), and every one was already played")
            elif tape.file_missing:
                details.append(f"there is no cassette at {tape.path}")
            else:
                found = closest(creq, enumerate(tape.requests))
                if found:
                    closest_text = f"interaction {found[0]}: {tape.requests[found[0]].describe()}"
                    details.extend(found[1])
        return CassetteMiss(
            claims_file=tape.claims_file if tape is not None else NO_CONVERSATION,
            request=creq.describe(),
            closest=closest_text,
            rerecord=self.rerecord_hint,
            detail="; ".join(details),
        )


class _PageFetch:
    """A page fetch one conversation of a recording sent, which others wait for."""

    def __init__(self, recorder: HttpRecorder, url: str) -> None:
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


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _is_page_answer(it: Interaction) -> bool:
    """Whether a fetch's exchange may answer another conversation: a 200 whose JSON-RPC reply is a result
    (a page, or Learn saying there is none), not an error."""
    if it.status != 200:
        return False
    try:
        return "result" in parse_jsonrpc_reply(it.response_body, it.header("content-type"))
    except ValueError:
        return False


def _as_stored(request: Any, creq: CanonicalRequest) -> CanonicalRequest | None:
    """The request as a cassette stores it (scrubbed), when that differs: a key in the URL's query, or
    a secret of ours in the body, is stored `REDACTED` and must still be found. Only tried after a miss."""
    body = request.body
    text = bytes(body).decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else (body or "")
    headers = {str(k).lower(): [str(v)] for k, v in request.headers.items()}
    stored = scrub_interaction(Interaction(method=request.method.upper(), uri=request.uri, request_body=text or None,
                                           status=0, response_body="", request_headers=headers))
    key = canonical_request(stored.method, stored.uri, stored.request_body)
    return key if key.key != creq.key else None


def _fetch_url(creq: CanonicalRequest) -> str | None:
    args = (creq.body.get("params") or {}).get("arguments") if isinstance(creq.body, dict) else None
    url = args.get("url") if isinstance(args, dict) else None
    return normalise_learn_url(url) if isinstance(url, str) else None


class _Played(NamedTuple):
    """A stored response as played to one request (`_played`)."""

    status: int
    reason: str
    headers: dict[str, list[str]]
    body: bytes


def _vcr_response(played: _Played) -> dict[str, Any]:
    """A played response in the dict form vcrpy's stubs deserialize."""
    return {"status": {"code": played.status, "message": played.reason}, "headers": played.headers,
            "body": {"string": played.body}}


def _played(stored: _Stored, request: Any, learn: tuple[str | None, Any] | None = None,
            recorded_body: Callable[[], str] | None = None) -> _Played:
    """A stored response as the response to `request`. `learn`: the JSON-RPC (method, id) of the Learn
    request it answers (its reply gets that id, its session header the request's); None: not a Learn
    request. `recorded_body` reads the body as recorded when `stored` holds only its reply (`_Stored`) and
    this request has another id."""
    headers, body = stored.headers, stored.body
    rpc_method, rpc_id = learn if learn is not None else (None, None)
    if rpc_id is not None and stored.reply is not None and type(stored.rpc_id) is type(rpc_id) and stored.rpc_id == rpc_id:
        body = stored.reply
    else:
        if body is None:
            assert recorded_body is not None  # only a tape stores a reply alone, and it passes `recorded_body`
            body = recorded_body()
        if rpc_id is not None:
            body = _with_rpc_id(body.decode("utf-8") if isinstance(body, bytes) else body, rpc_id)
    if learn is not None and _SESSION in headers and rpc_method != "initialize":
        session = request.headers.get(_SESSION)
        if session:
            headers = {**headers, _SESSION: [session]}
    return _Played(stored.status, stored.reason, headers, body if isinstance(body, bytes) else body.encode("utf-8"))


def _learn_of(creq: CanonicalRequest) -> tuple[str | None, Any] | None:
    """What `_played` needs of a Learn request: its JSON-RPC (method, id); None for any other."""
    return (creq.rpc_method, creq.rpc_id) if creq.kind == "learn" else None


def _with_rpc_id(body: str, rpc_id: Any) -> str:
    """The reply with the id of its JSON-RPC response set to `rpc_id` (a JSON body or SSE events)."""

    def follow(message: Any) -> Any:
        return {**message, "id": rpc_id} if _is_response(message) else message

    if body.lstrip().startswith("{"):
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):  # not JSON, or a number of more than 4300 digits
            return body
        if _is_response(message) and message["id"] != rpc_id:
            return json.dumps(follow(message), ensure_ascii=False)
        return body
    return rewrite_sse_json(body, follow)


def _is_response(message: Any) -> bool:
    return isinstance(message, dict) and "id" in message and ("result" in message or "error" in message)


_KEY_LATER = "".join(["(a model request's canonical body, ", "made when a retry needs it)"])
"""Stands for the canonical body in the key of a model request being recorded (`_sent_request`);
compared by identity, so no body can be taken for it."""


def _sent_request(request: Any) -> CanonicalRequest:
    """Record: the canonical form of a request about to be sent, except for a model request's key, whose
    canonical body (re-serialising the whole request, which re-sends every page read so far) recording
    needs only to drop a retried transient failure: it is made then (`_retry_key`). A model request is
    known by its path alone (the kind `canonical_request` gives it without its body)."""
    without_body = canonical_request(request.method, request.uri, None)
    if without_body.kind != "model":
        return canonical_request(request.method, request.uri, request.body)
    return CanonicalRequest(without_body.key[:3] + (_KEY_LATER,), "model", None)


def _retry_key(sent: CanonicalRequest, it: Interaction) -> RequestKey:
    """The canonical key of a recorded exchange's request (made now for a model request, `_sent_request`)."""
    if sent.key[3] is _KEY_LATER:
        return canonical_request(it.method, it.uri, it.request_body).key
    return sent.key


def _maybe_tool_calls(written: list[Interaction], requests: list[CanonicalRequest]) -> list[Interaction]:
    """The interactions of a recording as written that may hold a Learn `tools/call` (what `learn_calls`
    looks for), without parsing the others' bodies again: a request whose body was JSON when it was sent
    (`requests`, in the same order; a body not parsed then is left to `learn_calls`, which passes a model
    request over by its URI and reads any other) and not then a `tools/call`
    is none as written either, since scrubbing only turns a secret inside a string into `REDACTED`,
    which makes no `method` key and no `tools/call`."""
    return [it for it, sent in zip(written, requests)
            if sent.body is None or (isinstance(sent.body, dict) and sent.body.get("method") == "tools/call")]


def _interaction(request: Any, response: dict[str, Any]) -> Interaction:
    """A vcrpy request and response dict as an Interaction: header names lower-case, body decoded text."""
    resp_headers: dict[str, list[str]] = {}
    for name, values in (response.get("headers") or {}).items():
        resp_headers.setdefault(str(name).lower(), []).extend(str(v) for v in (values if isinstance(values, list) else [values]))
    raw = response["body"]["string"]
    raw = raw.encode("utf-8") if isinstance(raw, str) else (raw or b"")
    encodings = [e.strip().lower() for v in resp_headers.get("content-encoding", []) for e in v.split(",") if e.strip()]
    if encodings:
        raw = decode_content(raw, encodings)
        for name in ("content-encoding", "content-length"):
            resp_headers.pop(name, None)
    body = request.body
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    return Interaction(
        method=request.method.upper(),
        uri=request.uri,
        request_body=body or None,
        status=int(response["status"]["code"]),
        reason=response["status"].get("message") or "",
        response_body=raw.decode("utf-8", "replace"),
        request_headers={name: [str(value)] for name, value in _lower_items(request.headers)},
        response_headers=resp_headers,
    )


def _lower_items(headers: Any) -> Any:
    """(lower-case name, value) of each header: vcrpy's `HeadersDict` has them at hand (`lower_items`)."""
    lower_items = getattr(headers, "lower_items", None)
    return lower_items() if lower_items is not None else ((str(k).lower(), v) for k, v in headers.items())
