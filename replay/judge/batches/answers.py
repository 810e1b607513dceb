"""What a waiting batch-mode request is answered with when no message comes: the HTTP error a batch
entry's error, a failed batch API call or `--max-cost` becomes, and which entry errors resubmitting may cure."""

from __future__ import annotations

import json
from typing import Any

import anthropic

from replay.core.budget import CostBudget

Answer = tuple[int, dict[str, str], bytes]
"""An HTTP answer to a waiting request: status, headers, body."""

STATUS_OF_ERROR = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                   "permission_error": 403, "not_found_error": 404, "request_too_large": 413,
                   "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529}
"""The HTTP status of each error type an entry can carry (as the API's errors page lists them)."""
CURABLE = frozenset({"api_error", "overloaded_error", "rate_limit_error", "timeout_error"})
"""Entry errors that a resubmission of the same request may cure; any other error type (invalid request,
authentication, permission, not found, billing...) would fail again, and ends its request at once."""


def entry_error(result: dict[str, Any] | None) -> tuple[str, str, str | None]:
    """An unsucceeded entry's (result type, error type or "" when it has none, error message)."""
    kind = str((result or {}).get("type") or "missing")
    error = ((result or {}).get("error") or {}).get("error") or {}
    error_type = str(error.get("type") or ("api_error" if kind == "errored" else ""))
    message = error.get("message")
    return kind, error_type, str(message) if message else None


def curable(error_type: str) -> bool:
    """Whether a resubmission may cure an entry that failed this way ("": expired, canceled, no result)."""
    return error_type == "" or error_type in CURABLE


def succeeded(result: dict[str, Any] | None) -> bool:
    return bool(result) and result.get("type") == "succeeded" and isinstance(result.get("message"), dict)  # type: ignore[union-attr]


def error_answer(status: int, error_type: str, message: str) -> Answer:
    """An API error response that the SDK raises at once (`x-should-retry: false`): the rounds retried it."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return status, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(body).encode("utf-8")


def budget_answer(budget: CostBudget) -> Answer:
    """The answer to a request `--max-cost` stopped before it was sent: an error that is not retried."""
    return error_answer(400, "max_cost_reached", f"not sent: {budget.refused}")


def api_failure(exc: anthropic.APIError, resumable: bool) -> tuple[int, str, str]:
    """A failed batch API call (create, poll, results) as the error every request of the round gets."""
    kept = " (the batches submitted so far are kept: --resume continues from them)" if resumable else ""
    if isinstance(exc, anthropic.APIStatusError):
        return (exc.status_code, exc.type or "api_error",
                f"the Message Batches API failed: {exc.api_message or exc.message}{kept}")
    return 502, "api_error", f"the Message Batches API could not be reached: {exc.message}{kept}"


def retry_after(exc: anthropic.APIStatusError, default: float) -> float:
    """The seconds a refusal asks to wait (`retry-after-ms`, `retry-after`), else `default`; at most 10 minutes."""
    headers = exc.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return min(600.0, max(0.0, float(headers[name]) * scale))
        except (KeyError, TypeError, ValueError):
            continue
    return default
