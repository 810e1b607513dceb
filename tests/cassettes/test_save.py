"""Saving a recording does each piece of work once: the scrubber's scan of a body is remembered for its
second pass, URI and header values are looked at in one go, and the page store's Learn calls are read
from the requests that can hold one. Each shortcut gives what the full work gives."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from replay.cassettes.interaction import Interaction
from replay.cassettes.learn_calls import learn_calls
from replay.cassettes.cassette import load_cassette
from replay.cassettes.matching import canonical_request
from replay.recording.recorder import _maybe_tool_calls
from replay.recording.tape import _sent_request
from replay.cassettes.scrub import scan_text, scrub_headers, scrub_interaction
from replay.secrets.in_urls import scrub_url
from replay.secrets.registry import PLACEHOLDER, Redactor
from locations import REPO

ROOT = REPO
DEMO_CASSETTES = sorted((ROOT / "cassettes").rglob("*.yaml"))
SECRET = "sk-ant-api03-Zx81fQ7f2Q7f2Q7f2Q7f2abc"


def test_learn_calls_of_the_requests_that_may_hold_one_are_all_of_them() -> None:
    assert DEMO_CASSETTES
    for path in DEMO_CASSETTES:
        interactions = load_cassette(path)
        sent = [canonical_request(it.method, it.uri, it.request_body) for it in interactions]
        kept = _maybe_tool_calls(interactions, sent)
        assert learn_calls(kept) == learn_calls(interactions)
        assert len(kept) < len(interactions)  # the model requests are not parsed again


def test_with_the_forms_the_recorder_keeps_the_learn_calls_are_all_of_them() -> None:
    for path in DEMO_CASSETTES:
        interactions = load_cassette(path)
        sent = [_sent_request(SimpleNamespace(method=it.method, uri=it.uri, body=it.request_body)) for it in interactions]
        assert any(s.kind == "model" and s.body is None for s in sent)  # a model request's body is not parsed when sent
        assert learn_calls(_maybe_tool_calls(interactions, sent)) == learn_calls(interactions)


def test_a_model_request_is_no_learn_call_whatever_its_body() -> None:
    body = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}'
    reply = '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"page"}]}}'
    model = Interaction("POST", "http://127.0.0.1:8932/v1/messages", body, 200, reply)
    learn = Interaction("POST", "http://127.0.0.1:8931/api/mcp", body, 200, reply)
    assert canonical_request(model.method, model.uri, model.request_body).kind == "model"
    assert learn_calls([model]) == []  # passed over by its URI, its body (every page read so far) not read
    assert [c.text for c in learn_calls([learn])] == ["page"]


def test_a_request_that_was_no_json_when_sent_is_read_again() -> None:
    tool_call = Interaction("POST", "http://127.0.0.1:8931/api/mcp",
                            '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{}}}', 200,
                            '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"page"}]}}')
    not_json_when_sent = canonical_request("POST", tool_call.uri, "{not json")
    assert _maybe_tool_calls([tool_call], [not_json_when_sent]) == [tool_call]
    model = canonical_request("POST", "http://127.0.0.1:8932/v1/messages", '{"messages":[]}')
    assert _maybe_tool_calls([tool_call], [model]) == []


def test_a_body_scanned_again_is_not_scanned_twice() -> None:
    body = '{"text": "caf\\u00e9 \\u2014 ' + "x" * 1000 + '"}'
    first = scan_text(body)
    assert first != body and "café —" in first
    assert scan_text(body) is first  # remembered: the recording's second pass over the same body
    assert scan_text(str(body[:-1] + "}")) == first  # equal text, equal scan


@pytest.mark.parametrize("seed", range(5))
def test_uri_and_headers_looked_at_in_one_go_are_scrubbed_as_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    redactor = Redactor([SECRET, "hunter2-pass"])
    pieces = ["a", "b/", "?q=1", "&sig=zz", "application/json", SECRET, "hunter2-pass", "Bearer ", "%2F", ";", "x" * 9]
    for _ in range(200):
        def text() -> str:
            return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))

        headers = {rng.choice(["accept", "x-custom", "authorization", "x-trace"]): [text() for _ in range(rng.randint(1, 2))]
                   for _ in range(rng.randint(0, 3))}
        it = Interaction("GET", "http://127.0.0.1:9/p?x=" + text(), None, 200, "", dict(headers), dict(headers))
        scrubbed = scrub_interaction(it, redactor)
        assert scrubbed.uri == scrub_url(redactor.redact(it.uri))
        assert scrubbed.request_headers == scrub_headers(it.request_headers, redactor.redact)
        assert scrubbed.response_headers == scrub_headers(it.response_headers, redactor.redact)
        assert SECRET not in repr(scrubbed) and "hunter2-pass" not in repr(scrubbed)
        if SECRET in it.uri:
            assert PLACEHOLDER in scrubbed.uri


def test_a_retry_is_known_by_its_canonical_key_made_only_when_needed(tmp_path: Path) -> None:
    """A model request's key is left out while recording (`_sent_request`) and made for a retry: a
    transient failure is dropped when the same request, in other bytes, is sent again."""
    from vcr.request import Request

    from replay.recording.tape import _sent_request, _Tape

    uri = "http://127.0.0.1:8932/v1/messages"
    first, again = '{"model":"m","messages":[{"role":"user","content":"hi"}]}', '{"messages":[{"content":"hi","role":"user"}],"model":"m"}'
    tape = _Tape("docs/a.md", tmp_path / "a.yaml")
    sent = _sent_request(Request("POST", uri, first, {}))
    assert sent.kind == "model" and sent.body is None  # nothing re-serialised while the exchange goes well
    assert tape.write(sent, Interaction("POST", uri, first, 529, "{}")) == 0
    assert tape.write(_sent_request(Request("POST", uri, again, {})), Interaction("POST", uri, again, 200, "{}")) == 1
    assert [w.interaction.status for w in tape.written] == [200]
    learn = _sent_request(Request("POST", "http://127.0.0.1:8931/api/mcp", '{"jsonrpc":"2.0","method":"tools/list","id":1}', {}))
    assert learn == canonical_request("POST", "http://127.0.0.1:8931/api/mcp", '{"jsonrpc":"2.0","method":"tools/list","id":1}')


@pytest.mark.parametrize("escape", ["\\ud800", "\\uDC00", "\\uDbFf", "\\ud83d"])
def test_a_lone_surrogate_in_a_learn_reply_is_still_refused(escape: str) -> None:
    """The check for a lone surrogate (writing the message out again) is made only where one may be."""
    from replay.learn.wire import parse_jsonrpc_reply

    for body, ctype in ((f'{{"jsonrpc":"2.0","id":1,"result":{{"x":"a{escape}b"}}}}', "application/json"),
                        (f'event: message\r\ndata: {{"jsonrpc":"2.0","id":1,"result":{{"x":"{escape}"}}}}\r\n\r\n', None)):
        with pytest.raises(ValueError, match="surrogate"):
            parse_jsonrpc_reply(body, ctype)
    with pytest.raises(ValueError, match="surrogate"):
        parse_jsonrpc_reply('{"jsonrpc":"2.0","id":1,"result":{"x":"\udc80"}}', "application/json")
    pair = parse_jsonrpc_reply('{"jsonrpc":"2.0","id":1,"result":{"x":"\\ud83d\\ude00 \\\\ud800"}}', "application/json")
    assert pair["result"]["x"] == "😀 \\ud800"
