"""The model stand-in's Message Batches endpoints.

Batches (`POST /v1/messages/batches`, `GET /v1/messages/batches` (newest first, `limit`, `before_id`,
`after_id`), `GET .../{id}`, `GET .../{id}/results`, `POST .../{id}/cancel`):
each entry is answered as a direct `POST /v1/messages` would be (its params checked the same way) once the
batch has been processing for `BatchSettings.delay` seconds; results are JSONL in an order of their own
(sorted by a hash of the custom_id), as the real API does not keep request order. On purpose, an entry
whose custom_id contains `BatchSettings.errored` (or `expired`) is errored with `BatchSettings.error_type`
(or expired) the first time that custom_id is submitted; a resubmission succeeds. `BatchApp.log` lists every entry submitted
(batch id, custom_id, sha256 of its params): what tests read to check that nothing was paid for twice.

Faults on purpose (`BatchSettings`), for clients to prove they survive what the real API does: the first
calls of each kind answered 429 `rate_limit_error` with a `retry-after`; entries errored with a chosen
error type; batches archived a while after they end (`archived_at` set, no `results_url`, results gone).
The entries are answered through `BatchApp.answer`, which the model stand-in gives it (no import of it).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from replay.sim.api_errors import ApiError, digest, invalid
from replay.sim.http_server import StandInHandler
from replay.sim.strict import check_batch_entry

BATCHES_PATH = "/v1/messages/batches"
Answer = Callable[[dict[str, Any]], dict[str, Any]]
"""How an entry's params are answered: the Messages response, or an ApiError (the model stand-in's)."""
ERRORED_MARKER = "errored"
EXPIRED_MARKER = "expired"


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
    error_type: str = "api_error"
    """The error type of the entries errored on purpose (`invalid_request_error`, `billing_error`...)."""
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
    rate_limited: int = 0
    """How many calls of each kind (create, list, status check, results, cancel), the first ones, are
    answered 429 `rate_limit_error` with `retry-after: <retry_after>`."""
    retry_after: int = 0
    """The `retry-after` (whole seconds) of those 429s."""
    archive_after: float | None = None
    """Seconds after a batch ended that it is archived (`archived_at` set, no `results_url`, its results
    answered 404): what the API does once results are past retention. None: never."""


ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529}
"""The HTTP status of each error type, as the API's errors page lists them."""


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
    ended: float | None = None
    cancel_at: datetime | None = None
    archived_at: datetime | None = None


def _no_answer(params: dict[str, Any]) -> dict[str, Any]:
    raise ApiError(500, "api_error", "judge-replay model stand-in (test equipment): no model to answer batch entries")


@dataclass
class BatchApp:
    """The stand-in's batches, the faults already made, and the log of submitted entries."""

    settings: BatchSettings = field(default_factory=BatchSettings)
    answer: Answer = _no_answer
    log: list[Submitted] = field(default_factory=list)
    _batches: dict[str, _Batch] = field(default_factory=dict)
    _faulted: set[tuple[str, str]] = field(default_factory=set)
    _times: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, body: bytes, requests: list[tuple[str, dict[str, Any]]]) -> _Batch:
        with self._lock:
            made = hashlib.sha256(f"{len(self._batches)}\0".encode() + body).hexdigest()[:24]
            batch = _Batch(f"msgbatch_{made}", requests, time.monotonic(), datetime.now(timezone.utc))
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

    def calls(self, kind: str) -> int:
        """How many calls of `kind` (`create`, `list`, `retrieve`, `results`, `cancel`) were made."""
        with self._lock:
            return self._times.get(f"call {kind}", 0)

    def get(self, batch_id: str) -> _Batch | None:
        with self._lock:
            return self._batches.get(batch_id)

    def archive(self, batch_id: str) -> None:
        """Archive a batch now (as `BatchSettings.archive_after` does once it is due)."""
        with self._lock:
            self._batches[batch_id].archived_at = datetime.now(timezone.utc)

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
    requests = value.get("requests") if isinstance(value, dict) else None
    if not isinstance(requests, list) or not requests:
        raise invalid("requests: Input should be a non-empty list")
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for i, entry in enumerate(requests):
        custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
        params = entry.get("params") if isinstance(entry, dict) else None
        if not isinstance(custom_id, str) or not (1 <= len(custom_id) <= 64) or not all(
                c.isascii() and (c.isalnum() or c in "-_") for c in custom_id):
            raise invalid(f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        if custom_id in seen:
            raise invalid(f"requests.{i}.custom_id: {custom_id!r} is not unique in this batch")
        if not isinstance(params, dict):
            raise invalid(f"requests.{i}.params: Input should be an object")
        extra = sorted(set(entry) - {"custom_id", "params"})
        if extra:
            raise invalid(f"requests.{i}.{extra[0]}: Extra inputs are not permitted")
        check_batch_entry(entry, i)
        seen.add(custom_id)
        out.append((custom_id, params))
    return out


def _errored(kind: str, message: str) -> dict[str, Any]:
    return {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": message}}}


def _process(app: BatchApp, batch: _Batch) -> list[dict[str, Any]]:
    """Every entry's result, answered as a direct call would be (`BatchApp.answer`)."""
    results = []
    for custom_id, params in batch.entries:
        fault = app.fault(custom_id)
        result: dict[str, Any]
        if fault == EXPIRED_MARKER:
            result = {"type": "expired"}
        elif fault == ERRORED_MARKER:
            result = _errored(app.settings.error_type, f"{app.settings.error_type} (judge-replay model stand-in: "
                              "errored on purpose)")
        else:
            try:
                result = {"type": "succeeded", "message": app.answer(params)}
            except ApiError as err:
                result = _errored(err.kind, err.message)
        results.append({"custom_id": custom_id, "result": result})
    return sorted(results, key=lambda r: hashlib.sha256(r["custom_id"].encode()).hexdigest())


def _batch_object(handler: StandInHandler, app: BatchApp, batch: _Batch) -> dict[str, Any]:
    """The batch as `GET /v1/messages/batches/{id}` shows it; ends it (processing every entry) when due,
    and archives it when that is due."""
    with app._lock:
        due = batch.results is None and (batch.cancel_at is not None or
                                         time.monotonic() - batch.started >= app.settings.delay)
    if due:
        if batch.cancel_at is not None:
            results = [{"custom_id": c, "result": {"type": "canceled"}} for c, _ in batch.entries]
        else:
            results = _process(app, batch)
        with app._lock:
            if batch.results is None:
                batch.results, batch.ended_at, batch.ended = results, datetime.now(timezone.utc), time.monotonic()
    after = app.settings.archive_after
    with app._lock:
        if (after is not None and batch.ended is not None and batch.archived_at is None
                and time.monotonic() - batch.ended >= after):
            batch.archived_at = datetime.now(timezone.utc)
    counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
    if batch.results is None:
        counts["processing"] = len(batch.entries)
    else:
        for line in batch.results:
            counts[line["result"]["type"]] += 1
    host = handler.headers.get("Host") or f"127.0.0.1:{handler.server.server_address[1]}"
    readable = batch.results is not None and batch.archived_at is None
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
        "archived_at": _iso(batch.archived_at),
        "results_url": f"http://{host}{BATCHES_PATH}/{batch.id}/results" if readable else None,
    }


def _reply_cut(handler: StandInHandler, body: bytes) -> None:
    """A 200 whose body stops half-way (its Content-Length promises all of it), then the connection closes."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/binary")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body[: len(body) // 2])
    handler.wfile.flush()
    handler.close_connection = True


def _batch_page(handler: StandInHandler, app: BatchApp, query: dict[str, list[str]]) -> dict[str, Any]:
    """`GET /v1/messages/batches`: a page of batches, newest first, as the API lists them (`limit` 1 to
    1000, default 20; `after_id`: the page after that batch, `before_id`: the page before it)."""
    try:
        limit = int(query.get("limit", ["20"])[-1])
    except ValueError:
        limit = 0
    if not 1 <= limit <= 1000:
        raise invalid("limit: Input should be between 1 and 1000")
    ids = [b.id for b in app.newest_first()]
    after, before = query.get("after_id", [None])[-1], query.get("before_id", [None])[-1]
    for cursor in (after, before):
        if cursor is not None and cursor not in ids:
            raise invalid(f"no message batch {cursor!r} to page from")
    if before is not None:
        end = ids.index(before)
        chosen, more = ids[max(0, end - limit):end], end - limit > 0
    else:
        start = ids.index(after) + 1 if after is not None else 0
        chosen, more = ids[start:start + limit], start + limit < len(ids)
    batches = [app.get(batch_id) for batch_id in chosen]
    return {"data": [_batch_object(handler, app, b) for b in batches if b is not None], "has_more": more,
            "first_id": chosen[0] if chosen else None, "last_id": chosen[-1] if chosen else None}


def _reply_json(handler: StandInHandler, value: dict[str, Any], request_id: str) -> None:
    handler.reply(200, json.dumps(value, ensure_ascii=False), "application/json", {"request-id": request_id})


def _kind(command: str, parts: list[str]) -> str:
    """Which batch call a request is (`create`, `list`, `retrieve`, `results`, `cancel`, or `other`)."""
    if parts == [""]:
        return {"POST": "create", "GET": "list"}.get(command, "other")
    if len(parts) == 1:
        return "retrieve" if command == "GET" else "other"
    return {("GET", "results"): "results", ("POST", "cancel"): "cancel"}.get((command, parts[1]), "other")


def serve_batches(handler: StandInHandler, app: BatchApp) -> None:
    """Answer one request under `/v1/messages/batches` (the handler has checked the path prefix)."""
    path = urlsplit(handler.path).path
    body = handler.read_body()
    request_id = f"req_{digest(body, 'batches ' + handler.command + ' ' + path)}"
    parts = path[len(BATCHES_PATH):].strip("/").split("/")
    try:
        kind = _kind(handler.command, parts)
        if app._count(f"call {kind}", app.settings.rate_limited):
            raise ApiError(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate "
                           "limit (judge-replay model stand-in: on purpose)",
                           {"retry-after": str(app.settings.retry_after)})
        if kind == "create":
            try:
                value = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise invalid(f"The request body is not valid JSON: {exc}") from exc
            requests = _validate_create(value)
            if app._count("overloaded", app.settings.overloaded_creates):
                raise ApiError(529, "overloaded_error", "Overloaded (judge-replay model stand-in: on purpose)")
            created = app.create(body, requests)
            if app.lose_this_answer():
                handler.close_connection = True  # no answer at all: the client sees the connection close
                return None
            time.sleep(app.settings.create_answer_delay)
            return _reply_json(handler, _batch_object(handler, app, created), request_id)
        if kind == "list":
            return _reply_json(handler, _batch_page(handler, app, parse_qs(urlsplit(handler.path).query)), request_id)
        batch = app.get(parts[0]) if parts[0] else None
        if batch is None:
            raise ApiError(404, "not_found_error", f"Not found: message batch {parts[0]!r}")
        if kind == "retrieve":
            return _reply_json(handler, _batch_object(handler, app, batch), request_id)
        if kind == "cancel":
            with app._lock:
                if batch.results is None and batch.cancel_at is None:
                    batch.cancel_at = datetime.now(timezone.utc)
            return _reply_json(handler, _batch_object(handler, app, batch), request_id)
        if kind == "results":
            shown = _batch_object(handler, app, batch)
            if shown["archived_at"] is not None:
                raise ApiError(404, "not_found_error", f"The results of message batch {batch.id} are archived: "
                               "past the retention period, they can no longer be downloaded")
            if shown["processing_status"] != "ended" or batch.results is None:
                raise invalid(f"Batch {batch.id} has not ended: no results yet")
            lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in batch.results)
            if app._count("cut", app.settings.cut_results):
                return _reply_cut(handler, lines.encode("utf-8"))
            return handler.reply(200, lines, "application/binary", {"request-id": request_id})
        raise ApiError(404, "not_found_error", f"Not found: {handler.command} {path}")
    except ApiError as err:
        body_text = err.body(request_id)
        handler.reply(err.status, body_text, "application/json", {"request-id": request_id, **err.headers})
