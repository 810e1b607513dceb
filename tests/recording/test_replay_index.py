"""Replay at knowledge-base scale: requests found by their exact bytes (sharing the recorded order with
canonical look-ups), a Learn reply's id rewrite made once per cassette change, one cache entry read per
cassette, and each conversation's tape let go when it ends."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import httpx
import pytest

from factories import LEARN, fetch_interaction
from replay.core.cache_control import marker, without_breakpoints
from replay.cassettes.interaction import Interaction
from replay.cassettes.cassette import derived, load_cassette, save_cassette
from replay.cassettes.cache import cache_folder, Cassette, entry_path
from replay.cassettes.matching import canonical_request, results_differences, sent_form, sent_key
from replay.recording.recorder import HttpRecorder
from replay.recording.transport import _Sent
from replay.recording.tape import _Tape, _with_rpc_id
from replay.analysis.verify import _fingerprint, _reproduced
from replay.schema.results import FileResult
from replay.runs.names import cassette_name
from locations import REPO

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
    taken = [tape.take_sent(_Sent("POST", MODEL, compact(body), httpx.Headers())) for body in (second, first, first)]
    assert [t[0] if t else None for t in taken] == [0, 1, None]  # the first of its canonical key, then the next
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam, httpx.Client(transport=seam.transport(httpx.HTTPTransport())) as client:
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
    learn_forms = sent_form(learn.method, learn.uri, learn.request_body)[1]
    assert learn_forms == [sent_key("POST", learn.uri, compact(json.loads(learn.request_body or "")))]  # as sent, no breakpoints


def test_every_exact_bytes_key_of_the_bundled_runs_stands_for_the_recorded_canonical_key() -> None:
    """What `sent_form` proves by reasoning (JSON read back from its dump is the same value; removing
    breakpoints twice is removing them once), checked on every model and Learn request the bundled runs
    hold."""
    checked = {"model": 0, "learn": 0}
    for cassette in sorted((REPO / "cassettes").glob("*/*.yaml")):
        for it in load_cassette(cassette):
            creq, forms = sent_form(it.method, it.uri, it.request_body)
            if creq.kind == "other" or not it.request_body:
                assert forms == []
                continue
            parsed = json.loads(it.request_body)
            for value in (parsed, without_breakpoints(parsed)) if creq.kind == "model" else (parsed,):
                sent = compact(value)
                assert sent_key(it.method, it.uri, sent) in forms
                assert canonical_request(it.method, it.uri, sent).key == creq.key
                checked[creq.kind] += 1
    assert checked["model"] > 20 and checked["learn"] > 20


def test_a_learn_reply_is_played_with_the_requests_json_rpc_id(tmp_path: Path) -> None:
    recorded = fetch_interaction("https://learn.microsoft.com/a", "# Page A", rpc_id=3)
    save_cassette(tmp_path / cassette_name("docs/a.md"), [recorded] * 4)
    tape = _Tape("docs/a.md", tmp_path / cassette_name("docs/a.md"))
    tape.load()
    assert tape.answers[0].rpc_id == 3
    assert tape.answers[0].reply == _with_rpc_id(tape.recorded[0].response_body, 3).encode()  # made once
    body = recorded.request_body or ""
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam, httpx.Client(transport=seam.transport(httpx.HTTPTransport())) as client:
            replies = [post(client, LEARN, body.replace('"id": 3', f'"id": {rpc_id}').encode())
                       for rpc_id in (3, 41, '"3"')]
            replies.append(post(client, LEARN, compact(json.loads(body))))  # the bytes our Learn client sends
    ids = [json.loads(r.text.split("data: ", 1)[1].splitlines()[0])["id"] for r in replies]
    assert ids == [3, 41, "3", 3] and rec.stats.learn_calls == 4 and rec.unused() == {}


def test_a_learn_request_found_by_its_bytes_is_answered_with_its_own_id(tmp_path: Path) -> None:
    """The same page fetched twice, with ids 3 and 7: a request with the bytes of the second, sent first,
    takes the first of that key in recorded order, and is answered with its own id, 7."""
    first, second = (fetch_interaction("https://learn.microsoft.com/a", "# Page A", rpc_id=n) for n in (3, 7))
    save_cassette(tmp_path / cassette_name("docs/a.md"), [first, second])
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam, httpx.Client(transport=seam.transport(httpx.HTTPTransport())) as client:
            replies = [post(client, LEARN, compact(json.loads(it.request_body or ""))) for it in (second, first)]
    ids = [json.loads(r.text.split("data: ", 1)[1].splitlines()[0])["id"] for r in replies]
    assert ids == [7, 3] and rec.unused() == {}


def test_a_conversations_tape_is_let_go_when_it_ends(tmp_path: Path) -> None:
    """Replay holds one conversation's cassette per worker, not the run's: what `verify` needs of a
    finished conversation (its unused interactions, described; how many it had) is kept instead."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    save_cassette(tmp_path / cassette_name("docs/a.md"),
                  [model_interaction(body, "one"), model_interaction({**body, "model": "other"}, "two")])
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam, httpx.Client(transport=seam.transport(httpx.HTTPTransport())) as client:
            tape = seam.tape
            assert tape is not None
            gone = weakref.ref(tape)
            del tape
            post(client, MODEL, compact(body))
    gc.collect()
    assert gone() is None
    assert rec.unused_requests() == {"docs/a.md": [(1, "model turn 1 (messages: 1)")]}
    assert rec.unused() == {"docs/a.md": [1]} and rec.recorded_interactions == 2


def test_a_valid_replay_index_entry_is_all_that_is_read(project: Path) -> None:
    cassette = project / "runs" / "r" / cassette_name("docs/a.md")
    save_cassette(cassette, [model_interaction({"model": "m", "messages": []}, "one")])
    calls: list[int] = []

    def derive(interactions: list[Interaction]) -> list[str]:
        calls.append(len(interactions))
        return [it.uri for it in interactions]

    first = derived(Cassette(cassette), derive, tag="test-index", code="1")
    document, index = entry_path(cassette), entry_path(cassette, "test-index")
    assert document is not None and index is not None and document.is_file() and index.is_file()
    assert index.parent == cache_folder()
    document.unlink()
    assert derived(Cassette(cassette), derive, tag="test-index", code="1") == first
    assert calls == [1] and not document.exists()  # neither parsed nor derived again
    derived(Cassette(cassette), derive, tag="test-index", code="2")  # other code: derived again
    assert calls == [1, 1]
    index.write_bytes(index.read_bytes()[:-3])  # torn: rebuilt, never an error
    assert derived(Cassette(cassette), derive, tag="test-index", code="2") == first
    assert calls == [1, 1, 1]


def test_verify_keeps_a_fingerprint_of_each_recorded_result_and_compares_in_full_when_one_differs() -> None:
    one = FileResult(file="docs/a.md", results=[], turns=2, warnings=["w"])
    nan = FileResult.model_validate({"file": "docs/a.md", "results": [], "score": float("nan")})
    variants = [one, one.model_copy(update={"cost_usd": 9.5}), one.model_copy(update={"turns": 3}), nan,
                nan.model_copy(update={"score": 1.0}), FileResult.model_validate({"file": "docs/a.md", "results": [], "score": 1})]
    equal = [(a, b) for a in variants for b in variants if _fingerprint(a) == _fingerprint(b)]
    assert all(results_differences([a], [b]) == [] for a, b in equal)  # equal fingerprints: nothing to report
    assert len(equal) == 4 + 4  # the two that differ in cost_usd only; each other one with itself (1 and 1.0 apart)
    recorded = {"docs/a.md": _fingerprint(one)}
    assert _reproduced(recorded, [one]) and not _reproduced(recorded, [variants[2]])
    assert not _reproduced(recorded, [one, one.model_copy(update={"file": "docs/c.md"})])
