"""The HTTP plumbing both stand-ins share: a threaded 127.0.0.1 server, exact replies, and the handle."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from replay.learn.wire import STAND_IN_HEADER

Log = Callable[[str], None]


class StandInServer(ThreadingHTTPServer):
    """A threaded HTTP server on 127.0.0.1 whose handlers reach the stand-in's state via `self.app`."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int, handler: type[BaseHTTPRequestHandler], app: Any, log: Log | None) -> None:
        self.app = app
        self.log = log
        super().__init__(("127.0.0.1", port), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away before its answer was written (killed, timed out) is what a real server
        sees every day, not an error to print a traceback for; anything else is printed as socketserver does."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class StandInHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; every reply has an exact Content-Length and names the stand-in.

    No `Date` header: two identical runs then produce byte-identical replies.
    """

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """TCP_NODELAY, as real servers set it: the headers and the body are two writes, and on a kept-alive
    connection the body would otherwise wait for the client's delayed ACK (tens of ms a reply)."""
    server_version = "judge-replay-stand-in"
    sys_version = ""
    stand_in = "?"
    server: StandInServer

    def send_response(self, code: int, message: str | None = None) -> None:
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Server", self.version_string())

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def reply(self, status: int, body: bytes | str = b"", content_type: str | None = None,
              headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header(STAND_IN_HEADER, self.stand_in)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        if self.server.log is not None:
            self.server.log(f"{self.stand_in} stand-in: {format % args}")


class StandIn:
    """A running stand-in server: its `url`, and `stop()` (also a context manager)."""

    def __init__(self, server: StandInServer, url: str) -> None:
        self.server = server
        self.url = url
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"stand-in {url}", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._thread.is_alive():
            self.server.shutdown()
            self._thread.join()
        self.server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"
