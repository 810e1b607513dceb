"""The project's Learn client, recorder and stand-in against the real Learn endpoint's bytes (CRLF SSE, .NET JSON, gzip)."""

import gzip
import json

import httpx
import pytest

from learn_wire import WIRE, LearnWire, wire_pages
from replay.learn.client import LearnClient, LearnToolError
from replay.learn.wire import NOT_LEARN_REFUSAL, parse_jsonrpc_reply
from replay.sim.learn import dotnet_sse

PAGES = wire_pages()
SAS_URL = "https://learn.microsoft.com/azure/storage/common/storage-sas-overview"
TOKEN_URL = "https://learn.microsoft.com/azure/active-directory-b2c/access-tokens"
PRICING_URL = "https://azure.microsoft.com/en-us/pricing/details/cognitive-services/openai-service/"


def test_the_bytes_are_what_the_real_server_sends():
    for path in sorted(WIRE.glob("*.sse")):
        data = path.read_bytes()
        assert data.startswith(b"event: message\r\ndata: {") and data.endswith(b"}\r\n\r\n"), path.name
        assert b"\n" not in data.replace(b"\r\n", b""), path.name  # CRLF only
        data.decode("ascii")  # .NET escapes every non-ASCII character
    sas = (WIRE / "fetch-storage-sas.sse").read_bytes()
    for escaped in (rb"\u0026sig=", rb"\u0060sv\u0060", rb"\u003Cstorage-account\u003E", rb"\u0060\u002B\u0060"):
        assert escaped in sas
    search = (WIRE / "search.sse").read_bytes()
    assert rb"{\u0022results\u0022:[{\u0022title\u0022:" in search and rb"\\u0026sr=b" in search  # escaped twice


def test_the_stand_in_writes_json_as_the_real_server_does():
    """Our stand-in's .NET encoder reproduces the captured bytes exactly (each reply decoded and re-encoded)."""
    for path in sorted(WIRE.glob("*.sse")):
        data = path.read_bytes().decode("ascii")
        message = json.loads(data[len("event: message\r\ndata: "):-4])
        assert dotnet_sse(message) == data, path.name


def test_the_learn_client_reads_the_real_bytes(learn_wire):
    with LearnClient(learn_wire.url) as client:
        info = client.initialize()
        assert info["serverInfo"] == {"name": "Microsoft Learn MCP Server", "version": "1.0.0"}
        assert info["protocolVersion"] == "2025-06-18"
        assert {t["name"] for t in client.list_tools()} == {
            "microsoft_docs_search", "microsoft_docs_fetch", "microsoft_code_sample_search"}
        for url in (SAS_URL, TOKEN_URL + "#use-an-access-token", "https://learn.microsoft.com/en-us/azure/storage/common/storage-sas-overview/"):
            page = client.fetch(url)
            assert not page.missing and page.text == PAGES[url.split("#")[0].replace("/en-us", "").rstrip("/")]
        sas = client.fetch(SAS_URL).text
        assert "&sr=b&sp=r&sig=Z%2FRHIX5Xcg0Mq2rqI3OlWTjEg2tYkboXr1P9ZUXDtkk%3D" in sas and "`<storage-account>`" in sas
        token = client.fetch(TOKEN_URL).text
        assert "Authorization: Bearer eyJ0eXAiOiJKV1Qi" in token and "subscription-key=0123456789abcdef" in token
        assert "Don't share a user's token" in token
        refused = client.fetch(PRICING_URL)
        assert refused.missing and refused.text is None and refused.raw == NOT_LEARN_REFUSAL
        gone = client.fetch("https://learn.microsoft.com/azure/no/such/page")
        assert gone.missing and "could not be retrieved" in gone.raw
        found = client.search("shared access signature example")
        assert found.urls == [SAS_URL, TOKEN_URL + "#use-an-access-token"]
        assert "sv=2022-11-02&sr=b" in json.loads(found.text)["results"][0]["content"]
        with pytest.raises(LearnToolError, match="Unknown tool: 'microsoft_docs_translate'"):
            client.call_tool("microsoft_docs_translate", {"url": SAS_URL})
    posts = [r for r in learn_wire.requests if r.method == "POST"]
    assert all(r.status in (200, 202) for r in posts)
    # every request after initialize carries the session and the negotiated protocol version
    assert all(r.headers.get("Mcp-Session-Id") and r.headers.get("MCP-Protocol-Version") == "2025-06-18"
               for r in posts[1:])


def test_replies_come_gzip_encoded_and_the_id_is_the_requests(learn_wire):
    body = {"jsonrpc": "2.0", "id": 41, "method": "tools/call",
            "params": {"name": "microsoft_docs_fetch", "arguments": {"url": SAS_URL}}}
    headers = {"Accept": "application/json, text/event-stream", "Accept-Encoding": "gzip"}
    with httpx.Client() as http:
        reply = http.post(learn_wire.url, json=body, headers=headers)
        raw = http.post(learn_wire.url, json=body, headers={**headers, "Accept-Encoding": "identity"})
        with http.stream("POST", learn_wire.url, json=body, headers=headers) as streamed:
            on_the_wire = b"".join(streamed.iter_raw())
    assert reply.headers["content-encoding"] == "gzip" and "content-encoding" not in raw.headers
    assert on_the_wire[:2] == b"\x1f\x8b" and gzip.decompress(on_the_wire) == reply.content
    assert reply.content == raw.content and raw.content.endswith(b'"jsonrpc":"2.0","id":41}\r\n\r\n')
    message = parse_jsonrpc_reply(reply.text, reply.headers["content-type"])
    assert message["result"]["content"][0]["text"] == PAGES[SAS_URL]


def test_the_client_retries_a_first_fetch_that_gets_503():
    with LearnWire(fail_first=1) as wire, LearnClient(wire.url) as client:
        assert client.fetch(SAS_URL).text == PAGES[SAS_URL]
        assert client.retries == 1
    assert [(r.rpc_method, r.status) for r in wire.requests if r.method == "POST"] == [
        ("initialize", 200), ("notifications/initialized", 202), ("tools/call", 503), ("tools/call", 200)]


def test_a_recording_through_the_real_bytes(learn_wire, tmp_path):
    """The judge records a claims file through the real Learn bytes (the model is our stand-in): every claim
    gets a verdict, and the azure.microsoft.com page the server refuses is judged as no page."""
    from replay.judge.runner import run_judge
    from replay.sim import start_model

    run = tmp_path / "run"
    with start_model() as model:
        results = run_judge("v3", [WIRE / "claims.json"], run, "record", model="claude-sonnet-5-5",
                            learn_url=learn_wire.url, anthropic_base_url=model.url, api_key="test-key", progress=False)
    verdicts = {r.id: (r.judge_verdict, r.evidence_url) for f in results.files for r in f.results}
    assert verdicts == {
        "wire-001": ("grounded", SAS_URL),
        "wire-002": ("grounded", "https://learn.microsoft.com/en-us/azure/active-directory-b2c/access-tokens"),
        "wire-003": ("source_silent", PRICING_URL),
        "wire-004": ("grounded", SAS_URL),  # found by the captured search reply
    }
    called = [r.tool_argument for r in learn_wire.requests if r.rpc_method == "tools/call"]
    assert PRICING_URL in called and "A service SAS URI names the storage service version 2022-11-02." in called
