"""The Learn MCP stand-in: a folder of markdown pages served over MCP Streamable HTTP like Learn does."""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from .._errors import InputError
from .._mcp import (
    FETCH_TOOL,
    SEARCH_TOOL,
    SESSION_HEADER,
    missing_page_text,
    normalise_learn_url,
    sse_message,
)
from .._text import tokens
from ._http import Log, StandIn, StandInHandler, StandInServer

ENDPOINT_PATH = "/api/mcp"
SERVER_NAME = "judge-replay Learn stand-in (test equipment)"
SUPPORTED_PROTOCOLS = ("2025-03-26", "2025-06-18")
LATEST_PROTOCOL = "2025-06-18"
SEARCH_LIMIT = 10
SEARCH_CONTENT_CHARS = 1500
SESSION_NOT_FOUND = {"error": {"code": -32001, "message": "Session not found"}, "id": "", "jsonrpc": "2.0"}
"""The reply body of the usual MCP server (C# SDK) to an unknown or expired session, key order kept."""

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# Learn's search JSON uses .NET escaping; these characters never occur in JSON syntax, only in strings.
_DOTNET_ESCAPES = {"'": "\\u0027", "`": "\\u0060", "<": "\\u003C", ">": "\\u003E", "&": "\\u0026", "+": "\\u002B"}

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


@dataclass(frozen=True)
class Section:
    """A part of a page from one markdown heading to the next."""

    heading: str
    markdown: str
    terms: frozenset[str]


@dataclass(frozen=True)
class Page:
    """One served page: its URL (as its front matter gives it), title, body and search sections."""

    url: str
    title: str
    body: str
    path: Path
    sections: tuple[Section, ...]


def _split_sections(body: str) -> tuple[Section, ...]:
    """Cut a page at its markdown headings (not at `#` lines inside code fences)."""
    parts: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        found = None if fenced else _HEADING.match(line)
        if found:
            parts.append((found.group(2), [line]))
        else:
            parts[-1][1].append(line)
    sections = []
    for heading, lines in parts:
        markdown = "\n".join(lines).strip()
        if markdown:
            sections.append(Section(heading, markdown, frozenset(tokens(markdown))))
    return tuple(sections)


def load_page(path: Path) -> Page:
    """One page file: YAML front matter with `url:` (and optionally `title:`), then the markdown body."""
    try:
        text = path.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the page file ({exc})") from exc
    match = _FRONT_MATTER.match(text)
    if not match:
        raise InputError(path, "the page has no YAML front matter (a leading `---` block with `url:`)")
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise InputError(path, f"the front matter is not valid YAML ({' '.join(str(exc).split())})") from exc
    if not isinstance(front, dict) or not isinstance(front.get("url"), str) or not front["url"].strip():
        raise InputError(path, "the front matter has no `url:` (the Learn URL the page is served at)")
    url = front["url"].strip()
    if urlsplit(url).scheme not in ("http", "https"):
        raise InputError(path, f"the front matter `url:` is not an http(s) URL: {url!r}")
    body = text[match.end():].lstrip("\r\n")
    sections = _split_sections(body)
    title = front.get("title")
    if not isinstance(title, str) or not title.strip():
        h1 = next((s.heading for s in sections if s.markdown.startswith("# ")), "")
        title = h1 or url
    return Page(url=url, title=title.strip(), body=body, path=path, sections=sections)


def load_pages(folder: Path) -> dict[str, Page]:
    """Every `*.md` page under `folder` (any depth), by normalised URL."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "no such folder of pages" if not folder.exists() else "is not a folder")
    pages: dict[str, Page] = {}
    for path in sorted(folder.rglob("*.md")):
        page = load_page(path)
        key = normalise_learn_url(page.url)
        if key in pages:
            raise InputError(path, f"serves the same URL as {pages[key].path}: {page.url}")
        pages[key] = page
    return pages


def _folder_state(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a page file is added, removed or edited."""
    state = []
    for path in sorted(folder.rglob("*.md")) if folder.is_dir() else []:
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        state.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(state)


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
    text = json.dumps({"results": results}, ensure_ascii=True, separators=(",", ":"))
    for char, escaped in _DOTNET_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def _object(value: Any) -> dict[str, Any]:
    """A JSON-RPC `params` (or `arguments`) object; anything else counts as empty."""
    return value if isinstance(value, dict) else {}


class ToolError(Exception):
    """A JSON-RPC error reply (code, message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class LearnApp:
    """The stand-in's state: the page folder (reloaded when its files change) and the open sessions."""

    def __init__(self, pages_dir: Path) -> None:
        self._lock = threading.Lock()
        self.sessions: set[str] = set()
        self.calls: list[str] = []
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

    def open_session(self) -> str:
        session = uuid.uuid4().hex
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
            page = self.pages().get(normalise_learn_url(url))
            text = page.body if page is not None else missing_page_text(url)
        elif name == SEARCH_TOOL:
            query = arguments.get("query")
            if not isinstance(query, str):
                raise ToolError(-32602, f"Invalid params: {SEARCH_TOOL} requires a string argument 'query'")
            self.calls.append(f"tools/call {SEARCH_TOOL} {query}")
            text = search_text(self.pages(), query)
        else:
            raise ToolError(-32602, f"Unknown tool: {name}")
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


def _server_version() -> str:
    try:
        return metadata.version("judge-replay")
    except metadata.PackageNotFoundError:
        return "0"


class LearnHandler(StandInHandler):
    """MCP Streamable HTTP, as Learn speaks it: POST only, one SSE event per request reply."""

    stand_in = "learn"

    @property
    def app(self) -> LearnApp:
        return self.server.app  # type: ignore[no-any-return]

    def _on_endpoint(self) -> bool:
        if urlsplit(self.path).path.rstrip("/") == ENDPOINT_PATH:
            return True
        self.reply(404, "Not Found: the Learn stand-in serves MCP at /api/mcp\n", "text/plain; charset=utf-8")
        return False

    def _session_not_found(self) -> None:
        self.reply(404, json.dumps(SESSION_NOT_FOUND, separators=(",", ":")), "application/json")

    def _sse(self, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.reply(200, sse_message(payload), "text/event-stream", headers)

    def do_GET(self) -> None:
        if self._on_endpoint():
            self.reply(405, b"", headers={"Allow": "POST, DELETE"})

    def do_PUT(self) -> None:
        self.do_GET()

    def do_DELETE(self) -> None:
        if not self._on_endpoint():
            return
        session = self.headers.get(SESSION_HEADER)
        if not self.app.has_session(session):
            return self._session_not_found()
        assert session is not None
        self.app.close_session(session)
        self.app.calls.append("DELETE")
        self.reply(200)

    def do_POST(self) -> None:
        if not self._on_endpoint():
            return
        try:
            message = json.loads(self.read_body() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError):
            message = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            error = {"error": {"code": -32700, "message": "Parse error: expected one JSON-RPC 2.0 message"},
                     "id": "", "jsonrpc": "2.0"}
            return self.reply(400, json.dumps(error, separators=(",", ":")), "application/json")
        method = message.get("method")
        if method == "initialize":
            return self._initialize(message)
        if not self.app.has_session(self.headers.get(SESSION_HEADER)):
            return self._session_not_found()
        if "id" not in message or not isinstance(method, str):
            return self.reply(202)  # a notification, or a reply from the client
        params = _object(message.get("params"))
        try:
            result = self.app.answer(method, params)
        except ToolError as err:
            return self._sse({"error": {"code": err.code, "message": err.message}, "jsonrpc": "2.0", "id": message["id"]})
        except InputError as err:  # the page folder was changed into something unreadable
            return self._sse({"error": {"code": -32603, "message": str(err)}, "jsonrpc": "2.0", "id": message["id"]})
        self._sse({"result": result, "jsonrpc": "2.0", "id": message["id"]})

    def _initialize(self, message: dict[str, Any]) -> None:
        params = _object(message.get("params"))
        asked = params.get("protocolVersion")
        version = asked if asked in SUPPORTED_PROTOCOLS else LATEST_PROTOCOL
        session = self.app.open_session()
        self.app.calls.append("initialize")
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": SERVER_NAME, "version": _server_version()},
        }
        self._sse({"result": result, "jsonrpc": "2.0", "id": message.get("id")}, {SESSION_HEADER: session})


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

    def set_pages(self, pages_dir: Path) -> None:
        """Serve another folder of pages from now on (raises InputError if it is malformed)."""
        self.app.set_pages(pages_dir)

    def expire_sessions(self) -> None:
        """Forget every session: the next request of each client gets 404 "Session not found"."""
        self.app.expire_sessions()


def start_learn(pages_dir: Path, port: int = 0, *, log: Log | None = None) -> LearnStandIn:
    """Serve the pages under `pages_dir` on 127.0.0.1:`port` (0: any free port) in a daemon thread.

    Raises InputError, naming the file, when the folder or a page in it is malformed.
    """
    app = LearnApp(Path(pages_dir))
    server = StandInServer(port, LearnHandler, app, log)
    return LearnStandIn(server, f"http://127.0.0.1:{server.server_address[1]}{ENDPOINT_PATH}")
