"""Record and replay every HTTP exchange of a judge run: one cassette per conversation (claims file).

    with HttpRecorder(mode, run_dir, pages_from=None, rerecord_hint="judge-replay judge ...") as rec:
        with rec.conversation(claims_file) as seam:   # clients built on seam.transport(...) -> that cassette
            anthropic.Anthropic(http_client=httpx2.Client(transport=seam.transport(httpx2.HTTPTransport())))
        with rec.conversation(claims_file, sample=2):   # another sample of it -> its own cassette
            ...
        rec.stats                              # RunStats

How: each conversation hands its clients a recording transport (`replay.recording.transport`) that
knows the conversation's tape and wraps the transport the client would otherwise use. It answers a call
from memory (a replay's every call, from the tape; a recording's fetch of a page another conversation
fetched, from the page cache; a Learn call a page pool serves), or sends it through the transport it
wraps and hands the exchange here, in the form vcrpy's httpx stubs give a cassette. Nothing of any
library is patched: a client not built on a seam's transport (an `http.client` or `urllib` request, the
batch API's polls, a session's closing `DELETE`) goes out unrecorded.

- live (no `pages_from`): nothing intercepted (`Seam.transport` gives the transport it wraps).
- record: requests go to the network; each exchange is appended to the conversation's tape, which is
  normalised, scrubbed and written atomically (`cassettes.cassette.save_cassette`) when its `conversation` block
  exits without an exception. A crash or Ctrl-C writes nothing and leaves earlier cassettes as they were.
  A `microsoft_docs_fetch` of a page another conversation of this recording already fetched is
  answered from that response (JSON-RPC id rewritten) without going out, and still written to this
  conversation's cassette (`stats.page_cache_hits`). A fetch of a page another conversation is fetching
  right now waits for that answer, so live fetches = unique pages at any concurrency; when that fetch
  fails (not 200, an error reply, an exception, Ctrl-C) a waiter goes out itself. (Each recording
  transport call releases the page it claimed on any way out.)
- replay: every request is answered from the cassette through a dict index (canonical key -> deque of
  interactions in recorded order: O(1), identical requests replay in recorded order) or raises
  `CassetteMiss`; nothing reaches the network or needs DNS, also a client kept past its conversation. A
  model or Learn request is first looked up by its exact bytes (`cassettes.matching.sent_form`), which leads to
  the same deque; the index and each response as played (a Learn reply with its recorded JSON-RPC id
  set) come from one entry of the parsed-cassette cache (`_replay_index`), found by the cassette's
  stamp without reading the cassette. The recorded requests are read only for a miss message, to
  describe unused interactions, or to answer a Learn request sent with another id. A conversation's tape
  is dropped when it ends; what `verify` needs of it (`unused_requests`, `recorded_interactions`) is
  kept instead.
- `pages_from=RUN` (live or record): every Learn request is served from that run's cassettes, pooled;
  model calls go live (and are recorded in record mode, together with the Learn answers served).
  In replay it is ignored: a run recorded that way already holds its Learn answers.

`analysis.verify.verify_run(run_dir)` replays a run through the runner and checks it against its results.json
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
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple

from replay.cassettes.cassette import save_cassette
from replay.cassettes.interaction import Interaction
from replay.cassettes.learn_calls import learn_calls
from replay.cassettes.matching import (
    CanonicalRequest,
    canonical_request,
    closest,
)
from replay.cassettes.normalise import normalise_recording
from replay.cassettes.scrub import scrub_interaction
from replay.errors import CassetteMiss, UsageError
from replay.learn.wire import parse_jsonrpc_reply
from replay.runs.names import conversation_label, in_folder, sample_cassette_name
from replay.schema.manifest import RunStats
from replay.urls import normalise_learn_url

if TYPE_CHECKING:
    from replay.runs.page_store import PageFetched
from replay.recording.page_pool import _PagePool
from replay.recording.transport import Seam, _PageFetch, _Sent
from replay.recording.tape import (
    _interaction,
    _learn_of,
    _Played,
    _played,
    _sent_request,
    _Stored,
    _stored,
    _Tape,
    _vcr_response,
)

MODES = ("live", "record", "replay")
NO_CONVERSATION = "(no conversation)"
RECORDED_SAMPLES = "(the samples already recorded)"
"""Who fetched a page pinned from recorded cassettes (`HttpRecorder.pin_pages`): no conversation of this recording."""





_observers: list[list[HttpRecorder]] = []
_observers_lock = threading.Lock()

CASSETTES_WRITTEN_AT_ONCE = 8
"""Cassettes a process writes at once, at most: each holds a file open until it is synced, and a batch
run's conversations end together (hundreds of them, each writing its cassette at the same moment, met a
system's open-files limit on a slow disk); more wait their turn."""
_writing = threading.BoundedSemaphore(CASSETTES_WRITTEN_AT_ONCE)


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
        self._pages = _PagePool(Path(pages_from)) if pages_from is not None and mode != "replay" else None
        self._unused: dict[str, list[tuple[int, str]]] = {}
        """Replay: per finished conversation with any, its interactions no request used, described."""
        self.recorded_interactions = 0
        """Replay: interactions in the cassettes of the finished conversations."""
        self.found_by_secret = False
        """Replay: some request was found only as the cassette stores it scrubbed (`_as_stored`), which
        depends on the secrets this process knows: such a replay leaves no receipt (`runs.receipts`)."""
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
        with _observers_lock:
            for seen in _observers:
                seen.append(self)

    @property
    def intercepting(self) -> bool:
        return self.mode != "live" or self._pages is not None

    def __enter__(self) -> HttpRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextmanager
    def conversation(self, claims_file: str, sample: int = 1) -> Iterator[Seam]:
        """`claims_file`'s conversation (with samples: sample `sample`'s cassette, `runs.names.sample_
        cassette_name`): the block builds its clients on the transports of the seam it gets
        (`Seam.transport`), whose traffic goes to that cassette while the block runs."""
        tape = _Tape(claims_file, in_folder(self.run_dir, sample_cassette_name(claims_file, sample)),
                     label=conversation_label(claims_file, sample))
        if self.mode == "replay":
            tape.load()
        seam = Seam(self, tape)
        try:
            yield seam
        finally:
            seam.tape = None  # a client kept beyond its conversation holds no tape
            if self.mode == "replay":
                self._finished(tape)
        # Reached only when the block exited without an exception.
        if self.mode == "record":
            from replay.runs.page_store import pages_fetched

            interactions = [w.interaction for w in tape.written]
            kinds = [w.request.kind for w in tape.written]
            normalised = normalise_recording(interactions, kinds)
            with _writing:
                written = save_cassette(tape.path, normalised, scrub=False)  # scrubbed by normalising
            calls = learn_calls(_maybe_tool_calls(written, [w.request for w in tape.written]))
            pages = [(url, self._one_copy(text), no_page) for url, text, no_page in pages_fetched(calls)]
            with self._lock:
                self.pages_read[claims_file] = [*self.pages_read.get(claims_file, []), *pages]
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
                self._unused[tape.label] = unused

    # ------------------------------------------------------------------ called by the recording transports

    def _from_memory(self, tape: _Tape | None, request: _Sent,
                     claims: list[_PageFetch]) -> tuple[_Played | None, CanonicalRequest]:
        """Record, or live with a page pool: (the answer when it comes from us (page pool, page cache)
        rather than the network, else None; the request's canonical form). An answer given is written to
        the conversation's tape (record) or counted. A page fetch this call claims is added to `claims`,
        which the caller releases on its way out (`_release`)."""
        creq = _sent_request(request) if self.mode == "record" else canonical_request(request.method, request.uri, request.body)
        if creq.kind == "learn" and self._pages is not None:
            served = self._pages.get(creq)
            if served is None and (stored := _as_stored(request, creq)) is not None:
                served = self._pages.get(stored)
            if served is None:
                raise self._miss(tape, creq, pool=self._pages)
        elif self.mode == "record" and self._answered_by_another(tape, creq, claims):
            served = self._cached_page(tape, creq)
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

    def _recorded(self, tape: _Tape | None, creq: CanonicalRequest, request: Any, response: dict[str, Any]) -> None:
        """A live exchange completed (`creq`: its request's canonical form, from `_from_memory`): keep it
        (record mode, inside a conversation)."""
        if self.mode != "record" or tape is None:
            self._count(creq)
            return
        it = _interaction(request, response)
        self._write(tape, creq, it)
        if creq.is_learn_fetch and _is_page_answer(it):
            url = _fetch_url(creq)
            if url:
                with self._lock:
                    self._page_cache.setdefault(url, (tape.label, it))

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

    def _answered_by_another(self, tape: _Tape | None, creq: CanonicalRequest, claims: list[_PageFetch]) -> bool:
        """Record mode: whether a page fetch is answered from another conversation's live fetch of the
        page, made before (`_page_cache`) or under way (waited for: live fetches = unique pages at any
        concurrency). Otherwise the fetch goes out, and when no other is under way this call claims the
        page (added to `claims`): other conversations wait for it until it is released, answered or not. A
        waiter whose fetch failed (not 200, an error reply, an exception, Ctrl-C) goes out itself; so does
        a call from an asyncio task, which must not block its event loop."""
        url = _fetch_url(creq) if tape is not None and creq.is_learn_fetch else None
        if tape is None or url is None:
            return False
        while True:
            with self._lock:
                cached = self._page_cache.get(url)
                if cached is not None:
                    return cached[0] != tape.label  # its own page again goes out, as before
                under_way = self._in_flight.get(url)
                if under_way is None:
                    claim = _PageFetch(url)
                    self._in_flight[url] = claim
                    claims.append(claim)
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

    def pin_pages(self, interactions: Iterable[Interaction]) -> int:
        """Record mode: answer every later fetch of a page these recorded exchanges fetched (the cassettes of
        a run's samples already recorded, `judge --add-samples`) from them, as if another conversation of
        this recording had fetched it: new samples read the page versions the recorded ones read. Returns
        how many pages were pinned."""
        pinned = 0
        for it in interactions:
            creq = canonical_request(it.method, it.uri, it.request_body)
            url = _fetch_url(creq) if creq.is_learn_fetch and _is_page_answer(it) else None
            if url is not None:
                with self._lock:
                    if url not in self._page_cache:
                        self._page_cache[url] = (RECORDED_SAMPLES, it)
                        pinned += 1
        return pinned

    def waiting_for_pages(self) -> int:
        """How many conversations wait now for a page another one is fetching."""
        with self._lock:
            return self._waiting

    def _cached_page(self, tape: _Tape | None, creq: CanonicalRequest) -> Interaction | None:
        """The live answer another conversation of this recording got for the same page, if any."""
        if tape is None or not creq.is_learn_fetch or not self._page_cache:
            return None
        url = _fetch_url(creq)
        with self._lock:
            cached = self._page_cache.get(url) if url else None
        return cached[1] if cached and cached[0] != tape.label else None

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
            claims_file=tape.label if tape is not None else NO_CONVERSATION,
            request=creq.describe(),
            closest=closest_text,
            rerecord=self.rerecord_hint,
            detail="; ".join(details),
        )


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


def _maybe_tool_calls(written: list[Interaction], requests: list[CanonicalRequest]) -> list[Interaction]:
    """The interactions of a recording as written that may hold a Learn `tools/call` (what `learn_calls`
    looks for), without parsing the others' bodies again: a request whose body was JSON when it was sent
    (`requests`, in the same order; a body not parsed then is left to `learn_calls`, which passes a model
    request over by its URI and reads any other) and not then a `tools/call`
    is none as written either, since scrubbing only turns a secret inside a string into `REDACTED`,
    which makes no `method` key and no `tools/call`."""
    return [it for it, sent in zip(written, requests)
            if sent.body is None or (isinstance(sent.body, dict) and sent.body.get("method") == "tools/call")]
