"""Whether the optional `inspect` extra (Inspect AI) is installed, and the one line saying how to get it."""

from __future__ import annotations

from replay.errors import UsageError

INSTALL_LINE = "pip install 'judge-replay[inspect]'"
"""How a user installs the extra that `export inspect` needs."""


def require_inspect() -> None:
    """Raise a UsageError (exit 2) saying how to install Inspect AI when it cannot be imported."""
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        raise UsageError(f"export inspect needs Inspect AI, an optional extra: {INSTALL_LINE}") from None
