"""Replay at knowledge-base scale: model requests found by their exact bytes (sharing the recorded order
with canonical look-ups), a Learn reply's id rewrite made once per cassette change, one cache entry read
per cassette, and each conversation's tape let go when it ends."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import httpx
import pytest
from vcr.request import Request  # type: ignore[import-untyped]

from factories import LEARN, fetch_interaction
from replay._cache_control import marker, without_breakpoints
from replay._cassette import Interaction, _fields, load_cassette, load_with, save_cassette
from replay._cassette_cache import FOLDER, entry_path, tagged
from replay._matching import canonical_request, sent_form, sent_key
from replay._recorder import HttpRecorder, _Tape, _with_rpc_id
from replay._verify import _KeptResult
from replay._records import FileResult
from replay._runs import cassette_name

MODEL = "http://127.0.0.1:8932/v1/messages"


def model_interaction(body: dict[str, object], answer: str) -> Interaction:
    return Interaction(method="POST", uri=MODEL, request_body=json.dumps(body), status=200, reason="OK",
                       response_body=json.dumps({"answer": answer}),
                       request_headers={"content-type": ["application/json"]},
                       response_headers={"content-type": ["application/json"]})


def compact(body: dict[str, object]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def post(client: httpx.Client, url: str, content: bytes) -> httpx.Response:
    return client.post(url, content=content, headers={"content-type": "application/json"})


def test_exact_bytes_and_canonical_look_ups_share_the_recorded_order(tmp_path: Path) -> None:
    """Two recorded requests equal as canonical JSON but sent with their keys in other orders: whichever
    way a request is found, identical requests replay in recorded order."""
    first = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "same"}]}
    second = {"messages": [{"role": "user", "content": "same"}], "max_tokens": 5, "model": "m"}
    save_cassette(tmp_path / cassette_name("docs/a.md"),
                  [model_interaction(first, "one"), model_interaction(second, "two")])
    tape = _Tape("docs/a.md", tmp_path / cassette_name("docs/a.md"))
    tape.load()
    assert tape.take_sent(Request("POST", MODEL, compact(second), {})) == 0  # the first of its canonical key
    assert tape.take_sent(Request("POST", MODEL, compact(first), {})) == 1
    assert tape.take_sent(Request("POST", MODEL, compact(first), {})) is None
    with HttpRecorder("replay", tmp_path) as rec, httpx.Client() as client:
        with rec.conversation("docs/a.md"):
            got = [post(client, MODEL, compact(second)).json()["answer"],
                   post(client, MODEL, json.dumps(first, indent=1).encode()).json()["answer"]]  # by canonical key
    assert got == ["one", "two"] and rec.unused() == {}


def test_a_recording_with_cache_breakpoints_is_found_by_the_bytes_a_replay_sends() -> None:
    """Recorded with prompt caching (content blocks with `cache_control`), replayed without (a replay adds
    no breakpoints): both the recorded bytes and the bytes a replay sends are exact-bytes keys."""
    recorded = {"model": "m", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "the prompt", "cache_control": marker("5m")}]}], "tools": [
        {"name": "fetch", "input_schema": {}, "cache_control": marker("5m")}]}
    replayed = {"model": "m", "messages": [{"role": "user", "content": "the prompt"}], "tools": [
        {"name": "fetch", "input_schema": {}}]}
    creq, forms = sent_form("POST", MODEL, json.dumps(recorded, indent=2))
    assert sent_key("POST", MODEL, compact(replayed)) in forms
    assert sent_key("POST", "http://127.0.0.1:5/v1/messages", compact(recorded)) in forms  # any host and port
    assert sent_key("POST", MODEL + "?beta=true", compact(replayed)) not in forms
    assert sent_form("POST", MODEL, json.dumps(replayed))[0].key == creq.key
    learn = fetch_interaction("https://learn.microsoft.com/a", "text")
    assert sent_form(learn.method, learn.uri, learn.request_body)[1] == []  # small: keyed canonically


def test_every_exact_bytes_key_of_the_bundled_runs_stands_for_the_recorded_canonical_key() -> None:
    """What `sent_form` proves by reasoning (JSON read back from its dump is the same value; removing
    breakpoints twice is removing them once), checked on every model request the bundled runs hold."""
    checked = 0
    for cassette in sorted((Path(__file__).resolve().parents[1] / "cassettes").glob("*/*.yaml")):
        for it in load_cassette(cassette):
            creq, forms = sent_form(it.method, it.uri, it.request_body)
            if creq.kind != "model":
                assert forms == []
                continue
            parsed = json.loads(it.request_body or "")
            for value in (parsed, without_breakpoints(parsed)):
                sent = compact(value)
                assert sent_key(it.method, it.uri, sent) in forms
                assert canonical_request(it.method, it.uri, sent).key == creq.key
                checked += 1
    assert checked > 20


def test_a_learn_reply_is_played_with_the_requests_json_rpc_id(tmp_path: Path) -> None:
    recorded = fetch_interaction("https://learn.microsoft.com/a", "# Page A", rpc_id=3)
    save_cassette(tmp_path / cassette_name("docs/a.md"), [recorded, recorded])
    tape = _Tape("docs/a.md", tmp_path / cassette_name("docs/a.md"))
    tape.load()
    same_id = canonical_request("POST", LEARN, recorded.request_body)
    assert tape.reply(0, same_id) == _with_rpc_id(tape.recorded[0].response_body, 3)
    other_type = canonical_request("POST", LEARN, recorded.request_body.replace('"id": 3', '"id": "3"'))
    assert other_type.rpc_id == "3" and tape.reply(0, other_type) is None
    with HttpRecorder("replay", tmp_path) as rec, httpx.Client() as client:
        with rec.conversation("docs/a.md"):
            replies = [post(client, LEARN, (recorded.request_body or "").replace('"id": 3', f'"id": {rpc_id}').encode())
                       for rpc_id in (3, 41)]
    ids = [json.loads(r.text.split("data: ", 1)[1].splitlines()[0])["id"] for r in replies]
    assert ids == [3, 41]


def test_a_conversations_tape_is_let_go_when_it_ends(tmp_path: Path) -> None:
    """Replay holds one conversation's cassette per worker, not the run's: what `verify` needs of a
    finished conversation (its unused interactions, described; how many it had) is kept instead."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    save_cassette(tmp_path / cassette_name("docs/a.md"),
                  [model_interaction(body, "one"), model_interaction({**body, "model": "other"}, "two")])
    with HttpRecorder("replay", tmp_path) as rec, httpx.Client() as client:
        with rec.conversation("docs/a.md"):
            tape = rec._current.get()
            assert tape is not None
            gone = weakref.ref(tape)
            del tape
            post(client, MODEL, compact(body))
    gc.collect()
    assert gone() is None
    assert rec.unused_requests() == {"docs/a.md": [(1, "model turn 1 (messages: 1)")]}
    assert rec.unused() == {"docs/a.md": [1]} and rec.recorded_interactions == 2


@pytest.fixture
def project(cached_project: Path) -> Path:
    return cached_project


def test_a_valid_replay_index_entry_is_all_that_is_read(project: Path) -> None:
    cassette = project / "runs" / "r" / cassette_name("docs/a.md")
    save_cassette(cassette, [model_interaction({"model": "m", "messages": []}, "one")])
    calls: list[int] = []

    def derive(interactions: list[Interaction]) -> list[str]:
        calls.append(len(interactions))
        return [it.uri for it in interactions]

    first = load_with(cassette, derive, tag="test-index", code="1")
    document, index = entry_path(cassette), tagged(entry_path(cassette), "test-index")
    assert document is not None and index is not None and document.is_file() and index.is_file()
    assert index.parent == project / FOLDER
    document.unlink()
    assert load_with(cassette, derive, tag="test-index", code="1") == first
    assert calls == [1] and not document.exists()  # neither parsed nor derived again
    load_with(cassette, derive, tag="test-index", code="2")  # other code: derived again
    assert calls == [1, 1]
    index.write_bytes(index.read_bytes()[:-3])  # torn: rebuilt, never an error
    assert load_with(cassette, derive, tag="test-index", code="2") == first
    assert calls == [1, 1, 1]


def test_interaction_fields_round_trip() -> None:
    it = Interaction(method="POST", uri="u", request_body="q", status=201, response_body="r",
                     request_headers={"a": ["1"]}, response_headers={"b": ["2"]}, reason="Created")
    assert Interaction(*_fields(it)) == it


def test_verify_keeps_recorded_results_as_json_only_when_they_read_back_equal() -> None:
    kept = _KeptResult.of(FileResult(file="docs/a.md", results=[], turns=2, warnings=["w"]))
    assert isinstance(kept, _KeptResult) and kept.file == "docs/a.md"
    assert kept.model_dump(mode="json", exclude={"cost_usd"}) == FileResult(
        file="docs/a.md", results=[], turns=2, warnings=["w"]).model_dump(mode="json", exclude={"cost_usd"})
    odd = FileResult.model_validate({"file": "docs/b.md", "results": [], "score": float("nan")})
    assert _KeptResult.of(odd) is odd  # NaN never reads back equal: compared as the object itself
