"""A server of ours that answers with the real Learn endpoint's bytes (tests/data/learn-wire), gzip on top."""

from __future__ import annotations

import base64
import gzip
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from replay.urls import normalise_learn_url

WIRE = Path(__file__).resolve().parent / "data" / "learn-wire"
PATH = "/api/mcp"
_TRAILING_ID = re.compile(rb'"id":[^,{}]*\}\r\n\r\n$')
HEADERS = {
    "akamai-cache-status": "Miss from child, Miss from parent",
    "cache-control": "no-cache,no-store",
    "expires": "-1",
    "nel": '{"report_to":"network-errors","max_age":604800,"success_fraction":0.001,"failure_fraction":0.1}',
    "report-to": '{"group":"network-errors","max_age":604800,"endpoints":[{"url":"https://example.invalid/nel"}]}',
    "request-context": "appId=cid-v1:00000000-0000-0000-0000-000000000000",
    "set-cookie": "ARRAffinity=0123456789abcdef; Path=/; HttpOnly; Secure; Domain=learn.microsoft.com",
    "strict-transport-security": "max-age=31536000; includeSubDomains",
    "x-azure-ref": "20261130T000000Z-0000000000000000000000000000000000",
    "x-content-type-options": "nosniff",
    "x-powered-by": "ASP.NET",
}
"""The real server's response header set (names from a public probe; values made up)."""


def wire_pages() -> dict[str, str]:
    """URL -> the page text a client must decode from the captured fetch replies."""
    return {url: text for url, text in json.loads((WIRE / "pages.json").read_text("utf-8")).values()}


@dataclass
class WireRequest:
    method: str
    rpc_method: str | None
    tool_argument: str | None
    status: int
    headers: dict[str, str] = field(default_factory=dict)


class LearnWire:
    """The Learn wire replayer on 127.0.0.1 (a daemon thread): `url`, `requests`, `stop()`.

    Fetch replies are chosen by URL: the captured page for its URL, the refusal for a host other than
    learn.microsoft.com, else the captured "could not be retrieved" answer. Every search gets the captured
    search reply. `fail_first` N: the first N `tools/call` requests get 503 (`retry-after: 0`).
    """

    def __init__(self, *, fail_first: int = 0, gzip_replies: bool = True) -> None:
        self.fail_first = fail_first
        self.gzip_replies = gzip_replies
        self.requests: list[WireRequest] = []
        self._lock = threading.Lock()
        pages = json.loads((WIRE / "pages.json").read_text("utf-8"))
        self._fetch = {normalise_learn_url(url): f"fetch-{name}.sse" for name, (url, _) in pages.items()}
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner._send(self, None, None, 405, b"", {"Allow": "POST"})

            do_DELETE = do_GET

            def do_POST(self) -> None:
                owner._post(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{PATH}"

    def __enter__(self) -> LearnWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def captured(self, rpc_method: str, params: dict[str, Any]) -> str | None:
        """The captured reply file for a request (None: a notification, 202)."""
        if rpc_method == "initialize":
            return "initialize.sse"
        if rpc_method == "tools/list":
            return "tools-list.sse"
        if rpc_method != "tools/call":
            return None
        arguments = params.get("arguments") or {}
        if params.get("name") == "microsoft_docs_search":
            return "search.sse"
        if params.get("name") != "microsoft_docs_fetch":
            return "unknown-tool.sse"
        url = str(arguments.get("url") or "")
        if (urlsplit(url).hostname or "").lower() != "learn.microsoft.com":
            return "fetch-refused.sse"
        return self._fetch.get(normalise_learn_url(url), "fetch-not-found.sse")

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        message = json.loads(raw) if raw else {}
        rpc_method = message.get("method")
        params = message.get("params") or {}
        argument = (params.get("arguments") or {}).get("url") or (params.get("arguments") or {}).get("query")
        with self._lock:
            failing = rpc_method == "tools/call" and self.fail_first > 0
            if failing:
                self.fail_first -= 1
        if failing:
            return self._send(handler, rpc_method, argument, 503, b"Service Unavailable",
                              {"content-type": "text/html", "retry-after": "0"})
        name = self.captured(rpc_method, params)
        if name is None or "id" not in message:
            return self._send(handler, rpc_method, argument, 202, b"", {})
        body = _TRAILING_ID.sub(b'"id":' + json.dumps(message["id"]).encode() + b"}\r\n\r\n",
                                (WIRE / name).read_bytes())
        headers = {"content-type": "text/event-stream"}
        if rpc_method == "initialize":
            session = {"clientInfo": params.get("clientInfo"), "sessionId": "9f0c2d4e6a8b4c1d"}
            headers["mcp-session-id"] = base64.b64encode(json.dumps(session).encode()).decode()
        self._send(handler, rpc_method, argument, 200, body, headers)

    def _send(self, handler: BaseHTTPRequestHandler, rpc_method: str | None, argument: str | None, status: int,
              body: bytes, headers: dict[str, str]) -> None:
        self.requests.append(WireRequest(handler.command, rpc_method, argument, status, dict(handler.headers)))
        accepts_gzip = "gzip" in (handler.headers.get("accept-encoding") or "").lower()
        if body and self.gzip_replies and accepts_gzip:
            body = gzip.compress(body, mtime=0)
            headers = {**headers, "content-encoding": "gzip"}
        handler.send_response(status)
        for name, value in {**HEADERS, **headers}.items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
