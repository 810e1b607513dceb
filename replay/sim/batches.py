"""The model stand-in's Message Batches endpoints and its deterministic prompt-cache accounting.

Batches (`POST /v1/messages/batches`, `GET /v1/messages/batches` (newest first, `limit`, `before_id`,
`after_id`), `GET .../{id}`, `GET .../{id}/results`, `POST .../{id}/cancel`):
each entry is answered by the same policy as a direct `POST /v1/messages` (`model.respond`) once the
batch has been processing for `BatchSettings.delay` seconds; results are JSONL in an order of their own
(sorted by a hash of the custom_id), as the real API does not keep request order. On purpose, an entry
whose custom_id contains `errored` (or `expired`) is errored with an `api_error` (or expired) the first
time that custom_id is submitted; a resubmission succeeds. `BatchApp.log` lists every entry submitted
(batch id, custom_id, sha256 of its params): what tests read to check that nothing was paid for twice.

Cache accounting (direct calls and batch entries alike), only for requests that carry `cache_control`
(others keep today's usage, byte for byte): the breakpoints are read in the API's order (tools, system,
messages). The longest breakpoint prefix seen within its lifetime (`ttl` 5m or 1h, refreshed by each
use) is a cache read; the rest up to the last breakpoint is a cache write (split by lifetime in
`usage.cache_creation`); the remainder is uncached input. Tokens are counted as the stand-in counts
them (`len(json.dumps([system, messages])) // 4`, of the request without its breakpoints), so a cached
run and an uncached one have the same total. No per-model minimum length: the stand-in caches any prefix.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from replay.core.cache_control import strip_cache_control, without_breakpoints

if TYPE_CHECKING:
    from replay.sim.model import ModelHandler


BATCHES_PATH = "/v1/messages/batches"
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
ERRORED_MARKER = "errored"
EXPIRED_MARKER = "expired"


def count_tokens(system: Any, messages: Any) -> int:
    """Input tokens as the stand-in counts them (a quarter of the JSON length), of the request as it
    would be without breakpoints, so that caching changes no total."""
    plain = without_breakpoints({"system": system, "messages": messages})
    return len(json.dumps([plain["system"], plain["messages"]], ensure_ascii=False)) // 4


@dataclass(frozen=True)
class _Prefix:
    """The request up to the end of one block: its cache key, its tokens, and its breakpoint's lifetime
    (None: no breakpoint on this block)."""

    key: str
    tokens: int
    ttl: str | None


def prefixes(request: dict[str, Any]) -> list[_Prefix]:
    """The request's prefixes at every block end, in the API's order (tools, system, messages)."""
    tools: list[Any] = request["tools"] if isinstance(request.get("tools"), list) else []
    system = request.get("system")
    messages: list[Any] = request["messages"] if isinstance(request.get("messages"), list) else []
    found: list[_Prefix] = []

    def add(block: Any, prefix: list[Any], tokens: int) -> None:
        marker = block.get("cache_control") if isinstance(block, dict) else None
        ttl = None
        if isinstance(marker, dict):
            ttl = marker.get("ttl", "5m") if marker.get("ttl", "5m") in TTL_SECONDS else "5m"
        text = json.dumps([request.get("model"), strip_cache_control(prefix)], ensure_ascii=False, sort_keys=True)
        found.append(_Prefix(hashlib.sha256(text.encode()).hexdigest(), tokens, ttl))

    for i, tool in enumerate(tools):
        add(tool, [tools[: i + 1]], 0)
    system_blocks = system if isinstance(system, list) else []
    for i, block in enumerate(system_blocks):
        add(block, [tools, system_blocks[: i + 1]], count_tokens(system_blocks[: i + 1], []))
    for m, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for b, block in enumerate(content):
                partial = [*messages[:m], {**message, "content": content[: b + 1]}]
                add(block, [tools, system, partial], count_tokens(system, partial))
        else:
            add(None, [tools, system, messages[: m + 1]], count_tokens(system, messages[: m + 1]))
    return found


class CacheLedger:
    """Which prompt prefixes the stand-in holds in its cache, and until when."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._expires: dict[str, float] = {}

    def account(self, request: dict[str, Any], usage: dict[str, Any]) -> None:
        """Split `usage["input_tokens"]` into uncached, cache-write and cache-read tokens (in place).

        A read is the longest prefix held in the cache that ends at or before the last breakpoint (the
        real API looks back at most 20 blocks from each breakpoint; the stand-in looks back over all).
        """
        every = prefixes(request)
        last = max((i for i, p in enumerate(every) if p.ttl is not None), default=-1)
        if last < 0:
            return
        total = max(1, count_tokens(request.get("system"), request["messages"]))
        now = self._clock()
        with self._lock:
            read = 0
            for prefix in reversed(every[: last + 1]):
                if self._expires.get(prefix.key, -1.0) > now:
                    read = min(prefix.tokens, total)
                    self._expires[prefix.key] = now + TTL_SECONDS[self._ttl_of(prefix, every)]
                    break
            written = {"5m": 0, "1h": 0}
            covered = read
            for prefix in every[: last + 1]:
                if prefix.ttl is None:
                    continue
                end = min(prefix.tokens, total)
                if end > covered:
                    written[prefix.ttl] += end - covered
                    covered = end
                self._expires[prefix.key] = max(self._expires.get(prefix.key, -1.0), now + TTL_SECONDS[prefix.ttl])
        creation = written["5m"] + written["1h"]
        usage["input_tokens"] = max(0, total - read - creation)
        usage["cache_creation_input_tokens"] = creation
        usage["cache_read_input_tokens"] = read
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": written["5m"],
                                   "ephemeral_1h_input_tokens": written["1h"]}

    @staticmethod
    def _ttl_of(prefix: _Prefix, every: list[_Prefix]) -> str:
        """The lifetime a read refreshes: the one of the first breakpoint at or after the prefix."""
        start = every.index(prefix)
        return next((p.ttl for p in every[start:] if p.ttl is not None), "5m")


@dataclass(frozen=True)
class BatchSettings:
    """How the stand-in processes batches: seconds before a batch ends, and faults made on purpose."""

    delay: float = 0.0
    errored: str | None = None
    """Entries whose custom_id contains this text are errored the first time they are submitted."""
    expired: str | None = None
    """Entries whose custom_id contains this text are expired the first time they are submitted."""
    every_time: bool = False
    """The errored / expired entries fail at every submission, not only the first."""
    create_answer_delay: float = 0.0
    """Seconds the answer to a create waits after the batch was created (a slow network: what a client
    killed meanwhile never learns the id of)."""
    lost_create_answers: int = 0
    """How many creates (the first ones) make their batch, then close the connection without an answer
    (a connection lost on the way back: the client cannot tell whether the batch was made)."""
    overloaded_creates: int = 0
    """How many creates (the first ones) are answered 529 `overloaded_error`, making no batch."""
    cut_results: int = 0
    """How many results downloads (the first ones) stop half-way: the connection closes mid-body."""


@dataclass(frozen=True)
class Submitted:
    """One entry as it was submitted: what `BatchApp.log` holds."""

    batch_id: str
    custom_id: str
    params_sha256: str


@dataclass
class _Batch:
    id: str
    entries: list[tuple[str, dict[str, Any]]]
    started: float
    created_at: datetime
    results: list[dict[str, Any]] | None = None
    ended_at: datetime | None = None
    cancel_at: datetime | None = None


@dataclass
class BatchApp:
    """The stand-in's batches, the faults already made, and the log of submitted entries."""

    settings: BatchSettings = field(default_factory=BatchSettings)
    log: list[Submitted] = field(default_factory=list)
    _batches: dict[str, _Batch] = field(default_factory=dict)
    _faulted: set[tuple[str, str]] = field(default_factory=set)
    _times: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, body: bytes, requests: list[tuple[str, dict[str, Any]]]) -> _Batch:
        with self._lock:
            digest = hashlib.sha256(f"{len(self._batches)}\0".encode() + body).hexdigest()[:24]
            batch = _Batch(f"msgbatch_{digest}", requests, time.monotonic(), datetime.now(timezone.utc))
            self._batches[batch.id] = batch
            entries = [Submitted(batch.id, custom_id,
                                 hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest())
                       for custom_id, params in requests]
            self.log.extend(entries)  # one step: a reader never sees part of a batch's entries
        return batch

    def lose_this_answer(self) -> bool:
        """Whether the answer to the create just made is to be lost (`BatchSettings.lost_create_answers`)."""
        return self._count("lost", self.settings.lost_create_answers)

    def _count(self, fault: str, first: int) -> bool:
        """Whether this is one of the `first` times of `fault` (counted)."""
        with self._lock:
            self._times[fault] = self._times.get(fault, 0) + 1
            return self._times[fault] <= first

    def get(self, batch_id: str) -> _Batch | None:
        with self._lock:
            return self._batches.get(batch_id)

    def newest_first(self) -> list[_Batch]:
        with self._lock:
            return list(reversed(self._batches.values()))

    def fault(self, custom_id: str) -> str | None:
        """`errored` or `expired` when this entry is to fail on purpose (its first submission; every one
        with `BatchSettings.every_time`)."""
        for kind, marker in ((ERRORED_MARKER, self.settings.errored), (EXPIRED_MARKER, self.settings.expired)):
            if marker and marker in custom_id:
                with self._lock:
                    if (kind, custom_id) in self._faulted and not self.settings.every_time:
                        continue
                    self._faulted.add((kind, custom_id))
                return kind
        return None


def _iso(when: datetime | None) -> str | None:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if when else None


def _validate_create(value: Any) -> list[tuple[str, dict[str, Any]]]:
    from replay.sim.model import ApiError

    requests = value.get("requests") if isinstance(value, dict) else None
    if not isinstance(requests, list) or not requests:
        raise ApiError(400, "invalid_request_error", "requests: Input should be a non-empty list")
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for i, entry in enumerate(requests):
        custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
        params = entry.get("params") if isinstance(entry, dict) else None
        if not isinstance(custom_id, str) or not (1 <= len(custom_id) <= 64) or not all(
                c.isascii() and (c.isalnum() or c in "-_") for c in custom_id):
            raise ApiError(400, "invalid_request_error", f"requests.{i}.custom_id: String should match pattern "
                           "'^[a-zA-Z0-9_-]{1,64}$'")
        if custom_id in seen:
            raise ApiError(400, "invalid_request_error", f"requests.{i}.custom_id: {custom_id!r} is not unique "
                           "in this batch")
        if not isinstance(params, dict):
            raise ApiError(400, "invalid_request_error", f"requests.{i}.params: Input should be an object")
        seen.add(custom_id)
        out.append((custom_id, params))
    return out


def _process(handler: ModelHandler, batch: _Batch) -> list[dict[str, Any]]:
    """Every entry's result, answered by the direct-call policy (and the same cache ledger)."""
    from replay.sim.model import ApiError, _validate, respond

    results = []
    for custom_id, params in batch.entries:
        fault = handler.app.batches.fault(custom_id)
        result: dict[str, Any]
        if fault == EXPIRED_MARKER:
            result = {"type": "expired"}
        elif fault == ERRORED_MARKER:
            result = {"type": "errored", "error": {"type": "error", "error": {
                "type": "api_error", "message": "Internal server error (judge-replay model stand-in: errored on "
                "purpose, first submission of this custom_id)"}}}
        else:
            try:
                request = _validate(params)
                if request.get("stream"):
                    raise ApiError(400, "invalid_request_error", "stream: not allowed in a batch request")
                body = json.dumps(params, ensure_ascii=False, sort_keys=True).encode()
                message = respond(request, body, fetch_per_turn=handler.app.fetch_per_turn, cut_off=handler.app.cut_off,
                                  noise=handler.app.noise)
                handler.app.cache.account(request, message["usage"])
                result = {"type": "succeeded", "message": message}
            except ApiError as err:
                result = {"type": "errored", "error": {"type": "error", "error": {"type": err.kind,
                                                                                  "message": err.message}}}
        results.append({"custom_id": custom_id, "result": result})
    return sorted(results, key=lambda r: hashlib.sha256(r["custom_id"].encode()).hexdigest())


def _batch_object(handler: ModelHandler, batch: _Batch) -> dict[str, Any]:
    """The batch as `GET /v1/messages/batches/{id}` shows it; ends it (processing every entry) when due."""
    app = handler.app.batches
    with app._lock:
        due = batch.results is None and (batch.cancel_at is not None or
                                         time.monotonic() - batch.started >= app.settings.delay)
    if due:
        if batch.cancel_at is not None:
            results = [{"custom_id": c, "result": {"type": "canceled"}} for c, _ in batch.entries]
        else:
            results = _process(handler, batch)
        with app._lock:
            if batch.results is None:
                batch.results, batch.ended_at = results, datetime.now(timezone.utc)
    counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if batch.results is None:
        counts["processing"] = len(batch.entries)
    else:
        for line in batch.results:
            counts[line["result"]["type"]] += 1
    host = handler.headers.get("Host") or f"127.0.0.1:{handler.server.server_address[1]}"
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": "ended" if batch.results is not None else (
            "canceling" if batch.cancel_at else "in_progress"),
        "request_counts": counts,
        "created_at": _iso(batch.created_at),
        "expires_at": _iso(batch.created_at + timedelta(hours=24)),
        "ended_at": _iso(batch.ended_at),
        "cancel_initiated_at": _iso(batch.cancel_at),
        "archived_at": None,
        "results_url": f"http://{host}{BATCHES_PATH}/{batch.id}/results" if batch.results is not None else None,
    }


def _reply_cut(handler: ModelHandler, body: bytes) -> None:
    """A 200 whose body stops half-way (its Content-Length promises all of it), then the connection closes."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/binary")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body[: len(body) // 2])
    handler.wfile.flush()
    handler.close_connection = True


def _batch_page(handler: ModelHandler, query: dict[str, list[str]]) -> dict[str, Any]:
    """`GET /v1/messages/batches`: a page of batches, newest first, as the API lists them (`limit` 1 to
    1000, default 20; `after_id`: the page after that batch, `before_id`: the page before it)."""
    from replay.sim.model import ApiError

    try:
        limit = int(query.get("limit", ["20"])[-1])
    except ValueError:
        limit = 0
    if not 1 <= limit <= 1000:
        raise ApiError(400, "invalid_request_error", "limit: Input should be between 1 and 1000")
    ids = [b.id for b in handler.app.batches.newest_first()]
    after, before = query.get("after_id", [None])[-1], query.get("before_id", [None])[-1]
    for cursor in (after, before):
        if cursor is not None and cursor not in ids:
            raise ApiError(400, "invalid_request_error", f"no message batch {cursor!r} to page from")
    if before is not None:
        end = ids.index(before)
        chosen, more = ids[max(0, end - limit):end], end - limit > 0
    else:
        start = ids.index(after) + 1 if after is not None else 0
        chosen, more = ids[start:start + limit], start + limit < len(ids)
    batches = [handler.app.batches.get(batch_id) for batch_id in chosen]
    return {"data": [_batch_object(handler, b) for b in batches if b is not None], "has_more": more,
            "first_id": chosen[0] if chosen else None, "last_id": chosen[-1] if chosen else None}


def _reply_json(handler: ModelHandler, value: dict[str, Any], request_id: str) -> None:
    handler.reply(200, json.dumps(value, ensure_ascii=False), "application/json", {"request-id": request_id})


def serve_batches(handler: ModelHandler) -> None:
    """Answer one request under `/v1/messages/batches` (the handler has checked the path prefix)."""
    from replay.sim.model import ApiError, _digest

    path = urlsplit(handler.path).path
    body = handler.read_body()
    request_id = f"req_{_digest(body, 'batches ' + handler.command + ' ' + path)}"
    parts = path[len(BATCHES_PATH):].strip("/").split("/")
    try:
        if handler.command == "POST" and parts == [""]:
            try:
                value = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ApiError(400, "invalid_request_error", f"The request body is not valid JSON: {exc}") from exc
            requests = _validate_create(value)
            if handler.app.batches._count("overloaded", handler.app.batches.settings.overloaded_creates):
                raise ApiError(529, "overloaded_error", "Overloaded (judge-replay model stand-in: on purpose)")
            created = handler.app.batches.create(body, requests)
            if handler.app.batches.lose_this_answer():
                handler.close_connection = True  # no answer at all: the client sees the connection close
                return None
            time.sleep(handler.app.batches.settings.create_answer_delay)
            return _reply_json(handler, _batch_object(handler, created), request_id)
        if handler.command == "GET" and parts == [""]:
            return _reply_json(handler, _batch_page(handler, parse_qs(urlsplit(handler.path).query)), request_id)
        batch = handler.app.batches.get(parts[0]) if parts[0] else None
        if batch is None:
            raise ApiError(404, "not_found_error", f"Not found: message batch {parts[0]!r}")
        if handler.command == "GET" and len(parts) == 1:
            return _reply_json(handler, _batch_object(handler, batch), request_id)
        if handler.command == "POST" and parts[1:] == ["cancel"]:
            with handler.app.batches._lock:
                if batch.results is None and batch.cancel_at is None:
                    batch.cancel_at = datetime.now(timezone.utc)
            return _reply_json(handler, _batch_object(handler, batch), request_id)
        if handler.command == "GET" and parts[1:] == ["results"]:
            if _batch_object(handler, batch)["processing_status"] != "ended" or batch.results is None:
                raise ApiError(400, "invalid_request_error", f"Batch {batch.id} has not ended: no results yet")
            lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch.results)
            if handler.app.batches._count("cut", handler.app.batches.settings.cut_results):
                return _reply_cut(handler, lines.encode("utf-8"))
            return handler.reply(200, lines, "application/binary", {"request-id": request_id})
        raise ApiError(404, "not_found_error", f"Not found: {handler.command} {path}")
    except ApiError as err:
        handler._error(err, request_id)
