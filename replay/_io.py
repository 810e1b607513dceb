"""Reading our input files (claims, gold, results) with errors that name the file, and atomic writes."""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from ._errors import InputError, one_line
from ._records import ClaimsBatch, CompactResults, FileResult, GoldSet, ResultsFile
from ._secrets import redact

M = TypeVar("M", bound=BaseModel)
_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: a crash never leaves half a file. Any secret
    the user gave us (`_secrets`) is removed first: this is the one way our files are written. A folder
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


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""Controls but newline and tab, bidi overrides, and lone surrogates (the bytes of a file name that is not
UTF-8, which a strict UTF-8 terminal cannot even encode)."""


def printable(text: str) -> str:
    """Text from data (claims, ids, page lines, server replies) made safe for a terminal: every control
    character but newline and tab (ESC, BEL, CR, C1, bidi overrides, undecodable bytes) shown as a visible
    `\\xNN` or `\\uNNNN` escape, and any secret the user gave us redacted. Use it on every data string a
    text output prints."""
    text = redact(text)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


MAX_LISTED = 50
"""The most items (claim ids, files) one list of a text or markdown report names; `--json` names all."""


def listed(items: Sequence[Any], name: Callable[[Any], str] = str) -> str:
    """`a, b, c` (each item's `name`), or the first MAX_LISTED and how many more."""
    more = f", ... and {len(items) - MAX_LISTED:,} more" if len(items) > MAX_LISTED else ""
    return ", ".join(name(item) for item in items[:MAX_LISTED]) + more


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


def dump_json(data: Any) -> str:
    """Our JSON style for files people read and diff, and for every JSON we print: 2-space indent, UTF-8
    (ordinary non-ASCII text as is), trailing newline, and terminal-safe: the characters `printable`
    escapes (C0/C1 controls, bidi overrides, lone surrogates) written as `\\uXXXX` escapes. Those can only
    occur inside JSON strings, where the escape means the same character, so the JSON is unchanged.
    NaN and Infinity, which are not JSON, raise ValueError: no file of ours may hold what cannot be read."""
    text = indented_json(data, allow_nan=False)
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def dump_json_pieces(data: dict[str, Any], key: str, items: Iterable[Any]) -> Iterator[str]:
    """`dump_json` of `data` with the list `items` under its top-level `key` (a plain name; where `data`
    has it, its value is not read), in whole lines, each item's as it comes: a report of thousands of
    records is never held as one text nor as one structure. The items' lines are `dump_json`'s of each,
    indented as they stand in the list."""
    text = dump_json({**data, key: []})
    close = text.index(f'\n  "{key}": []') + len(f'\n  "{key}": [')  # no JSON string holds a line break
    pieces = iter(items)
    first = next(pieces, _NO_ITEM)
    if first is _NO_ITEM:
        yield text
        return
    yield text[:close] + "\n"
    item = first
    for after in pieces:
        yield _list_item(item) + ",\n"
        item = after
    yield _list_item(item) + "\n"
    yield "  " + text[close:]


_NO_ITEM = object()


def model_json_pieces(record: BaseModel, key: str) -> Iterator[str]:
    """`dump_json(record.model_dump(mode="json"))` in whole lines (`dump_json_pieces`), the records of its
    list field `key` dumped one at a time."""
    rest = record.model_dump(mode="json", exclude={key})
    fields = [name for name in type(record).model_fields if name in rest or name == key]
    data = {name: rest.get(name) for name in fields} | rest  # the extra fields of an open record come last
    return dump_json_pieces(data, key, (item.model_dump(mode="json") for item in getattr(record, key)))


def _list_item(item: Any) -> str:
    """An item of a top-level list, as `dump_json` writes it there (its lines indented 4 spaces)."""
    return "    " + dump_json(item)[:-1].replace("\n", "\n    ")


def compact_json(data: Any, *, float_free: bool = False) -> str:
    """`json.dumps(data, ensure_ascii=False, separators=(",", ":"))`, the same text, written by
    pydantic-core when the caller knows `data` is parsed JSON holding no float (see `indented_json`)."""
    if float_free:
        try:
            return to_json(data).decode("utf-8")
        except (ValueError, RecursionError):  # a lone surrogate, nesting deeper than pydantic-core goes
            pass
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def parse_json_noting_floats(text: str) -> tuple[Any, bool]:
    """`json.loads(text)` (its errors too), and whether the data is float-free: no float, NaN nor
    Infinity, so that `indented_json` and `compact_json` may write it without checking their output."""
    if text.startswith("\ufeff"):  # json.loads refuses a BOM (the decoder itself would not): its error
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        return _FLOAT_NOTING.decode(text), True
    except _FloatFound:
        return json.loads(text), False


class _FloatFound(Exception):
    """A JSON text holds a float (or NaN, Infinity)."""


def _no_float(text: str) -> Any:
    raise _FloatFound


_FLOAT_NOTING = json.JSONDecoder(parse_float=_no_float, parse_constant=_no_float)
"""Made once: `json.loads(text, parse_float=...)` makes a decoder (and its scanner) at every call."""


def indented_json(data: Any, *, float_free: bool = False, allow_nan: bool = True) -> str:
    """`json.dumps(data, indent=2, ensure_ascii=False)`, the same text, written by pydantic-core (Rust)
    where it is the same (the json module indents in pure Python). Both write JSON's strings, integers,
    true/false/null, nesting and key order alike (tests/test_record_speed_json.py holds them to it);
    they write some floats differently (1e-05 against 0.00001), so data that may hold a float is
    written by pydantic-core only when its compact form equals the json module's. `float_free`: the
    caller knows `data` is parsed JSON holding no float, NaN nor Infinity (`parse_json_noting_floats`).
    What pydantic-core refuses (a lone surrogate, nesting deeper than it goes) is left to json.dumps,
    and so is anything json.dumps refuses, which it then raises; with `allow_nan=False` also NaN and
    Infinity, which are not JSON (our own files: one holding them could not be read back; a recorded
    body that holds them is kept as the server sent it)."""
    try:
        if float_free or to_json(data) == json.dumps(data, ensure_ascii=False, separators=(",", ":"),
                                                     allow_nan=allow_nan).encode("utf-8"):
            return to_json(data, indent=2).decode("utf-8")
    except (ValueError, TypeError, RecursionError):  # not the same, or not JSON data: json.dumps says which
        pass
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=allow_nan)


def write_model(path: str | Path, model: BaseModel) -> None:
    atomic_write_text(path, dump_json(model.model_dump(mode="json", exclude_none=False)))


MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays and objects we read: our formats need under 10; a deeper file is hostile
or broken, and would otherwise exhaust the stack of every function that walks it."""


MAX_DIGITS = 100
"""Longest number we read (token counts need 20 digits); Python refuses integers of 4300 digits anyway."""


def _short_number(text: str) -> str:
    if len(text) > MAX_DIGITS:
        raise ValueError(f"the number {text[:20]}... has more than {MAX_DIGITS} digits")
    return text


def _finite_number(text: str) -> float:
    value = float(_short_number(text))
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is too large")
    return value


def _whole_number(text: str) -> int:
    return int(_short_number(text))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


class _KeyTwice(ValueError):
    """An object of a file we read gives one key twice."""


class RepeatedKeys(dict[Any, Any]):
    """A JSON object or YAML mapping read with `every_value` that may give a key more than once: as a
    dict it holds each key's last value, as a parser keeps; `pairs` holds every member, in order."""

    pairs: list[tuple[Any, Any]]


def members(mapping: dict[Any, Any]) -> Iterable[tuple[Any, Any]]:
    """Every (key, value) of a mapping, those of a key given again too (`RepeatedKeys`)."""
    return mapping.pairs if isinstance(mapping, RepeatedKeys) else mapping.items()


def every_member(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """An object's members, keeping every value of a key given twice (`RepeatedKeys`): a scanner must
    see them all, and the first would go unread."""
    data = dict(pairs)
    if len(data) == len(pairs):
        return data
    repeated = RepeatedKeys(data)
    repeated.pairs = list(pairs)
    return repeated


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members, refusing a key given twice: JSON leaves which one counts to the reader, and a
    hand-merged file that says two things must not be read as saying the last."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise _KeyTwice(f"the key {json.dumps(twice[:60], ensure_ascii=True)} is given twice in one object, so "
                        "which value counts is unclear")
    return data


def deeper_than(data: Any, limit: int) -> bool:
    """Whether arrays/objects nest more than `limit` levels (walked without recursion, containers only)."""
    stack = [(data, 1)] if isinstance(data, (dict, list)) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False


def _may_nest_deeper(text: str, start: int, end: int, limit: int) -> bool:
    """Whether the JSON value `text[start:end]` may nest more than `limit` levels: not when it holds
    `limit` brackets or fewer, counted at C speed (a claims file's results hold a few dozen), so that
    `deeper_than` walks only the rare value that might."""
    return text.count("{", start, end) + text.count("[", start, end) > limit


def parse_json(text: str, path: str | Path, *, every_value: bool = False) -> Any:
    """Parse JSON text read from `path` (the one JSON parser for files users give us): NaN, Infinity,
    out-of-range numbers, a key given twice in one object and nesting deeper than MAX_JSON_DEPTH are
    InputErrors naming the file. `every_value`: a key given twice is no error, and an object that
    gives one keeps every value (`every_member`; `cassettes audit` scans them all)."""
    if not text.strip():
        raise InputError(path, "is empty, expected JSON")
    too_deep = InputError(path, f"nested more than {MAX_JSON_DEPTH} levels deep, more than any file of ours")
    try:
        data = json.loads(text, parse_float=_finite_number, parse_int=_whole_number, parse_constant=_no_constant,
                          object_pairs_hook=every_member if every_value else _unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    except RecursionError:
        raise too_deep from None
    except _KeyTwice as exc:
        raise InputError(path, str(exc)) from exc
    except ValueError as exc:  # NaN, 1e999, a number of 5000 digits
        raise InputError(path, f"not valid JSON: {exc}") from exc
    if deeper_than(data, MAX_JSON_DEPTH):
        raise too_deep
    return data


def read_text(path: str | Path) -> str:
    """A UTF-8 text file users give us (a BOM allowed); missing, a folder, not UTF-8 or unreadable is an
    InputError naming it."""
    path = Path(path)
    try:
        return path.read_text("utf-8-sig")
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


def read_json(path: str | Path) -> Any:
    """Parse a JSON file (`read_text`, then `parse_json`); every problem is an InputError naming it."""
    return parse_json(read_text(path), path)


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
            found = sorted(q for q in p.rglob("*.json") if q.is_file())
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
    batch = validate(path, ClaimsBatch, read_json(path), "claims file")
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
    gold = validate(path, GoldSet, read_json(path), "gold set")
    if not gold.items:
        raise InputError(path, "the gold set has no items: nothing to grade against")
    seen: set[tuple[str, str]] = set()
    for item in gold.items:
        key = (item.file, item.id)
        if key in seen:
            raise InputError(path, f"gold item {item.file}:{item.id} appears twice")
        seen.add(key)
    return gold


def parse_results(path: str | Path, data: Any) -> ResultsFile:
    """A results file, a bare list of per-file outputs, or a single per-file output."""
    results = validate(path, ResultsFile, _results_shape(path, data), "results file")
    _check_results(path, results)
    return results


def _results_shape(path: str | Path, data: Any) -> Any:
    """The three accepted shapes as the first: a bare list of per-file outputs, or a single one, in `files`."""
    if isinstance(data, list):
        data = {"files": data}
    elif isinstance(data, dict) and "results" in data and "files" not in data:
        data = {"files": [data]}
    if isinstance(data, dict) and "files" not in data:
        raise InputError(path, "not a results file: it has no 'files' list (nor 'results')")
    return data


def _check_results(path: str | Path, results: ResultsFile | CompactResults) -> None:
    seen: set[tuple[str, str]] = set()
    for fr in results.files:
        for r in fr.results:
            key = (fr.file, r.id)
            if key in seen:
                raise InputError(path, f"result {fr.file}:{r.id} appears twice")
            seen.add(key)


def results_json_path(path: str | Path) -> Path:
    """A results path: a run folder means its `results.json`."""
    p = Path(path)
    return p / "results.json" if p.is_dir() else p


def load_results(path: str | Path) -> ResultsFile:
    """Results from a run folder or a results JSON file (any of the three accepted shapes)."""
    p = results_json_path(path)
    if Path(path).is_dir() and not p.exists():
        raise InputError(path, "run folder has no results.json")
    return parse_results(p, read_json(p))


def load_compact_results(path: str | Path) -> CompactResults:
    """`load_results`, held compact (`CompactResults`), with the same checks and errors: each file's
    records are validated and made compact in turn, so that a run's thousands never exist at once."""
    p = results_json_path(path)
    if Path(path).is_dir() and not p.exists():
        raise InputError(path, "run folder has no results.json")
    text = read_text(p)
    streamed = _compact_results_streamed(p, text)  # the common shape, read one claims file at a time
    if streamed is not None:
        return streamed
    data = _results_shape(p, parse_json(text, p))
    del text
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):  # not a results file: `parse_results` says why
        return CompactResults.of(parse_results(p, data))
    header = validate(p, ResultsFile, {**data, "files": []}, "results file")  # its fields come before `files`
    results = CompactResults.joined(header, (_file_result(p, files, i) for i in range(len(files))))
    _check_results(p, results)
    return results


def _file_result(path: Path, files: list[Any], index: int) -> FileResult:
    """`files[index]` validated, and let go of in `files`."""
    data, files[index] = files[index], None
    return validate(path, FileResult, data, "results file", at=("files", index))


_JSON_SPACE = re.compile(r"[ \t\n\r]*")
"""What JSON counts as white space between tokens."""


def _after_space(text: str, at: int) -> int:
    """The index of the first character of `text` from `at` on that is not JSON white space."""
    found = _JSON_SPACE.match(text, at)
    return found.end() if found else at


class _NotPlain(Exception):
    """A results text that `_compact_results_streamed` leaves to the whole parse."""


def _compact_results_streamed(path: Path, text: str) -> CompactResults | None:
    """`load_compact_results` of a results text, each claims file's object parsed, validated and made compact
    in turn (the parsed tree of a whole results file is several times its size). None when the text is not
    the shape results files have: valid JSON, an object whose last key is `files` (a list), no key twice,
    nothing nested deeper than MAX_JSON_DEPTH; the whole parse then reads it, and says what is wrong with
    it. Errors come in the same order as there: invalid JSON first, then the header, then the first file."""
    decode = json.JSONDecoder(parse_float=_finite_number, parse_int=_whole_number, parse_constant=_no_constant,
                              object_pairs_hook=_unique_keys).raw_decode
    error: InputError | None = None
    at = _after_space(text, 0)

    def validated_files() -> Iterator[FileResult]:
        nonlocal at, error
        at = _after_space(text, at + 1)
        if text[at:at + 1] == "]":
            return
        index = 0
        while True:
            start = at
            element, at = decode(text, at)
            if _may_nest_deeper(text, start, at, MAX_JSON_DEPTH - 2) and deeper_than(element, MAX_JSON_DEPTH - 2):
                raise _NotPlain
            if error is None:
                try:
                    yield validate(path, FileResult, element, "results file", at=("files", index))
                except InputError as exc:
                    error = exc
            del element
            index += 1
            at = _after_space(text, at)
            if text[at:at + 1] == "]":
                break
            if text[at:at + 1] != ",":
                raise _NotPlain
            at = _after_space(text, at + 1)

    try:
        if text[at:at + 1] != "{":
            return None
        header: dict[str, Any] = {}
        at = _after_space(text, at + 1)
        while True:
            if text[at:at + 1] != '"':
                return None
            key, at = decode(text, at)
            at = _after_space(text, at)
            if key in header or text[at:at + 1] != ":":
                return None
            at = _after_space(text, at + 1)
            if key == "files":
                break
            header[key], at = decode(text, at)
            if deeper_than(header[key], MAX_JSON_DEPTH - 1):
                return None
            at = _after_space(text, at)
            if text[at:at + 1] != ",":
                return None
            at = _after_space(text, at + 1)
        if text[at:at + 1] != "[":
            return None
        try:
            fields = validate(path, ResultsFile, {**header, "files": []}, "results file")
        except InputError as exc:
            fields, error = ResultsFile(files=[]), exc
        results = CompactResults.joined(fields, validated_files())
        at = _after_space(text, at + 1)
        if text[at:at + 1] != "}" or _after_space(text, at + 1) != len(text):
            return None
    except (_NotPlain, ValueError, RecursionError):  # ValueError: invalid JSON, NaN, a number too long
        return None
    if error is not None:
        raise error
    _check_results(path, results)
    return results
