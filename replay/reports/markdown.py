"""Markdown of data: text that renders as itself, never as a link, image or HTML."""

from __future__ import annotations

import html
import re
from typing import Any

from replay.core.display import printable


def markdown_text(value: Any) -> str:
    """A data string for markdown prose: terminal-safe (`printable`), HTML from the data escaped, one line."""
    return html.escape(printable(str(value)), quote=False).replace("\n", " ")


def markdown_cell(value: Any) -> str:
    """A data string for a markdown table cell: as `markdown_text`, and its pipes escaped."""
    return markdown_text(value).replace("|", "\\|")


def markdown_code(value: Any) -> str:
    """A data string as inline markdown code: terminal-safe, one line, delimited by more backticks than it
    holds in a row (code spans show HTML as text, so none is escaped)."""
    text = printable(str(value)).replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_fence(text: str) -> str:
    """A fence for a block of data text: three backticks, or more than the longest run of them in it."""
    return "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
