"""The Learn MCP stand-in, spoken to with raw httpx, and `judge-replay sim learn`."""

import base64
import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from replay.cli.main import main
from replay.errors import InputError
from replay.urls import LEARN_STAND_IN_PORT
from replay.learn.client import LearnClient
from replay.learn.wire import NOT_LEARN_REFUSAL, is_missing_page, missing_page_text, parse_jsonrpc_reply, tool_result_text
from replay.sim import start_learn
from locations import DATA

TEST_DATA = DATA
ACCEPT = {"Accept": "application/json, text/event-stream"}
MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
QUOTAS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"

MODELS_PAGE = f"""---
url: {MODELS_URL}
title: Azure OpenAI models
---

# Azure OpenAI models

Azure OpenAI offers models with different capabilities.

## GPT-4.1 series

| Model | Context window |
|--|--|
| gpt-4.1 | 1,047,576 |

```bash
# not a heading: inside a code fence
```

## Retirement

Older models retire on a schedule.
"""

QUOTAS_PAGE = """---
url: "https://Learn.Microsoft.com/en-us/azure/ai-foundry/openai/quotas-limits/"
---

# Quotas and limits

## Rate limits

The gpt-4.1 context window tokens quota is 1 M tokens per minute.
"""


def write_pages(folder: Path, pages: dict[str, str]) -> Path:
    for name, text in pages.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def pages(tmp_path):
    return write_pages(tmp_path / "pages", {"models.md": MODELS_PAGE, "deep/er/quotas.md": QUOTAS_PAGE})


@pytest.fixture
def learn(pages):
    with start_learn(pages) as handle:
        yield handle


class Session:
    """A minimal MCP client over raw httpx, as the Azure CLI does it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=5)
        self.headers = dict(ACCEPT)
        self.next_id = 1

    def post(self, payload: dict) -> httpx.Response:
        return self.http.post(self.url, json=payload, headers=self.headers)

    def initialize(self, version: str = "2025-03-26") -> httpx.Response:
        reply = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        self.headers["Mcp-Session-Id"] = reply.headers["Mcp-Session-Id"]
        return reply

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        reply = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        assert reply.status_code == 200, reply.text
        return parse_jsonrpc_reply(reply.text, reply.headers["content-type"])

    def call(self, tool: str, **arguments: str) -> str:
        text, is_error = tool_result_text(self.request("tools/call", {"name": tool, "arguments": arguments}))
        assert not is_error
        return text


def test_handshake_matches_learn(learn):
    session = Session(learn.url)
    reply = session.initialize("2025-03-26")
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/event-stream"
    assert reply.headers["content-encoding"] == "identity" and reply.headers["cache-control"] == "no-cache,no-store"
    assert reply.headers["x-powered-by"] == "ASP.NET" and reply.headers["x-azure-ref"]
    assert reply.headers["x-judge-replay-stand-in"] == "learn"
    assert int(reply.headers["content-length"]) == len(reply.content)
    assert reply.text.startswith("event: message\r\ndata: {") and reply.text.endswith("}\r\n\r\n")
    assert "\n" not in reply.text.replace("\r\n", "")
    message = parse_jsonrpc_reply(reply.text, reply.headers["content-type"])
    assert list(message) == ["result", "jsonrpc", "id"] and message["id"] == 0
    # the real server's answer (a transcript of 2026-08), the negotiated version aside
    assert message["result"] == {"protocolVersion": "2025-03-26", "capabilities": {},
                                  "serverInfo": {"name": "Microsoft Learn MCP Server", "version": "1.0.0"}}
    # the session id: base64 of JSON echoing the client info plus a per-session id
    echoed = json.loads(base64.b64decode(session.headers["Mcp-Session-Id"]))
    assert echoed["clientInfo"] == {"name": "t", "version": "1"} and len(echoed["sessionId"]) >= 16

    notified = session.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (notified.status_code, notified.content) == (202, b"")
    assert notified.headers["x-judge-replay-stand-in"] == "learn"

    # a supported version is answered as asked, any other with the latest
    versions = {asked: parse_jsonrpc_reply(Session(learn.url).initialize(asked).text, None)["result"]["protocolVersion"]
                for asked in ("2024-11-05", "2025-06-18", "2026-07-28", "1999-01-01")}
    assert versions == {"2024-11-05": "2024-11-05", "2025-06-18": "2025-06-18", "2026-07-28": "2025-06-18",
                        "1999-01-01": "2025-06-18"}
    other = Session(learn.url)
    other.initialize()
    assert other.headers["Mcp-Session-Id"] != session.headers["Mcp-Session-Id"]


def test_sessions_are_issued_but_not_required_like_the_real_server(learn):
    for headers in ({}, {"Mcp-Session-Id": "no-such-session"}):
        reply = httpx.post(learn.url, headers={**ACCEPT, **headers}, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert reply.status_code == 200
        assert parse_jsonrpc_reply(reply.text, reply.headers["content-type"])["result"]["tools"]
    assert httpx.get(learn.url, headers=ACCEPT).status_code == 405
    # the real (stateless) server maps no DELETE either: 405, which a client closing its session accepts
    deleted = httpx.delete(learn.url, headers={"Mcp-Session-Id": "anything"})
    assert (deleted.status_code, deleted.headers["allow"]) == (405, "POST")
    assert httpx.post(learn.url.replace("/api/mcp", "/other"), json={}).status_code == 404


def test_strict_sessions_are_required_and_unknown_ones_are_404(pages):
    with start_learn(pages, strict_sessions=True) as learn:
        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        missing = httpx.post(learn.url, headers=ACCEPT, json=call)
        assert missing.status_code == 400 and "Mcp-Session-Id header is required" in missing.text
        unknown = httpx.post(learn.url, headers={**ACCEPT, "Mcp-Session-Id": "no-such-session"}, json=call)
        assert unknown.status_code == 404
        assert unknown.text == '{"error":{"code":-32001,"message":"Session not found"},"id":"","jsonrpc":"2.0"}'
        assert unknown.headers["x-judge-replay-stand-in"] == "learn"
        session = Session(learn.url)
        session.initialize()
        assert session.request("tools/list")["result"]["tools"]
        assert session.http.delete(learn.url, headers=session.headers).status_code == 200
        assert session.post(call).status_code == 404
        assert learn.calls[-1] == "DELETE"


def test_accept_must_list_json_and_sse(learn):
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    for accept in (None, "application/json", "text/event-stream", "*/*"):
        reply = httpx.post(learn.url, json=body, headers={"Accept": accept} if accept else {})
        assert reply.status_code == 406, accept
        assert json.loads(reply.text)["error"]["message"] == \
            "Not Acceptable: Client must accept both application/json and text/event-stream"
    ok = httpx.post(learn.url, json=body, headers={"Accept": "text/event-stream;q=0.9, Application/JSON"})
    assert ok.status_code == 200


def test_protocol_version_header(learn):
    session = Session(learn.url)
    session.initialize("2025-06-18")
    session.headers["MCP-Protocol-Version"] = "2025-06-18"
    assert session.request("tools/list")["result"]["tools"]
    session.headers["MCP-Protocol-Version"] = "2031-01-01"
    reply = session.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    assert reply.status_code == 400 and "unsupported version '2031-01-01'" in reply.json()["error"]["message"]
    assert [(r.rpc_method, r.status, r.protocol_version) for r in learn.requests[-2:]] == [
        ("tools/list", 200, "2025-06-18"), ("tools/list", 400, "2031-01-01")]


def test_initialize_without_client_info_is_the_real_servers_500(learn):
    reply = httpx.post(learn.url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                                        "params": {"protocolVersion": "2025-06-18", "capabilities": {}}})
    assert reply.status_code == 500 and reply.headers["content-type"].startswith("text/plain")
    assert "missing required properties including: 'clientInfo'" in reply.text


def test_tools_list(learn):
    session = Session(learn.url)
    session.initialize()
    tools = {t["name"]: t for t in session.request("tools/list")["result"]["tools"]}
    assert set(tools) == {"microsoft_docs_fetch", "microsoft_docs_search"}
    assert tools["microsoft_docs_fetch"]["inputSchema"]["required"] == ["url"]
    assert tools["microsoft_docs_search"]["inputSchema"]["required"] == ["query"]


def test_fetch_serves_the_body_and_matches_normalised_urls(learn):
    session = Session(learn.url)
    session.initialize()
    body = session.call("microsoft_docs_fetch", url=MODELS_URL)
    assert body.startswith("# Azure OpenAI models\n") and "url:" not in body and "| gpt-4.1 | 1,047,576 |" in body
    for variant in ("https://LEARN.microsoft.com/en-us/azure/ai-foundry/openai/concepts/models/",
                    MODELS_URL + "#gpt-41-series", "https://learn.microsoft.com/de-de/azure/ai-foundry/openai/concepts/models"):
        assert session.call("microsoft_docs_fetch", url=variant) == body
    # a page whose front matter URL carries a locale and a trailing slash is found by its plain URL
    assert session.call("microsoft_docs_fetch", url=QUOTAS_URL).startswith("# Quotas and limits")
    assert learn.calls[:2] == ["initialize", f"tools/call microsoft_docs_fetch {MODELS_URL}"]


def test_unknown_page_is_plain_text_not_an_error(learn):
    session = Session(learn.url)
    session.initialize()
    url = "https://learn.microsoft.com/azure/no/such/page"
    message = session.request("tools/call", {"name": "microsoft_docs_fetch", "arguments": {"url": url}})
    text, is_error = tool_result_text(message)
    assert text == missing_page_text(url) and is_missing_page(text) and not is_error


def test_unknown_tool_and_bad_arguments_are_jsonrpc_errors(learn):
    session = Session(learn.url)
    session.initialize()
    unknown = session.request("tools/call", {"name": "microsoft_code_sample_search", "arguments": {"query": "x"}})
    assert unknown["error"] == {"code": -32602, "message": "Unknown tool: 'microsoft_code_sample_search'"}
    assert list(unknown) == ["error", "jsonrpc", "id"]
    assert session.request("tools/call", {"name": "microsoft_docs_fetch", "arguments": {}})["error"]["code"] == -32602
    assert session.request("no/such/method")["error"]["code"] == -32601


def test_a_url_outside_learn_gets_the_real_refusal(learn):
    session = Session(learn.url)
    session.initialize()
    for url in ("https://azure.microsoft.com/en-us/pricing/details/cognitive-services/openai-service/",
                "https://learn.microsoft.com.evil.example/azure/x", "not a url"):
        message = session.request("tools/call", {"name": "microsoft_docs_fetch", "arguments": {"url": url}})
        text, is_error = tool_result_text(message)
        assert (text, is_error) == (NOT_LEARN_REFUSAL, False)
        assert "isError" not in message["result"] and is_missing_page(text)


def test_replies_are_written_with_dotnet_escaping(tmp_path):
    body = "# Keys\n\nUse `az` & <key> it's \"quoted\" + café — 😀\\path\n"
    folder = write_pages(tmp_path, {"p.md": f"---\nurl: {MODELS_URL}\n---\n{body}"})
    with start_learn(folder) as learn:
        session = Session(learn.url)
        session.initialize()
        reply = session.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "microsoft_docs_fetch", "arguments": {"url": MODELS_URL}}})
    raw = reply.content.decode("ascii")  # .NET escapes every non-ASCII character
    for escaped in ("\\u0060az\\u0060", "\\u0026", "\\u003Ckey\\u003E", "it\\u0027s", "\\u0022quoted\\u0022",
                    "\\u002B", "caf\\u00E9", "\\u2014", "\\uD83D\\uDE00", "\\\\path", "# Keys\\n"):
        assert escaped in raw, escaped
    assert tool_result_text(parse_jsonrpc_reply(reply.text, reply.headers["content-type"]))[0] == body


def test_planned_transient_failures(learn):
    session = Session(learn.url)
    session.initialize()
    learn.fail_next(2, 429)
    fetch = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "microsoft_docs_fetch", "arguments": {"url": MODELS_URL}}}
    for _ in range(2):
        failed = session.post(fetch)
        assert (failed.status_code, failed.headers["retry-after"]) == (429, "0")
        assert failed.headers["x-judge-replay-stand-in"] == "learn" and "planned transient failure" in failed.text
    assert session.post(fetch).status_code == 200
    assert [(r.rpc_method, r.status) for r in learn.requests[-4:]] == [
        ("initialize", 200), ("tools/call", 429), ("tools/call", 429), ("tools/call", 200)]
    with pytest.raises(ValueError, match="not a transient failure status"):
        learn.fail_next(1, 404)


def test_flaky_fails_each_distinct_tool_call_once(pages):
    with start_learn(pages, flaky=True) as learn:
        session = Session(learn.url)
        session.initialize()  # the handshake is never failed
        for url in (MODELS_URL, QUOTAS_URL):
            call = {"name": "microsoft_docs_fetch", "arguments": {"url": url}}
            first = session.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
            again = session.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})  # another id
            assert (first.status_code, again.status_code) == (503, 200)
        assert [r.status for r in learn.requests] == [200, 503, 200, 503, 200]


def test_the_learn_client_retries_a_first_fetch_that_gets_503(pages):
    with start_learn(pages, fail_first=1) as learn, LearnClient(learn.url) as client:
        page = client.fetch(MODELS_URL)
        assert page.text is not None and "1,047,576" in page.text
        assert client.retries == 1
    assert [(r.rpc_method, r.status) for r in learn.requests if r.http_method == "POST"] == [
        ("initialize", 200), ("notifications/initialized", 202), ("tools/call", 503), ("tools/call", 200)]


def test_search_ranks_sections_by_term_overlap(learn):
    session = Session(learn.url)
    session.initialize()
    results = json.loads(session.call("microsoft_docs_search", query="gpt-4.1 context window tokens quota"))["results"]
    assert [set(r) for r in results] == [{"title", "content", "contentUrl"}] * len(results)
    # the quota section shares 5 terms, the GPT-4.1 section 3 (gpt-4.1, context, window)
    assert [(r["title"], r["contentUrl"]) for r in results] == [
        ("Quotas and limits-Rate limits", QUOTAS_URL),
        ("Azure OpenAI models-GPT-4.1 series", MODELS_URL),
    ]
    assert results[1]["content"].startswith("## GPT-4.1 series") and "# not a heading" in results[1]["content"]
    assert json.loads(session.call("microsoft_docs_search", query="zzz unrelated"))["results"] == []


def test_search_caps_results_and_content_and_escapes_like_dotnet(tmp_path):
    sections = "".join(f"## Part {i}\n\nshared word & <tag> it's {'x' * 2000}\n\n" for i in range(15))
    folder = write_pages(tmp_path, {"big.md": f"---\nurl: {MODELS_URL}\n---\n\n{sections}"})
    with start_learn(folder) as learn:
        session = Session(learn.url)
        session.initialize()
        text = session.call("microsoft_docs_search", query="shared word")
    results = json.loads(text)["results"]
    assert len(results) == 10 and all(len(r["content"]) <= 1500 for r in results)
    # a tie keeps page order; with neither `title:` nor an H1, the page's URL stands for its title
    assert [r["title"] for r in results[:2]] == [f"{MODELS_URL}-Part 0", f"{MODELS_URL}-Part 1"]
    assert "\\u0026" in text and "\\u003C" in text and "\\u0027" in text and "&" not in text


def test_set_pages_swaps_and_removed_pages_disappear(learn, tmp_path):
    session = Session(learn.url)
    session.initialize()
    before = session.call("microsoft_docs_fetch", url=MODELS_URL)
    after_dir = write_pages(tmp_path / "after", {"models.md": MODELS_PAGE.replace("1,047,576", "2,000,000")})
    learn.set_pages(after_dir)
    after = session.call("microsoft_docs_fetch", url=MODELS_URL)
    assert "2,000,000" in after and after != before
    assert is_missing_page(session.call("microsoft_docs_fetch", url=QUOTAS_URL))
    (after_dir / "models.md").unlink()
    assert is_missing_page(session.call("microsoft_docs_fetch", url=MODELS_URL))
    assert learn.pages_dir == after_dir


def test_expired_and_deleted_sessions_get_404_and_can_reinitialise(learn):
    session = Session(learn.url)
    session.initialize()
    assert session.request("tools/list")["result"]["tools"]
    learn.expire_sessions()
    assert session.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).status_code == 404
    session.initialize()
    assert session.request("tools/list")["result"]["tools"]
    assert session.http.delete(learn.url, headers=session.headers).status_code == 200
    assert session.post({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}).status_code == 404
    assert session.http.delete(learn.url, headers=session.headers).status_code == 404


@pytest.mark.parametrize("name, text, reason", [
    ("no-front.md", "# Just a page\n", "no YAML front matter"),
    ("no-url.md", "---\ntitle: x\n---\n# Page\n", "no `url:`"),
    ("bad-yaml.md", "---\nurl: [unclosed\n---\n# Page\n", "not valid YAML"),
    ("not-http.md", "---\nurl: learn.microsoft.com/x\n---\n# Page\n", "not an http(s) URL"),
])
def test_bad_pages_name_the_file(tmp_path, name, text, reason):
    write_pages(tmp_path, {"good.md": MODELS_PAGE, f"sub/{name}": text})
    with pytest.raises(InputError) as err:
        start_learn(tmp_path)
    assert err.value.path == str(tmp_path / "sub" / name) and reason in err.value.reason


def test_duplicate_urls_and_missing_folder_are_input_errors(tmp_path):
    write_pages(tmp_path, {"a.md": MODELS_PAGE, "b.md": MODELS_PAGE})
    with pytest.raises(InputError, match="same URL"):
        start_learn(tmp_path)
    with pytest.raises(InputError, match="no such folder"):
        start_learn(tmp_path / "absent")


def test_real_page_snapshots_load():
    before = TEST_DATA / "learn-pages" / "before"
    assert before.is_dir(), f"the page corpus tests/data/learn-pages is missing: {before}"
    with start_learn(before) as learn:
        session = Session(learn.url)
        session.initialize()
        page = session.call("microsoft_docs_fetch",
                            url="https://learn.microsoft.com/en-us/azure/ai-services/openai/concepts/models")
        assert page.startswith("# Azure OpenAI Service models") and "1,047,576" in page
        results = json.loads(session.call("microsoft_docs_search", query="gpt-4.1 context window"))["results"]
        assert 0 < len(results) <= 10 and all("/en-us/" not in r["contentUrl"] for r in results)


def test_cli_bad_pages_exit_2_naming_the_file(tmp_path, capsys):
    write_pages(tmp_path, {"x.md": "---\ntitle: no url\n---\n"})
    assert main(["sim", "learn", "--pages", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "x.md") in err and "Traceback" not in err
    assert main(["sim", "learn", "--pages", str(tmp_path / "absent")]) == 2


CLI = [sys.executable, "-c", "from replay.cli.main import main; import sys; sys.exit(main())"]


def test_cli_serves_until_sigterm_quietly(pages):
    proc = subprocess.Popen([*CLI, "sim", "learn", "--pages", str(pages), "--port", "0", "--strict-sessions"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/api/mcp")
        assert "stand-in (test equipment)" in proc.stdout.readline()
        session = Session(url)
        assert session.initialize().status_code == 200
        assert "1,047,576" in session.call("microsoft_docs_fetch", url=MODELS_URL)
        assert httpx.post(url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 400
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert err.strip().splitlines() == ["judge-replay Learn MCP stand-in stopped."]  # no request log by default


def test_cli_verbose_logs_one_line_per_request_and_fails_on_purpose(pages):
    proc = subprocess.Popen([*CLI, "sim", "learn", "--pages", str(pages), "--port", "0", "--verbose",
                             "--fail-first", "1", "--fail-status", "502"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        proc.stdout.readline()
        session = Session(url)
        session.initialize()
        fetch = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "microsoft_docs_fetch", "arguments": {"url": MODELS_URL}}}
        assert [session.post(fetch).status_code for _ in range(2)] == [502, 200]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    logged = [line for line in err.splitlines() if line.startswith("learn stand-in:")]
    assert len(logged) == 3 and '" 502 ' in logged[1] and '" 200 ' in logged[2], err


def test_cli_port_defaults_and_a_busy_port(pages, learn, capsys):
    from replay.cli.sim import command
    port = next(p for p in command.commands["learn"].params if p.name == "port")
    assert port.default == LEARN_STAND_IN_PORT == 8931
    assert main(["sim", "learn", "--pages", str(pages), "--port", str(learn.port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{learn.port}" in err and "Traceback" not in err
