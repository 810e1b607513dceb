"""Reading our input files (claims, gold, results) with errors that name the file, and atomic writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from replay.errors import InputError
from replay.files.json_text import parse_json
from replay.files.regular import Kind, read_regular_text
from replay.schema.claims import ClaimsBatch
from replay.schema.gold import GoldSet

M = TypeVar("M", bound=BaseModel)


def read_text(path: str | Path, kind: Kind = "file") -> str:
    """A UTF-8 text file users give us (a BOM allowed); missing, a folder, not a regular file, larger than
    `kind` may be (`files.regular`), not UTF-8 or unreadable is an InputError naming it."""
    path = Path(path)
    try:
        return read_regular_text(path, kind)
    except (OSError, UnicodeDecodeError) as exc:
        raise reading_error(path, exc) from exc


def reading_error(path: str | Path, exc: OSError | UnicodeDecodeError, what: str = "file") -> InputError:
    """The one-line InputError for a file that could not be read as UTF-8 text (`what` names the kind of file)."""
    if isinstance(exc, FileNotFoundError):
        return InputError(path, f"no such {what}")
    if isinstance(exc, IsADirectoryError):
        return InputError(path, f"is a folder, expected a {what}")
    if isinstance(exc, UnicodeDecodeError):
        return InputError(path, f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})")
    return InputError(path, f"cannot read ({exc.strerror or exc})")


def read_json(path: str | Path, kind: Kind = "file") -> Any:
    """Parse a JSON file (`read_text`, then `parse_json`); every problem is an InputError naming it."""
    return parse_json(read_text(path, kind), path)


def validate(path: str | Path, model: type[M], data: Any, what: str, at: tuple[str | int, ...] = ()) -> M:
    """Validate parsed data against a record; the error names the file and the first problem (`at`: where
    in the file `data` is, for a part validated alone)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in (*at, *err["loc"])) or "(top level)"
        raise InputError(path, f"not a valid {what}: {where}: {err['msg']}") from exc


def claims_paths(paths: list[str | Path]) -> list[Path]:
    """Expand files and folders (their `*.json`, recursively, sorted) into claims file paths."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            # a pipe or a device among them is read, and refused: never a claims file silently left out
            found = sorted(q for q in p.rglob("*.json") if q.exists() and not q.is_dir())
            dangling = sorted(q for q in p.rglob("*.json") if q.is_symlink() and not q.exists())
            if dangling:  # a claims file the run would silently go without
                raise InputError(dangling[0], "is a symbolic link to nothing: restore what it points to, or remove it")
            if not found:
                raise InputError(p, "folder holds no *.json claims files")
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise InputError(p, "no such file or folder")
    return out


def load_claims_batch(path: str | Path) -> ClaimsBatch:
    batch = validate(path, ClaimsBatch, read_json(path, "claims"), "claims file")
    seen: set[str] = set()
    for claim in batch.claims:
        if claim.id in seen:
            raise InputError(path, f"claim id {claim.id!r} appears twice")
        seen.add(claim.id)
    return batch


def load_claims(paths: list[str | Path]) -> list[tuple[Path, ClaimsBatch]]:
    """Every claims batch under `paths`, all validated before anything else happens."""
    batches = [(p, load_claims_batch(p)) for p in claims_paths(paths)]
    files: dict[str, Path] = {}
    for p, b in batches:
        if b.file in files:
            raise InputError(p, f"file {b.file!r} is also the subject of {files[b.file]}")
        files[b.file] = p
    return batches


def load_gold(path: str | Path) -> GoldSet:
    gold = validate(path, GoldSet, read_json(path, "gold"), "gold set")
    if not gold.items:
        raise InputError(path, "the gold set has no items: nothing to grade against")
    seen: set[tuple[str, str]] = set()
    for item in gold.items:
        key = (item.file, item.id)
        if key in seen:
            raise InputError(path, f"gold item {item.file}:{item.id} appears twice")
        seen.add(key)
    return gold
