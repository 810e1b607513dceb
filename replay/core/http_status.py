"""HTTP statuses a client retries."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


def is_transient(status: int) -> bool:
    """Statuses an HTTP client retries: 408, 409, 429 and every 5xx (incl. 529 overloaded)."""
    return status in (408, 409, 429) or status >= 500
