"""The transports a conversation's anthropic client sends through: the SDK's own network (direct mode),
the batch rounds (batch mode), and the `--max-cost` budget in front of the network (direct mode). Each is
the `inner` of the conversation's recording transport when a recorder is open (`replay.recording.
transport`), which keeps the exchanges as they come out of these."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx2

from replay.core.budget import CostBudget, usage_from_response
from replay.judge.batches.answers import budget_answer, error_answer
from replay.judge.batches.rounds import BatchRounds


def _answer(status: int, headers: dict[str, str], content: bytes) -> httpx2.Response:
    """A response made here, with exactly these headers (none added) and this body."""
    return httpx2.Response(status, headers=list(headers.items()), stream=httpx2.ByteStream(content))


def _path(request: httpx2.Request) -> str:
    """The request's path as sent, without the query."""
    return request.url.raw_path.decode("ascii", "replace").split("?")[0]


def _is_messages(request: httpx2.Request) -> bool:
    return request.method == "POST" and _path(request).endswith("/v1/messages")


def _decoded(response: httpx2.Response, content: bytes) -> bytes:
    """A response body as the client reads it: `content` as it came, its `content-encoding` undone."""
    return httpx2.Response(response.status_code, headers=response.headers, content=content).content


class SdkNetwork(httpx2.BaseTransport):
    """The network as the anthropic SDK reaches it: through the client `anthropic.DefaultHttpxClient`
    builds (its connection pool, TLS settings, socket keep-alive, proxies from the environment), made on
    the first request (a replay answers every one from its cassette and never makes it)."""

    def __init__(self, **client_options: Any) -> None:
        self._options = client_options
        self._client: httpx2.Client | None = None

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._client is None:
            self._client = anthropic.DefaultHttpxClient(follow_redirects=False, **self._options)
        return self._client.send(request, stream=True)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


class _RoundsTransport(httpx2.BaseTransport):
    """The anthropic client's transport in batch mode: a Messages request waits for its round and gets
    the batch result (or the entry's error) as its response."""

    def __init__(self, rounds: BatchRounds, claims_file: str) -> None:
        self._rounds = rounds
        self._claims_file = claims_file

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        if not _is_messages(request):
            return _answer(*error_answer(404, "not_found_error", f"batch mode sends only Messages requests, not "
                                         f"{request.method} {_path(request)}"))
        return _answer(*self._rounds.ask(self._claims_file, json.loads(body)))


class _BudgetTransport(httpx2.BaseTransport):
    """`--max-cost` in direct mode: lets a Messages request through to `inner` only when its estimated
    cost fits the budget, and books what the response was billed. A refused request gets `budget_answer`
    (recorded like any answer, so a replay reproduces the file's error)."""

    def __init__(self, budget: CostBudget, inner: httpx2.BaseTransport) -> None:
        self._budget = budget
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if not _is_messages(request):
            return self._inner.handle_request(request)
        body = request.read()
        try:
            max_tokens = int(json.loads(body).get("max_tokens") or 0)
        except (ValueError, AttributeError):
            max_tokens = 0
        reserved = self._budget.estimate(len(body), max_tokens, cache=b'"cache_control"' in body, batch=False)
        if not self._budget.admit(reserved, "the next model call"):
            return _answer(*budget_answer(self._budget))
        try:
            response = self._inner.handle_request(request)
            try:
                content = b"".join(response.iter_raw())  # as it came: the client decodes it
            finally:
                response.close()
        except BaseException:
            self._budget.release(reserved)
            raise
        try:
            reported = json.loads(_decoded(response, content)).get("usage") if response.status_code == 200 else None
        except (ValueError, AttributeError, httpx2.DecodingError):
            reported = None
        if reported is not None:
            self._budget.charge(usage_from_response(reported), reserved, batch=False)
        else:
            self._budget.release(reserved)
        return httpx2.Response(response.status_code, headers=response.headers, stream=httpx2.ByteStream(content),
                               extensions={k: v for k, v in response.extensions.items() if k != "network_stream"})

    def close(self) -> None:
        self._inner.close()
