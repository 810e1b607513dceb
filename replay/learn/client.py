"""A thin Learn MCP client over httpx: the 2025 handshake, tool calls, retries of transient failures, one
re-initialisation on session loss, the session ended on close (a run's clients share their connections
and end their sessions together: `LearnSessions`)."""

from __future__ import annotations

import json
import math
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import cache
from http.cookiejar import CookieJar, DefaultCookiePolicy
from importlib import metadata
from typing import Any, NamedTuple

import httpx

from replay.errors import LearnError
from replay.learn.wire import (
    FETCH_TOOL,
    PROTOCOL_VERSION,
    PROTOCOL_VERSION_HEADER,
    SEARCH_TOOL,
    SESSION_HEADER,
    STAND_IN_HEADER,
    SUPPORTED_PROTOCOL_VERSIONS,
    is_missing_page,
    parse_jsonrpc_reply,
    search_result_urls,
    tool_result_text,
)
from replay.secrets.excerpts import excerpt

"""Every reply of our local stand-ins carries this header: test equipment, never the real service."""
_ACCEPT = "application/json, text/event-stream"
_SESSION_STATUSES = (400, 401, 403)
MAX_RETRIES = 3
"""Retries of a transient failure (408, 429, 5xx, a reset connection, a timeout), as the model SDK does."""
_MAX_BACKOFF = 30.0


class LearnUnreachable(LearnError):
    """The endpoint could not be reached, or kept failing transiently (408, 429, 5xx) after the retries:
    the environment failed, not the input (exit 1, as for a model endpoint that is down)."""

    exit_code = 1


class LearnToolError(LearnError):
    """A tool call the endpoint answered with an error (bad arguments, tool failure): the judge is told,
    the conversation goes on."""


@dataclass(frozen=True)
class FetchResult:
    """What `microsoft_docs_fetch` returned for one URL."""

    url: str
    text: str | None
    """The page markdown; None when the endpoint said the page could not be retrieved."""
    missing: bool
    raw: str = ""
    """The tool's text exactly as returned (the "could not be retrieved" message for a missing page)."""


@dataclass(frozen=True)
class SearchResult:
    """What `microsoft_docs_search` returned: the raw JSON text and its `contentUrl`s in rank order."""

    text: str
    urls: list[str]


@cache
def shared_ssl_context() -> ssl.SSLContext:
    """One verified TLS context for every client of the process: building one costs ~0.2 s of CPU."""
    return httpx.create_ssl_context()


@cache
def _client_version() -> str:
    """This package's version, as `initialize` names the client (read once: a metadata look-up costs
    more than the handshake itself)."""
    try:
        return metadata.version("judge-replay")
    except metadata.PackageNotFoundError:  # pragma: no cover - only when run from a bare checkout
        return "0"


def _http_client(timeout: float, connections: int | None = None) -> httpx.Client:
    """An HTTP client for Learn requests, keeping no cookie (the endpoint's CDN sets one; a client that
    shares its connections with other conversations must not send one conversation's in another, and
    a session of its own needs none); `connections`: at most this many, and waiting for one of them is
    no failure."""
    no_cookies = _no_cookies()
    if connections is None:
        return httpx.Client(timeout=timeout, cookies=no_cookies, verify=shared_ssl_context())
    return httpx.Client(timeout=httpx.Timeout(timeout, pool=None), cookies=no_cookies, verify=shared_ssl_context(),
                        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections))


def _no_cookies() -> CookieJar:
    return CookieJar(DefaultCookiePolicy(allowed_domains=[]))


def _http_client_on(transport: httpx.BaseTransport, timeout: httpx.Timeout) -> httpx.Client:
    """An HTTP client for Learn requests that sends through `transport`, keeping no cookie (as
    `_http_client`)."""
    return httpx.Client(transport=transport, timeout=timeout, cookies=_no_cookies())


class _Session(NamedTuple):
    """A session to end: the endpoint, and the headers that name the session (`LearnClient._headers`)."""

    url: str
    headers: dict[str, str]


def _end_session(http: httpx.Client, session: _Session) -> bool:
    """`DELETE` the session (the spec's way to end one); whether the server ended it (or knew it no
    more). A server that ends no session (the real, stateless one answers 405) or does not answer says
    so for every session: a failure here changes nothing for the run."""
    try:
        status = http.delete(session.url, headers=session.headers, timeout=5.0).status_code
    except httpx.HTTPError:
        return False
    return 200 <= status < 300 or status == 404


class _SessionLost(Exception):
    """The endpoint no longer knows our session: re-initialise and repeat the request once."""


class LearnClient:
    """A Learn MCP client that speaks only what the judge needs: POST, JSON or single-event SSE replies.

    Pass `http` to use your own `httpx.Client` (the caller then owns it); otherwise one is created and
    closed with the client. JSON-RPC ids count from 1 per client, so a conversation's requests are
    the same on every run. A transient failure is retried up to `max_retries` times (0 in replay, which
    never sleeps), after the server's `retry-after` or a doubling back-off. `end_session`: `close()`
    ends the session with a `DELETE`, as the MCP spec asks (never in replay: it is not recorded).
    """

    def __init__(self, url: str, http: httpx.Client | None = None, *, timeout: float = 60.0,
                 max_retries: int = MAX_RETRIES, end_session: bool = True,
                 sleep: Callable[[float], None] = time.sleep, shown_url: str | None = None) -> None:
        self.url = url
        self.shown_url = shown_url or url
        """The endpoint as error messages name it (a run's results keep the form run.json stores, so that
        a replay, which answers for that form, reproduces them)."""
        self._http = http or _http_client(timeout)
        self._owns_http = http is None
        self._next_id = 1
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        """The MCP revision the server answered `initialize` with; sent on every later request."""
        self._initialized = False
        self.server_info: dict[str, Any] = {}
        self.stand_in = False
        """True once any reply carried the stand-in header."""
        self.reinitialisations = 0
        self.max_retries = max_retries
        self.retries = 0
        """Requests sent again after a transient failure."""
        self._end_session = end_session
        self._sleep = sleep

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> LearnClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            session = self._hand_over_session()
            if session is not None:
                _end_session(self._http, session)
        finally:
            if self._owns_http:
                self._http.close()

    def _hand_over_session(self) -> _Session | None:
        """The session to end, which this client then no longer sends (None: nothing to end)."""
        session = _Session(self.url, self._headers()) if self._end_session and self.session_id else None
        self.session_id = None
        return session

    # ------------------------------------------------------------------ public calls

    def initialize(self) -> dict[str, Any]:
        """The handshake: `initialize`, keep the session id, then `notifications/initialized`."""
        self.session_id = None
        self.protocol_version = None
        self._initialized = False
        result = self._request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "judge-replay", "version": _client_version()},
            },
        )
        version = result.get("protocolVersion")
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise LearnError(
                f"the Learn MCP endpoint at {self.shown_url} speaks MCP protocol version {version!r}, which judge-replay "
                f"does not (it speaks {', '.join(SUPPORTED_PROTOCOL_VERSIONS)}); upgrade judge-replay or use "
                "another endpoint"
            )
        self.protocol_version = version if isinstance(version, str) else PROTOCOL_VERSION
        self.server_info = result
        self._notify("notifications/initialized")
        self._initialized = True
        return result

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """The text of a `tools/call` result; a tool-level error raises LearnToolError."""
        result = self._request("tools/call", {"name": name, "arguments": arguments})
        text, is_error = self._tool_result(name, result)
        if is_error:
            raise LearnToolError(f"the Learn tool {name} failed: {text or '(no message)'}")
        return text

    def list_tools(self) -> list[dict[str, Any]]:
        result = self._request("tools/list", {})
        tools = result.get("tools")
        return tools if isinstance(tools, list) else []

    def fetch(self, url: str) -> FetchResult:
        """The page at `url`; `text` is None when the reply is no page (`learn.wire.is_missing_page`). A tool
        error (`isError`) raises LearnToolError, whose message the judge reads."""
        text = self.call_tool(FETCH_TOOL, {"url": url})
        if is_missing_page(text):
            return FetchResult(url, None, True, text)
        return FetchResult(url, text, False, text)

    def search(self, query: str) -> SearchResult:
        text = self.call_tool(SEARCH_TOOL, {"query": query})
        return SearchResult(text, search_result_urls(text))

    # ------------------------------------------------------------------ wire

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if not self._initialized and method != "initialize":
            self.initialize()
        try:
            return self._request_once(method, params)
        except _SessionLost:
            pass  # only raised when we sent a session id, so never by `initialize` itself
        self.reinitialisations += 1
        self.initialize()
        try:
            return self._request_once(method, params)
        except _SessionLost as lost:
            raise LearnError(
                f"the Learn MCP endpoint at {self.shown_url} lost the session again right after re-initialising: {lost}"
            ) from None

    def _request_once(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rpc_id = self._next_id
        self._next_id += 1
        response = self._post({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})
        body = response.text
        if self.session_id and (
            response.status_code == 404
            or (response.status_code in _SESSION_STATUSES and "session" in body.lower())
        ):
            raise _SessionLost(f"HTTP {response.status_code} {_snippet(body)}")
        if response.status_code >= 400:
            failed = LearnUnreachable if _is_transient(response.status_code) else LearnError
            raise failed(
                f"the Learn MCP endpoint at {self.shown_url} answered {method} with HTTP {response.status_code}: "
                f"{_snippet(body)}"
            )
        message = self._reply_message(body, response.headers.get("content-type"), rpc_id, method)
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {"message": str(message["error"])}
            text = str(error.get("message", ""))
            if "session" in text.lower() and self.session_id:
                raise _SessionLost(text)
            detail = f"JSON-RPC error {error.get('code')}: {text}"
            if method == "tools/call":
                raise LearnToolError(f"the Learn tool {params.get('name')} failed: {detail}")
            raise LearnError(f"the Learn MCP endpoint at {self.shown_url} answered {method} with {detail}")
        result = message.get("result")
        if not isinstance(result, dict):
            raise LearnError(f"the Learn MCP endpoint at {self.shown_url} sent a {method} reply with no result object")
        if method == "initialize":
            session = response.headers.get(SESSION_HEADER)
            self.session_id = session  # None: a stateless server, which is fine
        return result

    def _tool_result(self, name: str, result: dict[str, Any]) -> tuple[str, bool]:
        """(text, isError) of a `tools/call` result, its shape checked (`learn.wire.tool_result_text`)."""
        try:
            return tool_result_text({"result": result})
        except ValueError as exc:
            raise LearnError(f"malformed reply from {self.shown_url} to tools/call {name}: {exc}") from None

    def _notify(self, method: str) -> None:
        response = self._post({"jsonrpc": "2.0", "method": method})
        if response.status_code not in (200, 202, 204):
            raise LearnError(
                f"the Learn MCP endpoint at {self.shown_url} answered {method} with HTTP {response.status_code}: "
                f"{_snippet(response.text)}"
            )

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": _ACCEPT}
        if self.session_id:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version:
            headers[PROTOCOL_VERSION_HEADER] = self.protocol_version
        return headers

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        """POST one message; transient failures are retried (the same bytes again: a recording drops
        the failed attempt when it sees the retry)."""
        content = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        attempt = 0
        while True:
            try:
                response = self._http.post(self.url, content=content, headers=self._headers())
            except httpx.TransportError as exc:
                if attempt < self.max_retries and not isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol)):
                    attempt += 1
                    self._back_off(attempt, None)
                    continue
                raise LearnUnreachable(f"cannot reach the Learn MCP endpoint at {self.shown_url}: {exc or type(exc).__name__}") from exc
            except httpx.HTTPError as exc:
                raise LearnError(f"the request to the Learn MCP endpoint at {self.shown_url} failed: {exc}") from exc
            if response.headers.get(STAND_IN_HEADER):
                self.stand_in = True
            if _is_transient(response.status_code) and attempt < self.max_retries:
                attempt += 1
                self._back_off(attempt, response.headers.get("retry-after"))
                continue
            return response

    def _back_off(self, attempt: int, retry_after: str | None) -> None:
        self.retries += 1
        self._sleep(_retry_delay(attempt, retry_after))

    def _reply_message(self, body: str, content_type: str | None, rpc_id: int, method: str) -> dict[str, Any]:
        """The JSON-RPC reply to `rpc_id`, skipping any notification sent before it on the same stream."""
        chunks = [body]
        if "text/event-stream" in (content_type or "").lower():
            chunks = [c for c in body.replace("\r\n", "\n").split("\n\n") if "data:" in c] or [body]
        for chunk in chunks:
            try:
                message = parse_jsonrpc_reply(chunk, content_type)
            except ValueError as exc:  # also a JSON error, an oversized number, a lone surrogate, deep nesting
                raise LearnError(
                    f"malformed reply from {self.shown_url} to {method}: {exc}: {_snippet(body)}") from None
            if message.get("id") == rpc_id or ("id" not in message and "error" in message):
                return message
            if "method" not in message and ("result" in message or "error" in message):
                return message  # a reply under another id (a replayed recording): still the answer
        raise LearnError(f"the Learn MCP endpoint at {self.shown_url} sent no reply to {method}: {_snippet(body)}")


def _is_transient(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _retry_delay(attempt: int, retry_after: str | None) -> float:
    """Seconds to wait before retry number `attempt`: the server's `retry-after` (seconds or an HTTP
    date), else 0.5 s doubling; never more than 30 s."""
    if retry_after:
        try:
            seconds = float(retry_after)
            if not math.isnan(seconds):  # "nan" parses as a float: ignored, like any other nonsense
                return min(max(seconds, 0.0), _MAX_BACKOFF)
        except ValueError:
            try:
                return min(max(parsedate_to_datetime(retry_after).timestamp() - time.time(), 0.0), _MAX_BACKOFF)
            except (TypeError, ValueError):
                pass
    return float(min(0.5 * 2 ** (attempt - 1), 8.0))


def _snippet(text: str, limit: int = 200) -> str:
    """The start of a reply body for an error text, the same live and in replay: a JSON body in one
    normal form (a cassette stores it re-indented), whitespace folded."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            normal = json.dumps(json.loads(text), ensure_ascii=False)
            normal.encode("utf-8")  # a lone surrogate escape stays as sent
            text = normal
        except (ValueError, RecursionError):
            pass
    return excerpt(" ".join(text.split()), limit, mark="...")
