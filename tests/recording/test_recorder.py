"""The record/replay engine against real HTTP servers on 127.0.0.1, through the real anthropic SDK (httpx2)
and raw httpx (the transport our Learn client uses)."""

from __future__ import annotations

import base64
import functools
import gzip
import json
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import pytest
import vcr
import yaml

from replay.secrets import registry as _secrets
from replay.cassettes.learn_calls import learn_calls
from replay.cassettes.cassette import load_cassette, save_cassette
from replay.errors import CassetteMiss
from replay.recording.recorder import HttpRecorder
from replay.recording.transport import Seam
from replay.runs.names import cassette_name
from locations import REPO

CANARY = "sk-ant-api03-canary" + "Q7f2" * 20
ORG_ID = "3f1c2b7a-9d4e-4c1b-8a2f-6e5d4c3b2a10"
HINT = "judge-replay judge --prompt v3 --claims claims/ --run RUN --mode record"


# --------------------------------------------------------------------------- servers


@dataclass
class Server:
    """A threaded HTTP server on 127.0.0.1 with a random port; state the handlers share."""

    httpd: ThreadingHTTPServer
    fetches: list[str] = field(default_factory=list)
    seen_bodies: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)
    counter: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _serve(handler: type[BaseHTTPRequestHandler]) -> Server:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    server = Server(httpd)
    httpd.state = server  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

    def log_message(self, *args: Any) -> None:
        pass

    @property
    def state(self) -> Server:
        return self.server.state  # type: ignore[attr-defined,no-any-return]

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ModelHandler(_Handler):
    """Messages API look-alike with volatile headers (ids, dates, rate limits) and gzip on request.

    Model names steer it: `flaky` answers the first attempt of each body with 529; `echo-secrets`
    answers 401 with an error echoing the key and an org id; `counter` numbers its answers."""

    def do_POST(self) -> None:
        raw = self._body()
        req = json.loads(raw)
        model = req.get("model", "")
        headers = {
            "content-type": "application/json",
            "request-id": f"req_{uuid.uuid4().hex}",
            "anthropic-organization-id": ORG_ID,
            "anthropic-ratelimit-requests-remaining": str(uuid.uuid4().int % 1000),
            "date": "Mon, 30 Nov 2026 10:00:00 GMT",
            "retry-after": "37",
        }
        with self.state.lock:
            first_attempt = raw.decode() not in self.state.seen_bodies
            self.state.seen_bodies.add(raw.decode())
            self.state.counter += 1
            n = self.state.counter
        if "flaky" in model and first_attempt:
            overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            self._send(529, json.dumps(overloaded).encode(), {**headers, "retry-after": "0", "retry-after-ms": "1"})
            return
        if "echo-key" in model:  # a key of no recognisable shape, echoed in prose
            denied = {"type": "error", "error": {"type": "authentication_error",
                                                 "message": f"the key {self.headers.get('x-api-key') or self.headers.get('authorization', '').split()[-1]} was not accepted"}}
            self._send(401, json.dumps(denied).encode(), headers)
            return
        if "echo-secrets" in model:
            auth = self.headers.get("authorization", "")
            denied = {
                "type": "error",
                "error": {"type": "authentication_error", "message": f"invalid key {auth} for organization {ORG_ID}"},
            }
            self._send(401, json.dumps(denied).encode(), headers)
            return
        last = req["messages"][-1]["content"]
        text = f"answer {n}" if "counter" in model else f"echo {json.dumps(last)[:60]} ({len(req['messages'])})"
        reply = json.dumps(
            {
                "id": "msg_fixed",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 3},
            }
        ).encode()
        if "gzip" in (self.headers.get("accept-encoding") or ""):
            reply = gzip.compress(reply, mtime=0)
            headers["content-encoding"] = "gzip"
        self._send(200, reply, headers)


class LearnHandler(_Handler):
    """Learn MCP look-alike: initialize hands out a random session, replies are SSE with CRLF."""

    def do_POST(self) -> None:
        msg = json.loads(self._body())
        method = msg.get("method")
        if method == "initialize":
            session = str(uuid.uuid4())
            with self.state.lock:
                self.state.sessions.add(session)
            result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "test"}}
            self._sse({"result": result, "jsonrpc": "2.0", "id": msg["id"]}, {"mcp-session-id": session})
            return
        if self.headers.get("mcp-session-id") not in self.state.sessions:
            self._send(404, b'{"error":{"code":-32001,"message":"Session not found"},"id":"","jsonrpc":"2.0"}', {"content-type": "application/json"})
            return
        if method == "notifications/initialized":
            self._send(202, b"", {})
            return
        args = msg["params"]["arguments"]
        with self.state.lock:
            self.state.counter += 1
            n = self.state.counter
            if msg["params"]["name"] == "microsoft_docs_fetch":
                self.state.fetches.append(args["url"])
        text = f"# Page {args.get('url') or args.get('query')}\n\nversion {n if 'counter' in json.dumps(args) else 1}"
        reply = {"result": {"content": [{"type": "text", "text": text}]}, "jsonrpc": "2.0", "id": msg["id"]}
        self._sse(reply, {"mcp-session-id": self.headers["mcp-session-id"]})

    def _sse(self, payload: dict[str, Any], headers: dict[str, str]) -> None:
        body = f"event: message\r\ndata: {json.dumps(payload)}\r\n\r\n".encode()
        self._send(200, body, {"content-type": "text/event-stream", **headers})


@pytest.fixture
def model() -> Iterator[Server]:
    server = _serve(ModelHandler)
    yield server
    server.stop()


@pytest.fixture
def learn() -> Iterator[Server]:
    server = _serve(LearnHandler)
    yield server
    server.stop()


# --------------------------------------------------------------------------- clients


@functools.lru_cache(maxsize=None)
def _plain_sdk(base_url: str, retries: int, key: str) -> anthropic.Anthropic:
    """A real SDK client on its own transport (built once per setting: building one costs ~0.1 s)."""
    return anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=retries)


def sdk(base_url: str, retries: int = 0, key: str = "sk-test", *, seam: Seam | None = None) -> anthropic.Anthropic:
    """A real SDK client; with `seam`, one whose transport is that conversation's recording transport
    around a plain `httpx2.HTTPTransport`, as a conversation builds its clients."""
    if seam is None:
        return _plain_sdk(base_url, retries, key)
    http = anthropic.DefaultHttpxClient(transport=seam.transport(httpx2.HTTPTransport()))
    return _plain_sdk(base_url, retries, key).with_options(http_client=http)


_ACCEPT = {"accept": "application/json, text/event-stream"}
_HTTP = httpx.Client(headers=_ACCEPT)


def learn_http(seam: Seam | None) -> httpx.Client:
    """The raw httpx client of a test's MCP client: on the conversation's recording transport when given."""
    return _HTTP if seam is None else httpx.Client(headers=_ACCEPT, transport=seam.transport(httpx.HTTPTransport()))


def ask(client: anthropic.Anthropic, *texts: str, model: str = "claude-test") -> list[str]:
    """A conversation of len(texts) model turns; returns each answer's text."""
    messages: list[dict[str, Any]] = []
    answers = []
    for text in texts:
        messages.append({"role": "user", "content": text})
        reply = client.messages.create(model=model, max_tokens=100, messages=messages)  # type: ignore[arg-type]
        answer = reply.content[0].text  # type: ignore[union-attr]
        answers.append(answer)
        messages.append({"role": "assistant", "content": answer})
    return answers


class Learn:
    """A minimal MCP client over raw httpx (the library our Learn client is built on)."""

    def __init__(self, url: str, first_id: int = 1, client_version: str = "1.0", *, seam: Seam | None = None) -> None:
        self.url = url + "/api/mcp"
        self.client_version = client_version
        self.http = learn_http(seam)
        self.next_id = first_id
        self.session: str | None = None

    def rpc(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        self.next_id += 1
        headers = {"mcp-session-id": self.session} if self.session else {}
        resp = self.http.post(self.url, json=body, headers=headers)
        resp.raise_for_status()
        if method == "initialize":
            self.session = resp.headers["mcp-session-id"]
        data = next(line for line in resp.text.splitlines() if line.startswith("data:"))
        return json.loads(data[5:])  # type: ignore[no-any-return]

    def start(self) -> Learn:
        self.rpc("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": self.client_version}})
        self.http.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={"mcp-session-id": self.session or ""})
        return self

    def fetch(self, url: str) -> tuple[Any, str]:
        reply = self.rpc("tools/call", {"name": "microsoft_docs_fetch", "arguments": {"url": url}, "_meta": {"n": self.next_id}})
        return reply["id"], reply["result"]["content"][0]["text"]


PAGE = "https://learn.microsoft.com/azure/ai/models"


def judge(model: Server, learn: Server, seam: Seam | None, url: str = PAGE) -> tuple[list[str], str]:
    """One conversation's traffic: a Learn fetch and two model turns."""
    _, page = Learn(learn.url, seam=seam).start().fetch(url)
    return ask(sdk(model.url, seam=seam), f"judge with {page}", "and again"), page


# --------------------------------------------------------------------------- tests


def test_record_then_replay_with_servers_stopped(tmp_path: Path, model: Server, learn: Server) -> None:
    with HttpRecorder("record", tmp_path, rerecord_hint=HINT) as rec:
        with rec.conversation("docs/a.md") as seam:
            recorded = judge(model, learn, seam)
    assert rec.stats.model_calls == 2 and rec.stats.learn_calls == 3 and rec.stats.interactions == 5
    model.stop()
    learn.stop()
    with HttpRecorder("replay", tmp_path, rerecord_hint=HINT) as rec:
        with rec.conversation("docs/a.md") as seam:
            assert judge(model, learn, seam) == recorded
    assert rec.unused() == {}


def test_cassette_is_normalised_readable_and_has_no_secret(tmp_path: Path, model: Server, learn: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            Learn(learn.url, seam=seam).start().fetch(PAGE)
            ask(sdk(model.url, key=CANARY, seam=seam), "hello")
    text = (tmp_path / cassette_name("docs/a.md")).read_text()
    assert CANARY not in text and ORG_ID not in text and "Bearer" not in text
    data = yaml.safe_load(text)
    model_turn = data["interactions"][-1]
    assert set(model_turn["request"]["headers"]) <= {"accept", "anthropic-version", "content-type"}
    assert model_turn["response"]["headers"]["request-id"] == ["req_recorded_0001"]
    assert model_turn["response"]["headers"]["anthropic-ratelimit-requests-remaining"] == ["0"]
    assert model_turn["response"]["headers"]["retry-after"] == ["0"]
    assert model_turn["response"]["headers"]["anthropic-organization-id"] == ["REDACTED"]
    assert "date" not in model_turn["response"]["headers"]
    assert "content-encoding" not in model_turn["response"]["headers"]
    assert json.loads(model_turn["response"]["body"]["string"])["type"] == "message"  # gzip decoded
    init, notification, fetch = data["interactions"][:3]
    assert init["response"]["headers"]["mcp-session-id"] == ["session-1"]
    assert fetch["request"]["headers"]["mcp-session-id"] == ["session-1"]


def test_rerecord_is_byte_identical(tmp_path: Path, model: Server, learn: Server) -> None:
    texts = []
    for run in ("one", "two"):
        with HttpRecorder("record", tmp_path / run) as rec:
            with rec.conversation("docs/a.md") as seam:
                judge(model, learn, seam)
        texts.append((tmp_path / run / cassette_name("docs/a.md")).read_bytes())
    assert texts[0] == texts[1]


def test_jsonrpc_id_follows_the_live_request(tmp_path: Path, learn: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            Learn(learn.url, seam=seam, first_id=1).start().fetch(PAGE)
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            rpc_id, text = Learn(learn.url, seam=seam, first_id=700, client_version="9.9").start().fetch(PAGE)
    assert rpc_id == 701 and text.startswith("# Page")


def test_identical_requests_replay_in_recorded_order(tmp_path: Path, model: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            client = sdk(model.url, seam=seam)
            first = [ask(client, "same", model="counter")[0] for _ in range(3)]
    assert first == ["answer 1", "answer 2", "answer 3"]
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            client = sdk(model.url, seam=seam)
            assert [ask(client, "same", model="counter")[0] for _ in range(3)] == first


def test_a_missing_interaction_names_file_request_closest_and_command(tmp_path: Path, model: Server, learn: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            judge(model, learn, seam)
    path = tmp_path / cassette_name("docs/a.md")
    save_cassette(path, load_cassette(path)[:-1])  # drop the second model turn
    with HttpRecorder("replay", tmp_path, rerecord_hint=HINT) as rec:
        with rec.conversation("docs/a.md") as seam:
            with pytest.raises(anthropic.APIConnectionError) as caught:
                judge(model, learn, seam)
    miss = caught.value.__cause__
    assert isinstance(miss, CassetteMiss)
    message = str(miss)
    assert "docs/a.md" in message
    assert "model turn 2 (messages: 3)" in message
    assert "interaction 3: model turn 1 (messages: 1)" in message
    assert "messages: 3 items in this request, 1 recorded" in message
    assert HINT in message


def test_a_learn_miss_shows_the_differing_argument(tmp_path: Path, learn: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            Learn(learn.url, seam=seam).start().fetch(PAGE)
    with HttpRecorder("replay", tmp_path, rerecord_hint=HINT) as rec:
        with rec.conversation("docs/a.md") as seam:
            with pytest.raises(CassetteMiss) as caught:
                Learn(learn.url, seam=seam).start().fetch(PAGE + "-v2")
    message = str(caught.value)
    assert f'Learn tools/call microsoft_docs_fetch {{"url": "{PAGE}-v2"}}' in message
    assert f'interaction 2: Learn tools/call microsoft_docs_fetch {{"url": "{PAGE}"}}' in message
    assert f'arguments.url: "{PAGE}-v2" in this request, "{PAGE}" recorded' in message


def test_replay_never_reaches_the_network(tmp_path: Path) -> None:
    with HttpRecorder("replay", tmp_path, rerecord_hint=HINT) as rec:
        with rec.conversation("docs/a.md") as seam:
            client = httpx.Client(transport=seam.transport(httpx.HTTPTransport()))
            with pytest.raises(CassetteMiss) as caught:
                client.post("http://judge-replay-no-such-host.invalid:9/v1/messages", json={"messages": []})
        assert "there is no cassette at" in str(caught.value)
        with pytest.raises(CassetteMiss) as outside:  # the client kept past its conversation
            client.get("http://judge-replay-no-such-host.invalid:9/")
        assert "(no conversation)" in str(outside.value)


def test_threads_route_to_their_own_cassettes(tmp_path: Path, model: Server, learn: Server) -> None:
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def conversation(name: str) -> None:
        try:
            with rec.conversation(name) as seam:
                barrier.wait()
                for turn in range(3):
                    Learn(learn.url, seam=seam).start().fetch(f"{PAGE}/{name}/{turn}")
                    ask(sdk(model.url, seam=seam), f"{name} turn {turn}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    with HttpRecorder("record", tmp_path) as rec:
        threads = [threading.Thread(target=conversation, args=(f"docs/{n}.md",)) for n in "abc"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    for n in "abc":
        text = (tmp_path / cassette_name(f"docs/{n}.md")).read_text()
        assert f"docs/{n}.md turn 2" in text
        assert all(f"docs/{other}.md" not in text for other in "abc" if other != n)
        assert len(load_cassette(tmp_path / cassette_name(f"docs/{n}.md"))) == 3 * 4


def test_an_exception_writes_nothing_and_keeps_earlier_cassettes(tmp_path: Path, model: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            ask(sdk(model.url, seam=seam), "first")
    before = (tmp_path / cassette_name("docs/a.md")).read_bytes()
    with pytest.raises(KeyboardInterrupt):
        with HttpRecorder("record", tmp_path) as rec:
            with rec.conversation("docs/a.md") as seam:
                ask(sdk(model.url, seam=seam), "second")
                raise KeyboardInterrupt
    with pytest.raises(RuntimeError):
        with HttpRecorder("record", tmp_path) as rec:
            with rec.conversation("docs/b.md") as seam:
                ask(sdk(model.url, seam=seam), "third")
                raise RuntimeError("crash")
    assert (tmp_path / cassette_name("docs/a.md")).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [cassette_name("docs/a.md")]


def test_retried_transient_failures_are_dropped_and_final_errors_kept(tmp_path: Path, model: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            answer = ask(sdk(model.url, retries=2, seam=seam), "hi", model="flaky")
        with rec.conversation("docs/b.md") as seam:  # retries exhausted: the 529 is the final answer, kept
            with pytest.raises(anthropic.APIStatusError):
                ask(sdk(model.url, retries=0, seam=seam), "other", model="flaky")
    assert rec.stats.retries_dropped == 1
    kept = load_cassette(tmp_path / cassette_name("docs/a.md"))
    assert [i.status for i in kept] == [200]
    assert [i.status for i in load_cassette(tmp_path / cassette_name("docs/b.md"))] == [529]
    model.stop()
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            assert ask(sdk(model.url, seam=seam), "hi", model="flaky") == answer
        with rec.conversation("docs/b.md") as seam:
            with pytest.raises(anthropic.APIStatusError):
                ask(sdk(model.url, seam=seam), "other", model="flaky")


def test_a_page_fetched_by_another_conversation_comes_from_the_recording(tmp_path: Path, learn: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        for name in ("docs/a.md", "docs/b.md"):
            with rec.conversation(name) as seam:
                Learn(learn.url, seam=seam).start().fetch(PAGE)
        with rec.conversation("docs/c.md") as seam:
            Learn(learn.url, seam=seam).start().fetch(PAGE.replace("/azure/", "/en-us/azure/") + "/")  # same page, normalised
    assert learn.fetches == [PAGE]
    assert rec.stats.page_cache_hits == 2
    learn.stop()
    with HttpRecorder("replay", tmp_path) as rec:
        for name in ("docs/a.md", "docs/b.md", "docs/c.md"):
            with rec.conversation(name) as seam:
                assert Learn(learn.url, seam=seam, first_id=40).start().fetch(PAGE if name != "docs/c.md" else PAGE.replace("/azure/", "/en-us/azure/") + "/") == (41, "# Page " + PAGE + "\n\nversion 1")


def test_a_page_from_the_recording_is_stored_as_if_fetched_live(tmp_path: Path, learn: Server) -> None:
    # With concurrency, which conversation fetches a shared page live is a race; the cassettes must not
    # depend on it. Here b's fetch has another JSON-RPC id than a's (the id is rewritten) and the server
    # writes its JSON with spaces (as a .NET server escapes differently from us).
    def conversation_b() -> None:
        client = Learn(learn.url, seam=seam).start()
        client.fetch(PAGE + "/other")
        client.fetch(PAGE)

    with HttpRecorder("record", tmp_path / "both") as rec:
        with rec.conversation("docs/a.md") as seam:
            Learn(learn.url, seam=seam).start().fetch(PAGE)
        with rec.conversation("docs/b.md") as seam:
            conversation_b()
    assert rec.stats.page_cache_hits == 1
    with HttpRecorder("record", tmp_path / "alone") as rec:
        with rec.conversation("docs/b.md") as seam:
            conversation_b()
    assert rec.stats.page_cache_hits == 0
    name = cassette_name("docs/b.md")
    assert (tmp_path / "both" / name).read_bytes() == (tmp_path / "alone" / name).read_bytes()


def test_pages_from_serves_learn_while_the_model_is_live(tmp_path: Path, model: Server, learn: Server) -> None:
    pinned = tmp_path / "pinned"
    with HttpRecorder("record", pinned) as rec:
        with rec.conversation("docs/a.md") as seam:
            _, page = Learn(learn.url, seam=seam).start().fetch(PAGE)
    learn.stop()
    with HttpRecorder("live", tmp_path / "live", pages_from=pinned) as rec:
        with rec.conversation("docs/other.md") as seam:
            assert Learn(learn.url, seam=seam).start().fetch(PAGE)[1] == page
            ask(sdk(model.url, seam=seam), "live call")
    assert model.counter == 1 and not (tmp_path / "live").exists()
    with HttpRecorder("record", tmp_path / "new", pages_from=pinned) as rec:
        with rec.conversation("docs/other.md") as seam:
            Learn(learn.url, seam=seam).start().fetch(PAGE)
            answer = ask(sdk(model.url, seam=seam), "recorded call")
    model.stop()
    with HttpRecorder("replay", tmp_path / "new") as rec:
        with rec.conversation("docs/other.md") as seam:
            assert Learn(learn.url, seam=seam).start().fetch(PAGE)[1] == page
            assert ask(sdk(model.url, seam=seam), "recorded call") == answer
    with HttpRecorder("live", tmp_path / "live", pages_from=pinned, rerecord_hint=HINT) as rec:
        with rec.conversation("docs/other.md") as seam:
            with pytest.raises(CassetteMiss, match="never made this request"):
                Learn(learn.url, seam=seam).start().fetch(PAGE + "/unknown")


def test_error_bodies_echoing_the_key_and_org_are_scrubbed(tmp_path: Path, model: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            with pytest.raises(anthropic.AuthenticationError) as caught:
                ask(sdk(model.url, key=CANARY, seam=seam), "hi", model="echo-secrets")
    assert CANARY in str(caught.value)  # the server really echoed it
    text = (tmp_path / cassette_name("docs/a.md")).read_text()
    assert CANARY not in text and ORG_ID not in text
    assert "invalid key REDACTED for organization REDACTED" in text


def test_live_mode_without_pages_from_does_not_intercept(tmp_path: Path, model: Server) -> None:
    with HttpRecorder("live", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            ask(sdk(model.url, seam=seam), "hi")
    assert not rec.intercepting and not tmp_path.joinpath(cassette_name("docs/a.md")).exists()


def test_unused_interactions_are_reported(tmp_path: Path, model: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            ask(sdk(model.url, seam=seam), "one", "two")
    with HttpRecorder("replay", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            ask(sdk(model.url, seam=seam), "one")
    assert rec.unused() == {"docs/a.md": [1]}


def test_the_replay_benchmark_runs_and_ends_with_its_json_line(tmp_path: Path) -> None:
    script = REPO / "scripts" / "bench_replay.py"
    done = subprocess.run([sys.executable, str(script), "--quick", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["files"] == 5 and result["interactions"] >= 5 * 4  # two model turns and Learn calls each
    assert all(result[k] > 0 for k in ("ms_per_request", "floor_ms_per_request", "vcrpy_plain_ms_per_request",
                                       "vcrpy_body_ms_per_request"))


def test_our_recording_replays_under_stock_vcrpy(tmp_path: Path, model: Server, learn: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            answers, page = judge(model, learn, seam)
    model.stop()
    learn.stop()
    with vcr.use_cassette(str(tmp_path / cassette_name("docs/a.md")), record_mode="none", match_on=["method", "path", "body"]):
        assert ask(sdk(model.url), f"judge with {page}", "and again") == answers


def test_a_miss_on_a_long_string_shows_where_it_differs() -> None:
    from replay.cassettes.matching import differences

    recorded = {"messages": [{"content": "A" * 500 + " the exact-value rule " + "B" * 500}]}
    edited = {"messages": [{"content": "A" * 500 + " the exact value rule " + "B" * 500}]}
    (line,) = differences(edited, recorded)
    assert line.startswith("messages[0].content: from character 510: ")
    assert "exact value rule" in line and "exact-value rule" in line


# --------------------------------------------------------------------------- secrets, ports, patching, vcrpy


PLAIN_CANARY = "Zq" + "".join(chr(ord("a") + (i * 7) % 26) + str(i % 10) for i in range(19))
"""40 characters, no key shape: only by-value and by-name rules can keep it out of a file."""


def encodings(value: str) -> list[str]:
    """The canary as it could appear in a file: plain, URL-encoded, JSON-escaped, and inside base64
    (a middle stretch of base64(prefix + value) for each alignment, as in a `Basic` header)."""
    forms = [value, urllib.parse.quote(value, safe=""), json.dumps(value)[1:-1]]
    for prefix in ("", "u:", "us:"):
        encoded = base64.b64encode((prefix + value).encode()).decode()
        forms.append(encoded[len(prefix) * 2 + 4: -4])
    return forms


def assert_nowhere(folder: Path, value: str) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("utf-8", "replace")
            for form in encodings(value):
                assert form not in data, f"{path} holds the canary ({form[:12]}…)"


def test_a_canary_key_and_url_credentials_reach_no_file_of_the_recording(tmp_path: Path, model: Server, learn: Server) -> None:
    password, query_key = "pw" + PLAIN_CANARY[:20], "qk" + PLAIN_CANARY[20:]
    learn_url = learn.url.replace("http://", f"http://judge:{password}@") + f"/api/mcp?key={query_key}&lang=en"
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            with pytest.raises(anthropic.AuthenticationError) as caught:
                ask(sdk(model.url, key=PLAIN_CANARY, seam=seam), "hi", model="echo-key")
            reply = learn_http(seam).post(learn_url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert PLAIN_CANARY in str(caught.value) and reply.status_code == 200  # the server really echoed it
    text = (tmp_path / cassette_name("docs/a.md")).read_text()
    assert "the key REDACTED was not accepted" in text
    assert "http://127.0.0.1:8931/api/mcp?key=REDACTED&lang=en" in text  # no userinfo, canonical port
    for value in (PLAIN_CANARY, password, query_key):
        assert_nowhere(tmp_path, value)


def test_a_remembered_secret_is_removed_from_bodies_in_every_encoding(tmp_path: Path, model: Server) -> None:
    _secrets.remember(PLAIN_CANARY)  # as the runner does with the key it is given (conftest forgets it)
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            basic = base64.b64encode(f"user:{PLAIN_CANARY}".encode()).decode()
            ask(sdk(model.url, seam=seam), f"plain {PLAIN_CANARY}, quoted {urllib.parse.quote(PLAIN_CANARY)}, basic {basic}")
    assert_nowhere(tmp_path, PLAIN_CANARY)
    assert yaml.safe_load((tmp_path / cassette_name("docs/a.md")).read_text())  # still a valid cassette


def test_rerecording_against_stand_ins_on_other_ports_is_byte_identical(tmp_path: Path) -> None:
    texts = []
    for run in ("one", "two"):
        model_server, learn_server = _serve(ModelHandler), _serve(LearnHandler)
        try:
            with HttpRecorder("record", tmp_path / run) as rec:
                with rec.conversation("docs/a.md") as seam:
                    judge(model_server, learn_server, seam)
        finally:
            model_server.stop()
            learn_server.stop()
        texts.append((tmp_path / run / cassette_name("docs/a.md")).read_text())
    assert texts[0] == texts[1]
    uris = {i["request"]["uri"] for i in yaml.safe_load(texts[0])["interactions"]}
    assert uris == {"http://127.0.0.1:8931/api/mcp", "http://127.0.0.1:8932/v1/messages"}


def _library_classes() -> dict[tuple[type, str], object]:
    """Every attribute of the transport and client classes of httpx and httpx2, as they are now."""
    return {(cls, name): value for module in (httpx, httpx2)
            for cls in (module.BaseTransport, module.HTTPTransport, module.AsyncHTTPTransport, module.Client, module.AsyncClient)
            for name, value in vars(cls).items()}


def test_a_recording_patches_no_library_and_keeps_only_what_its_seams_carry(tmp_path: Path, model: Server) -> None:
    before = _library_classes()
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            ask(sdk(model.url, seam=seam), "recorded")
            assert _library_classes() == before
            ask(sdk(model.url), "on its own transport")  # a client not built on the seam goes out unrecorded
    assert _library_classes() == before
    (kept,) = load_cassette(tmp_path / cassette_name("docs/a.md"))
    assert json.loads(kept.request_body or "")["messages"][0]["content"] == "recorded"
    assert model.counter == 2 and rec.stats.model_calls == 1


def test_an_http_client_request_inside_a_conversation_is_not_recorded(tmp_path: Path, model: Server) -> None:
    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            ask(sdk(model.url, seam=seam), "recorded")
            body = json.dumps({"model": "claude-test", "max_tokens": 5, "messages": [{"role": "user", "content": "urllib"}]})
            request = urllib.request.Request(model.url + "/v1/messages", data=body.encode(), headers={"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as reply:
                assert reply.status == 200
    interactions = load_cassette(tmp_path / cassette_name("docs/a.md"))
    assert len(interactions) == 1 and "urllib" not in (interactions[0].request_body or "")
    assert model.counter == 2


def test_a_stock_vcrpy_cassette_with_gzip_bodies_loads_and_replays(tmp_path: Path, model: Server) -> None:
    stock = tmp_path / "run" / cassette_name("docs/a.md")
    client = anthropic.Anthropic(api_key="sk-test", base_url=model.url, max_retries=0,
                                 default_headers={"accept-encoding": "gzip"})
    with vcr.use_cassette(str(stock), record_mode="once"):
        answer = client.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "zipped"}])
    stored = yaml.safe_load(stock.read_text())["interactions"][0]["response"]
    assert isinstance(stored["body"]["string"], bytes) and stored["body"]["string"][:2] == b"\x1f\x8b"  # !!binary gzip
    (loaded,) = load_cassette(stock)
    assert json.loads(loaded.response_body)["content"][0]["text"] == answer.content[0].text  # type: ignore[union-attr]
    assert "content-encoding" not in loaded.response_headers
    model.stop()
    with HttpRecorder("replay", tmp_path / "run", rerecord_hint=HINT) as rec:
        with rec.conversation("docs/a.md") as seam:
            client = client.with_options(http_client=anthropic.DefaultHttpxClient(transport=seam.transport(httpx2.HTTPTransport())))
            again = client.messages.create(model="claude-test", max_tokens=10, messages=[{"role": "user", "content": "zipped"}])
    assert again.content == answer.content and rec.unused() == {}


def test_pages_of_the_real_wire_are_stored_exactly_and_audited_as_page_text(tmp_path: Path, learn_wire: Any) -> None:
    from learn_wire import wire_pages

    from replay.cassettes.audit import audit_report

    pages = wire_pages()
    def fetch(client: httpx.Client, url: str, rpc_id: int) -> str:
        body = {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {"name": "microsoft_docs_fetch", "arguments": {"url": url}}}
        reply = client.post(learn_wire.url, json=body)
        data = next(line for line in reply.text.splitlines() if line.startswith("data:"))
        return json.loads(data[5:])["result"]["content"][0]["text"]  # type: ignore[no-any-return]

    with HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            client = learn_http(seam)
            live = {url: fetch(client, url, n) for n, url in enumerate(pages, 1)}
    assert live == pages  # what the server sent, decoded
    stored = {call.arguments["url"]: call.text for call in learn_calls(load_cassette(tmp_path / cassette_name("docs/a.md")))}
    assert stored == pages  # byte for byte what was served: no example credential rewritten
    report = audit_report([tmp_path])
    assert report.leaks == [] and {f.kind for f in report.in_pages} >= {"jwt", "credential in URL"}
    assert {f.page for f in report.in_pages} <= set(pages)
