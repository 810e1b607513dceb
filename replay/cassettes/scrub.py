"""Secrets out of cassettes: removed on every write by name and by value; an audit of any cassette for what slipped through.

Writing (`scrub_interactions`, applied by `cassettes.cassette.dumps_cassette`) removes only what we know is a
secret, never what merely looks like one:
- credential headers BY NAME, whatever their value looks like (`authorization` incl. `Basic ...`,
  `x-api-key`, cookies, `ocp-apim-subscription-key`, Anthropic organization/workspace ids, ...; see
  SECRET_HEADERS): the value becomes `REDACTED`;
- credentials in a request URI by name: the userinfo and the values of credential query parameters
  (`key=`, `sig=`, `token=`, `password=`..., `secrets.registry.CREDENTIAL_QUERY_NAMES`);
- secrets BY VALUE, in every encoding `secrets.registry` checks: the ones the user gave us (`secrets.registry`
  registry) and the values of this cassette's own credential headers and URI credentials (so a key a
  server echoes in a 401 body goes, whatever its shape). They are removed from every string of the
  parsed body (`cassettes.bodies.map_strings`), from URIs and from header values. A body is parsed only when one
  scan (`may_hold`: `Redactor.may_occur` over the body, or over `scan_text` where an escape may hide a
  value) says a value may be in it; that scan finds everything the parsed pass would
  (tests/test_scrub_scan.py, tests/test_record_speed_scrub.py).
Page text is never rewritten: a Learn page that quotes an example SAS URL, a sample JWT or a key in a
code sample is public documentation, stored exactly as received, so hashes, quotes and
`quote_verified` agree between live, record and replay.

The audit (`audit_report`) looks for what a secret looks like, in any YAML/JSON file (stock vcrpy,
pydantic-ai's `parsed_body` variant, ours): credential headers, JSON fields named like secrets,
credentials in URLs, provider key shapes (Anthropic, OpenAI, GitHub, AWS, Google, Slack, Stripe),
bearer tokens, bare JWTs, also inside base64, URL-encoded or JSON-escaped text. Values that are only
placeholders (`REDACTED`, `<your key>`, `X-API-KEY-XXX`, Learn's example GUIDs) are not reported; a
value that merely *contains* "FAKE" or "example" next to random characters is. A credential-shaped
string that occurs in the text of a Learn page a cassette of the same folder fetched is a separate,
lower class of finding (`Finding.page`), wherever in the folder it is found (the reply, a model turn
quoting it, results.json): documentation quoting an example, listed with its page, not a leak.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from replay.cassettes.bodies import StringFix, is_sse, map_strings
from replay.secrets.registry import (
    PLACEHOLDER,
    Redactor,
    redact,
    registry,
    url_credentials,
)

if TYPE_CHECKING:
    from replay.cassettes.interaction import Interaction
from replay.secrets.in_urls import scrub_url
from replay.secrets.shapes import _looks_random, is_placeholder

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "ocp-apim-subscription-key",
        "x-auth-token",
        "x-access-token",
        "x-amz-security-token",
        "x-functions-key",
        "x-ms-token-aad-access-token",
        "x-csrf-token",
        "cookie",
        "set-cookie",
        "anthropic-organization-id",
        "anthropic-workspace-id",
        "anthropic-user-profile-id",
    }
)
"""Headers whose value is a credential (or an account id), removed by name."""


# --------------------------------------------------------------------------- writing: by name and by value


def scrub_interactions(interactions: list[Interaction]) -> list[Interaction]:
    """Copies of the interactions of one cassette with no known secret (see the module docstring)."""
    redactor = cassette_redactor(interactions)
    return [scrub_interaction(it, redactor) for it in interactions]


def cassette_redactor(interactions: list[Interaction]) -> Redactor:
    """What `scrub_interactions` removes by value from a cassette: the user's secrets (`secrets.registry`) and
    the values the cassette's own credential headers and URIs carry."""
    return registry().extended([value for it in interactions for value in _own_secrets(it)])


def _own_secrets(it: Interaction) -> list[str]:
    """The values an interaction itself marks as secret (its credential headers, its URI's credentials)
    that look generated: removing an ordinary word or host name (a cookie's `Domain=`) everywhere would
    rewrite page text."""
    found = [*header_secrets(it.request_headers), *header_secrets(it.response_headers), *url_credentials(it.uri)]
    return [v for v in found if len(v) >= 8 and _looks_random(re.sub(r"[^A-Za-z0-9]", "", v))]


def scrub_interaction(it: Interaction, redactor: Redactor | None = None, *,
                      keep: tuple[bool, bool] = (False, False)) -> Interaction:
    """A copy of one interaction with credential headers and URI credentials removed by name and the
    `redactor`'s values (default: the user's secrets and this interaction's credential headers) removed
    from every string. `keep`: whether the request and the response body are taken as they are, not
    looked at (the caller knows the pass would not change them: `cassettes.normalise.normalise_recording`)."""
    if redactor is None:
        redactor = registry().extended(_own_secrets(it))
    fix = redactor.redact

    def scrubbed_body(body: str | None, headers: dict[str, list[str]], kept: bool) -> str | None:
        """The body with `fix` applied to its strings. Parsed only when a known value may be in it, or
        when it is SSE: map_strings writes an event's `data: ` line back with a second space, which the
        cassettes written so far hold (normalising a recording takes it out again; skipping the parse
        here would change the bytes of every cassette written while a secret is known)."""
        if kept or not body or not redactor:
            return body
        content_type = content_type_of(headers)
        if not is_sse(body, content_type) and not may_hold(body, redactor):
            return body
        return map_strings(body, content_type, fix)

    # The URI and header values are short: one look at them all says whether `fix` can change any (those
    # of credential headers are replaced by name whatever they hold).
    short = [it.uri, *(v for headers in (it.request_headers, it.response_headers) for name, vs in headers.items()
                       if name.lower() not in SECRET_HEADERS for v in vs)]
    fix_short = fix if redactor.contains("\n".join(short)) else _unchanged
    return replace(
        it,
        uri=scrub_url(fix_short(it.uri)),
        request_body=scrubbed_body(it.request_body, it.request_headers, keep[0]),
        response_body=scrubbed_body(it.response_body, it.response_headers, keep[1]) or "",
        request_headers=scrub_headers(it.request_headers, fix_short),
        response_headers=scrub_headers(it.response_headers, fix_short),
    )


def _unchanged(text: str) -> str:
    return text


def holds_no_secret(body: str | None, redactor: Redactor) -> bool:
    """Whether no string of `body` (as `scrub_interaction` passes them to the redactor: each JSON string,
    each line of an event stream, the text) holds a value of `redactor`: one scan, nothing parsed."""
    return not body or not redactor or not may_hold(body, redactor)


def may_hold(body: str, redactor: Redactor) -> bool:
    """Whether a string of `body` may hold a value of `redactor`: `redactor.may_occur(scan_text(body))`,
    with no escape decoded where none can hide a form. A JSON string holding a form writes each of its
    characters as itself, or as the escaped form looked for writes it, or as another escape: only
    where one of those is an escape of a character of a form (`_form_escapes`) must escapes be decoded
    (a request to the model escapes thousands of characters, each a page's non-ASCII letter)."""
    escapes = _form_escapes(redactor.characters)
    if escapes is not None and escapes.isdisjoint(_ASCII_ESCAPE.findall(body)):
        return redactor.may_occur(body)
    return redactor.may_occur(scan_text(body))


_ASCII_ESCAPE = re.compile(r"\\(?:u00[2-7][0-9a-fA-F]|/)")
"""A JSON escape that may stand for a printable ASCII character (`\\/`, `\\u0020` to `\\u007F`)."""


@functools.lru_cache(maxsize=16)
def _form_escapes(characters: str) -> frozenset[str] | None:
    """Every JSON escape (`\\/`, `\\u00XX` in any case) of one of `characters`, when they are printable
    ASCII (a key's); None otherwise (then any escape may hide one)."""
    if not (characters.isascii() and characters.isprintable()):
        return None
    escapes = {"\\/"} if "/" in characters else set()
    for char in characters:
        code = f"{ord(char):02x}"
        high, low = code[0], code[1]
        escapes.update(f"\\u00{h}{l}" for h in {high, high.upper()} for l in {low, low.upper()})
    return frozenset(escapes)


@functools.lru_cache(maxsize=32)
def scan_text(body: str) -> str:
    """One text in which every string `cassettes.bodies.map_strings` passes to its fix occurs as itself or as
    `json.dumps(s, ensure_ascii=False)` writes it inside quotes: what `Redactor.may_occur` scans, with
    nothing parsed. That is the body, and, when it holds a `\\u` or `\\/` escape, the body again with
    those written as json.dumps writes their characters (JSON's other escapes are the ones it writes).
    Escaped backslashes are masked first (as NUL pairs, left to right as JSON reads them), so that a `\\`
    then `u` is never read as an escape. (A body holding NUL is no JSON, whose strings hold no raw
    control character: map_strings fixes it as one text, the body itself.) The last texts are
    remembered: a body that may hold a value is scanned again by the second scrubbing of a recording."""
    if "\\u" not in body and "\\/" not in body:
        return body
    masked = body.replace("\\\\", "\0\0")
    if not _JSON_ESCAPE.search(masked):
        return body
    return body + "\n" + _JSON_ESCAPE.sub(_as_json_dumps_writes, masked).replace("\0\0", "\\\\")


_JSON_ESCAPE = re.compile(r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|/)")
"""A `\\u` escape (a surrogate pair as one) or `\\/`, in text with no escaped backslash."""


def _as_json_dumps_writes(m: re.Match[str]) -> str:
    return _escape_as_json_dumps_writes(m.group())


@functools.lru_cache(maxsize=4096)
def _escape_as_json_dumps_writes(escape: str) -> str:
    """One escape of `_JSON_ESCAPE` as json.dumps writes its character (a page repeats a few escapes often)."""
    m = _JSON_ESCAPE.fullmatch(escape)
    assert m is not None
    high, low, code = m.groups()
    if high:
        char = chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
    else:
        char = chr(int(code, 16)) if code else "/"
    return json.dumps(char, ensure_ascii=False)[1:-1]


def scrub_headers(headers: dict[str, list[str]], fix: StringFix = redact) -> dict[str, list[str]]:
    """Credential headers' values `REDACTED` by name, whatever they look like; every other value with
    `fix` applied."""
    out: dict[str, list[str]] = {}
    for name, values in headers.items():
        if name.lower() in SECRET_HEADERS:
            out[name] = [PLACEHOLDER for _ in values]
        else:
            out[name] = [fix(v) for v in values]
    return out


def header_secrets(headers: dict[str, list[str]]) -> list[str]:
    """The secret values the credential headers carry: the whole value, the credentials after an
    auth scheme (`Bearer X`), a `Basic` header's user and password, the value of each cookie sent. A
    `set-cookie` (a CDN's affinity cookie) is removed by name only: it is the server's, not a secret of
    ours that a body could echo."""
    out: list[str] = []
    for name, values in headers.items():
        lname = name.lower()
        if lname not in SECRET_HEADERS or lname == "set-cookie":  # a server's cookie is not ours to find in pages
            continue
        for value in values:
            out.append(value)
            scheme, _, credentials = value.strip().partition(" ")
            if credentials:
                out.append(credentials.strip())
                if scheme.lower() == "basic":
                    out.extend(_basic_parts(credentials.strip()))
            if lname == "cookie":  # name=value pairs
                out.extend(part.partition("=")[2].strip() for part in value.split(";") if "=" in part)
    return [v for v in out if not is_placeholder(v)]


def _basic_parts(encoded: str) -> list[str]:
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return []
    user, _, password = decoded.partition(":")
    return [decoded, user, password]


def content_type_of(headers: dict[str, list[str]]) -> str | None:
    """The first `content-type` value (any case of the name), as the scrubber reads it."""
    for name, values in headers.items():
        if name.lower() == "content-type" and values:
            return values[0]
    return None
