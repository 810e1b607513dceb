"""The parsed-cassette cache: each YAML cassette is parsed once per change, then read from a checked copy.

    source = Cassette(path)       # the file's sha256 from its stamp; its bytes read only when needed
    data = cached(source, "", lambda: load_yaml(text_of(source.raw()), path), parser="yaml safe, v1")

The YAML cassette stays the truth. The parsed document (plain dicts, lists, strings, numbers) is kept
in the user's cache folder (`cache_folder`: the platform's convention, or `JUDGE_REPLAY_CACHE_DIR`),
never in the project, so no clone can carry an entry in. One entry per cassette file, named by the
sha256 of its resolved path (so re-recording replaces the entry instead of adding one, and runs kept
outside a project are cached too). An entry is one JSON line

    {"format", "parser", "source_sha256", "payload_length", "payload_crc32"}

then the payload in `entry_format` (JSON and raw bytes: its reader builds plain values only and
refuses anything it did not write; nothing is unmarshalled or unpickled). It is used only when every
field of that line matches (the sha256 of the cassette's bytes as they are now, this parser) and the
payload has its length and CRC-32; anything else (a missing, stale, truncated, corrupted, forged or
outdated entry; a named pipe, a device or a file over 1 GiB where an entry or a stamp should be, which
is neither waited on nor read) is ignored and rebuilt from the YAML, never an error. A forged entry that passes these
checks can at worst give a wrong parse to commands that trust the cache: `cassettes verify`, the check,
reads no entry (`no_cache`). No entry is written for a cassette that holds a secret the user gave us
(`secrets.registry`), for a value the format cannot hold, or when the folder is not writable: those
loads parse the YAML every time, as without a cache. Deleting the folder is always safe.

What else is derived from a cassette alone, such as replay's request keys (`cached` with a tag), is kept
the same way in an entry of its own (`<name>.<tag>.bin`), checked against the same hash and against the
sha256 of the source of the code that derives it (`source_sha256`), so an edit of that code rebuilds it.

The sha256 of a cassette's bytes without reading them: a stamp (`<name>.stamp`), as git's index keeps
one per file. When a cassette's bytes are read (`Cassette.raw`), the stamp keeps their sha256 with the
file's (device, inode, size, mtime, ctime) and the moment the read began. Later, `Cassette.sha256`
takes the stamped hash while the file's stat is that one, and only if its ctime was at least `RACY_NS`
(2 s) older than that read; otherwise it reads and hashes the bytes (and stamps them again). The kernel
sets ctime, from its own clock, on every write, truncation, rename or `utime`, and no user tool can set
it back, so an edit in place that keeps the size and restores the mtime still changes the stat; a
replaced file has another inode and ctime. A file changed less than 2 s before it was read is "racily
clean" (a write in the same clock tick as the read could leave its ctime equal), so it is hashed on
every read until it has been still for 2 s. What a stamp cannot see: a filesystem that keeps no
ctime of its own (some network or FUSE mounts report the mtime) together with an edit that keeps the
size and restores the mtime; a write through a shared memory map to a page already dirty, while the
mapping is open (the kernel updates the times at the first write to a page); attributes an NFS client
serves from its cache (the file is opened before its stat is taken, which makes the client ask the
server); a clock set back. `cassettes verify` believes no stamp (`every_byte_hashed`): it is the check
the stamps and receipts rest on. `JUDGE_REPLAY_NO_CACHE=1` hashes everything, everywhere.

`JUDGE_REPLAY_NO_CACHE=1` (every command's `--no-cache`) turns the cache off (the benchmarks measure with
and without it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import zlib

import platformdirs
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replay.files.paths import resolved
from replay.errors import InputError
from replay.files.regular import open_regular, read_regular
from replay.secrets.registry import contains_secret, known
from replay.cassettes.entry_format import decode, encode

FORMAT = 4
"""Bump when the entry file's own layout changes."""
STAMP_FORMAT = 1
"""Bump when a stamp's layout changes."""
FOLDER_VARIABLE = "JUDGE_REPLAY_CACHE_DIR"
"""Where the derived caches live instead of the user's cache folder (`cache_folder`)."""
OFF_VARIABLE = "JUDGE_REPLAY_NO_CACHE"
RACY_NS = 2_000_000_000
"""How long (ns) a file must have been unchanged when its bytes were read for their stamp to be trusted."""


def is_off() -> bool:
    """Whether `JUDGE_REPLAY_NO_CACHE` turns every cache of ours off."""
    return os.environ.get(OFF_VARIABLE, "") not in ("", "0")


def entry_path(cassette: Path, tag: str = "") -> Path | None:
    """Where the entry for `cassette` (or what `tag` names derived from it) lives; None when the cache
    is off."""
    base = _entries_base(cassette)
    return None if base is None else Path(_entry_file(base, tag))


def cache_folder() -> Path:
    """The folder of the entries: `JUDGE_REPLAY_CACHE_DIR`, else the user's cache folder (the platform's
    convention: `~/.cache/judge-replay` on Linux, `~/Library/Caches/judge-replay` on macOS, under
    `%LOCALAPPDATA%` on Windows), `cassettes/` in it; inside `private_entries`, that block's own folder."""
    return Path(_folder())


def _folder() -> str:
    """`cache_folder` as text (asked once per cassette: a run's hundreds are not made `Path`s)."""
    if _private[0] is not None:
        return _private[0]
    return _entries_folder(os.environ.get(FOLDER_VARIABLE, ""))


@functools.lru_cache(maxsize=16)
def _entries_folder(variable: str) -> str:
    return os.path.join(_base_folder(variable), "cassettes")


def user_cache_base() -> Path:
    """The folder of everything derived we keep (`cache_folder`'s parent): `JUDGE_REPLAY_CACHE_DIR`, else
    the user's cache folder. Replay receipts live in it too (`runs.receipts`), so no clone carries one."""
    return Path(_base_folder(os.environ.get(FOLDER_VARIABLE, "")))


@functools.lru_cache(maxsize=16)
def _base_folder(variable: str) -> str:
    return os.path.abspath(os.path.expanduser(variable)) if variable else platformdirs.user_cache_dir("judge-replay")


def _entries_base(cassette: Path) -> str | None:
    """The path of a cassette's entries without their suffix (plain text: a run's hundreds of entry names
    are not made `Path`s, whose parts Python keeps interned); None when there is no cache for it."""
    if is_off() and _private[0] is None:
        return None
    return _entry_base(os.getcwd(), os.fspath(cassette), _folder())


def _entry_file(base: str, tag: str) -> str:
    return f"{base}.{tag}.bin" if tag else f"{base}.bin"


@functools.lru_cache(maxsize=4096)
def _entry_base(cwd: str, cassette: str, folder: str) -> str:
    """The entries' path for a cassette without their suffix (named by the sha256 of its resolved path),
    worked out once per working folder and cassette path in a process (a run's hundreds of cassettes
    are asked for by several commands' steps)."""
    where = os.fsencode(os.fspath(resolved(Path(cwd) / cassette)))
    return os.path.join(folder, hashlib.sha256(where).hexdigest()[:32])


class Cassette:
    """One cassette file as the cache sees it: the sha256 of its bytes (from its stamp when that can be
    trusted, see the module docstring) and the bytes themselves, read at most once and only when asked
    for. Both raise the OSError of reading the file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries = _entries_base(path)
        """Where its entries and stamp live, without their suffix (None: no cache for this cassette)."""
        self._raw: bytes | None = None
        self._sha256: str | None = None

    def sha256(self) -> str:
        if self._sha256 is None:
            stamp = self._stamp_path()
            if stamp is not None and not _every_byte[0]:
                with open_regular(self.path, "cassette") as fh:  # open, then fstat: an NFS client revalidates on open
                    self._sha256 = _stamped_sha256(stamp, os.fstat(fh.fileno()))
            if self._sha256 is None:
                self.raw()
        assert self._sha256 is not None
        return self._sha256

    def raw(self) -> bytes:
        """The file's bytes (read once); from then on `sha256` is theirs, and the stamp says so."""
        if self._raw is None:
            started = time.time_ns()
            with open_regular(self.path, "cassette") as fh:  # a pipe, a device, a giant: refused
                before = os.fstat(fh.fileno())
                raw = fh.read()
                after = os.fstat(fh.fileno())
            sha256 = hashlib.sha256(raw).hexdigest()
            stamp = self._stamp_path()
            if (stamp is not None and _stat_of(before) == _stat_of(after)
                    and before.st_size == len(raw) and before.st_ctime_ns + RACY_NS <= started
                    and _stamped_sha256(stamp, before) != sha256):  # a stamp already right is not written again
                _write_atomically(stamp, json.dumps({"format": STAMP_FORMAT, "stat": _stat_of(before), "read_at_ns": started,
                                                     "sha256": sha256}).encode())
            self._raw, self._sha256 = raw, sha256
        return self._raw

    def _stamp_path(self) -> str | None:
        return None if self.entries is None else self.entries + ".stamp"


_every_byte = [0]
"""How many `every_byte_hashed` blocks are open in this process (any: no stamp is believed)."""


@contextmanager
def every_byte_hashed() -> Iterator[None]:
    """Within this block, in every thread of the process, no stamp is believed and no entry is read or
    written (but those of a `private_entries` block, made in this command): each cassette's sha256 is that
    of its bytes, read now, and each is parsed from its YAML.
    `cassettes verify`, the check that receipts rest on, runs in it, so that it trusts nothing derived
    (a forged entry, a stamp's blind spots: see the module docstring)."""
    _every_byte[0] += 1
    try:
        yield
    finally:
        _every_byte[0] -= 1


_private: list[str | None] = [None]
"""The folder of the open `private_entries` block, if any."""


@contextmanager
def private_entries() -> Iterator[str]:
    """Within this block, in every thread of the process, entries and stamps are read and written only in
    a new folder of this process's own (yielded; deleted at the block's end), and used even where the
    cache is off or inside `every_byte_hashed` (whose stamps are still not believed: each cassette is
    hashed from its bytes, read now, and an entry is used only for those bytes). No entry of the user's
    cache is read, and none is written there: `cassettes verify` runs its check in one, so that the
    cassettes `cassettes.parallel` parses in worker processes reach it through entries it made itself."""
    if _private[0] is not None:  # already inside one: the same folder
        yield _private[0]
        return
    folder = tempfile.mkdtemp(prefix="judge-replay-parse-")
    _private[0] = folder
    try:
        yield folder
    finally:
        _private[0] = None
        shutil.rmtree(folder, ignore_errors=True)


def private_folder() -> str | None:
    """The folder of the open `private_entries` block (None: none is open)."""
    return _private[0]


def share_private_folder(folder: str | None) -> None:
    """In a worker process of `cassettes.parallel`: use the `private_entries` folder of the process that
    started it (None: the user's cache, as that process does)."""
    _private[0] = folder


def _stat_of(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


_believed: dict[str, tuple[list[int], list[int], str]] = {}
"""The stamps this process read and believed: stamp path -> (the stamp file's own stat, the stat of the
file it is for, that file's sha256). While the stamp file is the one read (same stat: a stamp is only
ever replaced whole, by a rename), it says the same, and is not read again for a file with that stat:
`cassettes.parallel` looks at every cassette's hash before the command's serial work asks again."""


def _stamped_sha256(stamp: str, st: os.stat_result) -> str | None:
    """The sha256 the stamp keeps, if it is for a file with this stat that was still for `RACY_NS` when
    read; else None (no stamp, another file, a racily clean one, a damaged stamp)."""
    stat = _stat_of(st)
    seen = _believed.get(stamp)
    if seen is not None and seen[1] == stat:
        try:
            if _stat_of(os.stat(stamp)) == seen[0]:
                return seen[2]
        except OSError:
            return None
    try:
        with open_regular(stamp, "cache") as fh:  # a pipe or /dev/zero put there: not waited on, not read
            own = _stat_of(os.fstat(fh.fileno()))
            found = json.loads(fh.read(4096))  # a stamp is some 300 bytes
    except (OSError, ValueError, RecursionError, InputError):  # RecursionError: nested too deep
        return None
    if not isinstance(found, dict) or found.get("format") != STAMP_FORMAT or found.get("stat") != stat:
        return None
    read_at, sha256 = found.get("read_at_ns"), found.get("sha256")
    if not isinstance(read_at, int) or st.st_ctime_ns + RACY_NS > read_at or not isinstance(sha256, str) or len(sha256) != 64:
        return None
    _believed[stamp] = (own, stat, sha256)
    return sha256


@functools.cache
def source_sha256() -> str:
    """The sha256 of every source file of our package, as they were on disk when first asked in this
    process: an editable install changes code without changing its version, and any edit of the code
    that derives a value rebuilds it."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        if "__pycache__" not in path.parts:
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


_PACKAGE = Path(__file__).resolve().parents[1]


def cached(source: Cassette, tag: str, compute: Callable[[], Any], *, parser: str) -> Any:
    """`compute()`, a value derived from the cassette `source` alone (`tag` names it; "" for the parsed
    document), from its entry when that is valid; else computed and stored. `parser` names the code that
    computes it (for derived values, include its `source_sha256`, so that editing that code rebuilds the
    entry). Raises the OSError of reading the cassette."""
    if source.entries is None or (_every_byte[0] and _private[0] is None):  # `cassettes verify` reads no entry
        return compute()                                                   # but those it made (`private_entries`)
    entry = _entry_file(source.entries, tag)
    salted = _salted(parser)
    found, value = _read(entry, salted, source.sha256())
    if found:
        return value
    value = compute()
    _write(entry, salted, source, value)
    return value


def entry_is_current(source: Cassette, tag: str, parser: str) -> bool:
    """Whether the `tag` entry of the cassette was made by `parser` from the cassette's bytes as they
    are now, judged by the entry's first line only (`cassettes.parallel` asks it of every cassette, so a
    warm cache costs little; a payload damaged since is still caught, and rebuilt, when it is read)."""
    if source.entries is None:
        return False
    try:
        with open_regular(_entry_file(source.entries, tag), "cache") as fh:
            line = fh.readline(4096)
    except (OSError, InputError):
        return False
    try:
        found = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return (isinstance(found, dict) and found.get("format") == FORMAT and found.get("parser") == _salted(parser)
            and found.get("source_sha256") == source.sha256())


def text_of(raw: bytes) -> str:
    """The bytes as `Path.read_text("utf-8")` gives them (universal newlines)."""
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _salted(parser: str) -> str:
    return f"{parser}; python {sys.version_info[0]}.{sys.version_info[1]}"


def _read(entry: str, parser: str, sha256: str) -> tuple[bool, Any]:
    """(True, the stored value) if the entry is whole and matches; (False, None) otherwise."""
    try:
        data = read_regular(entry, "cache")  # a pipe, a device or a giant put there: passed over as missing
    except (OSError, InputError):
        return False, None
    end = data.find(b"\n")
    payload = data[end + 1:]
    try:
        found = json.loads(data[:end]) if end >= 0 else None
    except (ValueError, RecursionError):
        found = None
    if (not isinstance(found, dict) or found.get("format") != FORMAT or found.get("parser") != parser
            or found.get("source_sha256") != sha256 or found.get("payload_length") != len(payload)
            or found.get("payload_crc32") != zlib.crc32(payload)):
        return False, None
    try:
        return True, decode(payload)
    except ValueError:
        return False, None


def _write(entry: str, parser: str, source: Cassette, value: Any) -> None:
    """Store an entry of `value`, derived from the cassette's bytes as `source` knows them now. Skipped
    for a cassette that holds a secret we know, when the cassette changed while `value` was made from
    it, or when anything about writing fails."""
    sha256 = source.sha256()
    if known() and contains_secret(source.raw().decode("utf-8", "replace")):
        return
    if source.sha256() != sha256:
        return
    payload = encode(value)
    if payload is None:  # a kind of value the format does not hold: no cache for this one
        return
    line = json.dumps({"format": FORMAT, "parser": parser, "source_sha256": sha256,
                       "payload_length": len(payload), "payload_crc32": zlib.crc32(payload)}).encode()
    _write_atomically(entry, line + b"\n" + payload)


def _write_atomically(path: str, data: bytes) -> None:
    """Write a file of the cache whole (temporary file, then rename), or not at all. Not
    `files.atomic.atomic_write_text`: entries are binary, and need no fsync, since a torn one fails its checks
    and is rebuilt."""
    tmp = None
    folder, name = os.path.split(path)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
