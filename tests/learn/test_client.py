"""The Learn MCP client against two independent servers: our stand-in and the official `mcp` server."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from factories import LocalServer, closed_port_url
import uvicorn
import yaml
from mcp.server.mcpserver import MCPServer

from replay.errors import CassetteMiss, LearnError
from replay.learn.client import LearnClient, LearnToolError, LearnUnreachable
from replay.learn.wire import FETCH_TOOL, SEARCH_TOOL, missing_page_text
from replay.urls import normalise_learn_url
from replay.core.text import tokens

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
QUOTAS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
MODELS_BODY = "# Azure OpenAI models\n\n| Model | Context |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n"
QUOTAS_BODY = "# Quotas and limits\n\nThe default quota for gpt-4o is 450,000 tokens per minute.\n"


@pytest.fixture(scope="module")
def pages_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pages")
    for name, url, title, body in [
        ("models.md", MODELS_URL, "Azure OpenAI models", MODELS_BODY),
        ("sub/quotas.md", QUOTAS_URL, "Quotas and limits", QUOTAS_BODY),
    ]:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nurl: {url}\ntitle: {title}\n---\n{body}", "utf-8")
    return root


# --------------------------------------------------------------------------- the official MCP server as a peer


class McpPeer:
    """The official `mcp` MCPServer serving the same pages over Streamable HTTP (stateful sessions)."""

    def __init__(self, pages_dir: Path, *, json_response: bool) -> None:
        self.pages = _read_pages(pages_dir)
        server: MCPServer[Any] = MCPServer("learn-peer")
        server.add_tool(self._fetch, name=FETCH_TOOL, structured_output=False)
        server.add_tool(self._search, name=SEARCH_TOOL, structured_output=False)
        self._mcp = server
        app = server.streamable_http_app(streamable_http_path="/api/mcp", json_response=json_response)
        self._uvicorn = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        self._thread = threading.Thread(target=self._uvicorn.run, daemon=True)
        self._thread.start()
        while not self._uvicorn.started:
            time.sleep(0.01)
        port = self._uvicorn.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/api/mcp"

    def _fetch(self, url: str) -> str:
        page = self.pages.get(normalise_learn_url(url))
        return page[1] if page else missing_page_text(url)

    def _search(self, query: str) -> str:
        words = set(tokens(query))
        ranked = sorted(self.pages.items(), key=lambda kv: -len(words & set(tokens(kv[1][1]))))
        results = [{"title": title, "content": body[:500], "contentUrl": url}
                   for url, (title, body) in ranked if words & set(tokens(body))]
        return json.dumps({"results": results})

    def expire_sessions(self) -> None:
        manager = self._mcp.session_manager
        loop = self._uvicorn_loop()
        for sid, transport in list(manager._server_instances.items()):
            asyncio.run_coroutine_threadsafe(manager._discard_session(sid, transport), loop).result(5)

    def _uvicorn_loop(self) -> asyncio.AbstractEventLoop:
        for task_loop in [getattr(s, "_loop", None) for s in self._uvicorn.servers]:
            if task_loop is not None:
                return task_loop
        raise RuntimeError("uvicorn loop not found")

    def stop(self) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(5)


def _read_pages(pages_dir: Path) -> dict[str, tuple[str, str]]:
    pages = {}
    for path in pages_dir.rglob("*.md"):
        _, front, body = path.read_text("utf-8").split("---\n", 2)
        meta = yaml.safe_load(front)
        pages[normalise_learn_url(meta["url"])] = (meta.get("title", ""), body)
    return pages


class StandInPeer:
    """Our Learn stand-in (`replay.sim`), always SSE replies."""

    def __init__(self, pages_dir: Path) -> None:
        from replay.sim import start_learn

        self._handle = start_learn(pages_dir, port=0)
        self.url = self._handle.url

    def expire_sessions(self) -> None:
        self._handle.expire_sessions()

    def stop(self) -> None:
        self._handle.stop()


PEERS = {
    "stand-in": ("text/event-stream", lambda pages: StandInPeer(pages)),
    "mcp-sse": ("text/event-stream", lambda pages: McpPeer(pages, json_response=False)),
    "mcp-json": ("application/json", lambda pages: McpPeer(pages, json_response=True)),
}


@pytest.fixture(scope="module", params=list(PEERS))
def peer(request: pytest.FixtureRequest, pages_dir: Path) -> Iterator[tuple[Any, str]]:
    content_type, start = PEERS[request.param]
    server = start(pages_dir)
    yield server, content_type
    server.stop()


class Wire:
    """An httpx client that keeps what went over the wire, so tests can check the exchange itself."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self.http = httpx.Client(event_hooks={"response": [self._keep]}, timeout=10)

    def _keep(self, response: httpx.Response) -> None:
        body = json.loads(response.request.content) if response.request.content else None
        self.exchanges.append({
            "method": response.request.method,
            "rpc": body.get("method") if body else None,
            "id": body.get("id") if body else None,
            "session": response.request.headers.get("mcp-session-id"),
            "protocol": response.request.headers.get("mcp-protocol-version"),
            "accept": response.request.headers.get("accept"),
            "status": response.status_code,
            "content_type": response.headers.get("content-type", ""),
        })


@pytest.fixture
def wire() -> Iterator[Wire]:
    w = Wire()
    yield w
    w.http.close()


# --------------------------------------------------------------------------- one suite, every peer


def test_handshake_then_call_carries_the_session(peer: tuple[Any, str], wire: Wire) -> None:
    server, content_type = peer
    client = LearnClient(server.url, http=wire.http)
    info = client.initialize()
    assert info["protocolVersion"] and info["serverInfo"]["name"]
    assert client.session_id
    client.fetch(MODELS_URL)
    assert [(e["method"], e["rpc"], e["id"]) for e in wire.exchanges] == [
        ("POST", "initialize", 1), ("POST", "notifications/initialized", None), ("POST", "tools/call", 2)]
    assert wire.exchanges[0]["session"] is None
    assert {e["session"] for e in wire.exchanges[1:]} == {client.session_id}
    assert wire.exchanges[1]["status"] in (200, 202)
    assert all(e["accept"] == "application/json, text/event-stream" for e in wire.exchanges)
    assert content_type in wire.exchanges[0]["content_type"] and content_type in wire.exchanges[2]["content_type"]


def test_fetch_returns_the_page_body(peer: tuple[Any, str], wire: Wire) -> None:
    server, _ = peer
    client = LearnClient(server.url, http=wire.http)
    page = client.fetch(MODELS_URL.replace("learn.microsoft.com/", "learn.microsoft.com/en-us/") + "/")
    assert not page.missing
    assert page.text is not None and page.text.strip() == MODELS_BODY.strip()
    assert wire.exchanges[0]["rpc"] == "initialize"  # the first call performs the handshake itself


def test_missing_page_is_no_page(peer: tuple[Any, str], wire: Wire) -> None:
    server, _ = peer
    page = LearnClient(server.url, http=wire.http).fetch("https://learn.microsoft.com/azure/no-such-page")
    assert page.missing and page.text is None
    assert "could not be retrieved" in page.raw


def test_search_returns_urls_in_rank_order(peer: tuple[Any, str], wire: Wire) -> None:
    server, _ = peer
    found = LearnClient(server.url, http=wire.http).search("default quota tokens per minute gpt-4o")
    assert found.urls and normalise_learn_url(found.urls[0]) == QUOTAS_URL
    assert json.loads(found.text)["results"][0]["contentUrl"] == found.urls[0]


def test_expired_session_is_reinitialised_once(peer: tuple[Any, str], wire: Wire) -> None:
    server, _ = peer
    client = LearnClient(server.url, http=wire.http)
    client.fetch(MODELS_URL)
    first_session = client.session_id
    server.expire_sessions()
    page = client.fetch(QUOTAS_URL)
    assert page.text is not None and "450,000" in page.text
    assert client.reinitialisations == 1 and client.session_id != first_session
    assert [(e["rpc"], e["status"]) for e in wire.exchanges[3:]] == [
        ("tools/call", 404), ("initialize", 200), ("notifications/initialized", wire.exchanges[5]["status"]),
        ("tools/call", 200)]
    assert [e["id"] for e in wire.exchanges] == [1, None, 2, 3, 4, None, 5]
    assert all(e["method"] == "POST" for e in wire.exchanges)  # never a GET stream


def test_tools_list_only_when_asked(peer: tuple[Any, str], wire: Wire) -> None:
    server, _ = peer
    client = LearnClient(server.url, http=wire.http)
    client.search("gpt-4.1 context")
    assert "tools/list" not in [e["rpc"] for e in wire.exchanges]
    assert {FETCH_TOOL, SEARCH_TOOL} <= {t["name"] for t in client.list_tools()}


# --------------------------------------------------------------------------- failures, with scripted servers


Reply = tuple[int, str, str]


class Scripted(LocalServer):
    """A 127.0.0.1 server answering each JSON-RPC method with a fixed (status, content type, body)."""

    def __init__(self, replies: dict[str, Reply]) -> None:
        def respond(request: Any) -> tuple[int, dict[str, str], bytes]:
            status, content_type, body = replies.get(request.get("method"), replies["*"])
            return status, {"content-type": content_type}, body.encode()

        super().__init__(respond, "/api/mcp")


@pytest.fixture
def scripted() -> Iterator[Any]:
    servers: list[Scripted] = []

    def start(replies: dict[str, Reply]) -> Scripted:
        servers.append(Scripted(replies))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()



INIT_OK: Reply = (200, "application/json", json.dumps(
    {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-03-26", "serverInfo": {"name": "x"}}}))


def test_unreachable_endpoint_names_the_url() -> None:
    url = closed_port_url()
    with pytest.raises(LearnUnreachable, match=f"cannot reach the Learn MCP endpoint at {url}: ") as caught:
        LearnClient(url).initialize()
    assert caught.value.exit_code == 1  # the environment failed, not the input


def test_http_error_is_a_learn_error(scripted: Any) -> None:
    server = scripted({"*": (500, "text/plain", "upstream exploded")})
    waits: list[float] = []
    with pytest.raises(LearnUnreachable, match="answered initialize with HTTP 500: upstream exploded"):
        LearnClient(server.url, sleep=waits.append).initialize()
    assert waits == [0.5, 1.0, 2.0]  # retried three times, doubling, then given up


def test_a_client_that_must_not_retry_gives_up_at_once(scripted: Any) -> None:
    server = scripted({"*": (503, "text/plain", "busy")})
    client = LearnClient(server.url, max_retries=0, sleep=lambda s: pytest.fail("replay never sleeps"))
    with pytest.raises(LearnUnreachable, match="HTTP 503: busy"):
        client.initialize()
    assert client.retries == 0


def test_an_endpoint_that_refuses_the_request_is_no_outage(scripted: Any) -> None:
    server = scripted({"*": (400, "text/plain", "bad request")})
    with pytest.raises(LearnError, match="HTTP 400: bad request") as caught:
        LearnClient(server.url, sleep=lambda s: pytest.fail("a 400 is not retried")).initialize()
    assert type(caught.value) is LearnError and caught.value.exit_code == 2


# --------------------------------------------------------------------------- the MCP protocol, as the spec asks


def test_protocol_version_is_negotiated_sent_on_every_later_request_and_the_session_ended(
        peer: tuple[Any, str], wire: Wire) -> None:
    server, _ = peer
    client = LearnClient(server.url, http=wire.http)
    client.fetch(MODELS_URL)
    assert client.protocol_version == "2025-06-18"  # the newest we ask for, and every peer speaks it
    session = client.session_id
    client.close()
    assert [(e["method"], e["rpc"], e["protocol"]) for e in wire.exchanges] == [
        ("POST", "initialize", None), ("POST", "notifications/initialized", "2025-06-18"),
        ("POST", "tools/call", "2025-06-18"), ("DELETE", None, "2025-06-18")]
    assert wire.exchanges[-1]["session"] == session and wire.exchanges[-1]["status"] in (200, 202, 204, 405)


def test_an_older_protocol_version_we_speak_is_accepted(scripted: Any) -> None:
    server = scripted({"*": INIT_OK})  # answers 2025-03-26
    client = LearnClient(server.url)
    client.initialize()
    assert client.protocol_version == "2025-03-26"


def test_a_protocol_version_we_do_not_speak_is_refused(scripted: Any) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2099-01-01", "serverInfo": {"name": "x"}}}
    server = scripted({"*": (200, "application/json", json.dumps(init))})
    with pytest.raises(LearnError, match="speaks MCP protocol version '2099-01-01', which judge-replay does not "
                                         r"\(it speaks 2025-06-18, 2025-03-26\)"):
        LearnClient(server.url).initialize()


def test_a_transient_failure_is_retried_after_the_servers_retry_after(pages_dir: Path, wire: Wire) -> None:
    from replay.sim import start_learn

    waits: list[float] = []
    with start_learn(pages_dir, fail_first=2, fail_status=429) as server:
        client = LearnClient(server.url, http=wire.http, sleep=waits.append)
        page = client.fetch(MODELS_URL)
    assert page.text is not None and client.retries == 2 and waits == [0.0, 0.0]  # retry-after: 0
    assert [(e["rpc"], e["status"]) for e in wire.exchanges] == [
        ("initialize", 200), ("notifications/initialized", 202), ("tools/call", 429), ("tools/call", 429),
        ("tools/call", 200)]
    assert len({e["id"] for e in wire.exchanges[2:]}) == 1  # the same request again


def test_no_page_is_decided_in_one_place() -> None:
    from replay.learn.wire import NOT_LEARN_REFUSAL, is_missing_page

    assert is_missing_page(NOT_LEARN_REFUSAL)
    assert is_missing_page(missing_page_text("https://learn.microsoft.com/x"))
    assert is_missing_page("") and is_missing_page("  \n")
    assert is_missing_page("# A page", is_error=True)
    assert not is_missing_page("# Azure OpenAI models\n\nThe provided URL field is documented below.")


def test_a_refused_url_is_no_page(scripted: Any) -> None:
    from replay.learn.wire import NOT_LEARN_REFUSAL

    reply = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": NOT_LEARN_REFUSAL}]}}
    server = scripted({"initialize": INIT_OK, "*": (200, "application/json", json.dumps(reply))})
    page = LearnClient(server.url).fetch("https://azure.microsoft.com/pricing/details/cognitive-services/openai-service/")
    assert page.missing and page.text is None and page.raw == NOT_LEARN_REFUSAL


def test_malformed_reply_is_a_learn_error(scripted: Any) -> None:
    server = scripted({"*": (200, "text/event-stream", "event: message\r\ndata: {not json\r\n\r\n")})
    with pytest.raises(LearnError, match="malformed reply from .* to initialize"):
        LearnClient(server.url).initialize()


def test_jsonrpc_error_on_a_tool_call_is_a_tool_error(scripted: Any) -> None:
    error = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "url must be a microsoft.com URL"}}
    server = scripted({"initialize": INIT_OK, "*": (200, "application/json", json.dumps(error))})
    with pytest.raises(LearnToolError, match="url must be a microsoft.com URL"):
        LearnClient(server.url).fetch("https://example.com/x")


def test_tool_result_flagged_as_error_is_a_tool_error(scripted: Any) -> None:
    failed = {"jsonrpc": "2.0", "id": 2, "result": {"isError": True, "content": [{"type": "text", "text": "boom"}]}}
    server = scripted({"initialize": INIT_OK, "*": (200, "text/event-stream",
                                                     f"event: message\r\ndata: {json.dumps(failed)}\r\n\r\n")})
    with pytest.raises(LearnToolError, match=f"the Learn tool {SEARCH_TOOL} failed: boom"):
        LearnClient(server.url).search("x")


def test_a_replay_error_from_the_transport_is_never_swallowed() -> None:
    miss = CassetteMiss(claims_file="docs/a.md", request="Learn initialize", closest=None, rerecord="judge-replay ...")

    def transport(request: httpx.Request) -> httpx.Response:
        raise miss

    client = LearnClient("https://learn.microsoft.com/api/mcp", http=httpx.Client(transport=httpx.MockTransport(transport)))
    with pytest.raises(CassetteMiss) as caught:
        client.fetch(MODELS_URL)
    assert caught.value is miss


def test_a_reset_connection_is_retried() -> None:
    """The first request's connection closes with no answer (as a CDN edge can): the same request again."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append(body.get("method"))
            if len(seen) == 1:
                self.close_connection = True  # hang up without a reply
                return
            reply = json.dumps({"jsonrpc": "2.0", "id": body.get("id"), "result": {
                "protocolVersion": "2025-06-18", "serverInfo": {"name": "x"}}}).encode()
            self.send_response(200 if "id" in body else 202)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    waits: list[float] = []
    try:
        client = LearnClient(f"http://127.0.0.1:{server.server_address[1]}/api/mcp", sleep=waits.append)
        client.initialize()
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["initialize", "initialize", "notifications/initialized"] and waits == [0.5]
    assert client.retries == 1


@pytest.mark.parametrize("tool_reply", [
    '{"jsonrpc":"2.0","result":{"content":"notalist"}}',
    '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":5}]}}',
    '{"jsonrpc":"2.0","id":2,"result":' + "[" * 5000 + "]" * 5000 + "}",
    '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"x"}],"n":' + "9" * 10000 + "}}",
    '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a \\ud800 lone"}]}}',
], ids=["content-not-a-list", "text-not-a-string", "nested-too-deeply", "huge-number", "lone-surrogate"])
def test_an_untrusted_tool_reply_is_a_malformed_reply_error(scripted: Any, tool_reply: str) -> None:
    server = scripted({"initialize": INIT_OK, "tools/call": (200, "application/json", tool_reply),
                       "*": (202, "application/json", "")})
    with pytest.raises(LearnError, match=f"^malformed reply from {server.url} to tools/call") as caught:
        LearnClient(server.url).fetch(MODELS_URL)
    assert not isinstance(caught.value, LearnToolError)  # the file fails; the judge is not asked to go on


def test_a_retry_after_that_is_not_a_number_uses_the_back_off() -> None:
    seen: list[float] = []
    replies = [(503, {"retry-after": "nan"}, b"busy"), (503, {"retry-after": "-inf"}, b"busy")]

    def respond(request: Any) -> tuple[int, dict[str, str], bytes]:
        if replies:
            return replies.pop(0)
        return INIT_OK[0], {"content-type": INIT_OK[1]}, INIT_OK[2].encode()

    server = LocalServer(respond, "/api/mcp")
    try:
        client = LearnClient(server.url, sleep=seen.append)
        assert client.initialize()["protocolVersion"] == "2025-03-26"
    finally:
        server.stop()
    assert seen == [0.5, 0.0]
