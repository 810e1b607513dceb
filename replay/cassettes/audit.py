"""`cassettes audit`: every secret-shaped value in every file under the paths it is given.

Every file is read: its bytes as text (undecodable bytes replaced), line by line, so that nothing a parser
drops (a YAML comment, a file that does not parse, a prompt.md) goes unread; and a JSON or YAML file is also
walked as the structure it holds (cassette interactions one by one, names and values alike, bodies parsed,
decoded and unescaped), which finds what only a name says is a secret (an `x-api-key` header). Hidden folders
(`.git`...) and what is not a regular file are skipped, and said so.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from collections.abc import Callable
from urllib.parse import unquote
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from replay.errors import InputError
from replay.files.inputs import reading_error
from replay.files.json_text import every_member, members, parse_json
from replay.files.safe_yaml import load_yaml
from replay.learn.wire import FETCH_TOOL, SEARCH_TOOL, parse_jsonrpc_reply, tool_result_text

if TYPE_CHECKING:
    pass
from replay.cassettes.bodies_gzip import gunzip
from replay.cassettes.scrub import SECRET_HEADERS
from replay.secrets.excerpts import clean
from replay.secrets.shapes import (
    _BASE64_RUN,
    _ESCAPE,
    SECRET_FIELDS,
    _b64_text,
    _decoded_forms,
    _unescape,
    find_secrets,
    is_placeholder,
    mask,
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
    page: str | None = None
    """Set when the value occurs in the text of a public Learn page this file fetched (its URL): a
    lower class of finding, documentation quoting an example rather than a leak of ours."""

    def __str__(self) -> str:
        at = f"interaction {self.interaction}" if self.interaction is not None else "file"
        line = f"{self.path}: {at}, {self.where}: {self.kind} {self.excerpt}"
        line += f" (in the public Learn page text of {self.page})" if self.page else ""
        return clean(line)  # a name in `where` (a header's, a key's) or a file name may be the secret itself


@dataclass(frozen=True)
class AuditReport:
    findings: list[Finding]
    """Everything found, leaks and page-text findings alike."""
    cassettes: int
    """Files read that hold an `interactions` list."""
    files: int
    """Files read, of every kind."""
    interactions: int
    data: int = 0
    """Files read that parse as JSON or YAML but are no cassette."""
    hidden: list[Path] = field(default_factory=list)
    """Hidden folders (`.git`...) under a folder given, not read."""
    special: list[Path] = field(default_factory=list)
    """What is neither a file nor a folder (a pipe, a device, a socket, a broken or folder link), not read."""
    unparsed: list[InputError] = field(default_factory=list)
    """Why each `.json`, `.yaml` or `.yml` file that does not parse as such was read as text only."""

    @property
    def text(self) -> int:
        """Files read as text only (not JSON or YAML, or not parsing as such)."""
        return self.files - self.cassettes - self.data

    @property
    def leaks(self) -> list[Finding]:
        """Findings outside public page text: the ones that fail an audit."""
        return [f for f in self.findings if f.page is None]

    @property
    def in_pages(self) -> list[Finding]:
        return [f for f in self.findings if f.page is not None]


def audit(paths: Iterable[str | Path]) -> list[Finding]:
    """Every secret in the given files and folders (every file under them)."""
    return audit_report(paths).findings


def audit_report(paths: Iterable[str | Path]) -> AuditReport:
    """Audit files and folders. Page text is gathered per folder (a run): a finding in any file of the
    folder (its cassettes, its results.json quoting a page) whose value occurs in a Learn page one of
    the folder's cassettes fetched is a page-text finding."""
    findings: list[Finding] = []
    cassettes = interactions = files = data_files = 0
    unparsed: list[InputError] = []
    found, hidden, special = _files(paths)
    folders: dict[Path, list[Path]] = {}
    for path in found:
        folders.setdefault(path.parent, []).append(path)
    for group in folders.values():
        loaded = [(path, text, data, _interactions(data)) for path in group
                  for text, utf8 in [_read(path)] for data in [_parsed(path, text, utf8)]]
        pages: dict[str, str] = {}
        for _path, _text, _data, items in loaded:
            if items is not None:
                for url, page in _page_texts(items).items():
                    pages[url] = pages.get(url, "") + "\n" + page
        for path, text, data, items in loaded:
            files += 1
            if items is not None:
                cassettes += 1
                interactions += len(items)
                hits = [hit for index, item in enumerate(items) for hit in _Scan(str(path), index).value(item, "")]
                rest = every_member([(k, v) for k, v in members(data) if k != "interactions"])
                hits.extend(_Scan(str(path), None).value(rest, ""))
            elif not isinstance(data, _NotParsed):
                data_files += 1
                hits = list(_Scan(str(path), None).value(data, ""))
            else:
                hits = []
                unparsed += [data.problem] if data.problem else []
            hits.extend(_line_hits(str(path), text, {secret for _finding, secret in hits}))
            findings.extend(_classify(finding, secret, pages) for finding, secret in hits)
    return AuditReport(findings, cassettes, files, interactions, data_files, hidden, special, unparsed)


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


def _files(paths: Iterable[str | Path]) -> tuple[list[Path], list[Path], list[Path]]:
    """(every regular file under the paths, hidden folders skipped, other things skipped): a file given
    is read whatever its name; a folder, every file under it but in hidden folders (`.git`...)."""
    out: list[Path] = []
    hidden: list[Path] = []
    special: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found: list[Path] = []
            for root, folders, names in os.walk(p, onerror=_raise):
                here = Path(root)
                for name in sorted(folders):
                    if name.startswith("."):
                        hidden.append(here / name)
                    elif os.path.islink(here / name):
                        special.append(here / name)  # not followed: it may lead out of the path, or in circles
                folders[:] = sorted(n for n in folders if not n.startswith(".") and not os.path.islink(here / n))
                for name in names:
                    (found if (here / name).is_file() else special).append(here / name)
            out.extend(sorted(found))
        elif p.is_file():
            out.append(p)
        elif p.exists():
            raise InputError(p, "not a file or a folder (a device, a pipe or a socket): nothing to audit")
        else:
            raise InputError(p, "no such file or folder")
    return out, sorted(hidden), sorted(special)


def _raise(error: OSError) -> None:
    raise reading_error(error.filename or "?", error, "folder")


@dataclass(frozen=True)
class _NotParsed:
    """What `_parsed` gives for a file read as text only: why, when it was meant to parse."""

    problem: InputError | None = None


_DATA_SUFFIXES = (".json", ".yaml", ".yml")


def _read(path: Path) -> tuple[str, bool]:
    """A file's bytes as text, and whether they are UTF-8: UTF-8 (a BOM dropped; bytes that decode to
    nothing replaced, never refused: a secret among them is still found; with a UTF-16 BOM, as UTF-16
    too), a gzip file inflated first."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise reading_error(path, exc) from exc
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw) or raw
    try:
        return raw.decode("utf-8-sig"), True
    except UnicodeDecodeError:
        text = raw.decode("utf-8-sig", "replace")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 by its BOM, or bytes that only begin so: both read
        text += "\n" + raw.decode("utf-16", "replace")
    return text, False


def _parsed(path: Path, text: str, utf8: bool) -> Any:
    """The JSON or YAML a `.json`, `.yaml` or `.yml` file holds (every value of a key given twice), or
    `_NotParsed` for any other file and for one that does not parse (then read as text only: a YAML
    alias bomb is never expanded, a file of bytes that are no UTF-8 is still read)."""
    if path.suffix.lower() not in _DATA_SUFFIXES:
        return _NotParsed()
    try:
        if not utf8:
            raise InputError(path, "not UTF-8 text")
        if path.suffix.lower() == ".json":
            return parse_json(text, path, every_value=True)
        return load_yaml(text, path, every_value=True)
    except InputError as problem:
        return _NotParsed(problem)


def _line_hits(path: str, text: str, known: set[str]) -> list[_Hit]:
    """Every secret shape in a file's text, and in the text unescaped, URL-decoded and in each base64 run
    decoded, each named by its line, but those `known` already (found where the file's structure says):
    what no parser shows (a comment, a file that does not parse, a prompt) is read all the same. One pass
    of each pattern over the whole text, not one per line."""
    scan = _Scan(path, None)
    out: list[_Hit] = []
    known = {unquote(secret) for secret in known}  # compared decoded: `%3D` found once, and `=` again
    for how, decoded, line_of in _text_forms(text):
        for kind, secret, start, _end in find_secrets(decoded):
            plain = unquote(secret)
            if any(plain in other or other in plain for other in known):
                continue
            for finding, hit in scan.hit(f"line {line_of(start)}", kind, secret, how):
                known.add(plain)
                out.append((finding, hit))
    return out


def _text_forms(text: str) -> Iterator[tuple[str, str, Callable[[int], int]]]:
    """(how it was encoded, the text so decoded, where a place in it is: its line in `text`) for a file's
    text as it is, unescaped, URL-decoded, and each run that decodes from base64 to text."""
    starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def line_in_text(at: int) -> int:
        return bisect.bisect_right(starts, at)

    yield "", text, line_in_text
    for how, decoded in (("escaped", _ESCAPE.sub(_unescape, text) if "\\" in text else text),
                         ("URL-encoded", unquote(text) if "%" in text else text)):
        if decoded != text:
            yield how, decoded, lambda at, decoded=decoded: decoded.count("\n", 0, at) + 1  # type: ignore[misc]
    for m in _BASE64_RUN.finditer(text):
        plain = _b64_text(m.group(0))
        if plain:
            yield "base64", plain, lambda _at, line=line_in_text(m.start()): line  # type: ignore[misc]
    for m in _WRAPPED_BASE64.finditer(text):  # `base64 -w 76`, PEM, MIME: one text over many lines
        plain = _b64_text(_NEWLINE.sub("", m.group(0)))
        if plain:
            yield "base64", plain, lambda _at, line=line_in_text(m.start()): line  # type: ignore[misc]


_NEWLINE = re.compile(r"\r\n|\r|\n")
_WRAPPED_BASE64 = re.compile(r"^[A-Za-z0-9+/]{16,}(?:\r?\n[A-Za-z0-9+/]{16,})*\r?\n[A-Za-z0-9+/]+={0,2}$", re.MULTILINE)
"""Lines of base64 alone, wrapped: every line but the last of one length or more, the last maybe shorter."""


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
                yield from self.shapes(name, f"{sub_where} (the name)")  # a name is data too: a header's, a JSON key
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

    def shapes(self, text: str, where: str) -> Iterator[_Hit]:
        """The secret shapes in a text read as text (a name), and in what it decodes to."""
        return self._shapes(text, where, 0, "")

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
