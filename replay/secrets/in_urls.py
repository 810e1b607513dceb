"""Credentials removed from URLs, and from URLs inside a text, by their shape (userinfo, credential query names)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import unquote

from replay.secrets.registry import (
    PLACEHOLDER,
    is_credential_name,
    redact,
)

if TYPE_CHECKING:
    pass


MAX_SCHEME = 32
"""Longest URL scheme we recognise in free text (real ones are under 20 characters)."""
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*://)([^/?#@]*)@")
_QUERY_PAIR = re.compile(r"([?&;])([^=&#;?]+)=([^&#;]*)")


def scrub_url(url: str) -> str:
    """`url` with its userinfo and the values of its credential query parameters `REDACTED` (by name,
    `secrets.registry.is_credential_name`), and without its fragment, which a client never sends (it may hold a
    token); everything else byte for byte as given."""
    url = url.partition("#")[0]
    url = _USERINFO.sub(lambda m: f"{m.group(1)}{PLACEHOLDER}@" if m.group(2) != PLACEHOLDER else m.group(0), url)

    def pair(m: re.Match[str]) -> str:
        name = unquote(m.group(2))
        if is_credential_name(name) and m.group(3) and m.group(3) != PLACEHOLDER:
            return f"{m.group(1)}{m.group(2)}={PLACEHOLDER}"
        return m.group(0)

    return _QUERY_PAIR.sub(pair, url) if "?" in url else url


_URL_IN_TEXT = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]{0,%d}://[^\s\"'<>]+" % (MAX_SCHEME - 1))
"""A URL in free text. The scheme's length is bounded so that a long run of letters with no `://`
costs one bounded look per character, not a rescan to its end from every start (quadratic)."""


def scrub_text(text: str) -> str:
    """A message or URL we print or store that is not recorded data (an error text, an endpoint in
    run.json): the user's secrets removed by value, and credentials in any URL in it removed by name."""
    text = redact(text)
    return _URL_IN_TEXT.sub(_scrub_url_in_text, text) if "://" in text else text


def _scrub_url_in_text(m: re.Match[str]) -> str:
    url = m.group(0).rstrip(".,:;!?)]}")  # sentence punctuation after a URL is not part of it
    return scrub_url(url) + m.group(0)[len(url):]
