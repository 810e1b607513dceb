"""The model stand-in's error replies: the API's error shape, and the ids it derives from request bodies."""

from __future__ import annotations

import hashlib
import json


class ApiError(Exception):
    """An error reply in the API's shape (`{"type": "error", "error": {"type", "message"}, "request_id"}`)."""

    def __init__(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.headers = headers or {}

    def body(self, request_id: str) -> str:
        return json.dumps({"type": "error", "error": {"type": self.kind, "message": self.message},
                           "request_id": request_id})


def invalid(message: str) -> ApiError:
    """The API's 400 `invalid_request_error`."""
    return ApiError(400, "invalid_request_error", message)


def digest(body: bytes, salt: str) -> str:
    """A short id derived from a request body: identical runs give identical ids."""
    return hashlib.sha256(salt.encode() + b"\0" + body).hexdigest()[:24]
