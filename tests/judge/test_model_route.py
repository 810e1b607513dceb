"""The clients a recorded conversation builds reach the network as unrecorded ones do: through the
client the SDK would build (direct mode) and through the run's shared Learn client, so a proxy set in
the environment carries both; the recording transport only sits in front of them."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import pytest

from replay.cassettes.cassette import load_cassette
from replay.judge.model_route import direct_http_client
from replay.learn.sessions import LearnSessions
from replay.recording.recorder import HttpRecorder
from replay.runs.names import cassette_name
from replay.sim import start_model

MODELS = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"


class _Proxy(ThreadingHTTPServer):
    """A forward HTTP proxy on 127.0.0.1 that notes the URL of each request it carries."""

    def __init__(self) -> None:
        seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                seen.append(self.path)  # the absolute URL a client sends a proxy
                target = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                upstream = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
                upstream.request("POST", target.path + (f"?{target.query}" if target.query else ""), body, headers)
                reply = upstream.getresponse()
                data = reply.read()
                self.send_response(reply.status, reply.reason)
                for name, value in reply.getheaders():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        self.seen = seen
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Proxy]:
    server = _Proxy()
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.url)
    yield server
    server.shutdown()
    server.server_close()


def test_a_recorded_conversation_goes_out_through_the_proxy_of_the_environment(
        tmp_path: Path, demo_learn: Any, proxy: _Proxy) -> None:
    with start_model() as model, LearnSessions(demo_learn.url) as sessions, HttpRecorder("record", tmp_path) as rec:
        with rec.conversation("docs/a.md") as seam:
            page = sessions.client(seam.transport).fetch(MODELS)
            client = anthropic.Anthropic(api_key="sk-test", base_url=model.url, max_retries=0,
                                         http_client=direct_http_client({}, seam.transport))
            with pytest.raises(anthropic.BadRequestError, match="no claims batch"):  # the stand-in's answer
                client.messages.create(model="claude-test", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
            client.close()
    assert page.text and "gpt-4.1" in page.text
    assert proxy.seen.count(demo_learn.url) == 3  # initialize, the initialized notice, the fetch
    assert proxy.seen[-1] == model.url + "/v1/messages"
    recorded = load_cassette(tmp_path / cassette_name("docs/a.md"))
    assert [it.uri.rsplit("/", 1)[-1] for it in recorded] == ["mcp", "mcp", "mcp", "messages"]
    assert rec.stats.model_calls == 1 and rec.stats.learn_calls == 3
