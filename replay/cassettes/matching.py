"""Canonical request keys: when two HTTP requests count as the same for replay, and how two differ.

A key ignores scheme, host and port (a run recorded against stand-ins on random ports replays anywhere)
and every header. What it keeps depends on the kind of request:

- model (`.../v1/messages...`): HTTP method, path and query, and the whole JSON body as canonical JSON
  (sorted keys, compact), so the SDK's key order and `extra_body` placement never matter, without its
  prompt-caching breakpoints (`core.cache_control.without_breakpoints`: they never change an answer, and the
  lifetime a batch recording chose from its round times cannot be known at replay);
- Learn (a JSON-RPC body): HTTP method, query, and of the JSON-RPC message only `method`,
  `params.name` and `params.arguments`. The `id`, `_meta`, `jsonrpc`, initialize's protocol and client
  info, the session header and the endpoint path are ignored, so a page-pinned run can be served from
  a run recorded against another Learn endpoint;
- anything else: HTTP method, path and query, and the body text.

Keys are plain tuples, so look-ups go through a dict (O(1)); `closest` searches only on a miss.

A canonical key costs a JSON parse and a sorted dump (and a model request is large: it re-sends every
page read so far). Replay therefore first looks a request up by `SentKey`: method, path, query and the
sha256 of the exact body bytes, which the same code sends again byte for byte. A recorded request's sent
forms (`sent_form`: its body as compact JSON in the order the client wrote it, as the SDK and our Learn
client send it; for a model request also without breakpoints) are kept beside its canonical key only
when they have the same canonical key, so a request found by its bytes is known to have that key; any
other request is keyed canonically, as before.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable, Literal
from urllib.parse import parse_qsl, urlencode

from replay.core.cache_control import without_breakpoints
from replay.learn.wire import FETCH_TOOL
from replay.urls import split_url
from replay.secrets.excerpts import clean, excerpt, first_difference

Kind = Literal["model", "learn", "other"]
RequestKey = tuple[str, str, str, str]
"""(kind, HTTP method, target, canonical body): target is the path for model/other requests and the
JSON-RPC method for Learn, each followed by the sorted query string when there is one."""
SentKey = tuple[str, str, str, bytes]
"""(HTTP method, path, query, sha256 of the body bytes) of a request exactly as sent (see the module
docstring)."""

_MODEL_PATH = "/v1/messages"
_MAX_SHOWN = 3
_MAX_VALUE = 80


@dataclass(frozen=True, slots=True)
class CanonicalRequest:
    """A request reduced to what replay matches on, plus what a miss message needs."""

    key: RequestKey
    kind: Kind
    body: Any
    """The parsed JSON body, or None when the body is not JSON."""
    rpc_method: str | None = None
    rpc_id: Any = None
    """The JSON-RPC id the client sent (playback answers with it)."""

    @property
    def is_learn_fetch(self) -> bool:
        return self.kind == "learn" and self.rpc_method == "tools/call" and _params(self.body).get("name") == FETCH_TOOL

    def describe(self) -> str:
        """What a person calls this request: `model turn 3 (messages: 5)`, `Learn tools/call ...`."""
        if self.kind == "model":
            messages = self.body.get("messages") if isinstance(self.body, dict) else None
            if isinstance(messages, list):
                turn = 1 + sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
                return f"model turn {turn} (messages: {len(messages)})"
            return f"model request {self.key[1]} {self.key[2]}"
        if self.kind == "learn":
            params = _params(self.body)
            if self.rpc_method == "tools/call":
                args = json.dumps(params.get("arguments") or {}, ensure_ascii=False, sort_keys=True)
                return f"Learn tools/call {params.get('name')} {args}"
            return f"Learn {self.rpc_method}"
        return f"{self.key[1]} {self.key[2]}"

    def matched_part(self) -> Any:
        """The part of the body the key is made of (what differences are reported on)."""
        if self.kind == "learn":
            params = _params(self.body)
            part = {"method": self.rpc_method}
            for name in ("name", "arguments"):
                if name in params:
                    part[name] = params[name]
            return part
        if self.kind == "model" and self.body is not None:
            return without_breakpoints(self.body)
        return self.body if self.body is not None else self.key[3]


def canonical_request(method: str, uri: str, body: bytes | str | None) -> CanonicalRequest:
    """The canonical form of one request (its key, kind, parsed body)."""
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else (body or "")
    return _canonical(method, uri, text, _parse_json(text))


def _canonical(method: str, uri: str, text: str, parsed: Any) -> CanonicalRequest:
    """`canonical_request` of a body whose text is `text`, parsed as `parsed` (`_parse_json(text)`)."""
    path, raw_query = _path_and_query(uri)
    query = "?" + urlencode(sorted(parse_qsl(raw_query, keep_blank_values=True))) if raw_query else ""
    method = method.upper()
    if is_model_uri(uri):
        canonical = _canonical_json(without_breakpoints(parsed)) if parsed is not None else text
        return CanonicalRequest(("model", method, path + query, canonical), "model", parsed)
    if isinstance(parsed, dict) and "jsonrpc" in parsed:
        rpc_method = str(parsed.get("method", ""))
        params = _params(parsed)
        matched = {name: params[name] for name in ("name", "arguments") if name in params}
        key = ("learn", method, rpc_method + query, _canonical_json(matched))
        return CanonicalRequest(key, "learn", parsed, rpc_method, parsed.get("id"))
    if isinstance(parsed, list) and parsed and all(isinstance(m, dict) and "jsonrpc" in m for m in parsed):
        matched_batch = [[m.get("method"), _params(m).get("name"), _params(m).get("arguments")] for m in parsed]
        return CanonicalRequest(("learn", method, "batch" + query, _canonical_json(matched_batch)), "learn", parsed, "batch")
    return CanonicalRequest(("other", method, path + query, text), "other", parsed)


def sent_key(method: str, uri: str, body: bytes | str | None) -> SentKey:
    """The exact-bytes key of a request."""
    path, query = _path_and_query(uri)
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body or b"")
    return (method.upper(), path, query, hashlib.sha256(raw).digest())


@functools.lru_cache(maxsize=256)
def _path_and_query(uri: str) -> tuple[str, str]:
    """A URI's path and query, split once per URI (a run sends thousands of requests to a few); a text
    that is no URL (a hand-edited cassette) is all path (`urls.split_url`)."""
    parts = split_url(uri)
    return (parts.path, parts.query) if parts is not None else (uri, "")


def is_model_uri(uri: str) -> bool:
    """Whether a request to `uri` is a model request (`canonical_request` gives it that kind whatever its
    body), known without reading the body."""
    return _MODEL_PATH in _path_and_query(uri)[0]


def key_digest(key: RequestKey) -> bytes:
    """A fixed-size stand-in for a canonical key (the sha256 of its parts): what replay's index holds,
    so that a model request's key is not a second copy of its body."""
    digest = hashlib.sha256()
    for part in key:
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.digest()


def sent_form(method: str, uri: str, body: str | None) -> tuple[CanonicalRequest, list[SentKey]]:
    """A recorded request's canonical form, and for a model or Learn request the `SentKey`s of the bodies
    a replay of it may send: compact JSON in recorded key order, as recorded and, for a model request,
    without breakpoints (a replay adds none). Each has the same canonical key (JSON read back from
    `json.dumps` is the same value, and the form without breakpoints is kept only when removing them
    again changes nothing), so a request with those bytes is known to have that key; any other request
    is found by its canonical key."""
    text = body or ""
    parsed = _parse_json(text)
    creq = _canonical(method, uri, text, parsed)
    if creq.kind == "other" or parsed is None:
        return creq, []
    values = [parsed]
    if creq.kind == "model":
        stripped = without_breakpoints(parsed)
        values += [stripped] if stripped != parsed and without_breakpoints(stripped) == stripped else []
    forms = []
    for value in values:
        sent = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        try:
            forms.append(sent_key(method, uri, sent.encode("utf-8")))
        except UnicodeEncodeError:  # a lone surrogate escape: no client sends these bytes
            continue
    return creq, forms


def _parse_json(text: str) -> Any:
    if not text or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or a number of more than 4300 digits
        return None


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _params(message: Any) -> dict[str, Any]:
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


# --------------------------------------------------------------------------- on a miss only


_LABELS = ("this request", "recorded")


def differences(new: Any, recorded: Any, limit: int = _MAX_SHOWN, labels: tuple[str, str] = _LABELS) -> list[str]:
    """Where two JSON values differ, as `path: X in this request, Y recorded` lines (at most `limit`).

    `labels` names the two sides (default: "this request" and "recorded")."""
    out: list[str] = []
    _diff(new, recorded, "", out, limit, labels)
    return out


def _count(new: Any, recorded: Any, cap: int = 1000) -> int:
    out: list[str] = []
    _diff(new, recorded, "", out, cap, _LABELS)
    return len(out)


def _diff(a: Any, b: Any, path: str, out: list[str], limit: int, labels: tuple[str, str]) -> None:
    if len(out) >= limit or a == b:
        return
    mine, theirs = labels
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append(f"{sub}: only in {mine} ({_short(a[k])})")
            elif k not in a:
                out.append(f"{sub}: only {theirs} ({_short(b[k])})")
            else:
                _diff(a[k], b[k], sub, out, limit, labels)
            if len(out) >= limit:
                return
        return
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", out, limit, labels)
            if len(out) >= limit:
                return
        if len(a) != len(b):
            out.append(f"{path or '(body)'}: {len(a)} items in {mine}, {len(b)} {theirs}")
        return
    if isinstance(a, str) and isinstance(b, str) and max(len(a), len(b)) > _MAX_VALUE:
        at, a_part, b_part = _where_strings_differ(a, b)
        out.append(f"{path or '(body)'}: from character {at}: {a_part} in {mine}, {b_part} {theirs}")
        return
    out.append(f"{path or '(body)'}: {_short(a)} in {mine}, {_short(b)} {theirs}")


def _where_strings_differ(a: str, b: str, before: int = 24, after: int = 40) -> tuple[int, str, str]:
    """Where two long strings (a prompt edited in the middle, say) first differ, and a window of each
    around that place: showing their identical beginnings would say nothing. The windows are cut
    around what differs once both are cleaned of secrets (`secrets.excerpts`: a window cut first could
    hold most of a key)."""
    at = first_difference(a, b)
    a, b = clean(a), clean(b)
    here = first_difference(a, b) if a != b else min(at, len(a))
    start = max(0, here - before)

    def window(text: str) -> str:
        return excerpt(text, here + after - start, start=start, shown=_as_json_string)

    return at, window(a), window(b)


def _as_json_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _short(value: Any) -> str:
    text = clean(json.dumps(value, ensure_ascii=False))
    return text if len(text) <= _MAX_VALUE else excerpt(text, _MAX_VALUE - 1)


def closest(request: CanonicalRequest, recorded: Iterable[tuple[int, CanonicalRequest]]) -> tuple[int, list[str]] | None:
    """The recorded request of the same kind nearest to `request` (fewest differing JSON leaves, then
    the most similar text), with what differs; None when nothing of that kind was recorded."""
    mine = request.matched_part()
    scored: list[tuple[int, int, CanonicalRequest]] = []
    for index, other in recorded:
        if other.kind != request.kind or (request.kind != "learn" and other.key[2] != request.key[2]):
            continue
        scored.append((_count(mine, other.matched_part()), index, other))
    if not scored:
        return None
    fewest = min(s[0] for s in scored)
    ties = [s for s in scored if s[0] == fewest]
    if len(ties) > 1:
        mine_text = _canonical_json(mine)[:4000]

        def similarity(item: tuple[int, int, CanonicalRequest]) -> float:
            theirs = _canonical_json(item[2].matched_part())[:4000]
            return difflib.SequenceMatcher(None, mine_text, theirs, autojunk=False).ratio()

        ties.sort(key=lambda s: (-similarity(s), s[1]))
    _, index, other = ties[0]
    return index, differences(mine, other.matched_part())


def results_differences(recorded: list[Any], replayed: list[Any]) -> list[str]:
    """Per-file explanation of how a replay's `files` differ from the recorded ones (empty: equal)."""
    problems: list[str] = []
    mine = {f.file: f for f in replayed}
    theirs = {f.file: f for f in recorded}
    for name in sorted(theirs.keys() - mine.keys()):  # sorted: a set's order changes with the hash seed
        problems.append(f"{name}: recorded, but the replay produced no result for it")
    for name in sorted(mine.keys() - theirs.keys()):
        problems.append(f"{name}: produced by the replay, but not in the recorded results.json")
    for name in sorted(mine.keys() & theirs.keys()):
        # one file's dumps at a time; `cost_usd` is priced from the usage (compared) by the table of
        # the day, not an outcome of the judge
        a = mine[name].model_dump(mode="json", exclude={"cost_usd"})
        b = theirs[name].model_dump(mode="json", exclude={"cost_usd"})
        if a == b:
            continue
        claims_a = {r.get("id"): r for r in a.pop("results", [])}
        claims_b = {r.get("id"): r for r in b.pop("results", [])}
        for line in differences(a, b, limit=5, labels=("the replay", "recorded")):
            problems.append(f"{name}: {line}")
        for claim_id in sorted(claims_a.keys() | claims_b.keys(), key=str):
            if claim_id not in claims_b:
                problems.append(f"{name}: claim {claim_id}: only in the replay")
            elif claim_id not in claims_a:
                problems.append(f"{name}: claim {claim_id}: recorded, missing from the replay")
            else:
                for line in differences(claims_a[claim_id], claims_b[claim_id], limit=5, labels=("the replay", "recorded")):
                    problems.append(f"{name}: claim {claim_id}: {line}")
    return problems
