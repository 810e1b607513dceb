"""URLs as every layer reads them: split safely, a Learn URL normalised, a page's short name, the
loopback endpoints of the stand-ins and the form a cassette stores them in."""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit, urlunsplit

from replay.secrets.in_urls import scrub_text

if TYPE_CHECKING:
    pass


_LOCALE = re.compile(r"^/[a-z]{2}-[a-z]{2}(?=/|$)", re.I)


@functools.lru_cache(maxsize=4096)
def split_url(url: str) -> SplitResult | None:
    """A URL's parts; None for a text that is no URL (`https://[host`: the model, a user or a hand-edited
    cassette may give any), which then stands for itself wherever a URL is read: the one rule for it."""
    try:
        return urlsplit(url.strip())
    except ValueError:
        return None


@functools.lru_cache(maxsize=16384)
def normalise_learn_url(url: str) -> str:
    """The URL normalisation every part of judge-replay uses: scheme and host lower-cased, `/en-us/`-style locale, fragment and
    trailing slash dropped (a text that is no URL: itself, stripped). Remembered: a run's reports ask
    for the same few hundred URLs once per claim and page."""
    parts = split_url(url)
    if parts is None:
        return url.strip()
    path = _LOCALE.sub("", parts.path)
    if len(path) > 1:
        path = path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def page_name(url: str) -> str:
    """The last segment of a page URL's path, as reports name a page (a text that is no URL: itself)."""
    parts = split_url(url)
    path = parts.path.rstrip("/") if parts is not None else ""
    return path.rsplit("/", 1)[-1] or url


def page_names(urls: Iterable[str]) -> dict[str, str]:
    """URL -> `page_name`, or its whole path where other URLs among them have the same last segment
    (`ai-services/.../model-retirements` and `ai-foundry/.../model-retirements` are two pages)."""
    unique = list(dict.fromkeys(urls))
    short = {u: page_name(u) for u in unique}
    taken = Counter(short.values())
    out = {}
    for u in unique:
        parts = split_url(u)
        whole = parts.path.strip("/") if parts is not None else ""
        out[u] = (whole or short[u]) if taken[short[u]] > 1 else short[u]
    return out


LEARN_STAND_IN_PORT = 8931
"""`judge-replay sim learn`'s default port, and the port a loopback Learn URL is stored with."""
MODEL_STAND_IN_PORT = 8932
"""`judge-replay sim model`'s default port, and the port a loopback model URL is stored with."""


def is_loopback(url: str) -> bool:
    """Whether the URL points at this machine (where the stand-ins run)."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host in ("localhost", "::1") or host.startswith("127.")


def canonical_endpoint(url: str, default_port: int) -> str:
    """A loopback endpoint in the form we store (`http://127.0.0.1:<stand-in default port>/path`), so a
    re-record against stand-ins on another port changes no file; any other URL unchanged."""
    if not is_loopback(url):
        return url
    parts = urlsplit(url)
    return urlunsplit((parts.scheme or "http", f"127.0.0.1:{default_port}", parts.path, parts.query, ""))


def stored_endpoint(url: str, default_port: int) -> str:
    """An endpoint as a run folder keeps it: credentials removed as the cassettes' `uri:` has them
    (`secrets.in_urls.scrub_text`: userinfo and credential query values `REDACTED`, so that replay asks for the
    URL the cassette holds), a loopback endpoint in the stand-ins' canonical form."""
    return canonical_endpoint(scrub_text(url), default_port)


def as_given(text: str, learn_url: str | None, anthropic_base_url: str | None) -> str:
    """`text` (a message we print, which may quote error texts a run stores) naming each stand-in endpoint
    the way the user gave it rather than in its stored form (`stored_endpoint`: the default ports), so that
    a message about a stand-in on another port names that port."""
    for url, port in ((learn_url, LEARN_STAND_IN_PORT), (anthropic_base_url, MODEL_STAND_IN_PORT)):
        if not url:
            continue
        stored, given = stored_endpoint(url, port), scrub_text(url).partition("#")[0]
        if stored != given:
            text = text.replace(stored, given)
    return text
