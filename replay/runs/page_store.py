"""The page store: every recorded version of every Learn page, content-addressed on disk (diskcache,
through `store_disk.DataDisk`: JSON and bytes only, so a store from anywhere is data, never code).

Keys in the cache:

    text:<sha256>           the page text (one copy per distinct content)
    url:<normalised>        {"url": the URL as first read, "seen": {sha256: {recording: recorded_at}},
                             "no_page": {reason: {recording: recorded_at}}}
    recording:<recording>   {"stand_ins": [...]}: which services of that recording were the local stand-ins
    run:<run folder>        {"manifest_sha256": ..., "layout": 2}: the run.json last indexed for that folder

A recording is `<resolved run folder>#<recorded_at>`: one recording of one run folder. Runs are keyed by
where they are, not by their folder name, so two `v3` folders in different places are two runs; and a
version once recorded is never dropped: a re-record in place adds a recording beside the earlier one,
and a deleted run folder keeps its versions. `index_runs` fills the store from the run folders'
cassettes, so a fresh clone fills it on first use.

Only a page is a version: text the server returned as a page. A reply that is no page
(`learn.wire.no_page_reason`) is kept apart, under `no_page`, by why: `refused` (a URL outside Learn: there
never was a page), `not-found` (Learn's "could not be retrieved": no page there when that run read it)
and `failed` (an error or outage: it says nothing about the page). `pages history` lists them under the
versions, never as one; drift reads them from the runs' cassettes (`PageVersion.no_page`). A "-" key
under `seen`, written before this, was such a reply with no reason kept: it is ignored.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import sys
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import diskcache  # type: ignore[import-untyped]

from replay.cassettes.learn_calls import LearnCall
from replay.core.display import printable
from replay.core.text import sha256_text
from replay.errors import InputError, SystemFailed, UsageError, debugging
from replay.files.paths import display_path
from replay.files.regular import read_regular
from replay.learn.wire import FETCH_TOOL, no_page_reason
from replay.secrets.registry import contains_secret, known
from replay.runs.folder import MANIFEST, Run, find_runs
from replay.runs.store_disk import DamagedValue, DataDisk
from replay.schema.pages import NoPage
from replay.settings import project_root, setting_path
from replay.urls import normalise_learn_url

DEFAULT_FOLDER = Path(".judge-replay") / "pages"
"""Where the store lives, under the project root, unless `[tool.judge-replay] page-store` or `--store`."""
DEFAULT_CASSETTES = "cassettes"
INDEX_LAYOUT = 2
"""How `index_run` reads a run; a run indexed with an older layout (no `no_page` answers) is read again."""
LEGACY_NO_PAGE = "-"
"""The `seen` key older stores used for a reply that was no page (not a version: ignored on reading)."""


@dataclass(frozen=True)
class PageRecord:
    """One recorded version of a page."""

    url: str
    """The URL as first read."""
    sha256: str
    first_seen: str
    """Earliest recorded_at of the runs that read this version."""
    last_seen: str
    runs: tuple[str, ...]
    """The runs that read this version, in the order they saw it: folder names (paths where two runs in
    different places share a name)."""
    size: int
    """UTF-8 bytes of the text."""
    stand_in_runs: tuple[str, ...] = ()
    """Those of `runs` whose pages came from the local Learn stand-in (test equipment), not Learn."""

    @property
    def short(self) -> str:
        return self.sha256[:12]


@dataclass(frozen=True)
class NoPageAnswer:
    """Runs whose fetch of a URL got no page, for one reason (see the module docstring)."""

    url: str
    reason: NoPage
    first_seen: str
    last_seen: str
    runs: tuple[str, ...]
    stand_in_runs: tuple[str, ...] = ()
    """Those of `runs` whose answer came from the local Learn stand-in (test equipment), not Learn."""

    @property
    def meaning(self) -> str:
        """What the answer says, for people."""
        return NO_PAGE_MEANING[self.reason]


NO_PAGE_MEANING: dict[NoPage, str] = {
    "refused": "not a Learn page: the server refused this URL as outside Microsoft Learn (no version to keep)",
    "not-found": "no page: Learn answered that the page could not be retrieved",
    "failed": "the fetch failed (a Learn error or outage, which says nothing about the page)",
}


def store_folder(flag: str | Path | None = None) -> Path:
    """The store folder: `--store`, else `[tool.judge-replay] page-store`, else the default."""
    return setting_path("page-store", flag) or project_root() / DEFAULT_FOLDER


def cassettes_root(flag: str | Path | None = None) -> Path:
    """Where run folders live: `--cassettes`, else `[tool.judge-replay] cassettes`, else `cassettes/`."""
    return setting_path("cassettes", flag) or project_root() / DEFAULT_CASSETTES


_Method = TypeVar("_Method", bound=Callable[..., Any])

_SYSTEM_FAILURES = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
                               sqlite3.SQLITE_PERM})
"""sqlite's primary result codes for the system failing under it (a full disk, an I/O error, a read-only
or unopenable file): exit 1, as `main()` says the OSError of a full disk; a locked store stays exit 2."""


def _store_errors(method: _Method) -> _Method:
    """A `PageStore` method whose store fails says so as our error, naming the store: one it cannot use
    now (locked by another process: UsageError; a full disk, no permission, an I/O error: exit 1, as
    `main()` says system errors) or a damaged database (InputError), whenever that shows, on opening or later. (A damaged value: `PageStore._get`.)"""

    @functools.wraps(method)
    def checked(self: PageStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except diskcache.Timeout as exc:  # diskcache's name for a write it could not begin
            raise UsageError(f"cannot use the page store at {display_path(self.folder)}: it is locked by another "
                             "process, or cannot be written") from exc
        except (OSError, sqlite3.OperationalError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            message = f"cannot use the page store at {display_path(self.folder)}: {reason}"
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _SYSTEM_FAILURES:
                raise SystemFailed(message) from exc  # as an OSError of a full disk is said: exit 1
            raise UsageError(message) from exc
        except (sqlite3.DatabaseError, DamagedValue) as exc:
            raise self._damaged(exc) from exc

    return checked  # type: ignore[return-value]


def _is_url_entry(value: Any) -> bool:
    """Whether a `url:` value has the shape `PageStore` writes (see the module docstring)."""
    def runs_by(key: Any) -> bool:
        return isinstance(key, dict) and all(
            isinstance(name, str) and isinstance(runs, dict) and runs
            and all(isinstance(rec, str) and isinstance(at, str) for rec, at in runs.items())
            for name, runs in key.items())

    return (isinstance(value, dict) and isinstance(value.get("url"), str) and runs_by(value.get("seen"))
            and runs_by(value.get("no_page", {})))


class PageStore:
    """Every version of every page the recorded runs read. Use as a context manager (or `close()`)."""

    @_store_errors
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise InputError(self.folder, "is a file, not a page store folder (--store / [tool.judge-replay] page-store)")
        self._cache = diskcache.Cache(str(self.folder), eviction_policy="none",  # a version once recorded stays
                                      disk=DataDisk)  # JSON and bytes only: no pickle, no value files

    def _damaged(self, exc: BaseException) -> InputError:
        """What a damaged store is said as, `exc` saying how the damage showed."""
        return InputError(display_path(self.folder), f"not a page store, or a damaged one ({type(exc).__name__}: {exc}); "
                          "move it aside: a new one is filled from the runs under the cassettes folder (what only "
                          "runs deleted since read stays in the old one)")

    def _get(self, key: str, shaped: Callable[[Any], bool]) -> Any:
        """The value under `key` (None when absent), if it has the shape this module writes there; a value
        that cannot be read back (damaged pickle bytes) or has another shape means a damaged store."""
        try:
            value = self._cache.get(key)
        except (diskcache.Timeout, OSError, sqlite3.Error):
            raise  # `_store_errors` says what they mean
        except DamagedValue as exc:  # a row this store's disk did not write: never unpickled
            raise self._damaged(exc) from exc
        if value is not None and not shaped(value):
            raise self._damaged(ValueError(f"{key}: not a value the store writes there"))
        return value

    def __enter__(self) -> PageStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._cache.close()

    # ------------------------------------------------------------------ filling

    @_store_errors
    def add(self, url: str, text: str, seen_at: str, recording: str) -> str:
        """Record that `recording` read the page `text` at `url` at `seen_at`; its sha256."""
        with self._cache.transact():
            self._add(url, text, seen_at, recording)
        return sha256_text(text)

    def _add(self, url: str, text: str, seen_at: str, recording: str) -> None:
        """A page version: `recording` read `text` at `url`. A text holding a secret the user gave us (a
        cassette written before it was one) is not kept: it stays in its cassette, never copied here."""
        if known() and contains_secret(text):
            return
        sha = sha256_text(text)
        if f"text:{sha}" not in self._cache:
            self._cache.set(f"text:{sha}", text.encode("utf-8"))  # bytes: diskcache reads a text file back with
            # universal newlines, which would turn a page's \r\n into \n
        entry = self._entry(url)
        entry["seen"].setdefault(sha, {})[recording] = seen_at
        self._cache.set(f"url:{normalise_learn_url(url)}", entry)

    def _add_no_page(self, url: str, reason: NoPage, seen_at: str, recording: str) -> None:
        """A fetch of `url` by `recording` that got no page, for `reason` (never a version)."""
        entry = self._entry(url)
        entry.setdefault("no_page", {}).setdefault(reason, {})[recording] = seen_at
        self._cache.set(f"url:{normalise_learn_url(url)}", entry)

    def _entry(self, url: str) -> dict[str, Any]:
        found = self._get(f"url:{normalise_learn_url(url)}", _is_url_entry)
        return found if found is not None else {"url": url, "seen": {}}

    def index_run(self, run: Run, pages_read: dict[str, list[PageFetched]] | None = None) -> bool:
        """Add the pages one run read, as one recording of its folder; False when that folder is already
        indexed at the same run.json. Versions indexed before are kept, whatever the run became since.
        `pages_read`: what the recording that wrote the run fetched, per claims file (`pages_fetched` of
        the interactions it wrote), so its cassettes are not read again; other files' cassettes are. (The
        run's files are read outside `_store_errors`: their errors name them, not the store.)"""
        manifest_sha = hashlib.sha256(read_regular(run.path / MANIFEST, "run")).hexdigest()
        folder = str(run.path.resolve())
        if self._indexed(folder, manifest_sha):
            return False
        fetched: list[PageFetched] = []
        for entry in run.manifest.claims:
            known = (pages_read or {}).get(entry.file)
            fetched.extend(known if known is not None else pages_fetched(run.learn_calls(entry.file)))
        self._add_recording(folder, manifest_sha, run.manifest.recorded_at, list(run.manifest.stand_ins), fetched)
        return True

    @_store_errors
    def _indexed(self, folder: str, manifest_sha: str) -> bool:
        known = self._get(f"run:{folder}", lambda v: isinstance(v, dict))
        return bool(known) and known.get("manifest_sha256") == manifest_sha and known.get("layout") == INDEX_LAYOUT

    @_store_errors
    def _add_recording(self, folder: str, manifest_sha: str, seen_at: str, stand_ins: list[str],
                       fetched: list[PageFetched]) -> None:
        """One recording of the run folder `folder` (its run.json's sha256 `manifest_sha`): the pages it read."""
        recording = f"{folder}#{seen_at}"
        with self._cache.transact():
            for url, text, no_page in dict.fromkeys(fetched):  # a page many conversations read: added once
                if no_page is None:
                    self._add(url, text, seen_at, recording)
                else:
                    self._add_no_page(url, no_page, seen_at, recording)
            self._cache.set(f"recording:{recording}", {"stand_ins": stand_ins})
            self._cache.set(f"run:{folder}", {"manifest_sha256": manifest_sha, "layout": INDEX_LAYOUT})

    def index_runs(self, runs: Iterable[Run]) -> int:
        """Index every run not yet indexed at its current run.json; how many were (re)indexed."""
        return sum(1 for run in runs if self.index_run(run))

    # ------------------------------------------------------------------ reading

    @_store_errors
    def urls(self) -> list[str]:
        """Every URL the store holds a page version of, as first read, sorted."""
        out = []
        for key in self._cache.iterkeys():
            if isinstance(key, str) and key.startswith("url:"):
                entry = self._get(key, _is_url_entry)
                if entry is not None and any(sha != LEGACY_NO_PAGE for sha in entry["seen"]):
                    out.append(entry["url"])
        return sorted(out)

    @_store_errors
    def versions(self, url: str) -> list[PageRecord]:
        """Every recorded version of a page, oldest first (by first seen, then last seen)."""
        entry = self._get(f"url:{normalise_learn_url(url)}", _is_url_entry)
        if not entry:
            return []
        seen = {sha: runs for sha, runs in entry["seen"].items() if sha != LEGACY_NO_PAGE}
        labels = _labels({rec for runs in seen.values() for rec in runs})
        out = []
        for sha, runs in seen.items():
            ordered = sorted(runs.items(), key=lambda kv: (kv[1], labels[kv[0]]))
            text = self.text(sha)
            if text is None:
                raise self._damaged(LookupError(f"the text of version {sha[:12]} of {entry['url']} is missing"))
            names = tuple(dict.fromkeys(labels[r] for r, _ in ordered))
            stand_in = tuple(dict.fromkeys(labels[r] for r, _ in ordered if "learn" in self._stand_ins(r)))
            out.append(PageRecord(
                url=entry["url"], sha256=sha, first_seen=ordered[0][1], last_seen=ordered[-1][1], runs=names,
                size=len(text.encode("utf-8")), stand_in_runs=stand_in,
            ))
        return sorted(out, key=lambda v: (v.first_seen, v.last_seen, v.sha256))

    @_store_errors
    def no_page_answers(self, url: str) -> list[NoPageAnswer]:
        """The runs whose fetch of a URL got no page, one entry per reason, oldest first."""
        entry = self._get(f"url:{normalise_learn_url(url)}", _is_url_entry)
        answers: dict[str, dict[str, str]] = (entry or {}).get("no_page", {})
        labels = _labels({rec for runs in answers.values() for rec in runs})
        out = []
        for reason, runs in answers.items():
            if reason not in NO_PAGE_MEANING or not runs:
                continue
            ordered = sorted(runs.items(), key=lambda kv: (kv[1], labels[kv[0]]))
            stand_in = tuple(dict.fromkeys(labels[r] for r, _ in ordered if "learn" in self._stand_ins(r)))
            out.append(NoPageAnswer(url=entry["url"], reason=reason, first_seen=ordered[0][1],
                                    last_seen=ordered[-1][1], runs=tuple(dict.fromkeys(labels[r] for r, _ in ordered)),
                                    stand_in_runs=stand_in))
        return sorted(out, key=lambda a: (a.first_seen, a.last_seen, a.reason))

    def _stand_ins(self, recording: str) -> list[str]:
        found = self._get(f"recording:{recording}", lambda v: isinstance(v, dict) and isinstance(v.get("stand_ins", []), list))
        return list(found.get("stand_ins", [])) if found is not None else []

    @_store_errors
    def text(self, sha256: str) -> str | None:
        """The page text whose sha256 this is; None when the store has none. A text stored under it that
        is not that text (a value file diskcache keeps beside its database, cut short or gone: diskcache
        reads a missing one as no value) means a damaged store. (Texts are kept as UTF-8 bytes; a store
        written before kept them as text, read back as such.)"""
        value = self._get(f"text:{sha256}", lambda v: isinstance(v, (bytes, str)))
        if value is None and f"text:{sha256}" in self._cache:
            raise self._damaged(LookupError(f"the text of version {sha256[:12]} cannot be read"))
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if text is not None and sha256_text(text) != sha256:
            raise self._damaged(ValueError(f"the text of version {sha256[:12]} is not the text recorded"))
        return text

    def version(self, url: str, prefix: str) -> PageRecord:
        """The version of a page whose hash starts with `prefix`; UsageError (listing the known ones)
        when none or several do."""
        versions = self.versions(url)
        hits = [v for v in versions if v.sha256.startswith(prefix.lower())]
        if len(hits) == 1:
            return hits[0]
        known = ", ".join(v.short for v in versions) or "none"
        if not hits:
            raise UsageError(f"no recorded version of {url} has a hash starting {prefix!r}; known: {known}")
        raise UsageError(f"hash prefix {prefix!r} matches {len(hits)} versions of {url}; give more of it ({known})")


PageFetched = tuple[str, str, NoPage | None]
"""(URL, reply text, why it is no page) of one `microsoft_docs_fetch`."""


def pages_fetched(calls: Iterable[LearnCall]) -> list[PageFetched]:
    """The page fetches among a cassette's Learn calls, in order."""
    return [(str(call.arguments["url"]), call.text, no_page_reason(call.text, call.is_error))
            for call in calls if call.tool == FETCH_TOOL and "url" in call.arguments]


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


def index_or_warn(runs: Iterable[Run], pages_read: dict[str, list[PageFetched]] | None = None,
                  store: str | Path | None = None) -> None:
    """Add the pages these runs read to the page store (`--store`, else the project's), as a recording or
    `drift --live` does once its run is written. The cassettes stay the truth and the store is filled
    from them again when needed, so a store that cannot be written (damaged, a full disk, locked by another
    process past diskcache's 60 s wait, or Ctrl-C while it waits) costs a warning on stderr, never the
    command (its traceback with JUDGE_REPLAY_DEBUG=1)."""
    try:
        with PageStore(store_folder(store)) as page_store:
            for run in runs:
                page_store.index_run(run, pages_read)
    except (Exception, KeyboardInterrupt) as exc:  # Ctrl-C while it waits for a lock: the run is written
        if debugging():
            traceback.print_exception(exc)
        why = "interrupted" if isinstance(exc, KeyboardInterrupt) else printable(str(exc))
        print(f"judge-replay: warning: page store not updated ({why})", file=sys.stderr)


def open_indexed_store(store: str | Path | None = None, cassettes: str | Path | None = None) -> PageStore:
    """The page store with every run under the cassettes root indexed (so a fresh clone works)."""
    root = cassettes_root(cassettes)
    if cassettes is not None and not root.is_dir():
        raise InputError(root, "no such cassettes folder")
    if cassettes is not None and (root / MANIFEST).is_file():
        raise InputError(root, "is a run folder: --cassettes takes the folder that holds run folders (here its parent)")
    page_store = PageStore(store_folder(store))
    try:
        page_store.index_runs(find_runs(root))
    except BaseException:
        page_store.close()
        raise
    return page_store
