"""Replay answers a request at once with the response vcrpy's stub would have built of the cassette: the
same status, reason, headers (each value of a repeated one), body and stream type, through httpx and
httpx2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
import vcr
from vcr.stubs.httpx_stubs import _deserialize_response  # type: ignore[import-untyped]

from factories import LEARN, fetch_interaction
from replay.cassettes.interaction import Interaction
from replay.cassettes.cassette import save_cassette
from replay.recording.recorder import HttpRecorder
from replay.recording.tape import _interaction, _played, _stored, _vcr_response
from replay.recording.transport import _Sent, _serialized
from replay.runs.names import cassette_name

MODEL = "http://127.0.0.1:8932/v1/messages"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


def _model_interaction(reason: str) -> Interaction:
    return Interaction(method="POST", uri=MODEL, request_body=json.dumps(BODY), status=201, reason=reason,
                       response_body=json.dumps({"answer": "ünïcode ✓"}, ensure_ascii=False),
                       request_headers={"content-type": ["application/json"]},
                       response_headers={"content-type": ["application/json"], "x-repeated": ["one", "two"],
                                         "retry-after": ["30"], "content-length": ["999"], "request-id": ["req_1"]})


def _compact() -> bytes:
    return json.dumps(BODY, separators=(",", ":")).encode()


def _shape(response: Any) -> tuple[Any, ...]:
    """What a client can see of a response before reading it (the client wraps the stream)."""
    return (response.status_code, response.reason_phrase, response.http_version, list(response.headers.multi_items()),
            dict(response.extensions))


@pytest.mark.parametrize("reason", ["Created", ""])
def test_a_replayed_response_is_the_one_stock_vcrpy_plays_from_the_same_cassette(tmp_path: Path, reason: str) -> None:
    """No rewriting applies to a model answer: ours and stock vcrpy's are the same response, except what
    replay always changes (`retry-after` 0, no `content-length` the body does not have)."""
    cassette = tmp_path / cassette_name("docs/a.md")
    save_cassette(cassette, [_model_interaction(reason)])
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam, httpx.Client(transport=seam.transport(httpx.HTTPTransport())) as client:
            ours = client.post(MODEL, content=_compact(), headers={"content-type": "application/json"})
    with vcr.use_cassette(str(cassette), record_mode="none", match_on=["method", "path"]), httpx.Client() as client:
        stock = client.post(MODEL, content=_compact(), headers={"content-type": "application/json"})
    expected_headers = [(k, "0" if k == "retry-after" else v) for k, v in stock.headers.multi_items() if k != "content-length"]
    assert list(ours.headers.multi_items()) == expected_headers
    assert ("x-repeated", "one") in expected_headers and ("x-repeated", "two") in expected_headers
    if reason:
        assert _shape(ours)[:3] + _shape(ours)[4:] == _shape(stock)[:3] + _shape(stock)[4:]  # all but the headers
    else:  # vcrpy 8 plays a stored empty reason as "" (in `extensions`), vcrpy 9 as httpx's phrase, as we do
        assert (ours.status_code, ours.http_version) == (stock.status_code, stock.http_version)
        assert stock.reason_phrase in ("", "Created") and "reason_phrase" not in ours.extensions
    assert ours.content == stock.content and ours.json() == {"answer": "ünïcode ✓"}
    assert ours.reason_phrase == (reason or "Created")  # no reason stored: httpx's phrase for the status
    assert ours.request.content == _compact() and rec.unused() == {}


def _learn_cassette(tmp_path: Path) -> tuple[Interaction, bytes]:
    recorded = fetch_interaction("https://learn.microsoft.com/a", "# Page A", rpc_id=3)
    recorded.response_headers = {"content-type": ["text/event-stream"], "mcp-session-id": ["s-recorded"]}
    save_cassette(tmp_path / cassette_name("docs/a.md"), [recorded, recorded])
    return recorded, json.dumps(json.loads(recorded.request_body or ""), separators=(",", ":")).encode()


def test_a_replayed_learn_answer_is_what_vcrpys_stub_builds_from_the_played_dict(tmp_path: Path) -> None:
    """With the JSON-RPC id and session header made the request's: compared with vcrpy's own builder
    given the same played answer, and streamed as SSE is read."""
    recorded, body = _learn_cassette(tmp_path)
    headers = {"content-type": "application/json", "mcp-session-id": "s-live"}
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam, httpx.Client(transport=seam.transport(httpx.HTTPTransport())) as client:
            request = client.build_request("POST", LEARN, content=body, headers=headers)
            whole = seam.transport(httpx.HTTPTransport()).handle_request(request)  # what the transport returns the client
            with client.stream("POST", LEARN, content=body.replace(b'"id":3', b'"id":9'), headers=headers) as streamed:
                shape = _shape(streamed)
                lines = list(streamed.iter_lines())
    played = _vcr_response(_played(_stored(recorded), request, ("tools/call", 3)))
    expected = _deserialize_response(played, httpx)
    assert _shape(whole) == _shape(expected) and type(whole.stream) is httpx.ByteStream
    assert whole.read() == expected.read() and request.read() == body
    assert whole.headers["mcp-session-id"] == "s-live"
    assert json.loads(whole.text.split("data: ", 1)[1].splitlines()[0])["id"] == 3
    assert shape[:4] == _shape(whole)[:4] and json.loads(lines[1].removeprefix("data: "))["id"] == 9
    assert rec.unused() == {} and rec.stats.learn_calls == 2


def test_clients_of_httpx_and_httpx2_replay_the_same(tmp_path: Path) -> None:
    _, body = _learn_cassette(tmp_path)
    headers = {"content-type": "application/json"}
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            replies = []
            for module in (httpx, httpx2):
                with module.Client(transport=seam.transport(module.HTTPTransport())) as client:
                    replies.append(client.post(LEARN, content=body, headers=headers))
    assert [type(r) for r in replies] == [httpx.Response, httpx2.Response] and [r.status_code for r in replies] == [200, 200]
    assert replies[0].content == replies[1].content and _shape(replies[0])[:4] == _shape(replies[1])[:4]
    assert replies[1].request.content == body and rec.unused() == {} and rec.stats.learn_calls == 2


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize("reason", [b"Made", None])
def test_a_live_exchange_is_kept_in_the_form_vcrpys_stub_gives_a_cassette(module: Any, reason: bytes | None) -> None:
    """What the recording transport hands the tape is what vcrpy's httpx stub handed it: the same
    response dict, and the same request, header for header (repeated and mixed-case names included)."""
    from vcr.stubs.httpx_stubs import _make_vcr_request, _serialize_response

    body = b'{"model":"m"}'
    request = module.Request("POST", MODEL + "?q=1", content=body,
                             headers=[("Content-Type", "application/json"), ("X-Twice", "a"), ("x-twice", "b")])
    raw = gzip.compress(b'{"ok": true}', mtime=0)
    response = module.Response(201, headers=[("Content-Encoding", "gzip"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2")],
                               stream=module.ByteStream(raw), extensions={"reason_phrase": reason} if reason else None)
    ours = _serialized(response, raw)
    assert ours == _serialize_response(response, raw)
    sent = _Sent(request.method, str(request.url), body, request.headers)
    assert _interaction(sent, ours) == _interaction(_make_vcr_request(request, body), ours)
    assert _interaction(sent, ours).response_body == '{"ok": true}'
