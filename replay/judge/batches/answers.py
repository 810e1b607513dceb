"""What a batch-mode request gets back, as an HTTP answer: a batch entry's error, a batch API failure, or
`--max-cost` refusing it."""

from __future__ import annotations

import json
from typing import Any

import anthropic

from replay.core.budget import CostBudget
from replay.judge.batches.journal import BatchJournal

_Answer = tuple[int, dict[str, str], bytes]
"""An HTTP answer to a waiting request: status, headers, body."""
_STATUS_OF_ERROR = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
                    "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
                    "api_error": 500, "overloaded_error": 529}


def _succeeded(result: dict[str, Any] | None) -> bool:
    return bool(result) and result.get("type") == "succeeded" and isinstance(result.get("message"), dict)  # type: ignore[union-attr]


def _error_answer(status: int, error_type: str, message: str) -> _Answer:
    """An API error response that the SDK raises at once (`x-should-retry: false`): the rounds retried it."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return status, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(body).encode("utf-8")


def budget_answer(budget: CostBudget) -> _Answer:
    """The answer to a request `--max-cost` stopped before it was sent: an error that is not retried."""
    return _error_answer(400, "max_cost_reached", f"not sent: {budget.refused}")


def _api_failure(exc: anthropic.APIError, journal: BatchJournal) -> tuple[int, str, str]:
    """A failed batch API call (create, poll, results) as the error every request of the round gets."""
    kept = " (the batches submitted so far are kept: --resume continues from them)" if journal.path else ""
    if isinstance(exc, anthropic.APIStatusError):
        return (exc.status_code, exc.type or "api_error",
                f"the Message Batches API failed: {exc.api_message or exc.message}{kept}")
    return 502, "api_error", f"the Message Batches API could not be reached: {exc.message}{kept}"
