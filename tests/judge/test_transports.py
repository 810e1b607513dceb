"""The transports a conversation's anthropic client sends through, on their own: the `--max-cost` budget
in front of a real server on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx2
import pytest

from factories import LocalServer
from replay.core.budget import CostBudget, usage_from_response
from replay.judge.batches.transports import _BudgetTransport

MODEL = "claude-opus-5"
USAGE = {"input_tokens": 1000, "output_tokens": 200}


@pytest.mark.parametrize("encoding", ["gzip", None])
def test_the_budget_books_what_a_compressed_answer_was_billed(encoding: str | None) -> None:
    reply = json.dumps({"type": "message", "content": [], "stop_reason": "end_turn", "usage": USAGE}).encode()

    def respond(body: Any) -> tuple[int, dict[str, str], bytes]:
        if encoding:
            return 200, {"content-type": "application/json", "content-encoding": encoding}, gzip.compress(reply, mtime=0)
        return 200, {"content-type": "application/json"}, reply

    server = LocalServer(respond)
    budget = CostBudget(10.0, MODEL)
    try:
        with httpx2.Client(transport=_BudgetTransport(budget, httpx2.HTTPTransport())) as client:
            answer = client.post(server.url + "/v1/messages", json={"model": MODEL, "max_tokens": 100, "messages": []})
    finally:
        server.stop()
    assert answer.json()["usage"] == USAGE  # the client still reads the body as it came, decoded
    reference = CostBudget(10.0, MODEL)
    reference.charge(usage_from_response(USAGE), 0.0, batch=False)
    assert budget.spent_usd == reference.spent_usd > 0 and budget.reserved_usd == 0
