"""The Learn MCP stand-in: a folder of markdown pages served over MCP Streamable HTTP like Learn does."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit


from replay.core.text import tokens
from replay.errors import InputError
from replay.learn.wire import (
    FETCH_TOOL,
    NOT_LEARN_REFUSAL,
    PROTOCOL_VERSION_HEADER,
    SEARCH_TOOL,
    SESSION_HEADER,
    missing_page_text,
)
from replay.sim.http_server import Log, StandIn, StandInHandler, StandInServer
from replay.sim.pages import Page, _folder_state, load_page, load_pages  # load_page: also read from here
from replay.urls import normalise_learn_url, split_url

ENDPOINT_PATH = "/api/mcp"
LEARN_HOST = "learn.microsoft.com"
SERVER_INFO = {"name": "Microsoft Learn MCP Server", "version": "1.0.0"}
"""What the real server answers `initialize` with (a transcript of 2026-08); the stand-in says it is test
equipment in the `x-judge-replay-stand-in` header of every reply, as the model stand-in does."""
SUPPORTED_PROTOCOLS = ("2024-11-05", "2025-03-26", "2025-06-18")
"""The revisions the C# MCP SDK (which such servers use) speaks: a supported version asked for is
answered as is, any other with the latest."""
LATEST_PROTOCOL = "2025-06-18"
SEARCH_LIMIT = 10
SEARCH_CONTENT_CHARS = 1500
TRANSIENT_STATUSES = {408: "Request Timeout", 429: "Too Many Requests", 500: "Internal Server Error",
                      502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
"""The failures `fail_next` / `flaky` can plan (what a CDN in front of Learn answers now and then)."""
RESPONSE_HEADERS = {
    "akamai-cache-status": "Miss from child, Miss from parent",
    "cache-control": "no-cache,no-store",
    "expires": "-1",
    "request-context": "appId=cid-v1:00000000-0000-0000-0000-000000000000",
    "strict-transport-security": "max-age=31536000; includeSubDomains",
    "x-content-type-options": "nosniff",
    "x-powered-by": "ASP.NET",
    "set-cookie": "ARRAffinity=5f0c1e2d3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6; Path=/; HttpOnly",
}
"""Constant headers from the real server's header set (values made up where the probe gave only the
name). Left out: `date` (two identical runs then give identical replies), `set-cookie`, `nel` and
`report-to` (nothing a client uses). `x-azure-ref` is derived from the request body; SSE replies add
`content-encoding: identity`, as the C# SDK does."""

_DOTNET_SHORT = {'\\': '\\\\', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_DOTNET_SAFE = frozenset(chr(c) for c in range(0x20, 0x7F)) - set('"&\'+<>`\\')


def _dotnet_string(text: str) -> str:
    """A JSON string as .NET's default encoder (System.Text.Json) writes it: printable ASCII as is, except
    the HTML-sensitive `"&'+<>` and the backtick, which become `\\u0022`...; every non-ASCII character as
    `\\uXXXX` (upper-case hex, UTF-16: a surrogate pair for characters beyond the BMP)."""
    out = ['"']
    for char in text:
        if char in _DOTNET_SAFE:
            out.append(char)
        elif char in _DOTNET_SHORT:
            out.append(_DOTNET_SHORT[char])
        else:
            data = char.encode("utf-16-be")
            out.extend(f"\\u{int.from_bytes(data[i:i + 2], 'big'):04X}" for i in range(0, len(data), 2))
    out.append('"')
    return "".join(out)


def dotnet_json(value: Any) -> str:
    """Compact JSON written the way the real server (ASP.NET, System.Text.Json) writes it; key order kept."""
    if isinstance(value, str):
        return _dotnet_string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_dotnet_string(str(k))}:{dotnet_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dotnet_json(v) for v in value) + "]"
    return json.dumps(value)


def dotnet_sse(payload: dict[str, Any]) -> str:
    """One SSE `event: message` with CRLF line ends carrying a JSON-RPC message in .NET's JSON."""
    return f"event: message\r\ndata: {dotnet_json(payload)}\r\n\r\n"


TOOLS: list[dict[str, Any]] = [
    {
        "name": SEARCH_TOOL,
        "description": "Search official Microsoft/Azure documentation (stand-in: ranks the served pages' "
        "sections by term overlap with the query).",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "The query to search for."}},
            "required": ["query"],
        },
    },
    {
        "name": FETCH_TOOL,
        "description": "Fetch a Microsoft documentation page as markdown (stand-in: serves the page file "
        "whose front matter `url:` matches).",
        "inputSchema": {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The URL of the documentation page."}},
            "required": ["url"],
        },
    },
]


def search_text(pages: dict[str, Page], query: str) -> str:
    """The search tool's text: sections ranked by how many distinct query terms they contain."""
    wanted = set(tokens(query))
    scored = []
    for page in pages.values():
        for section in page.sections:
            overlap = len(wanted & section.terms)
            if overlap:
                scored.append((overlap, page, section))
    scored.sort(key=lambda item: -item[0])  # stable: page order, then section order, on a tie
    results = [
        {
            "title": f"{page.title}-{section.heading}" if section.heading else page.title,
            "content": section.markdown[:SEARCH_CONTENT_CHARS],
            "contentUrl": normalise_learn_url(page.url),
        }
        for _, page, section in scored[:SEARCH_LIMIT]
    ]
    return dotnet_json({"results": results})


def is_learn_url(url: str) -> bool:
    """Whether the fetch tool serves this URL at all (the real server refuses any other host)."""
    parts = split_url(url)
    return parts is not None and parts.scheme in ("http", "https") and (parts.hostname or "").lower() == LEARN_HOST


def _object(value: Any) -> dict[str, Any]:
    """A JSON-RPC `params` (or `arguments`) object; anything else counts as empty."""
    return value if isinstance(value, dict) else {}


HeldOutcome = Literal["error", "drop", 503] | None
"""How held fetches end (`LearnStandIn.release_fetches`): None answered; "error" a JSON-RPC error reply;
"drop" the connection closed without a reply; 503 that HTTP status."""


class HeldFailure(Exception):
    """A held fetch released to fail without a JSON-RPC reply ("drop", or an HTTP status)."""

    def __init__(self, outcome: HeldOutcome) -> None:
        super().__init__(str(outcome))
        self.outcome = outcome


class ToolError(Exception):
    """A JSON-RPC error reply (code, message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class LearnRequest:
    """One HTTP request the stand-in answered, as tests check it: what came in and the status it got."""

    http_method: str
    rpc_method: str | None
    """The JSON-RPC method (None for a DELETE, a GET or a body that is no JSON-RPC message)."""
    status: int
    """The status answered (0: a held fetch released to "drop", its connection closed with no reply)."""
    session: str | None
    protocol_version: str | None
    """The `MCP-Protocol-Version` header, if sent."""
    cookie: str | None = None
    """The `Cookie` header, if sent (the stand-in sets an affinity cookie, as the real endpoint's CDN does)."""


@dataclass
class _FailurePlan:
    """Planned transient failures: the next `count` requests of `method` (whose body holds `about`) get `status`."""

    count: int
    status: int
    method: str | None
    retry_after: str
    about: bytes = b""


class LearnApp:
    """The stand-in's state: the page folder (reloaded when its files change), sessions, planned failures."""

    def __init__(self, pages_dir: Path, *, strict_sessions: bool, flaky: bool) -> None:
        self._lock = threading.Lock()
        self.sessions: set[str] = set()
        self.strict_sessions = strict_sessions
        self.flaky = flaky
        self._failed_once: set[str] = set()
        self._plans: list[_FailurePlan] = []
        self.calls: list[str] = []
        self.requests: list[LearnRequest] = []
        self._fetches_released = threading.Event()
        self._fetches_released.set()
        self._held_outcome: HeldOutcome = None
        self.held = 0
        self.set_pages(pages_dir)

    def set_pages(self, pages_dir: Path) -> None:
        folder = Path(pages_dir)
        state = _folder_state(folder)
        pages = load_pages(folder)
        with self._lock:
            self.folder, self._state, self._pages = folder, state, pages

    def pages(self) -> dict[str, Page]:
        """The current pages; a change in the folder since the last look reloads it."""
        with self._lock:
            folder, state, pages = self.folder, self._state, self._pages
        now = _folder_state(folder)
        if now != state:
            pages = load_pages(folder)
            with self._lock:
                if self.folder == folder:
                    self._state, self._pages = now, pages
        return pages

    # ------------------------------------------------------------------ sessions

    def open_session(self, client_info: dict[str, Any]) -> str:
        """A session id shaped like the real server's: base64 of JSON echoing the client info plus a
        per-session id."""
        echo = {"clientInfo": client_info, "sessionId": uuid.uuid4().hex}
        session = base64.b64encode(json.dumps(echo, separators=(",", ":")).encode("utf-8")).decode("ascii")
        with self._lock:
            self.sessions.add(session)
        return session

    def has_session(self, session: str | None) -> bool:
        with self._lock:
            return session is not None and session in self.sessions

    def close_session(self, session: str) -> None:
        with self._lock:
            self.sessions.discard(session)

    def expire_sessions(self) -> None:
        with self._lock:
            self.sessions.clear()
            self.strict_sessions = True

    # ------------------------------------------------------------------ planned failures

    def plan_failures(self, count: int, status: int, method: str | None, retry_after: str, about: str = "") -> None:
        if status not in TRANSIENT_STATUSES:
            raise ValueError(f"not a transient failure status: {status} (one of {sorted(TRANSIENT_STATUSES)})")
        with self._lock:
            self._plans.append(_FailurePlan(count, status, method, retry_after, about.encode("utf-8")))

    def clear_failures(self) -> None:
        with self._lock:
            self._plans.clear()

    def planned_failure(self, method: str | None, body: bytes) -> _FailurePlan | None:
        """The failure this request gets, if one is planned for it (a planned one first, then `flaky`)."""
        with self._lock:
            for plan in self._plans:
                if plan.count > 0 and (plan.method is None or plan.method == method) and plan.about in body:
                    plan.count -= 1
                    return plan
            if self.flaky and method == "tools/call":
                key = _request_key(body)
                if key not in self._failed_once:
                    self._failed_once.add(key)
                    return _FailurePlan(0, 503, method, "0")
        return None

    # ------------------------------------------------------------------ held fetches

    def hold_fetches(self) -> None:
        with self._lock:
            self._held_outcome = None
            self._fetches_released.clear()

    def release_fetches(self, outcome: HeldOutcome) -> None:
        with self._lock:
            self._held_outcome = outcome
        self._fetches_released.set()

    def _wait_if_held(self) -> None:
        """Wait while fetches are held; then raise the failure planned for the held ones, if any."""
        if self._fetches_released.is_set():
            return
        with self._lock:
            self.held += 1
        try:
            self._fetches_released.wait(HOLD_LIMIT)
        finally:
            with self._lock:
                self.held -= 1
                outcome = self._held_outcome
        if outcome == "error":
            raise ToolError(-32603, "a planned failure of a held fetch (judge-replay Learn stand-in)")
        if outcome is not None:
            raise HeldFailure(outcome)

    # ------------------------------------------------------------------ tools

    def call_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise ToolError(-32602, "Invalid params: arguments must be an object")
        if name == FETCH_TOOL:
            url = arguments.get("url")
            if not isinstance(url, str) or not url:
                raise ToolError(-32602, f"Invalid params: {FETCH_TOOL} requires a string argument 'url'")
            self.calls.append(f"tools/call {FETCH_TOOL} {url}")
            self._wait_if_held()
            if not is_learn_url(url):
                text = NOT_LEARN_REFUSAL
            else:
                page = self.pages().get(normalise_learn_url(url))
                text = page.body if page is not None else missing_page_text(url)
        elif name == SEARCH_TOOL:
            query = arguments.get("query")
            if not isinstance(query, str):
                raise ToolError(-32602, f"Invalid params: {SEARCH_TOOL} requires a string argument 'query'")
            self.calls.append(f"tools/call {SEARCH_TOOL} {query}")
            text = search_text(self.pages(), query)
        else:
            raise ToolError(-32602, f"Unknown tool: '{name}'")
        return {"content": [{"type": "text", "text": text}]}

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one JSON-RPC request after the handshake."""
        if method == "tools/list":
            self.calls.append(method)
            return {"tools": TOOLS}
        if method == "tools/call":
            return self.call_tool(params)
        if method == "ping":
            return {}
        raise ToolError(-32601, f"Method not found: {method}")


def _request_key(body: bytes) -> str:
    """What makes two requests "the same request" for `flaky`: the body without its JSON-RPC id."""
    try:
        message = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return hashlib.sha256(body).hexdigest()
    if isinstance(message, dict):
        message.pop("id", None)
    return hashlib.sha256(json.dumps(message, sort_keys=True).encode("utf-8")).hexdigest()


def _error_body(code: int, message: str) -> str:
    """A JSON-RPC error outside any request (the C# SDK's shape and key order)."""
    return dotnet_json({"error": {"code": code, "message": message}, "id": "", "jsonrpc": "2.0"})


def _accepts_json_and_sse(accept: str | None) -> bool:
    types = {part.split(";")[0].strip().lower() for part in (accept or "").split(",")}
    return "application/json" in types and "text/event-stream" in types


class LearnHandler(StandInHandler):
    """MCP Streamable HTTP as Learn speaks it: POST only, one SSE event per request reply, .NET JSON."""

    stand_in = "learn"

    @property
    def app(self) -> LearnApp:
        return self.server.app  # type: ignore[no-any-return]

    def _on_endpoint(self) -> bool:
        if urlsplit(self.path).path.rstrip("/") == ENDPOINT_PATH:
            return True
        self.reply(404, "Not Found: the Learn stand-in serves MCP at /api/mcp\n", "text/plain; charset=utf-8")
        return False

    def _note(self, rpc_method: str | None, status: int) -> None:
        self.app.requests.append(LearnRequest(
            self.command, rpc_method, status, self.headers.get(SESSION_HEADER), self.headers.get(PROTOCOL_VERSION_HEADER),
            self.headers.get("Cookie")))

    def _answer(self, rpc_method: str | None, status: int, body: str = "", content_type: str | None = None,
                headers: dict[str, str] | None = None) -> None:
        self._note(rpc_method, status)
        ref = hashlib.sha256(f"{self.command} {body}".encode()).hexdigest()[:32].upper()
        self.reply(status, body, content_type, {**RESPONSE_HEADERS, "x-azure-ref": f"0{ref}", **(headers or {})})

    def _json_error(self, rpc_method: str | None, status: int, code: int, message: str) -> None:
        self._answer(rpc_method, status, _error_body(code, message), "application/json; charset=utf-8")

    def _sse(self, rpc_method: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._answer(rpc_method, 200, dotnet_sse(payload), "text/event-stream",
                     {"content-encoding": "identity", **(headers or {})})

    def _not_allowed(self) -> None:
        self._answer(None, 405, "", None, {"Allow": "POST"})

    def do_GET(self) -> None:
        if self._on_endpoint():
            self._not_allowed()

    def do_PUT(self) -> None:
        self.do_GET()

    def do_DELETE(self) -> None:
        """Like the real (stateless) server: 405. With strict sessions: end the session (200), or 404."""
        if not self._on_endpoint():
            return
        if not self.app.strict_sessions:
            return self._not_allowed()
        session = self.headers.get(SESSION_HEADER)
        if session is None or not self.app.has_session(session):
            return self._json_error(None, 404, -32001, "Session not found")
        self.app.close_session(session)
        self.app.calls.append("DELETE")
        self._answer(None, 200)

    def do_POST(self) -> None:
        if not self._on_endpoint():
            return
        body = self.read_body()
        try:
            message = json.loads(body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            message = None
        method = message.get("method") if isinstance(message, dict) else None
        rpc_method = method if isinstance(method, str) else None
        if not _accepts_json_and_sse(self.headers.get("Accept")):
            return self._json_error(rpc_method, 406, -32000,
                                    "Not Acceptable: Client must accept both application/json and text/event-stream")
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return self._json_error(None, 400, -32000, "Bad Request: The POST body did not contain a valid JSON-RPC message.")
        failure = self.app.planned_failure(rpc_method, body)
        if failure is not None:
            self._note(rpc_method, failure.status)
            return self.reply(failure.status, f"{TRANSIENT_STATUSES[failure.status]} (judge-replay Learn stand-in: "
                              "a planned transient failure)\n", "text/plain; charset=utf-8",
                              {"retry-after": failure.retry_after})
        version = self.headers.get(PROTOCOL_VERSION_HEADER)
        if version is not None and version not in SUPPORTED_PROTOCOLS:
            return self._json_error(rpc_method, 400, -32000, "Bad Request: The MCP-Protocol-Version header contains "
                                    f"an unsupported version '{version}' (supported: {', '.join(SUPPORTED_PROTOCOLS)})")
        if rpc_method == "initialize":
            return self._initialize(message)
        if self.app.strict_sessions:
            session = self.headers.get(SESSION_HEADER)
            if not session:
                return self._json_error(rpc_method, 400, -32000, "Bad Request: Mcp-Session-Id header is required")
            if not self.app.has_session(session):
                return self._json_error(rpc_method, 404, -32001, "Session not found")
        if "id" not in message or rpc_method is None:
            return self._answer(rpc_method, 202)  # a notification, or a reply from the client
        params = _object(message.get("params"))
        try:
            result = self.app.answer(rpc_method, params)
        except ToolError as err:
            return self._sse(rpc_method, {"error": {"code": err.code, "message": err.message}, "jsonrpc": "2.0",
                                          "id": message["id"]})
        except InputError as err:  # the page folder was changed into something unreadable
            return self._sse(rpc_method, {"error": {"code": -32603, "message": str(err)}, "jsonrpc": "2.0",
                                          "id": message["id"]})
        except HeldFailure as held:
            if held.outcome == "drop":
                self.close_connection = True
                return self._note(rpc_method, 0)
            status = int(held.outcome or 503)
            self._note(rpc_method, status)
            return self.reply(status, f"{TRANSIENT_STATUSES[status]} (judge-replay Learn stand-in: a planned "
                              "failure of a held fetch)\n", "text/plain; charset=utf-8", {"retry-after": "0"})
        self._sse(rpc_method, {"result": result, "jsonrpc": "2.0", "id": message["id"]})

    def _initialize(self, message: dict[str, Any]) -> None:
        params = _object(message.get("params"))
        client_info = params.get("clientInfo")
        if not isinstance(client_info, dict):
            # the real server's answer to an `initialize` without clientInfo: .NET's deserialisation error
            self._note("initialize", 500)
            return self.reply(500, "System.Text.Json.JsonException: JSON deserialization for type "
                              "'ModelContextProtocol.Protocol.InitializeRequestParams' was missing required "
                              "properties including: 'clientInfo'.\n", "text/plain; charset=utf-8")
        asked = params.get("protocolVersion")
        version = asked if asked in SUPPORTED_PROTOCOLS else LATEST_PROTOCOL
        session = self.app.open_session(client_info)
        self.app.calls.append("initialize")
        result: dict[str, Any] = {"protocolVersion": version, "capabilities": {}, "serverInfo": SERVER_INFO}
        self._sse("initialize", {"result": result, "jsonrpc": "2.0", "id": message.get("id")},
                  {SESSION_HEADER: session})


HOLD_LIMIT = 60.0
"""Longest a held fetch waits for `release_fetches()` (seconds): a test that forgets cannot hang."""


class LearnStandIn(StandIn):
    """A running Learn stand-in; `url` is the full MCP endpoint URL."""

    def __init__(self, server: StandInServer, url: str) -> None:
        super().__init__(server, url)
        self.app: LearnApp = server.app

    @property
    def pages_dir(self) -> Path:
        return self.app.folder

    @property
    def calls(self) -> list[str]:
        """Every MCP call served, in order (`initialize`, `tools/list`, `tools/call <tool> <arg>`, `DELETE`)."""
        return self.app.calls

    @property
    def requests(self) -> list[LearnRequest]:
        """Every HTTP request answered, in order, failures and refusals included."""
        return self.app.requests

    def set_pages(self, pages_dir: Path) -> None:
        """Serve another folder of pages from now on (raises InputError if it is malformed)."""
        self.app.set_pages(pages_dir)

    def expire_sessions(self) -> None:
        """Forget every session and require one from now on (strict sessions): the next request of each
        client gets 404 "Session not found", as when a stateful server's sessions expire."""
        self.app.expire_sessions()

    def hold_fetches(self) -> None:
        """Hold every `microsoft_docs_fetch` from now on (counted in `calls`, its reply not sent) until
        `release_fetches()`: lets a test make fetches overlap."""
        self.app.hold_fetches()

    def release_fetches(self, outcome: HeldOutcome = None) -> None:
        """End the held fetches (answered, or failed as `outcome` says: "error" a JSON-RPC error reply,
        "drop" the connection closed without a reply, 503 that status); later fetches are answered at once."""
        self.app.release_fetches(outcome)

    @property
    def held_fetches(self) -> int:
        """How many fetches are held now."""
        return self.app.held

    @property
    def fetches(self) -> list[str]:
        """The URL of every `microsoft_docs_fetch` served (planned failures are not), in order."""
        prefix = f"tools/call {FETCH_TOOL} "
        return [call[len(prefix):] for call in list(self.app.calls) if call.startswith(prefix)]

    def fail_next(self, count: int = 1, status: int = 503, *, method: str | None = "tools/call",
                  retry_after: str = "0", about: str = "") -> None:
        """Make the next `count` requests of JSON-RPC `method` (None: any POST) whose body holds `about`
        (a page's URL, say) fail with `status` (408, 429 or 5xx) and `retry-after`, as the CDN in front of
        Learn does now and then."""
        self.app.plan_failures(count, status, method, retry_after, about)

    def stop_failing(self) -> None:
        """Drop every failure `fail_next` planned that has not happened yet."""
        self.app.clear_failures()


def start_learn(pages_dir: Path, port: int = 0, *, log: Log | None = None, strict_sessions: bool = False,
                fail_first: int = 0, fail_status: int = 503, flaky: bool = False) -> LearnStandIn:
    """Serve the pages under `pages_dir` on 127.0.0.1:`port` (0: any free port) in a daemon thread.

    Like the real server, sessions are issued but not required; `strict_sessions` requires them (a
    missing one gets 400, an unknown or expired one 404, DELETE ends one). `fail_first` N: the first N
    `tools/call` requests get `fail_status` with `retry-after: 0`; `flaky`: the first attempt of each
    distinct tool call (its body without the JSON-RPC id) gets 503. Raises InputError, naming the file,
    when the folder or a page in it is malformed.
    """
    app = LearnApp(Path(pages_dir), strict_sessions=strict_sessions, flaky=flaky)
    if fail_first:
        app.plan_failures(fail_first, fail_status, "tools/call", "0")
    server = StandInServer(port, LearnHandler, app, log)
    return LearnStandIn(server, f"http://127.0.0.1:{server.server_address[1]}{ENDPOINT_PATH}")
