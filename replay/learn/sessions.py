"""Learn MCP sessions: the HTTP client a run's Learn clients share, and the sessions ended together."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx

from replay.learn.client import MAX_RETRIES, LearnClient, _end_session, _http_client, _http_client_on

MAX_LEARN_CONNECTIONS = 32
"""Connections a run's Learn clients share at most (`LearnSessions`); more requests at once wait for one."""


class LearnSessions:
    """The Learn side of a run. Every conversation's client (`client()`: its own session and JSON-RPC
    ids) shares one pool of connections, one for each conversation that runs at once (`conversations`)
    up to `MAX_LEARN_CONNECTIONS`, so open sockets do not grow with the run (a batch run has hundreds of
    conversations waiting at once, and a system allowing 256 open files, as macOS does by default,
    stopped a run of a few hundred files); it keeps no cookie (`_http_client`). The sessions the clients
    opened are ended when the `with` block ends, in order, until the server ends one no more (`_end_
    session`): open the block around the recorder (ending a session is never recorded) and the writing
    of the run (a Ctrl-C while they end then loses nothing: it stops the ending, and the sessions are
    left to expire); it also ends those of conversations a second Ctrl-C left running."""

    def __init__(self, url: str, *, conversations: int = 1, shown_url: str | None = None,
                 max_retries: int = MAX_RETRIES, end_sessions: bool = True, timeout: float = 60.0) -> None:
        self.url, self.shown_url, self.max_retries, self.end_sessions = url, shown_url, max_retries, end_sessions
        self._http = _http_client(timeout, connections=max(1, min(conversations, MAX_LEARN_CONNECTIONS)))
        self._lock = threading.Lock()
        self._clients: list[LearnClient] = []

    def client(self, through: Callable[[httpx.BaseTransport], httpx.BaseTransport] | None = None) -> LearnClient:
        """A conversation's Learn client, on the shared connections; with `through` (the conversation's
        recording transport), on a client of its own whose transport is `through` around them."""
        http = self._http if through is None else _http_client_on(through(_Shared(self._http)), self._http.timeout)
        learn = LearnClient(self.url, http, max_retries=self.max_retries, end_session=self.end_sessions,
                            shown_url=self.shown_url)
        with self._lock:
            self._clients.append(learn)
        return learn

    @property
    def retries(self) -> int:
        """Requests the clients sent again after a transient failure."""
        with self._lock:
            return sum(learn.retries for learn in self._clients)

    def __enter__(self) -> LearnSessions:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            while self._end_sessions_held():  # again for a conversation a second Ctrl-C left opening one
                pass
        except KeyboardInterrupt:  # stop ending them; whatever the block did stands (an interruption in
            pass                   # the block itself goes on being raised)
        finally:
            self._http.close()

    def _end_sessions_held(self) -> bool:
        """End the sessions the clients hold now; whether any was (False too once the server ends none)."""
        with self._lock:
            sessions = [s for s in (learn._hand_over_session() for learn in self._clients) if s is not None]
        for session in sessions:
            if not _end_session(self._http, session):
                return False
        return bool(sessions)


class _Shared(httpx.BaseTransport):
    """The shared connections as a conversation's transport: a request goes out through the shared
    client (its pool, TLS settings, proxies from the environment); closing a conversation's client leaves
    them open (`LearnSessions` closes them)."""

    def __init__(self, http: httpx.Client) -> None:
        self._http = http

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._http.send(request, stream=True)

    def close(self) -> None:
        pass
