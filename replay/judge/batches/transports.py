"""The HTTP transports of batch mode and of `--max-cost` in direct mode."""

from __future__ import annotations

import inspect
import json
from typing import Any

import httpcore2
import httpx2

from replay.core.budget import CostBudget, usage_from_response
from replay.judge.batches.answers import budget_answer, error_answer
from replay.judge.batches.rounds import BatchRounds


class _BatchApiTransport(httpx2.HTTPTransport):
    """The transport of the batch API calls (create, polls, results): straight to the network, past the
    recorder's patch of `HTTPTransport.handle_request` (vcrpy's stubs keep the original as
    `__wrapped__`), so that no cassette and no run counter holds them: they belong to no conversation,
    and a replay must not depend on how many polls a batch took."""

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        network: Any = inspect.unwrap(httpx2.HTTPTransport.handle_request)
        return network(self, request)  # type: ignore[no-any-return]


class _RoundsConnection:
    """Where a batch-mode request goes instead of a socket: httpcore2's request interface
    (`handle_request`, `close`), answered by the rounds."""

    def __init__(self, rounds: BatchRounds, claims_file: str) -> None:
        self._rounds = rounds
        self._claims_file = claims_file

    def handle_request(self, request: httpcore2.Request) -> httpcore2.Response:
        body = b"".join(request.stream)  # type: ignore[arg-type]
        path = request.url.target.decode("ascii", "replace").split("?")[0]
        if request.method != b"POST" or not path.endswith("/v1/messages"):
            answer = error_answer(404, "not_found_error", f"batch mode sends only Messages requests, not "
                                   f"{request.method.decode()} {path}")
        else:
            answer = self._rounds.ask(self._claims_file, json.loads(body))
        status, headers, content = answer
        return httpcore2.Response(status, headers=list(headers.items()), content=content)

    def close(self) -> None:
        pass


class _BatchedTransport(httpx2.HTTPTransport):
    """The anthropic client's transport in batch mode: an `HTTPTransport`, the kind the recorder records
    like the network's, whose connection pool is the rounds: the cassette gets the request as sent and
    the batch result as its response."""

    def __init__(self, rounds: BatchRounds, claims_file: str) -> None:
        super().__init__()
        self._pool.close()
        self._pool = _RoundsConnection(rounds, claims_file)  # type: ignore[assignment]


class _BudgetedConnection:
    """`--max-cost` in direct mode: the connection pool of a conversation's transport, which lets a
    Messages request through only when its estimated cost fits the budget, and books what the response
    was billed. A refused request gets `budget_answer` (recorded like any answer, so a replay reproduces
    the file's error)."""

    def __init__(self, pool: Any, budget: CostBudget) -> None:
        self._pool = pool
        self._budget = budget

    def handle_request(self, request: httpcore2.Request) -> httpcore2.Response:
        path = request.url.target.decode("ascii", "replace").split("?")[0]
        if request.method != b"POST" or not path.endswith("/v1/messages"):
            return self._pool.handle_request(request)  # type: ignore[no-any-return]
        body = b"".join(request.stream)  # type: ignore[arg-type]
        try:
            max_tokens = int(json.loads(body).get("max_tokens") or 0)
        except (ValueError, AttributeError):
            max_tokens = 0
        reserved = self._budget.estimate(len(body), max_tokens, cache=b'"cache_control"' in body, batch=False)
        if not self._budget.admit(reserved, "the next model call"):
            status, headers, content = budget_answer(self._budget)
            return httpcore2.Response(status, headers=list(headers.items()), content=content)
        try:
            response = self._pool.handle_request(httpcore2.Request(request.method, request.url, headers=request.headers,
                                                                   content=body, extensions=request.extensions))
            content = response.read()
            response.close()
        except BaseException:
            self._budget.release(reserved)
            raise
        try:
            reported = json.loads(content).get("usage") if response.status == 200 else None
        except (ValueError, AttributeError):
            reported = None
        if reported is not None:
            self._budget.charge(usage_from_response(reported), reserved, batch=False)
        else:
            self._budget.release(reserved)
        return httpcore2.Response(response.status, headers=response.headers, content=content,
                                  extensions={k: v for k, v in response.extensions.items() if k != "network_stream"})

    def close(self) -> None:
        self._pool.close()


class _BudgetedTransport(httpx2.HTTPTransport):
    """A direct conversation's transport under `--max-cost` (see `_BudgetedConnection`)."""

    def __init__(self, budget: CostBudget, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pool = _BudgetedConnection(self._pool, budget)  # type: ignore[assignment]
