"""JSON written and read our way: stable dumps, streamed pieces, bounded parsing, every repeated key kept."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from replay.core.display import _IN_BLOCK
from replay.errors import InputError
from replay.secrets.excerpts import excerpt


def dump_json(data: Any) -> str:
    """Our JSON style for files people read and diff, and for every JSON we print: 2-space indent, UTF-8
    (ordinary non-ASCII text as is), trailing newline, and terminal-safe: the characters
    `printable_block` escapes (C0/C1 controls, bidi overrides, lone surrogates) written as `\\uXXXX` escapes. Those can only
    occur inside JSON strings, where the escape means the same character, so the JSON is unchanged.
    NaN and Infinity, which are not JSON, raise ValueError: no file of ours may hold what cannot be read."""
    text = indented_json(data, allow_nan=False)
    return _IN_BLOCK.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


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
        raise _KeyTwice(f"the key {json.dumps(excerpt(twice, 60, mark=''), ensure_ascii=True)} is given twice in one object, so "
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
