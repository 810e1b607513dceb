"""Saving a recording scrubs each body once where that is all the two passes would do: `normalise_recording`
gives what scrubbing, normalising and scrubbing again in full give (on real cassettes and on fuzzed
recordings, with secrets in headers, URLs and bodies), the scan that decides which bodies are parsed
decodes escapes only where one can hide a secret, and the same page reply is worked on once."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from factories import write_run
from replay.secrets import registry as _secrets
from replay.cassettes.bodies import map_strings, rewrite_sse_json
from replay.cassettes.interaction import Interaction, _readable
from replay.cassettes.normalise import _normalised, _normalised_once, normalise_recording
from replay.cassettes.learn_calls import _tool_reply, learn_calls
from replay.cassettes.cassette import _yaml_text, load_cassette
from replay.cassettes.yaml_writer import _quoted_with_cr
from replay.cassettes.matching import canonical_request
from replay.learn.wire import FETCH_TOOL
from replay.runs.page_store import PageStore
from replay.runs.folder import Run
from replay.cassettes.scrub import cassette_redactor, may_hold, scan_text, scrub_interactions
from replay.secrets.registry import Redactor
from replay.sim.learn import dotnet_json
from replay.core.text import sha256_text
from locations import REPO

ROOT = REPO
DEMO_CASSETTES = sorted((ROOT / "cassettes").rglob("*.yaml"))
KEY = "sk-ant-api03-Zx81fQ7f2Q7f2Q7f2Q7f2abc"
OTHER_SECRETS = ["hunter2-pass-77", "clé-secrète-ü-1234", 'pa"ss\\word/+x==9', "tok/en+with=base64ish"]
LEARN = "http://127.0.0.1:8931/api/mcp"
MODEL = "http://127.0.0.1:8932/v1/messages"


def in_full(interactions: list[Interaction], kinds: Sequence[str] | None = None) -> list[Interaction]:
    """What a recording stored before each body was scrubbed once: both passes in full."""
    return scrub_interactions(_normalised(scrub_interactions(interactions), kinds))


def assert_as_in_full(interactions: list[Interaction], kinds: Sequence[str] | None = None) -> None:
    expected = in_full(interactions, kinds)
    got = normalise_recording(interactions, kinds)
    assert got == expected
    assert _yaml_text(got) == _yaml_text(expected)


# --------------------------------------------------------------------------- fuzzed recordings

PIECES = ["word ", "Azure ", "é", "—", "😀", "\\", '"', "'", "<b>", "&", "+", "/", "=", "\t", "\r", "\n", "  ", "NaN",
          "data: x", "event: y", "\u2028", "\x85", "\x00", "\ufeff", "req_0001", "%2F", "\\u0041", "REDACTED"]


def text(rng: random.Random, secrets: list[str], n: int = 12) -> str:
    parts = [rng.choice(PIECES) for _ in range(rng.randint(0, n))]
    if secrets and rng.random() < 0.15:
        secret = rng.choice(secrets)
        parts.insert(rng.randint(0, len(parts)), rng.choice([secret, json.dumps(secret)[1:-1]]))
    return "".join(parts)


def sse_body(rng: random.Random, message: object, plain: bool = False) -> str:
    """An event stream as a server may write it: .NET's or Python's JSON, with or without the space after
    `data:`, CRLF or LF, now and then (unless `plain`) a second data line, a line that is no JSON, or a
    lone NaN."""
    payload = rng.choice([dotnet_json, lambda m: json.dumps(m), lambda m: json.dumps(m, ensure_ascii=False)])(message)
    end = rng.choice(["\r\n", "\n"])
    lead = " " if plain else rng.choice([" ", " ", ""])
    lines = ["event: message", f"data:{lead}{payload}"]
    roll = 1.0 if plain else rng.random()
    if roll < 0.1:
        lines.append("data: {not json")
    elif roll < 0.15:
        lines.append("data: NaN")
    elif roll < 0.2:
        lines.append("data: [" * 120 + "]" * 120)  # deeper than a second parse is sure to follow
    elif roll < 0.25:
        lines.append(": a comment " + text(rng, []))
    return end.join(lines) + end + end


def recording(rng: random.Random, secrets: list[str], plain: bool = False) -> tuple[list[Interaction], list[str]]:
    """One conversation's raw exchanges, shaped as the recorder hands them over (header names lower-case);
    `plain`: as the stand-ins and the real services answer (no odd request id, type or event)."""
    out: list[tuple[Interaction, str]] = []
    session = f"sess-{rng.randrange(10**6)}"
    org = str(uuid.UUID(int=rng.getrandbits(128)))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    out.append((Interaction("POST", LEARN, json.dumps(init), 200, sse_body(rng, {"result": {"ok": text(rng, [])}, "jsonrpc": "2.0", "id": 1}, plain),
                            {"content-type": ["application/json"], "accept": ["application/json, text/event-stream"]},
                            {"content-type": ["text/event-stream"], "mcp-session-id": [session]}, "OK"), "learn"))
    messages: list[dict[str, object]] = [{"role": "user", "content": text(rng, secrets, 30)}]
    for turn in range(rng.randint(1, 3)):
        request_id = rng.choice([f"req_{rng.randrange(10**8):08d}"] + ([] if plain else ["req with space", ""]))
        body = {"model": "m", "max_tokens": 99, "messages": list(messages)}
        answer = {"id": f"msg_{turn}", "content": [{"type": "text", "text": text(rng, secrets)}], "usage": {"input_tokens": 3}}
        if not plain and rng.random() < 0.2:
            answer["echo"] = request_id  # a body that echoes its request id
        response_headers = {"content-type": [rng.choice(["application/json", "application/json; charset=utf-8"])],
                            "request-id": [request_id], "anthropic-organization-id": [org],
                            "anthropic-ratelimit-requests-remaining": ["49"], "date": ["Mon, 30 Nov 2026 10:00:00 GMT"]}
        response = json.dumps(answer, ensure_ascii=rng.random() < 0.5)
        roll = 1.0 if plain else rng.random()
        if roll < 0.05:  # a stream by its first line, sent as JSON
            response = sse_body(rng, answer)
        elif roll < 0.2:  # a streamed answer
            response = sse_body(rng, answer)
            response_headers["content-type"] = ["text/event-stream"]
        out.append((Interaction("POST", MODEL, json.dumps(body, ensure_ascii=rng.random() < 0.8), 200, response,
                                {"content-type": ["application/json"], "x-api-key": [KEY], "anthropic-version": ["2023-06-01"],
                                 "x-stainless-os": ["Linux"], "user-agent": ["Anthropic/Python"]},
                                response_headers, "OK"), "model"))
        for n in range(rng.randint(0, 3)):
            url = rng.choice(["https://learn.microsoft.com/a", "https://learn.microsoft.com/b?token=" + rng.choice(secrets or ["x"])])
            call = {"jsonrpc": "2.0", "id": 2 + n, "method": "tools/call", "params": {"name": FETCH_TOOL, "arguments": {"url": url}}}
            reply = {"result": {"content": [{"type": "text", "text": text(rng, secrets, 40)}]}, "jsonrpc": "2.0", "id": 2 + n}
            content_type = "text/event-stream" if plain else rng.choice(
                ["text/event-stream"] * 8 + ["application/json", f"text/event-stream; x={rng.choice(secrets or ['y'])}"])
            out.append((Interaction("POST", LEARN, json.dumps(call), 200, sse_body(rng, reply, plain),
                                    {"content-type": ["application/json"], "mcp-session-id": [session]},
                                    {"content-type": [content_type]}, "OK"), "learn"))
            messages.append({"role": "user", "content": [{"type": "tool_result", "content": text(rng, secrets, 20)}]})
    return [it for it, _ in out], [kind for _, kind in out]


@pytest.mark.parametrize("seed", range(8))
def test_fuzzed_recordings_are_stored_as_both_passes_in_full_store_them(seed: int) -> None:
    rng = random.Random(seed)
    once = 0
    for n in range(60):
        _secrets.forget_all()
        secrets = rng.sample(OTHER_SECRETS, rng.randint(0, 2))
        if n % 4:
            _secrets.remember(KEY)
        for secret in secrets:
            _secrets.remember(secret)
        interactions, kinds = recording(rng, [KEY, *secrets] if n % 4 else secrets)
        assert_as_in_full(interactions, kinds if n % 2 else None)
        redactor = cassette_redactor(interactions)
        once += bool(redactor) and _normalised_once(interactions, kinds, redactor) is not None
    assert once > 10  # many take the one pass (this fuzz makes the other often), and every one was checked


def test_a_recording_with_a_known_key_is_scrubbed_once_and_stored_as_before() -> None:
    """The usual case (the API key is known, nothing in the bodies): every event stream parsed once, the
    second space after `data:` still written as the last pass writes it."""
    _secrets.remember(KEY)
    interactions, kinds = recording(random.Random(99), [], plain=True)
    redactor = cassette_redactor(interactions)
    once = _normalised_once(interactions, kinds, redactor)
    assert once is not None and once == in_full(interactions, kinds)
    streams = [it.response_body for it in once if "event-stream" in (it.header("content-type") or "")]
    assert streams and all("data:  {" in body for body in streams)


def test_when_the_second_pass_would_remove_more_the_passes_run_in_full() -> None:
    """A second pass whose redactor holds a value the first did not (here: the key) is not taken for granted."""
    _secrets.remember(KEY)
    interactions, kinds = recording(random.Random(5), [], plain=True)
    assert _normalised_once(interactions, kinds, cassette_redactor(interactions)) is not None
    assert _normalised_once(interactions, kinds, Redactor(["another-value-123"])) is None
    assert_as_in_full(interactions, kinds)


@pytest.mark.parametrize("content_type", ["application/json", "text/event-stream"])
def test_a_request_id_a_body_echoes_is_renumbered_and_scrubbed_as_in_full(content_type: str) -> None:
    """Renumbering an echoed request id changes a body after the first pass looked at it: the new text
    (here holding a value we know) is scrubbed as the second pass scrubs it."""
    _secrets.remember(KEY)
    _secrets.remember("recorded_0001")
    answer = {"id": "msg_1", "request": "req_abc123", "content": [{"type": "text", "text": "ok"}]}
    body = json.dumps(answer) if content_type == "application/json" else f"event: message\r\ndata: {json.dumps(answer)}\r\n\r\n"
    it = Interaction("POST", MODEL, '{"model": "m"}', 200, body, {"content-type": ["application/json"], "x-api-key": [KEY]},
                     {"content-type": [content_type], "request-id": ["req_abc123"]}, "OK")
    assert_as_in_full([it], ["model"])
    assert "req_REDACTED" in normalise_recording([it], ["model"])[0].response_body


def test_a_content_type_the_first_pass_changes_leaves_the_body_to_the_passes_in_full() -> None:
    _secrets.remember("event-stream")  # absurd as a secret, but then the stream is no longer one once scrubbed
    interactions, kinds = recording(random.Random(11), [], plain=True)
    assert _normalised_once(interactions, kinds, cassette_redactor(interactions)) is None
    assert_as_in_full(interactions, kinds)


@pytest.mark.parametrize("path", DEMO_CASSETTES[:12], ids=lambda p: p.name)
def test_stored_cassettes_normalised_again_as_in_full(path: Path) -> None:
    _secrets.remember(KEY)
    interactions = load_cassette(path)
    assert_as_in_full(interactions)


# --------------------------------------------------------------------------- the event stream written once

@pytest.mark.parametrize("body", [
    "event: message\r\ndata: {\"a\":1}\r\n\r\n",
    "event: message\ndata:{\"a\":\"\\u00e9\"}\n\n",
    "data: NaN\n\n",
    "data: [NaN, 1.5]\n\n",
    "data: {not json\ndata: {\"b\":[1,2]}\n\n",
    "event: message\r\ndata:  {\"x\":2}\r\n\r\n",
    ": comment\ndata: \"text\"\n\n",
])
def test_an_event_stream_written_as_map_strings_writes_it_back(body: str) -> None:
    assert rewrite_sse_json(body, as_mapped=True) == map_strings(rewrite_sse_json(body), "text/event-stream", str)


def test_too_deep_an_event_is_left_to_the_passes_in_full() -> None:
    with pytest.raises(ValueError, match="nested"):
        rewrite_sse_json("data: " + "[" * 150 + "]" * 150 + "\n\n", as_mapped=True)


# --------------------------------------------------------------------------- the scan of a body

def bodies(rng: random.Random, secret: str) -> list[str]:
    """Bodies that hold the secret, or parts of it, written with every kind of JSON escape."""
    out = []
    for _ in range(40):
        chars = [json.dumps(c)[1:-1] if rng.random() < 0.7 else rng.choice([f"\\u{ord(c):04x}", f"\\u{ord(c):04X}", "\\/" if c == "/" else json.dumps(c)[1:-1]])
                 for c in secret] if rng.random() < 0.5 else [json.dumps(c)[1:-1] for c in secret[: rng.randint(0, len(secret))]]
        filler = [rng.choice(["\\u2014", "\\u00e9", "\\\\", "\\/", "\\u0027", "\\\\u0041", "x", " ", "é"]) for _ in range(rng.randint(0, 8))]
        out.append('{"t": "' + "".join(filler) + "".join(chars) + "".join(filler[::-1]) + '"}')
    return out


@pytest.mark.parametrize("secret", [KEY, *OTHER_SECRETS])
def test_the_scan_decodes_escapes_only_where_one_can_hide_a_secret(secret: str) -> None:
    redactor = Redactor([secret])
    scan_text.cache_clear()
    plain_page = '{"t": "caf\\u00e9 \\u2014 ' + "x" * 1000 + '"}'
    assert may_hold(plain_page, redactor) is False
    assert scan_text.cache_info().misses == (0 if secret.isascii() and secret.isprintable() else 1)  # not decoded: no escape of a key's character
    for body in bodies(random.Random(secret), secret):
        assert may_hold(body, redactor) == redactor.may_occur(scan_text(body)), body
        if secret in json.loads(body)["t"]:
            assert may_hold(body, redactor)


def test_forms_that_hold_another_are_not_looked_for_again() -> None:
    redactor = Redactor([KEY, "Bearer " + KEY])
    assert len(redactor._looked_for) < len(redactor._forms)
    rng = random.Random(3)
    everything = {*redactor._forms, *(json.dumps(f, ensure_ascii=False)[1:-1] for f in redactor._forms)}
    for _ in range(300):
        body = "".join(rng.choice([KEY[: rng.randint(0, len(KEY))], "Bearer ", "x", " ", KEY]) for _ in range(4))
        assert redactor.may_occur(body) == any(form in body for form in everything)


# --------------------------------------------------------------------------- the same reply worked on once

def test_the_same_page_reply_is_worked_on_once() -> None:
    reply = "event: message\r\ndata: " + json.dumps({"result": {"content": [{"type": "text", "text": "page — é"}]},
                                                     "jsonrpc": "2.0", "id": 4}) + "\r\n\r\n"
    again = str(reply[:-1] + "\n")  # an equal text, another object (as each conversation's copy is)
    assert again is not reply
    assert rewrite_sse_json(again, as_mapped=True) is rewrite_sse_json(reply, as_mapped=True)
    assert _quoted_with_cr(again) is _quoted_with_cr(reply)
    assert _tool_reply(again, "text/event-stream") is _tool_reply(reply, "text/event-stream")
    fetch = Interaction("POST", LEARN, json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                                   "params": {"name": FETCH_TOOL, "arguments": {"url": "u"}}}),
                        200, reply, response_headers={"content-type": ["text/event-stream"]})
    assert [call.text for call in learn_calls([fetch])] == ["page — é"]


# --------------------------------------------------------------------------- readable JSON

@pytest.mark.parametrize("body, kept", [
    ('{"a": "\\ud800"}', True),  # an escaped lone surrogate: kept as sent
    ('{"a": "\\uD83D\\uDE00"}', False),  # a pair: written as the character
    ('{"a": "\udc80"}', True),  # a raw one
    ('{"a": "\\u2014 \\\\ud800"}', False),  # an escaped backslash, then text
    ('{"a": [1, 2.5, "x"]}', False),
])
def test_a_body_that_cannot_be_written_as_text_is_kept_as_sent(body: str, kept: bool) -> None:
    readable = _readable(body)
    assert (readable == body) is kept
    if not kept:
        assert readable == json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        assert canonical_request("POST", MODEL, readable).key == canonical_request("POST", MODEL, body).key


# --------------------------------------------------------------------------- the page store of a recording

def test_a_page_many_conversations_read_is_indexed_as_read_once(tmp_path: Path) -> None:
    """The store a recording indexes from what its conversations read (each page many times, pages and
    no-page answers interleaved, two spellings of one URL) holds what it holds when each was read once."""
    url, other = "https://learn.microsoft.com/azure/p", "https://learn.microsoft.com/en-us/azure/p/"
    reads = [(url, "# P v1", None), (other, "# P v1", None), ("https://learn.microsoft.com/x", "gone", "not-found"),
             (url, "# P v2", None)]
    run = Run(write_run(tmp_path / "r1", results=[{"file": "docs/a.md", "results": []}, {"file": "docs/b.md", "results": []}],
                        recorded_at="2026-01-01T00:00:00Z"))
    stores = []
    for name, pages_read in (("many", {"docs/a.md": reads * 3, "docs/b.md": reads[::-1] * 2}),
                             ("once", {"docs/a.md": reads, "docs/b.md": []})):
        with PageStore(tmp_path / name) as store:
            store.index_run(run, pages_read)  # type: ignore[arg-type]
            stores.append([(store.urls(), store.versions(u), store.no_page_answers(u)) for u in (url, other, reads[2][0])])
    assert stores[0] == stores[1]
    assert sorted(v.sha256 for v in stores[0][0][1]) == sorted([sha256_text("# P v1"), sha256_text("# P v2")])
