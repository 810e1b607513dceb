"""Secrets out of cassettes: removed on every write by name and by value; an audit of any cassette for what slipped through.

Writing (`scrub_interactions`, applied by `_cassette.dumps_cassette`) removes only what we know is a
secret, never what merely looks like one:
- credential headers BY NAME, whatever their value looks like (`authorization` incl. `Basic ...`,
  `x-api-key`, cookies, `ocp-apim-subscription-key`, Anthropic organization/workspace ids, ...; see
  SECRET_HEADERS): the value becomes `REDACTED`;
- credentials in a request URI by name: the userinfo and the values of credential query parameters
  (`key=`, `sig=`, `token=`, `password=`..., `_secrets.CREDENTIAL_QUERY_NAMES`);
- secrets BY VALUE, in every encoding `_secrets` checks: the ones the user gave us (`_secrets`
  registry) and the values of this cassette's own credential headers and URI credentials (so a key a
  server echoes in a 401 body goes, whatever its shape). They are removed from every string of the
  parsed body (`_bodies.map_strings`), from URIs and from header values. A body is parsed only when one
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
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator
from urllib.parse import unquote

from ._bodies import StringFix, is_sse, map_strings
from ._errors import InputError
from ._io import every_member, members, parse_json, read_text
from ._mcp import FETCH_TOOL, SEARCH_TOOL, parse_jsonrpc_reply, tool_result_text
from ._secrets import CREDENTIAL_QUERY_NAMES, PLACEHOLDER, Redactor, is_credential_name, redact, registry, url_credentials
from ._yaml import load_yaml

if TYPE_CHECKING:
    from ._cassette import Interaction

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
SECRET_FIELDS = frozenset(
    {
        "api_key", "apikey", "x_api_key", "access_token", "refresh_token", "id_token", "auth_token", "token",
        "session_token", "client_secret", "private_key", "password", "passwd", "secret", "secret_key",
        "aws_secret_access_key", "subscription_key", "connection_string", "sas_token",
    }
)
"""JSON/YAML field names (lower case, `-` read as `_`) whose string value is a credential."""


# --------------------------------------------------------------------------- writing: by name and by value


def scrub_interactions(interactions: list[Interaction]) -> list[Interaction]:
    """Copies of the interactions of one cassette with no known secret (see the module docstring)."""
    redactor = cassette_redactor(interactions)
    return [scrub_interaction(it, redactor) for it in interactions]


def cassette_redactor(interactions: list[Interaction]) -> Redactor:
    """What `scrub_interactions` removes by value from a cassette: the user's secrets (`_secrets`) and
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
    looked at (the caller knows the pass would not change them: `_cassette.normalise_recording`)."""
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
    """One text in which every string `_bodies.map_strings` passes to its fix occurs as itself or as
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


MAX_SCHEME = 32
"""Longest URL scheme we recognise in free text (real ones are under 20 characters)."""
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*://)([^/?#@]*)@")
_QUERY_PAIR = re.compile(r"([?&;])([^=&#;?]+)=([^&#;]*)")


def scrub_url(url: str) -> str:
    """`url` with its userinfo and the values of its credential query parameters `REDACTED` (by name,
    `_secrets.is_credential_name`), and without its fragment, which a client never sends (it may hold a
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


def content_type_of(headers: dict[str, list[str]]) -> str | None:
    """The first `content-type` value (any case of the name), as the scrubber reads it."""
    for name, values in headers.items():
        if name.lower() == "content-type" and values:
            return values[0]
    return None


# --------------------------------------------------------------------------- what a secret looks like


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_QUERY_NAMES = "|".join(re.escape(n) for n in sorted(CREDENTIAL_QUERY_NAMES, key=len, reverse=True))
# (kind, pattern); where a pattern has a group, the group is the secret, else the whole match.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("api key", re.compile(r"(?<![A-Za-z0-9_\-])sk-(?!ant-)(?:proj-)?[A-Za-z0-9_\-]{20,}")),
    ("github token", re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("aws access key id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("google api key", re.compile(r"(?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{35}")),
    ("slack token", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("stripe key", re.compile(r"(?<![A-Za-z0-9])[sr]k_live_[A-Za-z0-9]{16,}")),
    ("jwt", re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
    # a token has a digit: "bearer authentication" in a page or a claim is prose, not a secret
    ("bearer token", re.compile(r"(?i)\bbearer\s+((?=[A-Za-z0-9._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{12,})")),
    ("basic credentials", re.compile(r"(?i)\bbasic\s+([A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])")),
    ("x-api-key value", re.compile(r"(?i)x-api-key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9._\-]{12,})")),
    ("organization id", re.compile(r"(?i)(?<![a-z])org(?:ani[sz]ation)?[\w\s\-\"':=()]{0,40}?(" + _UUID + ")")),
    # anchored on `://` (no scheme): every pattern here starts on a literal and scans a run bounded
    # by a character the run cannot hold, so a scan is linear in the text, however hostile
    ("password in URL", re.compile(r"://[^\s/?#@:\"'`\\]+:([^\s/?#@\"'`\\]+)@")),
    ("credential in URL", re.compile(r"(?i)[?&;](?:" + _QUERY_NAMES + r")=([A-Za-z0-9%+/=._~\-]{8,})")),
    ("secret field", re.compile(r"(?i)[\"'](?:" + "|".join(sorted(SECRET_FIELDS)) + r")[\"']\s*:\s*\"([^\"]{8,})\"")),
)
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


# --------------------------------------------------------------------------- audit


@dataclass(frozen=True)
class Finding:
    """One secret found in a file; `excerpt` is masked (never the whole secret)."""

    path: str
    interaction: int | None
    """Index of the interaction in the cassette; None outside any interaction."""
    where: str
    """Where in the interaction, e.g. `request.headers.authorization`, `response.body`."""
    kind: str
    excerpt: str
    page: str | None = None
    """Set when the value occurs in the text of a public Learn page this file fetched (its URL): a
    lower class of finding, documentation quoting an example rather than a leak of ours."""

    def __str__(self) -> str:
        at = f"interaction {self.interaction}" if self.interaction is not None else "file"
        line = f"{self.path}: {at}, {self.where}: {self.kind} {self.excerpt}"
        return line + (f" (in the public Learn page text of {self.page})" if self.page else "")


@dataclass(frozen=True)
class AuditReport:
    findings: list[Finding]
    """Everything found, leaks and page-text findings alike."""
    cassettes: int
    """Files scanned that hold an `interactions` list."""
    files: int
    interactions: int

    @property
    def leaks(self) -> list[Finding]:
        """Findings outside public page text: the ones that fail an audit."""
        return [f for f in self.findings if f.page is None]

    @property
    def in_pages(self) -> list[Finding]:
        return [f for f in self.findings if f.page is not None]


def mask(secret: str) -> str:
    """The secret with its middle hidden: `sk-ant…3xQa`."""
    if len(secret) >= 16:
        return f"{secret[:6]}…{secret[-4:]}"
    return f"{secret[:2]}…" if len(secret) > 4 else "…"


def audit(paths: Iterable[str | Path]) -> list[Finding]:
    """Every secret in the given cassette files and folders (searched for *.yaml, *.yml, *.json)."""
    return audit_report(paths).findings


def audit_report(paths: Iterable[str | Path]) -> AuditReport:
    """Audit files and folders. Page text is gathered per folder (a run): a finding in any file of the
    folder (its cassettes, its results.json quoting a page) whose value occurs in a Learn page one of
    the folder's cassettes fetched is a page-text finding."""
    findings: list[Finding] = []
    cassettes = interactions = files = 0
    folders: dict[Path, list[Path]] = {}
    for path in _files(paths):
        folders.setdefault(path.parent, []).append(path)
    for group in folders.values():
        loaded = [(path, data, _interactions(data)) for path in group for data in [_load_any(path)]]
        pages: dict[str, str] = {}
        for _path, _data, items in loaded:
            if items is not None:
                for url, text in _page_texts(items).items():
                    pages[url] = pages.get(url, "") + "\n" + text
        for path, data, items in loaded:
            files += 1
            if items is not None:
                cassettes += 1
                interactions += len(items)
                hits = [hit for index, item in enumerate(items) for hit in _Scan(str(path), index).value(item, "")]
                rest = every_member([(k, v) for k, v in members(data) if k != "interactions"])
                hits.extend(_Scan(str(path), None).value(rest, ""))
            else:
                hits = list(_Scan(str(path), None).value(data, ""))
            findings.extend(_classify(finding, secret, pages) for finding, secret in hits)
    return AuditReport(findings, cassettes, files, interactions)


def _interactions(data: Any) -> list[Any] | None:
    """A cassette's interactions (those of an `interactions` key given twice, one after the other), or
    None for a file that is not a cassette."""
    if not isinstance(data, dict):
        return None
    lists = [items for key, items in members(data) if key == "interactions" and isinstance(items, list)]
    return [item for items in lists for item in items] if lists else None


def _classify(finding: Finding, secret: str, pages: dict[str, str]) -> Finding:
    """The finding marked as page text when its value occurs in a Learn page the cassette fetched."""
    for url, text in pages.items():
        if secret in text:
            return replace(finding, page=url)
    return finding


def _page_texts(items: list[Any]) -> dict[str, str]:
    """URL (or search query) -> text of every Learn fetch/search reply among a cassette's interactions."""
    pages: dict[str, str] = {}
    for item in items:
        try:
            request, response = item["request"], item["response"]
            body = request.get("body")
            body = body.get("string") if isinstance(body, dict) else body
            message = request.get("parsed_body") or json.loads(_as_text(body) or "null")
            if not isinstance(message, dict) or message.get("method") != "tools/call":
                continue
            params = message.get("params") or {}
            if params.get("name") not in (FETCH_TOOL, SEARCH_TOOL):
                continue
            reply_body = response.get("body")
            reply_text = _as_text(reply_body.get("string") if isinstance(reply_body, dict) else reply_body) or ""
            headers = {str(k).lower(): v for k, v in (response.get("headers") or {}).items()}
            ctype = headers.get("content-type")
            reply = parse_jsonrpc_reply(reply_text, ctype[0] if isinstance(ctype, list) and ctype else None)
            text, _is_error = tool_result_text(reply)
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError):
            continue
        args = params.get("arguments") or {}
        where = str(args.get("url") or f"search {args.get('query')!r}") if isinstance(args, dict) else "a Learn reply"
        decoded = [form for _how, form in _decoded_forms(text) if _how != "base64"]
        pages[where] = "\n".join([pages.get(where, ""), text, *decoded])
    return pages


def _files(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(
                sorted(
                    q
                    for q in p.rglob("*")
                    if q.is_file() and q.suffix in (".yaml", ".yml", ".json") and not any(part.startswith(".") for part in q.relative_to(p).parts)
                )
            )
        elif p.is_file():
            out.append(p)
        elif p.exists():
            raise InputError(p, "not a cassette file or a folder of them (a device, a pipe or a socket)")
        else:
            raise InputError(p, "no such file or folder")
    return out


def _load_any(path: Path) -> Any:
    text = read_text(path)
    if path.suffix == ".json":  # a key given twice: both values are scanned
        return parse_json(text, path, every_value=True)
    return load_yaml(text, path, every_value=True)


_Hit = tuple[Finding, str]
"""A finding and the secret itself (kept only to compare with page text, never shown)."""


class _Scan:
    """One walk over a parsed file or interaction; each (kind, secret) is reported once, where first seen."""

    def __init__(self, path: str, index: int | None) -> None:
        self.path, self.index = path, index
        self.seen: set[tuple[str, str]] = set()

    def hit(self, where: str, kind: str, secret: str, how: str = "") -> Iterator[_Hit]:
        if (kind, secret) in self.seen:
            return
        self.seen.add((kind, secret))
        yield Finding(self.path, self.index, where, f"{kind} ({how})" if how else kind, mask(secret)), secret

    def value(self, value: Any, where: str, *, header_map: bool = False, depth: int = 0) -> Iterator[_Hit]:
        if depth > 64:
            return
        if isinstance(value, dict):
            for key, sub in members(value):  # a key given twice: each of its values
                name = str(key)
                sub_where = f"{where}.{name}" if where else name
                lname = name.lower()
                if header_map and lname in SECRET_HEADERS:
                    for v in sub if isinstance(sub, list) else [sub]:
                        text = _as_text(v)
                        if text is not None and not _header_placeholder(text):
                            yield from self.hit(sub_where, f"{lname} header", text)
                    continue
                if lname.replace("-", "_") in SECRET_FIELDS and isinstance(sub, str) and not is_placeholder(sub):
                    yield from self.hit(sub_where, "secret field", sub)
                    continue
                yield from self.value(sub, sub_where, header_map=lname == "headers" and isinstance(sub, dict), depth=depth + 1)
        elif isinstance(value, list):
            for sub in value:
                yield from self.value(sub, where, depth=depth + 1)
        else:
            text = _as_text(value)
            if text:
                yield from self.text(text, where or "(top level)", depth)

    def text(self, text: str, where: str, depth: int, how: str = "") -> Iterator[_Hit]:
        """A JSON text is scanned as the structure it holds (its strings unescaped), an SSE text event
        by event; any other text for secret shapes, then again decoded (escaped, URL-encoded, base64)."""
        stripped = text.lstrip()
        if stripped[:1] in ("{", "[") and depth < 32:
            parsed = _json_or_none(text)
            if isinstance(parsed, (dict, list)):
                yield from self._tagged(self.value(parsed, where, depth=depth + 1), how)
                return
        if stripped.startswith(("event:", "data:")) and depth < 32:
            for line in text.splitlines():
                payload = line[5:].strip() if line.startswith("data:") else None
                parsed = _json_or_none(payload) if payload else None
                if isinstance(parsed, (dict, list)):
                    yield from self._tagged(self.value(parsed, where, depth=depth + 1), how)
                else:
                    yield from self._shapes(line, where, depth, how)
            return
        yield from self._shapes(text, where, depth, how)

    def _shapes(self, text: str, where: str, depth: int, how: str) -> Iterator[_Hit]:
        for kind, secret, _start, _end in find_secrets(text):
            yield from self.hit(where, kind, secret, how)
        if depth < 8:
            for encoding, decoded in _decoded_forms(text):
                yield from self.text(decoded, where, depth + 4, how or encoding)

    def _tagged(self, hits: Iterator[_Hit], how: str) -> Iterator[_Hit]:
        for finding, secret in hits:
            if how and "(" not in finding.kind:
                finding = replace(finding, kind=f"{finding.kind} ({how})")
            yield finding, secret


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=every_member)
    except (ValueError, RecursionError):  # not JSON, or a number of more than 4300 digits
        return None


def _header_placeholder(value: str) -> bool:
    scheme, _, credentials = value.strip().partition(" ")
    return is_placeholder(value) or (bool(credentials) and scheme.isalpha() and is_placeholder(credentials))


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        if raw[:2] == b"\x1f\x8b":  # a gzip body stored as !!binary (stock vcrpy)
            raw = gunzip(raw) or raw
        return raw.decode("utf-8", "replace")
    return None


MAX_BODY = 64 * 1024 * 1024
"""Largest body we decompress (a hostile gzip body cannot fill the memory)."""


def gunzip(raw: bytes) -> bytes | None:
    """A gzip body decompressed (at most MAX_BODY bytes); None when it is not valid gzip or too large."""
    inflater = zlib.decompressobj(wbits=47)
    try:
        out = inflater.decompress(raw, MAX_BODY)
    except zlib.error:
        return None
    return None if inflater.unconsumed_tail else out
