"""The parsed-cassette cache: each YAML cassette is parsed once per change, then read from a checked copy.

    data = parsed_cassette(path, lambda text: load_yaml(text, path), parser="yaml safe, v1")

The YAML cassette stays the truth. The parsed document (plain dicts, lists, strings, numbers) is kept
under `<project>/.judge-replay/cache/cassettes/` (git ignores `.judge-replay/`), one entry per cassette
file of the project (named by a hash of its path in the project, so re-recording replaces the entry
instead of adding one; cassettes outside the project, such as temporary runs, are not cached).
An entry is one JSON line

    {"format", "parser", "source_sha256", "payload_sha256"}

then the payload: `marshal` of the document (read ~50x faster than the YAML, ~20x faster than JSON).
It is used only when every field of that line matches (the sha256 of the cassette's bytes as they are
now, this parser, this Python's marshal) and the payload's sha256 is right; anything else (a missing,
stale, truncated, corrupted or outdated entry) is ignored and rebuilt from the YAML, never an error. No
entry is written for a cassette that holds a secret the user gave us (`_secrets`), for a document
marshal cannot hold, or when the folder is not writable: those loads parse the YAML every time, as
without a cache. Deleting the folder is always safe.

What else is derived from a cassette alone, such as replay's request keys (`cached`), is kept the same
way in an entry of its own (`<name>.<tag>.bin`), checked against the same hash and against the sha256 of
the source of the code that derives it (`source_sha256`), so an edit of that code rebuilds it.

`JUDGE_REPLAY_NO_CACHE=1` turns the cache off (the benchmarks measure with and without it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import marshal
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._config import project_root
from ._secrets import contains_secret, known

FORMAT = 1
"""Bump when the entry file's own layout changes."""
FOLDER = Path(".judge-replay") / "cache" / "cassettes"
"""Where entries live, under the project root."""
OFF_VARIABLE = "JUDGE_REPLAY_NO_CACHE"


def is_off() -> bool:
    """Whether `JUDGE_REPLAY_NO_CACHE` turns every cache of ours off."""
    return os.environ.get(OFF_VARIABLE, "") not in ("", "0")


def entry_path(cassette: Path, tag: str = "") -> Path | None:
    """Where the entry for `cassette` (or what `tag` names derived from it) lives; None when the cache
    is off or the cassette is outside the project (a temporary run, another checkout): those are parsed
    every time, and leave nothing behind."""
    if is_off():
        return None
    root = _root(os.getcwd())
    try:
        relative = _resolved(cassette).relative_to(root)
    except ValueError:
        return None
    entry = root / FOLDER / f"{hashlib.sha256(relative.as_posix().encode()).hexdigest()[:32]}.bin"
    return tagged(entry, tag)


@functools.lru_cache(maxsize=16)
def _root(cwd: str) -> Path:
    """The project root (resolved) for a working folder: asked once per folder, not once per cassette."""
    return project_root().resolve()


def _resolved(path: Path) -> Path:
    """`path.resolve()`, its folder resolved once for all the cassettes in it (a run's hundreds)."""
    if path.name in ("", ".", "..") or path.is_symlink():
        return path.resolve()
    return _resolved_folder(str(path.parent)) / path.name


@functools.lru_cache(maxsize=256)
def _resolved_folder(folder: str) -> Path:
    return Path(folder).resolve()


def tagged(entry: Path | None, tag: str) -> Path | None:
    """The entry of what `tag` names derived from the cassette whose document entry is `entry`."""
    return entry.with_name(f"{entry.stem}.{tag}.bin") if entry is not None and tag else entry


def parsed_cassette(path: Path, parse: Callable[[str], Any], *, parser: str) -> Any:
    """`parse(text)` of the cassette at `path`, from a valid cache entry when there is one; else parsed
    (errors propagate, as do the OSError and UnicodeDecodeError of reading the file) and stored for next
    time. `parser` names what `parse` does (a different name never reads this one's entries)."""
    raw = path.read_bytes()
    return cached(entry_path(path), raw, hashlib.sha256(raw).hexdigest(), lambda: parse(text_of(raw)), parser=parser)


@functools.cache
def source_sha256(*modules: str) -> str:
    """The sha256 of the source files of these modules of our package (`_matching.py`, ...), as they
    were on disk when first asked in this process: an editable install changes code without changing
    its version."""
    digest = hashlib.sha256()
    for name in modules:
        digest.update(name.encode() + b"\0" + (_PACKAGE / name).read_bytes() + b"\0")
    return digest.hexdigest()


_PACKAGE = Path(__file__).resolve().parent


def cached(entry: Path | None, raw: bytes, sha256: str, compute: Callable[[], Any], *, parser: str) -> Any:
    """`compute()`, a value derived from a cassette alone (its bytes `raw`, their `sha256`), from
    `entry` (`entry_path`; None: no cache) when it is valid; else computed and stored. `parser` names
    the code that computes it (for derived values, include its `source_sha256`, so that editing that
    code rebuilds the entry)."""
    if entry is None:
        return compute()
    header = {"format": FORMAT, "parser": _salted(parser), "source_sha256": sha256}
    found, value = _read(entry, header)
    if found:
        return value
    value = compute()
    _write(entry, header, value, raw)
    return value


def text_of(raw: bytes) -> str:
    """The bytes as `Path.read_text("utf-8")` gives them (universal newlines)."""
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _salted(parser: str) -> str:
    return f"{parser}; python {sys.version_info[0]}.{sys.version_info[1]}; marshal {marshal.version}"


def _read(entry: Path, header: dict[str, Any]) -> tuple[bool, Any]:
    """(True, the stored value) if the entry is whole and matches `header`; (False, None) otherwise."""
    try:
        data = entry.read_bytes()
    except OSError:
        return False, None
    line, sep, payload = data.partition(b"\n")
    try:
        found = json.loads(line) if sep else None
    except ValueError:
        found = None
    if not isinstance(found, dict) or any(found.get(k) != v for k, v in header.items()):
        return False, None
    if found.get("payload_sha256") != hashlib.sha256(payload).hexdigest():
        return False, None
    try:
        return True, marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return False, None


def _write(entry: Path, header: dict[str, Any], value: Any, raw: bytes) -> None:
    """Store an entry atomically (temporary file, then rename). Not `_io.atomic_write_text`: the entry
    is binary, and it needs no fsync, since a torn entry fails its checksum and is rebuilt. Skipped for
    a cassette that holds a secret we know, or when anything about writing fails."""
    if known() and contains_secret(raw.decode("utf-8", "replace")):
        return
    try:
        payload = marshal.dumps(value)
    except ValueError:  # a type marshal cannot store: no cache for this one
        return
    line = json.dumps({**header, "payload_sha256": hashlib.sha256(payload).hexdigest()}).encode()
    tmp = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{entry.name}.", suffix=".tmp", dir=entry.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(line + b"\n" + payload)
        os.replace(tmp, entry)
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
