"""The `judge-replay` command line: one click group, one module per command."""

from __future__ import annotations



