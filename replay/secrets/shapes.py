"""The shapes secrets have (Anthropic, GitHub, AWS, Google, Slack, Stripe keys, bearer tokens...), told
apart from placeholders, and found in text, in its decoded forms too."""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Iterator
from urllib.parse import unquote

from replay.secrets.registry import (
    CREDENTIAL_QUERY_NAMES,
)

if TYPE_CHECKING:
    pass


SECRET_FIELDS = frozenset(
    {
        "api_key", "apikey", "x_api_key", "access_token", "refresh_token", "id_token", "auth_token", "token",
        "session_token", "client_secret", "private_key", "password", "passwd", "secret", "secret_key",
        "aws_secret_access_key", "subscription_key", "connection_string", "sas_token",
    }
)
"""JSON/YAML field names (lower case, `-` read as `_`) whose string value is a credential."""


# --------------------------------------------------------------------------- what a secret looks like


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_QUERY_NAMES = "|".join(re.escape(n) for n in sorted(CREDENTIAL_QUERY_NAMES, key=len, reverse=True))
# (kind, pattern); where a pattern has a group, the group is the secret, else the whole match. A key's pattern
# begins with its literal prefix and checks the character before it after (a lookbehind first would make
# the engine try every position: ten times slower on a cassette); `\bbearer` is written `b(?<!...)earer`
# alike.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("api key", re.compile(r"sk-(?<![A-Za-z0-9_\-]sk-)(?!ant-)(?:proj-)?[A-Za-z0-9_\-]{20,}")),
    ("github token", re.compile(r"g(?<![A-Za-z0-9]g)(?:h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{40,})")),
    ("aws access key id", re.compile(r"A(?<![A-Z0-9]A)(?:KIA|SIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("google api key", re.compile(r"AIza(?<![A-Za-z0-9_\-]AIza)[0-9A-Za-z_\-]{35}")),
    ("slack token", re.compile(r"xox(?<![A-Za-z0-9]xox)[abposr]-[A-Za-z0-9\-]{10,}")),
    ("stripe key", re.compile(r"[sr]k_live_(?<![A-Za-z0-9][sr]k_live_)[A-Za-z0-9]{16,}")),
    ("jwt", re.compile(r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
    # a token has a digit: "bearer authentication" in a page or a claim is prose, not a secret
    ("bearer token", re.compile(r"(?i)b(?<![^\W_]b)(?<!_b)earer\s+((?=[A-Za-z0-9._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{12,})")),
    ("basic credentials", re.compile(r"(?i)b(?<![^\W_]b)(?<!_b)asic\s+([A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])")),
    ("x-api-key value", re.compile(r"(?i)x-api-key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9._\-]{12,})")),
    ("organization id", re.compile(r"(?i)o(?<![a-z]o)rg(?:ani[sz]ation)?[\w\s\-\"':=()]{0,40}?(" + _UUID + ")")),
    # anchored on `://` (no scheme): every pattern here starts on a literal and scans a run bounded
    # by a character the run cannot hold, so a scan is linear in the text, however hostile
    ("password in URL", re.compile(r"://[^\s/?#@:\"'`\\]+:([^\s/?#@\"'`\\]+)@")),
    ("credential in URL", re.compile(r"(?i)[?&;](?:" + _QUERY_NAMES + r")=([A-Za-z0-9%+/=._~\-]{8,})")),
    ("secret field", re.compile(r"(?i)[\"'](?:" + "|".join(sorted(SECRET_FIELDS)) + r")[\"']\s*:\s*\"([^\"]{8,})\"")),
)
KEY_KINDS = ("anthropic key", "api key", "github token", "aws access key id", "google api key", "slack token",
             "stripe key", "jwt")
"""The kinds of `_PATTERNS` that are keys by their shape alone, whatever stands around them: what an excerpt of
data masks (`secrets.excerpts`)."""
_KEY_PATTERNS = tuple(pattern for kind, pattern in _PATTERNS if kind in KEY_KINDS)
_KEY_TRIGGER = re.compile(r"sk-|sk_live|rk_live|gh[pousr]_|github_pat|AKIA|ASIA|AIza|xox|eyJ")
"""A text holding none of these holds no key shape (`key_spans`)."""
# Cheap pre-check: a text holding none of these cannot match any pattern above.
_TRIGGER = re.compile(
    r"(?i)sk-|sk_live|rk_live|gh[pousr]_|github_pat|akia|asia|aiza|xox|eyj|private key|bearer|basic|api-?key|org|://|=|\"")

_TEMPLATE = re.compile(r"^(?:<[^<>]*>|\{\{[^{}]*\}\}|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%|\*+)$")
_MARKERS = re.compile(
    r"(?i)redacted|placeholder|scrubbed|filtered|dummy|fake|example|sample|changeme|your|replace[_\- ]?me|x{3,}|\*{3,}")
_FILLER = re.compile(r"(?i)redacted|placeholder|scrubbed|filtered|dummy|fake|example|sample|changeme|your|here|my"
                     r"|api|key|token|secret|password|bearer|basic|sk|ant|proj|test|none|null|value|x{3,}|0{3,}")
# Microsoft Learn's example GUIDs (`aaaabbbb-0000-cccc-1111-dddd2222eeee`): runs of four equal characters.
_EXAMPLE_GUID = re.compile(r"(?i)^(?:([0-9a-f])\1{3}-?)+$")


def is_placeholder(value: str) -> bool:
    """True for values that are only a placeholder (`REDACTED`, `sk-ant-REDACTED`, `X-API-KEY-XXX`,
    `<key>`, `${API_KEY}`, Learn's example GUIDs...). A real key that merely contains a marker word
    ("FAKE", "example") beside random characters is not one: what is left once the marker and filler
    words are taken out must be short, repetitive, or plain upper-case words without digits."""
    value = value.strip().strip("\"'")
    if not value or _TEMPLATE.match(value) or _EXAMPLE_GUID.match(value):
        return True
    rest = re.sub(r"[^A-Za-z0-9]", "", _FILLER.sub("", value))
    if len(rest) < 8 or len(set(rest.lower())) <= 3:
        return True
    if _MARKERS.search(value):
        return not _looks_random(rest)
    return False


def _looks_random(rest: str) -> bool:
    """Characters a generated secret has: digits among letters, or mixed case."""
    has_digit = any(c.isdigit() for c in rest)
    has_alpha = any(c.isalpha() for c in rest)
    return (has_digit and has_alpha) or (any(c.islower() for c in rest) and any(c.isupper() for c in rest))


def find_secrets(text: str) -> Iterator[tuple[str, str, int, int]]:
    """(kind, secret, start, end) of every secret-shaped value in `text` that is not a placeholder."""
    if not text or not _TRIGGER.search(text):
        return
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            group = 1 if pattern.groups else 0
            secret = m.group(group)
            if secret and not is_placeholder(secret):
                yield kind, secret, m.start(group), m.end(group)


def key_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every key-shaped value in `text` (`KEY_KINDS`) that is not a placeholder, in order,
    overlapping spans merged."""
    if not text or not _KEY_TRIGGER.search(text):
        return []
    spans = sorted((m.start(), m.end()) for pattern in _KEY_PATTERNS for m in pattern.finditer(text)
                   if not is_placeholder(m.group(0)))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{24,}={0,2}")
_MAX_DECODED = 64


def _decoded_forms(text: str) -> Iterator[tuple[str, str]]:
    """(how it was encoded, decoded text) for the encoded texts inside `text` worth scanning again:
    JSON/JavaScript escapes, URL encoding, base64 runs that decode to printable text."""
    if "\\" in text:
        unescaped = _ESCAPE.sub(_unescape, text)
        if unescaped != text:
            yield "escaped", unescaped
    if "%" in text:
        unquoted = unquote(text)
        if unquoted != text:
            yield "URL-encoded", unquoted
    for n, m in enumerate(_BASE64_RUN.finditer(text)):
        if n >= _MAX_DECODED:
            break
        decoded = _b64_text(m.group(0))
        if decoded:
            yield "base64", decoded


_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([\\/\"']))")


def _unescape(m: re.Match[str]) -> str:
    code = m.group(1) or m.group(2)
    return chr(int(code, 16)) if code else m.group(3)


def _b64_text(run: str) -> str | None:
    raw = run.rstrip("=").replace("-", "+").replace("_", "/")
    try:
        data = base64.b64decode(raw + "=" * (-len(raw) % 4))
    except (binascii.Error, ValueError):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t")
    return text if text and printable >= 0.95 * len(text) else None


def mask(secret: str) -> str:
    """The secret with its middle hidden: `sk-ant…3xQa`."""
    if len(secret) >= 16:
        return f"{secret[:6]}…{secret[-4:]}"
    return f"{secret[:2]}…" if len(secret) > 4 else "…"
