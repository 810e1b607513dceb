"""Text made safe to show on a terminal: control characters escaped; long lists cut."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from replay.secrets.registry import redact

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Controls but newline and tab, bidi overrides, and lone surrogates (the bytes of a file name that is not
UTF-8, which a strict UTF-8 terminal cannot even encode)."""


def printable(text: str) -> str:
    """Text from data (claims, ids, page lines, server replies) made safe for a terminal: every control
    character but newline and tab (ESC, BEL, CR, C1, bidi overrides, undecodable bytes) shown as a visible
    `\\xNN` or `\\uNNNN` escape, and any secret the user gave us redacted. Use it on every data string a
    text output prints."""
    text = redact(text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def one_line(text: str) -> str:
    """`printable`, with newlines and tabs escaped too: for a name (a path, a file name) shown inside one
    line or one table cell, where a newline would print a line the program never wrote."""
    return printable(text).replace("\t", "\\t").replace("\n", "\\n")


MAX_LISTED = 50
"""The most items (claim ids, files) one list of a text or markdown report names; `--json` names all."""


def listed(items: Sequence[Any], name: Callable[[Any], str] = str) -> str:
    """`a, b, c` (each item's `name`), or the first MAX_LISTED and how many more."""
    more = f", ... and {len(items) - MAX_LISTED:,} more" if len(items) > MAX_LISTED else ""
    return ", ".join(name(item) for item in items[:MAX_LISTED]) + more
