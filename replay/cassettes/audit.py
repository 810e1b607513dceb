"""`cassettes audit`: every secret-shaped value in the files it is given."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from replay.errors import InputError
from replay.files.inputs import read_text
from replay.files.json_text import every_member, members, parse_json
from replay.files.safe_yaml import load_yaml
from replay.learn.wire import FETCH_TOOL, SEARCH_TOOL, parse_jsonrpc_reply, tool_result_text

if TYPE_CHECKING:
    pass
from replay.cassettes.bodies_gzip import gunzip
from replay.cassettes.scrub import SECRET_HEADERS
from replay.secrets.shapes import SECRET_FIELDS, _decoded_forms, find_secrets, is_placeholder, mask

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
