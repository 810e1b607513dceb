"""The secrets the user gave us (API key, auth token, header values, URL credentials), removed by value.

One process-wide registry. Whoever receives a secret from the user (the runner: `--anthropic-base-url`,
`--learn-url`, the API key, custom headers) calls `remember(value)`; every place we write or print
(`files.atomic.atomic_write_text`, the cassette writer, the CLI's error printer and streams) calls `redact(text)`.
A value is removed in every encoding we can cheaply check: plain, URL-encoded (`quote`, `quote_plus`),
JSON-escaped, and base64 (at each of the three alignments, so it is found inside a longer base64 text,
as in a `Basic` header), each replaced by `REDACTED`.

A `Redactor` is such a set of values; the registry is one, and the cassette writer extends it with the
values of the credential headers of the cassette it writes (`registry().extended(values)`). Its
`may_occur` is one cheap scan of a body for every form (also as a JSON string writes it), so that only
a body that may hold one is parsed (`cassettes.scrub.may_hold` says what text to scan).

Pattern rules (what a key *looks like*) live in `cassettes.scrub` and serve only the audit; this module only
knows values it was given, so it never rewrites text that merely resembles a secret (a Learn page
quoting an example SAS URL).
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

PLACEHOLDER = "REDACTED"
MIN_LENGTH = 6
"""Shorter values are not remembered: redacting them would rewrite ordinary words."""

CREDENTIAL_QUERY_NAMES = frozenset(
    {
        "key", "api-key", "api_key", "apikey", "code", "sig", "signature", "token", "access_token",
        "id_token", "refresh_token", "auth", "password", "passwd", "pwd", "secret", "client_secret",
        "subscription-key", "subscription_key", "ocp-apim-subscription-key", "x-api-key", "sas", "sastoken",
        "x-amz-signature", "x-amz-security-token", "x-goog-signature", "private_key", "session_token",
    }
)
"""Query parameters whose value is a credential (case-insensitive); see also `is_credential_name`."""
_CREDENTIAL_WORDS = frozenset({"key", "token", "secret", "sig", "signature", "auth", "password", "passwd", "pwd",
                               "pass", "session", "credential", "credentials", "bearer", "sas", "apikey"})
_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def is_credential_name(name: str) -> bool:
    """Whether a query parameter of that name carries a credential: one of `CREDENTIAL_QUERY_NAMES`, or a
    name with a credential word in it (`apiToken`, `x-functions-key`, `auth_token`, `access-token`)."""
    lowered = name.lower()
    return (lowered in CREDENTIAL_QUERY_NAMES or any(w in lowered for w in _CREDENTIAL_PARTS)
            or any(w.lower() in _CREDENTIAL_WORDS for w in _NAME_WORDS.findall(name)))


_CREDENTIAL_PARTS = ("token", "secret", "passw", "apikey", "signature", "credential")
"""Words that make a name a credential's wherever they stand in it (`apitoken`, all one word)."""


class Redactor:
    """A set of secret values, each removed in every encoding we check (see the module docstring)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._forms: list[str] = []
        """Every encoded form of every value, longest first (so a longer form is replaced whole)."""
        self._looked_for: tuple[str, ...] = ()
        """The forms, and each as `json.dumps(form, ensure_ascii=False)` writes it, but those that hold
        another (what `may_occur` scans for)."""
        self.characters = ""
        """The characters an escape may hide a form behind (`cassettes.scrub.may_hold`), once each, in code point
        order: those of the forms looked for, or of all of them when an escaped form is looked for alone."""
        self._extensions: dict[tuple[str, ...], Redactor] = {}
        """`extended` values -> the Redactor made of them, while this one is unchanged (a recording extends
        the registry with the same header values for every cassette)."""
        self._generation = 0
        """Changes made so far (an extension made while one was made is not kept)."""
        for value in values:
            self.add(value)

    def add(self, value: str | None) -> None:
        if value is None:
            return
        value = value.strip()
        if len(value) < MIN_LENGTH or value == PLACEHOLDER:
            return
        with self._lock:
            if value in self._values:
                return
            self._values.add(value)
            self._generation += 1
            self._extensions.clear()
            self._forms[:] = sorted(set(self._forms) | _encodings(value), key=len, reverse=True)
            looked_for = {*self._forms, *(json.dumps(form, ensure_ascii=False)[1:-1] for form in self._forms)}
            self._looked_for = _fewest(looked_for)
            # an escape hides a form only behind one of its characters: those of the forms looked for (each
            # form holds one of them), unless an escaped form is looked for alone (then those of all)
            counted = self._looked_for if set(self._looked_for) <= set(self._forms) else looked_for
            self.characters = "".join(sorted(set("".join(counted))))

    def extended(self, values: Iterable[str]) -> Redactor:
        """A new Redactor holding these values and `values`."""
        values = tuple(values)
        with self._lock:
            made, generation = self._extensions.get(values), self._generation
        if made is None:
            made = self._copy()
            for value in values:
                made.add(value)
            with self._lock:
                if self._generation == generation:  # nothing added or cleared meanwhile
                    if len(self._extensions) >= 64:
                        self._extensions.clear()
                    self._extensions[values] = made
        return made._copy()

    def _copy(self) -> Redactor:
        out = Redactor()
        with self._lock:
            out._values, out._forms, out._looked_for = set(self._values), list(self._forms), self._looked_for
            out.characters = self.characters
        return out

    def __bool__(self) -> bool:
        return bool(self._forms)

    def holds_all_of(self, other: Redactor) -> bool:
        """Whether every value of `other` is one of ours (then every form it removes, we remove too)."""
        with self._lock:
            ours = set(self._values)
        with other._lock:
            return other._values <= ours

    def redact(self, text: str) -> str:
        """`text` with every form of every value replaced by `REDACTED`."""
        if not self._forms or not text:
            return text
        for form in list(self._forms):
            if form in text:
                text = text.replace(form, PLACEHOLDER)
        return text

    def may_occur(self, text: str) -> bool:
        """Whether a form may occur in a string that `text` holds as itself or written as a JSON string
        (`json.dumps(..., ensure_ascii=False)` inside the quotes): one scan, no parsing. False means
        `redact` changes no such string (an escaped form is found as the same escapes of the form, each
        character being escaped on its own)."""
        return any(form in text for form in self._looked_for) if text else False

    def contains(self, text: str) -> bool:
        return any(form in text for form in list(self._forms)) if text else False

    def contains_in_any_case(self, text: str) -> bool:
        """Whether `text` holds a value in any case (a lower-cased token of a text that held one)."""
        folded = text.casefold()
        with self._lock:
            values = list(self._values)
        return any(value.casefold() in folded for value in values) if text else False

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._generation += 1
            self._extensions.clear()
            self._forms.clear()
            self._looked_for = ()
            self.characters = ""


_registry = Redactor()
"""The secrets the user gave this process."""


def remember(value: str | None) -> None:
    """Treat `value` as a secret from now on, in this process."""
    _registry.add(value)


def remember_url(url: str | None) -> None:
    """Remember the credentials a URL carries: its userinfo password (and user, and `user:password` as one
    value and as a `Basic` header) and credential query values."""
    for value in url_credentials(url):
        remember(value)


def url_credentials(url: str | None) -> list[str]:
    """The credential values in a URL, to be removed by value wherever they occur: userinfo (user and
    password), and the values of its query parameters (and of a fragment's `name=value` pairs) that are
    credentials: by a name of `CREDENTIAL_QUERY_NAMES`, or by a name with a credential word in it
    (`is_credential_name`) and a value that looks generated (`_looks_generated`: an ordinary value such as
    `regionCode=Global` must not rewrite page text wherever it occurs). A URL whose authority does not
    parse (a `/`, `?` or `#` left unencoded in a password) gives what stands between `://` and its last
    `@`. (A fragment is never sent: `secrets.in_urls.scrub_url` drops it from whatever we print or store.)"""
    if not url or ("@" not in url and "?" not in url and "#" not in url):  # no userinfo, no query, no fragment
        return []
    try:
        parts = urlsplit(url)
        password, username = parts.password, parts.username
        parts.port  # reading it parses it
    except ValueError:
        loose = _LOOSE_USERINFO.match(url)
        userinfo = unquote(loose.group(1)) if loose else ""
        return [v for v in (userinfo, userinfo.partition(":")[2]) if v]
    out: list[str] = []
    if password:
        out.append(unquote(password))
        if username:
            # also as one value, and as the `Basic` header an HTTP client makes of it, so that an echo of
            # that header is removed whole, not piece by piece
            user_password = f"{unquote(username)}:{unquote(password)}"
            out += [unquote(username), user_password,
                    "Basic " + base64.b64encode(user_password.encode("utf-8")).decode("ascii")]
    for name, value in [*parse_qsl(parts.query), *parse_qsl(parts.fragment)]:
        if value and is_credential_name(name) and _looks_generated(value):
            out.append(value)
    return [v for v in out if v]


def _looks_generated(value: str) -> bool:
    """A value that is no ordinary word, so that removing it wherever it occurs rewrites no page text: 8
    characters or more with a digit or a character no word has (`+/=_-`), or 16 or more of any kind."""
    return len(value) >= 16 or (len(value) >= 8 and any(c.isdigit() or c in "+/=_-~." for c in value))


_LOOSE_USERINFO = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*://(.*)@")
"""Everything between `://` and the last `@`: the userinfo of a URL whose authority does not parse."""


def known() -> bool:
    """Whether any secret has been remembered."""
    return bool(_registry)


def remembered() -> tuple[str, ...]:
    """Every value remembered in this process (to hand to a worker process: `cassettes.parallel`)."""
    with _registry._lock:
        return tuple(sorted(_registry._values))


def registry() -> Redactor:
    """The process-wide registry (to extend with secrets of one file: `registry().extended(values)`)."""
    return _registry


def redact(text: str) -> str:
    """`text` with every form of every remembered secret replaced by `REDACTED`."""
    return _registry.redact(text)


def contains_secret(text: str) -> bool:
    """Whether `text` holds any form of a remembered secret."""
    return _registry.contains(text)


def contains_secret_in_any_case(text: str) -> bool:
    """Whether `text` holds a remembered secret, whatever the case of its letters."""
    return _registry.contains_in_any_case(text)


def longest_secret_form() -> int:
    """The length of the longest form `contains_secret` looks for (0: none): a text searched in pieces
    that overlap by one character less finds every form the whole text holds."""
    forms = _registry._forms
    return len(forms[0]) if forms else 0


def forget_all() -> None:
    """Clear the registry (for tests, and between independent runs in one process)."""
    _registry.clear()


def _encodings(value: str) -> set[str]:
    forms = {value, quote(value, safe=""), quote_plus(value, safe=""), json.dumps(value)[1:-1]}
    forms |= {_PERCENT.sub(lambda m: m.group().lower(), f) for f in set(forms)}  # `%2b` as well as `%2B`
    forms |= {json.dumps(value, ensure_ascii=False)[1:-1]}
    raw = value.encode("utf-8")
    forms.add(base64.b64encode(raw).decode("ascii"))  # the whole value encoded alone, padding included
    for form in _base64_forms(raw):
        forms.add(form)
        forms.add(form.replace("+", "-").replace("/", "_"))  # urlsafe alphabet
    return {f for f in forms if len(f) >= MIN_LENGTH}


_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _fewest(texts: set[str]) -> tuple[str, ...]:
    """The texts but those holding another (which occurs wherever they do): as many as `may_occur` needs."""
    kept: list[str] = []
    for text in sorted(texts, key=lambda t: (len(t), t)):
        if not any(shorter in text for shorter in kept):
            kept.append(text)
    return tuple(kept)


def _base64_forms(raw: bytes) -> set[str]:
    """The part of base64(x + raw + y) that depends only on `raw`, for each alignment of `raw`."""
    out: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
        # characters touched by the unknown bytes before (offset) and after (the last partial group)
        start = (offset * 8 + 5) // 6 if offset else 0
        total_bits = (offset + len(raw)) * 8
        end = total_bits // 6  # characters fully determined by known bits
        if end - start >= MIN_LENGTH:
            out.add(encoded[start:end])
    return out
