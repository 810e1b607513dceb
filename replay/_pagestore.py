"""The page store: every recorded version of every Learn page, content-addressed on disk (diskcache).

Keys in the cache:

    text:<sha256>           the page text (one copy per distinct content)
    url:<normalised>        {"url": the URL as first read, "seen": {sha256 or "-": {recording: recorded_at}}}
    recording:<recording>   {"stand_ins": [...]}: which services of that recording were the local stand-ins
    run:<run folder>        {"manifest_sha256": ...}: the run.json last indexed for that folder

A recording is `<resolved run folder>#<recorded_at>`: one recording of one run folder. Runs are keyed by
where they are, not by their folder name, so two `v3` folders in different places are two runs; and a
version once recorded is never dropped: a re-record in place adds a recording beside the earlier one,
and a deleted run folder keeps its versions. "-" stands for a fetch that could not retrieve the page.
`index_runs` fills the store from the run folders' cassettes, so a fresh clone fills it on first use.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import diskcache  # type: ignore[import-untyped]

from ._config import project_root, setting_path
from ._errors import InputError, UsageError
from ._io import display_path
from ._mcp import FETCH_TOOL, normalise_learn_url
from ._runs import MANIFEST, Run, find_runs
from ._text import sha256_text

DEFAULT_FOLDER = Path(".judge-replay") / "pages"
"""Where the store lives, under the project root, unless `[tool.judge-replay] page-store` or `--store`."""
DEFAULT_CASSETTES = "cassettes"
MISSING = "-"


@dataclass(frozen=True)
class PageRecord:
    """One recorded version of a page."""

    url: str
    """The URL as first read."""
    sha256: str | None
    """None for "could not be retrieved"."""
    first_seen: str
    """Earliest recorded_at of the runs that read this version."""
    last_seen: str
    runs: tuple[str, ...]
    """The runs that read this version, in the order they saw it: folder names (paths where two runs in
    different places share a name)."""
    size: int | None
    """UTF-8 bytes of the text; None when the page could not be retrieved."""
    stand_in_runs: tuple[str, ...] = ()
    """Those of `runs` whose pages came from the local Learn stand-in (test equipment), not Learn."""

    @property
    def short(self) -> str:
        return self.sha256[:12] if self.sha256 else "(missing)"


def store_folder(flag: str | Path | None = None) -> Path:
    """The store folder: `--store`, else `[tool.judge-replay] page-store`, else the default."""
    return setting_path("page-store", flag) or project_root() / DEFAULT_FOLDER


def cassettes_root(flag: str | Path | None = None) -> Path:
    """Where run folders live: `--cassettes`, else `[tool.judge-replay] cassettes`, else `cassettes/`."""
    return setting_path("cassettes", flag) or project_root() / DEFAULT_CASSETTES


class PageStore:
    """Every version of every page the recorded runs read. Use as a context manager (or `close()`)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError(self.folder, "is a file, not a page store folder (--store / [tool.judge-replay] page-store)")
        try:
            self._cache = diskcache.Cache(str(self.folder))
        except (OSError, sqlite3.OperationalError) as exc:
            raise UsageError(f"cannot open the page store at {self.folder}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise InputError(self.folder, f"not a page store (its cache.db: {exc}); move it aside and the run "
                                          "folders' cassettes fill a new one") from exc

    def __enter__(self) -> PageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._cache.close()

    # ------------------------------------------------------------------ filling

    def add(self, url: str, text: str | None, seen_at: str, recording: str) -> str | None:
        """Record that `recording` read `text` at `url` at `seen_at` (None: not retrievable); its sha256."""
        sha = sha256_text(text) if text is not None else None
        with self._cache.transact():
            self._add(url, text, sha, seen_at, recording)
        return sha

    def _add(self, url: str, text: str | None, sha: str | None, seen_at: str, recording: str) -> None:
        key = normalise_learn_url(url)
        if sha is not None and f"text:{sha}" not in self._cache:
            self._cache.set(f"text:{sha}", text)
        entry: dict[str, Any] = self._cache.get(f"url:{key}") or {"url": url, "seen": {}}
        entry["seen"].setdefault(sha or MISSING, {})[recording] = seen_at
        self._cache.set(f"url:{key}", entry)

    def index_run(self, run: Run) -> bool:
        """Add the pages one run read, as one recording of its folder; False when that folder is already
        indexed at the same run.json. Versions indexed before are kept, whatever the run became since."""
        manifest_sha = hashlib.sha256((run.path / MANIFEST).read_bytes()).hexdigest()
        folder = str(run.path.resolve())
        known = self._cache.get(f"run:{folder}")
        if known and known.get("manifest_sha256") == manifest_sha:
            return False
        seen_at = run.manifest.recorded_at
        recording = f"{folder}#{seen_at}"
        pages: list[tuple[str, str | None]] = []
        for entry in run.manifest.claims:
            for call in run.learn_calls(entry.file):
                if call.tool == FETCH_TOOL and "url" in call.arguments:
                    pages.append((str(call.arguments["url"]), None if call.page_missing else call.text))
        with self._cache.transact():
            for url, text in pages:
                self._add(url, text, sha256_text(text) if text is not None else None, seen_at, recording)
            self._cache.set(f"recording:{recording}", {"stand_ins": list(run.manifest.stand_ins)})
            self._cache.set(f"run:{folder}", {"manifest_sha256": manifest_sha})
        return True

    def index_runs(self, runs: Iterable[Run]) -> int:
        """Index every run not yet indexed at its current run.json; how many were (re)indexed."""
        return sum(1 for run in runs if self.index_run(run))

    # ------------------------------------------------------------------ reading

    def urls(self) -> list[str]:
        """Every page URL the store knows, as first read, sorted."""
        out = []
        for key in self._cache.iterkeys():
            if isinstance(key, str) and key.startswith("url:"):
                out.append(self._cache.get(key)["url"])
        return sorted(out)

    def versions(self, url: str) -> list[PageRecord]:
        """Every recorded version of a page, oldest first (by first seen, then last seen)."""
        entry = self._cache.get(f"url:{normalise_learn_url(url)}")
        if not entry:
            return []
        labels = _labels({rec for runs in entry["seen"].values() for rec in runs})
        out = []
        for sha_key, runs in entry["seen"].items():
            ordered = sorted(runs.items(), key=lambda kv: (kv[1], labels[kv[0]]))
            sha = None if sha_key == MISSING else sha_key
            text = self.text(sha) if sha else None
            names = tuple(dict.fromkeys(labels[r] for r, _ in ordered))
            stand_in = tuple(dict.fromkeys(labels[r] for r, _ in ordered if "learn" in self._stand_ins(r)))
            out.append(PageRecord(
                url=entry["url"], sha256=sha, first_seen=ordered[0][1], last_seen=ordered[-1][1], runs=names,
                size=len(text.encode("utf-8")) if text is not None else None, stand_in_runs=stand_in,
            ))
        return sorted(out, key=lambda v: (v.first_seen, v.last_seen, v.sha256 or ""))

    def _stand_ins(self, recording: str) -> list[str]:
        found = self._cache.get(f"recording:{recording}")
        return list(found.get("stand_ins", [])) if isinstance(found, dict) else []

    def text(self, sha256: str) -> str | None:
        value = self._cache.get(f"text:{sha256}")
        return value if isinstance(value, str) else None

    def version(self, url: str, prefix: str) -> PageRecord:
        """The version of a page whose hash starts with `prefix`; UsageError (listing the known ones)
        when none or several do."""
        versions = [v for v in self.versions(url) if v.sha256]
        hits = [v for v in versions if v.sha256 and v.sha256.startswith(prefix.lower())]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(v.short for v in versions) or "none"
        if not hits:
            raise UsageError(f"no recorded version of {url} has a hash starting {prefix!r}; known: {known}")
        raise UsageError(f"hash prefix {prefix!r} matches {len(hits)} versions of {url}; give more of it ({known})")


def _labels(recordings: set[str]) -> dict[str, str]:
    """recording -> how people know its run: the folder name, or its path when two folders in different
    places share a name. (A recording key without `#` was written before runs were keyed by place: its
    run's name; it merges with the run of that name.)"""
    folders = {rec: rec.rpartition("#")[0] for rec in recordings}
    by_name: dict[str, set[str]] = {}
    for folder in folders.values():
        if folder:
            by_name.setdefault(Path(folder).name, set()).add(folder)
    return {rec: rec if not folder else display_path(folder) if len(by_name[Path(folder).name]) > 1
            else Path(folder).name for rec, folder in folders.items()}


def open_indexed_store(store: str | Path | None = None, cassettes: str | Path | None = None) -> PageStore:
    """The page store with every run under the cassettes root indexed (so a fresh clone works)."""
    root = cassettes_root(cassettes)
    if cassettes is not None and not root.is_dir():
        raise InputError(root, "no such cassettes folder")
    page_store = PageStore(store_folder(store))
    try:
        page_store.index_runs(find_runs(root))
    except BaseException:
        page_store.close()
        raise
    return page_store
