"""A folder of Learn pages as the Learn stand-in serves them: markdown files with a `url:` front matter,
cut into sections at their headings (what the search tool ranks)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from replay.core.text import tokens
from replay.errors import InputError
from replay.files.regular import read_regular_text
from replay.urls import normalise_learn_url, split_url

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Section:
    """A part of a page from one markdown heading to the next."""

    heading: str
    markdown: str
    terms: frozenset[str]


@dataclass(frozen=True)
class Page:
    """One served page: its URL (as its front matter gives it), title, body and search sections."""

    url: str
    title: str
    body: str
    path: Path
    sections: tuple[Section, ...]


def _split_sections(body: str) -> tuple[Section, ...]:
    """Cut a page at its markdown headings (not at `#` lines inside code fences)."""
    parts: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in body.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        found = None if fenced else _HEADING.match(line)
        if found:
            parts.append((found.group(2), [line]))
        else:
            parts[-1][1].append(line)
    sections = []
    for heading, lines in parts:
        markdown = "\n".join(lines).strip()
        if markdown:
            sections.append(Section(heading, markdown, frozenset(tokens(markdown))))
    return tuple(sections)


def load_page(path: Path) -> Page:
    """One page file: YAML front matter with `url:` (and optionally `title:`), then the markdown body."""
    try:
        text = read_regular_text(path, "page")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the page file ({exc})") from exc
    match = _FRONT_MATTER.match(text)
    if not match:
        raise InputError(path, "the page has no YAML front matter (a leading `---` block with `url:`)")
    try:
        front = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise InputError(path, f"the front matter is not valid YAML ({' '.join(str(exc).split())})") from exc
    if not isinstance(front, dict) or not isinstance(front.get("url"), str) or not front["url"].strip():
        raise InputError(path, "the front matter has no `url:` (the Learn URL the page is served at)")
    url = front["url"].strip()
    parts = split_url(url)
    if parts is None or parts.scheme not in ("http", "https"):
        raise InputError(path, f"the front matter `url:` is not an http(s) URL: {url!r}")
    body = text[match.end():].lstrip("\r\n")
    sections = _split_sections(body)
    title = front.get("title")
    if not isinstance(title, str) or not title.strip():
        h1 = next((s.heading for s in sections if s.markdown.startswith("# ")), "")
        title = h1 or url
    return Page(url=url, title=title.strip(), body=body, path=path, sections=sections)


def load_pages(folder: Path) -> dict[str, Page]:
    """Every `*.md` page under `folder` (any depth), by normalised URL."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "no such folder of pages" if not folder.exists() else "is not a folder")
    pages: dict[str, Page] = {}
    for path in sorted(folder.rglob("*.md")):
        page = load_page(path)
        key = normalise_learn_url(page.url)
        if key in pages:
            raise InputError(path, f"serves the same URL as {pages[key].path}: {page.url}")
        pages[key] = page
    return pages


def _folder_state(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a page file is added, removed or edited."""
    state = []
    for path in sorted(folder.rglob("*.md")) if folder.is_dir() else []:
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        state.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(state)
