"""Results files read: whole, or compactly one claims file at a time."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay.errors import InputError
from replay.files.inputs import read_json, read_text, validate
from replay.files.json_text import (
    MAX_JSON_DEPTH,
    _finite_number,
    _may_nest_deeper,
    _no_constant,
    _unique_keys,
    _whole_number,
    deeper_than,
    parse_json,
)
from replay.schema.results import CompactResults, FileResult, ResultsFile


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
    return parse_results(p, read_json(p, "results"))


def load_compact_results(path: str | Path) -> CompactResults:
    """`load_results`, held compact (`CompactResults`), with the same checks and errors: each file's
    records are validated and made compact in turn, so that a run's thousands never exist at once."""
    p = results_json_path(path)
    if Path(path).is_dir() and not p.exists():
        raise InputError(path, "run folder has no results.json")
    text = read_text(p, "results")
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
