"""The page store: every recorded version of every Learn page, content-addressed on disk (diskcache).

Keys in the cache:

    text:<sha256>      the page text (one copy per distinct content)
    url:<normalised>   {"url": the URL as first read, "seen": {sha256 or "-": {run id: recorded_at}}}
    run:<run id>       {"manifest_sha256": ..., "path": run folder, "pages": [[normalised url, sha256 or "-"], ...]}

"-" stands for a fetch that could not retrieve the page. The store is derived data: `index_runs` rebuilds
it from the run folders' cassettes, so a fresh clone fills it on first use.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import diskcache  # type: ignore[import-untyped]

from ._config import project_root, setting_path
from ._errors import InputError, UsageError
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
    """Ids of the runs that read this version, in the order they saw it."""
    size: int | None
    """UTF-8 bytes of the text; None when the page could not be retrieved."""

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
        try:
            self._cache = diskcache.Cache(str(self.folder))
        except OSError as exc:
            raise UsageError(f"cannot open the page store at {self.folder}: {exc}") from exc

    def __enter__(self) -> PageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._cache.close()

    # ------------------------------------------------------------------ filling

    def add(self, url: str, text: str | None, seen_at: str, run_id: str) -> str | None:
        """Record that run `run_id` read `text` at `url` at `seen_at` (None: not retrievable); its sha256."""
        sha = sha256_text(text) if text is not None else None
        with self._cache.transact():
            self._add(url, text, sha, seen_at, run_id)
        return sha

    def _add(self, url: str, text: str | None, sha: str | None, seen_at: str, run_id: str) -> None:
        key = normalise_learn_url(url)
        if sha is not None and f"text:{sha}" not in self._cache:
            self._cache.set(f"text:{sha}", text)
        entry: dict[str, Any] = self._cache.get(f"url:{key}") or {"url": url, "seen": {}}
        entry["seen"].setdefault(sha or MISSING, {})[run_id] = seen_at
        self._cache.set(f"url:{key}", entry)

    def index_run(self, run: Run) -> bool:
        """(Re)index the pages one run read; False when it is already indexed at the same run.json."""
        manifest_sha = hashlib.sha256((run.path / MANIFEST).read_bytes()).hexdigest()
        run_id = run.name
        known = self._cache.get(f"run:{run_id}")
        if known and known.get("manifest_sha256") == manifest_sha:
            return False
        seen_at = run.manifest.recorded_at
        pages: list[tuple[str, str | None, str | None]] = []
        for entry in run.manifest.claims:
            for call in run.learn_calls(entry.file):
                if call.tool == FETCH_TOOL and "url" in call.arguments:
                    text = None if call.page_missing else call.text
                    pages.append((str(call.arguments["url"]), text, sha256_text(text) if text is not None else None))
        with self._cache.transact():
            for url_key, sha_key in (known or {}).get("pages", []):
                self._forget(url_key, sha_key, run_id)
            for url, text, sha in pages:
                self._add(url, text, sha, seen_at, run_id)
            self._cache.set(f"run:{run_id}", {
                "manifest_sha256": manifest_sha,
                "path": str(run.path.resolve()),
                "pages": sorted({(normalise_learn_url(u), s or MISSING) for u, _, s in pages}),
            })
        return True

    def _forget(self, url_key: str, sha_key: str, run_id: str) -> None:
        entry = self._cache.get(f"url:{url_key}")
        if not entry:
            return
        runs = entry["seen"].get(sha_key, {})
        runs.pop(run_id, None)
        if not runs:
            entry["seen"].pop(sha_key, None)
        if entry["seen"]:
            self._cache.set(f"url:{url_key}", entry)
        else:
            self._cache.delete(f"url:{url_key}")

    def prune_missing_runs(self) -> int:
        """Forget the runs whose folder no longer holds a run (deleted or moved); how many."""
        gone = []
        for key in list(self._cache.iterkeys()):
            if isinstance(key, str) and key.startswith("run:"):
                entry = self._cache.get(key) or {}
                path = entry.get("path")
                if path and not (Path(path) / MANIFEST).is_file():
                    gone.append((key.removeprefix("run:"), entry))
        with self._cache.transact():
            for run_id, entry in gone:
                for url_key, sha_key in entry.get("pages", []):
                    self._forget(url_key, sha_key, run_id)
                self._cache.delete(f"run:{run_id}")
        return len(gone)

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
        out = []
        for sha_key, runs in entry["seen"].items():
            ordered = sorted(runs.items(), key=lambda kv: (kv[1], kv[0]))
            sha = None if sha_key == MISSING else sha_key
            text = self.text(sha) if sha else None
            out.append(PageRecord(
                url=entry["url"], sha256=sha, first_seen=ordered[0][1], last_seen=ordered[-1][1],
                runs=tuple(r for r, _ in ordered), size=len(text.encode("utf-8")) if text is not None else None,
            ))
        return sorted(out, key=lambda v: (v.first_seen, v.last_seen, v.sha256 or ""))

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


def open_indexed_store(store: str | Path | None = None, cassettes: str | Path | None = None) -> PageStore:
    """The page store with every run under the cassettes root indexed (so a fresh clone works)."""
    root = cassettes_root(cassettes)
    if cassettes is not None and not root.is_dir():
        raise InputError(root, "no such cassettes folder")
    page_store = PageStore(store_folder(store))
    try:
        page_store.prune_missing_runs()
        page_store.index_runs(find_runs(root))
    except BaseException:
        page_store.close()
        raise
    return page_store
