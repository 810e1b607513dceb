"""Paths as we show and resolve them, and OS errors as one line."""

from __future__ import annotations

import errno
import functools
import os
from pathlib import Path

from replay.errors import one_line


def _short(name: str, limit: int = 200) -> str:
    """A file name cut to `limit` UTF-8 bytes: the temporary file's name around it must stay within the
    255 bytes a file name may have."""
    raw = name.encode("utf-8", "surrogateescape")
    return name if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore")


def system_error_text(err: OSError) -> str:
    """A system error as we say it: the file first (as the user knows it), then the reason."""
    reason = err.strerror or errno.errorcode.get(err.errno or 0) or str(err)
    name = err.filename
    if name is None or name == "":
        return reason
    return f"{one_line(display_path(name)) if isinstance(name, str) else name}: {reason}"


def os_error_about(exc: OSError, path: str | Path) -> OSError:
    """The same system error (class, errno, reason) naming `path`: the file the user knows, rather than
    a temporary file, or no file at all (`os.write` on a descriptor). Raise it `from exc`; `main()` prints
    it as one line."""
    try:
        return type(exc)(exc.errno, exc.strerror or str(exc), str(path))
    except TypeError:  # a subclass with another constructor
        return OSError(exc.errno, exc.strerror or str(exc), str(path))


def display_path(path: str | Path) -> str:
    """A path for messages: relative to the current folder (`../` allowed), else as given."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def portable_path(path: str | Path) -> str:
    """A path to store in a file (a manifest, a command): relative to the current folder when the path is
    under it, else as given; posix either way, never `../`."""
    p = Path(path)
    try:
        return resolved(p).relative_to(_resolved_folder(os.getcwd())).as_posix()
    except ValueError:
        return p.as_posix()


def resolved(path: Path) -> Path:
    """`path.resolve()`, its folder resolved once per process (a run's hundreds of files are in a few
    folders; each resolve costs a system call per part of the path). A path with `..` in it, or whose
    last part is a symbolic link, is resolved in full."""
    if ".." in path.parts or path.name in ("", ".") or path.is_symlink():
        return path.resolve()
    return _resolved_folder(os.path.join(os.getcwd(), path.parent)) / path.name


@functools.lru_cache(maxsize=256)
def _resolved_folder(folder: str) -> Path:
    """An absolute folder, resolved (once per process: folders are assumed not to be re-linked mid-run)."""
    return Path(folder).resolve()
