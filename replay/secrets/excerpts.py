"""Excerpts of data for messages: the whole text is cleaned of secrets before any window is cut from it.

Removing a secret by value (`registry.redact`) finds it only whole: a window cut across it first would
keep most of it, and no rule could find the rest. So every excerpt we print or store is cut from a
`clean` text: the secrets the user gave us replaced by `REDACTED` (in every encoding the registry knows),
and every key-shaped value (`shapes.KEY_KINDS`: Anthropic, OpenAI-style, GitHub, AWS, Google, Slack,
Stripe keys, JWTs) replaced too, since a key we were not given is no less a key.
"""

from __future__ import annotations

from collections.abc import Callable

from replay.secrets.registry import PLACEHOLDER, contains_secret_in_any_case, redact
from replay.secrets.shapes import key_spans


def clean(text: str) -> str:
    """`text` with every remembered secret and every key-shaped value replaced by `REDACTED`."""
    text = redact(text)
    spans = key_spans(text)
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], PLACEHOLDER]
        last = end
    return "".join(parts) + text[last:]


def excerpt(text: str, length: int, *, start: int = 0, mark: str = "…",
            shown: Callable[[str], str] | None = None) -> str:
    """At most `length` characters of the cleaned `text` (`clean`) from `start` (an index into the cleaned
    text), with `mark` where something was left out before or after. `shown` formats the window (say,
    as a JSON string) before the marks are added."""
    text = clean(text)
    start = max(0, min(start, len(text)))
    window = text[start:start + max(0, length)]
    return (mark if start else "") + (shown(window) if shown else window) + (mark if start + length < len(text) else "")


def shows_secret(text: str) -> bool:
    """Whether a piece of data (a token, a value) holds a remembered secret in any case of its letters, or
    a key-shaped value: one that a report must not show even lower-cased, where `clean` would not see it."""
    return contains_secret_in_any_case(text) or bool(key_spans(text))


def first_difference(a: str, b: str) -> int:
    """Where two texts first differ (the shorter one's length when one begins the other)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
