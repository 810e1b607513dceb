"""Text made safe to show on a terminal: control characters escaped; long lists cut."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from replay.secrets.registry import redact

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Every control character (newline and tab included), the Unicode line and paragraph separators, bidi
overrides, and lone surrogates (the bytes of a file name that is not UTF-8, which a strict UTF-8 terminal
cannot even encode)."""
_IN_BLOCK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""`_CONTROL` but newline and tab: what a block of lines shown as lines escapes."""
_NAMED = {"\n": "\\n", "\t": "\\t"}


def _escape(found: re.Match[str]) -> str:
    c = found.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: str) -> str:
    """Text from data (claims, ids, paths, page lines, server replies) made safe for one terminal line or
    table cell: every control character (ESC, BEL, CR, C1, bidi overrides, undecodable bytes, and newline
    and tab: a newline would print a line the program never wrote) shown as a visible `\\n`, `\\t`,
    `\\xNN` or `\\uNNNN` escape, and any secret the user gave us redacted. Use it on every data string
    a text output prints (`printable_block` for a block of lines shown as lines)."""
    return _CONTROL.sub(_escape, redact(text))


def printable_block(text: str) -> str:
    """`printable` for a block of data shown as lines (a page region in a panel or a fenced block): its
    newlines and tabs kept, every other control escaped."""
    return _IN_BLOCK.sub(_escape, redact(text))


MAX_LISTED = 50
"""The most items (claim ids, files) one list of a text or markdown report names; `--json` names all."""


def listed(items: Sequence[Any], name: Callable[[Any], str] = str) -> str:
    """`a, b, c` (each item's `name`), or the first MAX_LISTED and how many more."""
    more = f", ... and {len(items) - MAX_LISTED:,} more" if len(items) > MAX_LISTED else ""
    return ", ".join(name(item) for item in items[:MAX_LISTED]) + more
