"""Reading only regular files, each kind of input within a size limit.

Every file judge-replay reads goes through here: a named pipe, a device or a socket (given as a path, or
reached through a symbolic link) is refused with one line naming it, before anything waits on it or reads
it, and a file larger than its kind may be is refused before it is read (a pipe would wait forever for a
writer; `/dev/zero` would be read until memory runs out). The limits (`LIMITS`) are far above what real
runs hold; the reference pages list them.

    data = read_regular(path, "results")        # bytes; InputError if not a regular file or too large
    text = read_regular_text(path, "claims")    # UTF-8 text, universal newlines (as `Path.read_text`)
    with open_regular(path, "cassette") as fh:  # an open binary file, checked the same way
        ...

A system error (no such file, no permission, a folder) is raised as the OSError it is; callers say it
their way.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Literal

from replay.errors import InputError

Kind = Literal["claims", "gold", "results", "run", "cassette", "prompt", "settings", "journal", "receipt",
               "snapshot", "page", "cache", "file"]

MiB = 1 << 20
LIMITS: dict[Kind, tuple[str, int]] = {
    "claims": ("a claims file", 64 * MiB),
    "gold": ("a gold set", 256 * MiB),
    "results": ("a results file", 1024 * MiB),
    "run": ("a run.json", 64 * MiB),
    "cassette": ("a cassette", 256 * MiB),
    "prompt": ("a prompt file", 16 * MiB),
    "settings": ("a pyproject.toml", 16 * MiB),
    "journal": ("a batch journal", 256 * MiB),
    "receipt": ("a replay receipt", 1024 * MiB),
    "snapshot": ("a snapshot file", 256 * MiB),
    "page": ("a page file", 64 * MiB),
    "cache": ("a derived-cache file", 1024 * MiB),
    "file": ("any other file", 256 * MiB),
}
"""kind -> (how a message names it, the most bytes it may hold). Real sizes, for scale: a claims file or
a cassette of a conversation over real-size Learn pages is a few hundred KB; a results file about 3 KB per
claim (1 GiB: some 300,000 claims)."""

_PIECE = 1 << 20
"""How much more is read at a time of a file larger than its size said."""
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
"""Opened without waiting: a named pipe swapped in between the check and the open must not block."""


def _not_regular(mode: int) -> str | None:
    """What a file of this mode is, when it is not a regular file; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    what = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else None)
    return f"is {what + ', not' if what else 'not'} a regular file: judge-replay reads regular files only"


def _check(path: str | Path, st: os.stat_result, kind: Kind) -> None:
    if stat.S_ISDIR(st.st_mode):  # the system error it always was: each reader says it its way
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    problem = _not_regular(st.st_mode)
    if problem is not None:
        raise InputError(path, problem)
    name, limit = LIMITS[kind]
    if st.st_size > limit:
        raise InputError(path, _too_large(st.st_size, name, limit))


def _too_large(size: int | None, name: str, limit: int) -> str:
    said = f"is {size:,} bytes" if size is not None else "holds more"
    return f"{said}, more than the {limit // MiB:,} MiB {name} may be: not read"


def _open(path: str | Path, kind: Kind) -> tuple[int, os.stat_result]:
    """A descriptor of `path` opened for reading, and its stat, once it is known to be a regular file
    within `kind`'s limit (InputError naming it otherwise; the OSError of a file that cannot be opened)."""
    _check(path, os.stat(path), kind)  # before the open: opening some devices does something
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        _check(path, st, kind)  # the file opened, which may not be the one checked
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def refuse_special(path: str | Path) -> None:
    """InputError naming `path` when it is a named pipe, a device or a socket, for a reader that takes a
    path that is not a file for a missing file: such a path is refused like any other read of it."""
    try:
        st = os.stat(path)
    except OSError:
        return
    problem = None if stat.S_ISDIR(st.st_mode) else _not_regular(st.st_mode)
    if problem is not None:
        raise InputError(path, problem)


def open_regular(path: str | Path, kind: Kind) -> BinaryIO:
    """`path` opened for reading in binary, once it is known to be a regular file within `kind`'s limit
    (InputError naming it otherwise; the OSError of a file that cannot be opened)."""
    fd, _ = _open(path, kind)
    return os.fdopen(fd, "rb")


def read_regular(path: str | Path, kind: Kind) -> bytes:
    """The bytes of a regular file within `kind`'s limit (see `open_regular`); never more than the limit
    is read, whatever its size said (a file grown since, or one whose size says nothing, as in /proc)."""
    name, limit = LIMITS[kind]
    fd, st = _open(path, kind)
    try:
        pieces = [os.read(fd, st.st_size + 1)]  # the size it says, and a byte more to see whether it says all
        read = len(pieces[0])
        while pieces[-1] and read <= limit:  # to the end (a short read, a file grown since), up to the limit
            pieces.append(os.read(fd, min(_PIECE, limit + 1 - read)))
            read += len(pieces[-1])
    finally:
        os.close(fd)
    if read > limit:
        raise InputError(path, _too_large(None, name, limit))
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def read_regular_text(path: str | Path, kind: Kind, encoding: str = "utf-8-sig") -> str:
    """`read_regular` decoded (UnicodeDecodeError as `bytes.decode` raises it), line ends made `\\n` as
    `Path.read_text` makes them."""
    text = read_regular(path, kind).decode(encoding)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
