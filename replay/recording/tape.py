"""One conversation's tape: what a replay serves from, or what a recording appends to."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from replay.cassettes.bodies import rewrite_sse_json
from replay.cassettes.cache import Cassette, entry_path, source_sha256
from replay.cassettes.cassette import derived, load_cassette
from replay.cassettes.interaction import Interaction, decode_content
from replay.cassettes.parallel import warm
from replay.cassettes.matching import (
    CanonicalRequest,
    RequestKey,
    SentKey,
    canonical_request,
    key_digest,
    sent_form,
    sent_key,
)
from replay.errors import InputError
from replay.files.regular import refuse_special

if TYPE_CHECKING:
    pass
from replay.core.http_status import is_transient

_HOP_HEADERS = ("content-encoding", "content-length", "transfer-encoding", "retry-after-ms", "x-should-retry")
_SESSION = "mcp-session-id"


@dataclass
class _Written:
    request: CanonicalRequest
    interaction: Interaction
    transient: bool


class _Tape:
    """One conversation's cassette: what replay serves from, or what recording appends to."""

    def __init__(self, claims_file: str, path: Path, label: str | None = None) -> None:
        self.claims_file = claims_file
        self.label = label or claims_file
        """The conversation as messages name it: the claims file, and with samples the sample."""
        self.path = path
        self.answers: list[_Stored] = []
        """Replay: each recorded interaction's response, as played."""
        self.index: dict[bytes, deque[int]] = {}
        """Replay: key digest (`cassettes.matching.key_digest`) -> the interactions with that key, in recorded
        order, not played yet."""
        self.sent: dict[SentKey, _SentAs] = {}
        """Replay: a recorded request's exact-bytes key (`cassettes.matching.sent_form`) -> what it stands for."""
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
            refuse_special(self.path)  # a pipe or a device where the cassette should be: one line, not "missing"
            self.file_missing = True
            self._recorded = []
            return
        self._source = Cassette(self.path)
        rows = derived(self._source, _replay_index, tag=_INDEX_TAG, code=source_sha256())
        try:
            self._index(rows)
        except (TypeError, ValueError):  # an entry that is not our index (a forged one): made again here
            self.index, self.sent, self.answers = {}, {}, []
            self._index(_replay_index(load_cassette(self._source)))
        self.played = [False] * len(self.answers)

    def _index(self, rows: list[list[Any]]) -> None:
        """Makes the keys of the index `_replay_index` made; TypeError or ValueError for anything else (a
        forged entry: every value replay later uses is checked here, so none fails while playing)."""
        fromhex = bytes.fromhex
        if type(rows) is not list:
            raise TypeError("not a replay index")
        for i, row in enumerate(rows):
            if type(row) is not list:
                raise TypeError("not a replay index row")
            digest_hex, sent_forms, kind, rpc_method, rpc_id, *stored = row
            answer = _Stored(*stored)
            if (type(digest_hex) is not str or type(sent_forms) is not list or kind not in _KINDS
                    or (rpc_method is not None and type(rpc_method) is not str) or not _playable(answer)):
                raise TypeError("not a replay index row")
            digest = fromhex(digest_hex)
            self.index.setdefault(digest, deque()).append(i)
            learn = (rpc_method, rpc_id) if kind == "learn" else None
            for form in sent_forms:
                if type(form) is not list or len(form) != 4 or not all(type(part) is str for part in form):
                    raise TypeError("not a replay index row")
                method, path, query, sha256_hex = form
                self.sent[(method, path, query, fromhex(sha256_hex))] = _SentAs(digest, kind, learn)
            self.answers.append(answer)

    @property
    def recorded(self) -> list[Interaction]:
        """The recorded interactions in full (their requests too), read on first use: only a miss, or
        describing the interactions no request used, needs them."""
        if self._recorded is None:
            indexed_as = self._source.sha256() if self._source is not None else None
            self._recorded = load_cassette(self._source or self.path)
            if self._source is not None and self._source.sha256() != indexed_as:  # rewritten since `load`
                raise InputError(self.path, "the cassette changed while it was being replayed: replay again")
            if self._source is not None and len(self._recorded) != len(self.answers):
                self._not_the_index()
        return self._recorded

    def _not_the_index(self) -> None:
        """The index read from the cache holds another number of interactions than the cassette: not the
        cassette's (a forged entry). It is removed (the next replay makes it again), and this one stops."""
        entry = entry_path(self.path, _INDEX_TAG)
        if entry is not None:
            entry.unlink(missing_ok=True)
        raise InputError(entry or self.path, f"not the replay index of {self.path} (a damaged or forged cache entry; removed):"
                                " replay again")

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


_KINDS = ("model", "learn", "other")


def _playable(stored: _Stored) -> bool:
    """Whether a `_Stored` read from a cache entry holds what `_stored` makes (and `_played` plays)."""
    headers = stored.headers
    return (type(stored.status) is int and stored.status >= 0 and type(stored.reason) is str
            and type(headers) is dict
            and all(type(values) is list and all(type(v) is str for v in values) for values in headers.values())
            and (stored.body is None or type(stored.body) in (bytes, str))
            and (stored.reply is None or type(stored.reply) in (bytes, str)))


class _SentAs(NamedTuple):
    """What a recorded request's exact bytes stand for: its key digest, kind, and for a Learn request its
    JSON-RPC (method, id)."""

    digest: bytes
    kind: str
    learn: tuple[str | None, Any] | None




_INDEX_TAG = "replay-index"


def warm_replay_indexes(paths: Iterable[Path]) -> int:
    """The replay index of each cassette of `paths` made on every core where the parsed-cassette cache
    does not hold it yet (`cassettes.parallel.warm`), before a replay reads them one conversation at a
    time. Returns how many cassettes the workers parsed."""
    return warm(paths, _index_of, tag=_INDEX_TAG, parser=lambda: f"{_INDEX_TAG}; code {source_sha256()}")


def _index_of(path: Path) -> object:
    return derived(Cassette(path), _replay_index, tag=_INDEX_TAG, code=source_sha256())


def _replay_index(interactions: list[Interaction]) -> list[list[Any]]:
    """Per recorded interaction, what replay finds and plays it by: its key digest, the exact-bytes keys
    of its request (`cassettes.matching.sent_form`), its kind, JSON-RPC method and id, and its response as
    played (`_Stored`, with a Learn reply's id rewrite made once per cassette change). The requests
    themselves are not kept: a replay reads them only when it needs them (`_Tape.recorded`). Lists, and
    digests in hex, so that its cache entry is plain JSON but for the bodies (`cassettes.entry_format`
    reads that at C speed); `_Tape.load` makes the keys of it."""
    out: list[list[Any]] = []
    for it in interactions:
        creq, sent_forms = sent_form(it.method, it.uri, it.request_body)
        forms = [[method, path, query, digest.hex()] for method, path, query, digest in sent_forms]
        out.append([key_digest(creq.key).hex(), forms, creq.kind, creq.rpc_method, creq.rpc_id, *_stored(it, creq)])
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
