"""Atomic writes: a crash leaves the old file or the new one, never half of one."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from replay.errors import InputError
from replay.files.json_text import dump_json
from replay.files.paths import _short, os_error_about
from replay.secrets.registry import redact

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: a crash never leaves half a file. Any secret
    the user gave us (`secrets.registry`) is removed first: this is the one way our files are written. A folder
    at `path` is an InputError; any other OSError (a full disk, a read-only folder) is raised naming
    `path`, not the temporary file, for `main()` to report."""
    atomic_write_chunks(path, (text,))


def atomic_write_chunks(path: str | Path, chunks: Iterable[str]) -> None:
    """`atomic_write_text` of the text these pieces make, each written as it comes (a large file is never
    held whole); an exception while they come leaves `path` as it was. Each piece is redacted on its
    own: cut the text where no secret can span the cut (at a line break of a JSON text, which no JSON
    string holds, so no form of a secret in it either). A symbolic link is written through (the file it
    points to is replaced, the link stays), and a file replaced keeps its permissions."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if path.is_dir():
        raise InputError(path, "is a folder; give a file path to write")
    for folder in path.parents:
        if folder.exists():
            if not folder.is_dir():
                raise InputError(folder, f"is a file, not a folder: cannot write {path.name} in it")
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(os.stat(path).st_mode) if path.exists() else 0o666 & ~_UMASK
        fd, tmp = tempfile.mkstemp(prefix=f".{_short(path.name)}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise os_error_about(exc, path) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for chunk in chunks:
                fh.write(redact(chunk))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # mkstemp makes 0600: the replaced file's permissions, else those open() gives
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise os_error_about(exc, path) from exc
        raise


def write_model(path: str | Path, model: BaseModel) -> None:
    atomic_write_text(path, dump_json(model.model_dump(mode="json", exclude_none=False)))
