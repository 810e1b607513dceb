"""Secrets out of cassettes: scrubbed on every write, and an audit of any cassette for what slipped through.

What counts as a secret (the same rules scrub and audit):
- the value of a credential header (`authorization`, `x-api-key`, cookies, Anthropic organization,
  workspace and user-profile ids, `proxy-authorization`, `api-key`), in either SDK generation;
- anywhere in a body or URI: Anthropic keys (`sk-ant-...`) and other `sk-` keys, `Bearer <token>` (a
  token has a digit: "bearer authentication" in a page is prose),
  `x-api-key: <value>` echoed in a message, UUIDs next to the word organization/org (how Anthropic
  error bodies carry the org id), JSON fields such as `"api_key"`, `"password"`, `"access_token"`,
  and key-like query parameters.

Scrubbing replaces the secret with `REDACTED` (header values become `REDACTED`). Values that are
obviously placeholders already (`REDACTED`, `**REDACTED**`, `X-API-KEY-XXX`, `<your key>`, Learn's example
GUIDs such as `aaaabbbb-0000-cccc-1111-dddd2222eeee`, ...) are left alone and never reported.

Scrubbing is applied to Learn page text too (scrub and audit share one rule set, so a fresh cassette
always passes its audit, and a page inside a model request is scrubbed exactly as the Learn reply
it came from); the patterns are kept narrow enough not to fire on documentation prose. A replayed
request that misses is looked up again as scrubbed (`_recorder`), as a cassette stores it.

The audit loads YAML or JSON generically, so it reads stock vcrpy cassettes, pydantic-ai's `parsed_body`
variant and our own alike, and any other YAML/JSON file it is given.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import yaml

from ._errors import InputError

if TYPE_CHECKING:
    from ._cassette import Interaction

PLACEHOLDER = "REDACTED"

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "anthropic-organization-id",
        "anthropic-workspace-id",
        "anthropic-user-profile-id",
    }
)
SECRET_FIELDS = frozenset(
    {"api_key", "apikey", "api-key", "x-api-key", "access_token", "refresh_token", "client_secret", "password", "secret"}
)

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# (kind, pattern); where a pattern has a group, the group is the secret, else the whole match.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("api key", re.compile(r"(?<![A-Za-z0-9_\-])sk-(?!ant-)(?:proj-)?[A-Za-z0-9_\-]{20,}")),
    # a token has a digit: "bearer authentication" in a page or a claim is prose, not a secret
    ("bearer token", re.compile(r"(?i)\bbearer\s+((?=[A-Za-z0-9._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{12,})")),
    ("x-api-key value", re.compile(r"(?i)x-api-key[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9._\-]{12,})")),
    ("organization id", re.compile(r"(?i)(?<![a-z])org(?:ani[sz]ation)?[\w\s\-\"':=()]{0,40}?(" + _UUID + ")")),
    (
        "secret field",
        re.compile(r"(?i)\"(?:api_?key|x-api-key|access_token|refresh_token|client_secret|password|secret)\"\s*:\s*\"([^\"]{8,})\""),
    ),
    ("credential in URL", re.compile(r"(?i)[?&](?:api[_-]?key|key|subscription-key|access_token|token|sig)=([^&\s#\"']{8,})")),
)
# Cheap pre-check: a text holding none of these cannot match any pattern above.
_TRIGGER = re.compile(r"(?i)sk-|bearer|api-?key|api_key|key=|org|token|secret|password|sig=")
_PLACEHOLDER_RE = re.compile(
    r"(?i)redacted|placeholder|scrubbed|filtered|dummy|fake|example|changeme|your[_\- ]|\*{3,}|<[^>]*>|\$\{?[a-z_]+"
    r"|(?:^|[^a-z0-9])x{3,}(?:[^a-z0-9]|$)|^(?:test|none|null|not_given|n/a|-)?$|^(?:0+-?)+$"
)


# Microsoft Learn's example GUIDs (`aaaabbbb-0000-cccc-1111-dddd2222eeee`): runs of four equal characters.
_EXAMPLE_GUID = re.compile(r"(?i)^(?:([0-9a-f])\1{3}-?)+$")


def is_placeholder(value: str) -> bool:
    """True for values that are obviously not a real secret (`REDACTED`, `X-API-KEY-XXX`, `<key>`,
    Learn's example GUIDs...)."""
    value = value.strip()
    return bool(_PLACEHOLDER_RE.search(value) or _EXAMPLE_GUID.match(value))


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


def scrub_text(text: str) -> str:
    """`text` with every secret replaced by `REDACTED` (a key keeps its `sk-ant-` prefix)."""
    if not text or not _TRIGGER.search(text):
        return text
    for _kind, pattern in _PATTERNS:
        text = pattern.sub(_replacer(pattern), text)
    return text


def _replacer(pattern: re.Pattern[str]) -> Any:
    def replace_match(m: re.Match[str]) -> str:
        group = 1 if pattern.groups else 0
        secret = m.group(group)
        if not secret or is_placeholder(secret):
            return m.group(0)
        if group == 0:
            prefix = "sk-ant-" if secret.startswith("sk-ant-") else "sk-"
            return prefix + PLACEHOLDER
        start, end = m.start(1) - m.start(0), m.end(1) - m.start(0)
        whole = m.group(0)
        return whole[:start] + PLACEHOLDER + whole[end:]

    return replace_match


def scrub_headers(headers: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, values in headers.items():
        if name.lower() in SECRET_HEADERS:
            out[name] = [v if is_placeholder(v) else PLACEHOLDER for v in values]
        else:
            out[name] = [scrub_text(v) for v in values]
    return out


def scrub_interaction(it: Interaction) -> Interaction:
    """A copy of the interaction with no secret in its URI, headers or bodies."""
    return replace(
        it,
        uri=scrub_text(it.uri),
        request_body=scrub_text(it.request_body) if it.request_body else it.request_body,
        response_body=scrub_text(it.response_body),
        request_headers=scrub_headers(it.request_headers),
        response_headers=scrub_headers(it.response_headers),
    )


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

    def __str__(self) -> str:
        at = f"interaction {self.interaction}" if self.interaction is not None else "file"
        return f"{self.path}: {at}, {self.where}: {self.kind} {self.excerpt}"


@dataclass(frozen=True)
class AuditReport:
    findings: list[Finding]
    cassettes: int
    """Files scanned that hold an `interactions` list."""
    files: int
    interactions: int


def mask(secret: str) -> str:
    """The secret with its middle hidden: `sk-ant…3xQa`."""
    if len(secret) >= 16:
        return f"{secret[:6]}…{secret[-4:]}"
    return f"{secret[:2]}…" if len(secret) > 4 else "…"


def audit(paths: Iterable[str | Path]) -> list[Finding]:
    """Every secret in the given cassette files and folders (searched for *.yaml, *.yml, *.json)."""
    return audit_report(paths).findings


def audit_report(paths: Iterable[str | Path]) -> AuditReport:
    findings: list[Finding] = []
    cassettes = interactions = files = 0
    for path in _files(paths):
        data = _load_any(path)
        files += 1
        items = data.get("interactions") if isinstance(data, dict) else None
        if isinstance(items, list):
            cassettes += 1
            interactions += len(items)
            for index, item in enumerate(items):
                findings.extend(_scan(item, "", str(path), index, header_map=False))
            rest = {k: v for k, v in data.items() if k != "interactions"}
            findings.extend(_scan(rest, "", str(path), None, header_map=False))
        else:
            findings.extend(_scan(data, "", str(path), None, header_map=False))
    return AuditReport(findings, cassettes, files, interactions)


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
        else:
            raise InputError(p, "no such file or folder")
    return out


def _load_any(path: Path) -> Any:
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read ({exc})") from exc
    try:
        if path.suffix == ".json":
            return json.loads(text)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(text, Loader=loader)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise InputError(path, f"not valid {'JSON' if path.suffix == '.json' else 'YAML'} ({str(exc).splitlines()[0]})") from exc


def _scan(value: Any, where: str, path: str, index: int | None, *, header_map: bool) -> Iterator[Finding]:
    if isinstance(value, dict):
        for key, sub in value.items():
            name = str(key)
            sub_where = f"{where}.{name}" if where else name
            if header_map and name.lower() in SECRET_HEADERS:
                for v in sub if isinstance(sub, list) else [sub]:
                    text = _as_text(v)
                    if text is not None and not is_placeholder(text):
                        yield Finding(path, index, sub_where, f"{name.lower()} header", mask(text))
                continue
            if name.lower() in SECRET_FIELDS and isinstance(sub, str) and not is_placeholder(sub):
                yield Finding(path, index, sub_where, "secret field", mask(sub))
                continue
            yield from _scan(sub, sub_where, path, index, header_map=name.lower() == "headers" and isinstance(sub, dict))
    elif isinstance(value, list):
        for sub in value:
            yield from _scan(sub, where, path, index, header_map=False)
    else:
        text = _as_text(value)
        if text:
            seen: set[tuple[str, str]] = set()
            for kind, secret, _start, _end in find_secrets(text):
                if (kind, secret) not in seen:
                    seen.add((kind, secret))
                    yield Finding(path, index, where or "(top level)", kind, mask(secret))


def _as_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        if raw[:2] == b"\x1f\x8b":  # a gzip body stored as !!binary
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError):
                pass
        return raw.decode("utf-8", "replace")
    return None
