"""Our 2-space JSON (`files.json_text.indented_json`, written by pydantic-core where it is the same) is byte for byte
`json.dumps(data, indent=2, ensure_ascii=False)`: on random documents, on every body of the cassettes
we have (re-indented as a cassette stores them), and on the files we write with it."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from replay.cassettes.interaction import _readable
from replay.cassettes.cassette import load_cassette
from replay.files.json_text import dump_json, indented_json
from locations import REPO

ROOT = REPO
CASSETTES = sorted((ROOT / "cassettes").rglob("*.yaml")) + sorted((ROOT / "tests" / "data" / "real-cassettes").rglob("*.yaml"))

STRINGS = ["", "a", "é", "—", "😀", "\x00", "\x01", "\x1f", "\x7f", "\x80", "\x9f", "\xa0", "\u2028", "\u2029",
           "\ufeff", "\ufffe", "\uffff", '"', "\\", "/", "\n", "\r", "\t", "\b", "\f", "<>&'", "\ud800", "\udfff",
           "key", "  ", "1e5", "null"]
FLOATS = [0.0, -0.0, 1.5, -2.25, 0.1, 1e-05, 1e-07, 0.0001, 1e16, 1e15, 1.7976931348623157e308, 5e-324, 123456789.125,
          float("nan"), float("inf"), float("-inf")]
INTS = [0, 1, -1, 7, 10**15, 2**63, -(2**64), 10**40, 12345678901234567890]


def reference(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def random_document(rng: random.Random, depth: int = 0, floats: bool = True) -> Any:
    kinds = ["str", "int", "none", "bool"] + (["float"] if floats else []) + (["list", "dict"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "str":
        return "".join(rng.choice(STRINGS) for _ in range(rng.randint(0, 5)))
    if kind == "int":
        return rng.choice(INTS)
    if kind == "float":
        return rng.choice(FLOATS) if rng.random() < 0.6 else rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-12, 12)
    if kind == "none":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "list":
        return [random_document(rng, depth + 1, floats) for _ in range(rng.randint(0, 4))]
    return {"".join(rng.choice(STRINGS) for _ in range(rng.randint(0, 3))): random_document(rng, depth + 1, floats)
            for _ in range(rng.randint(0, 4))}


@pytest.mark.parametrize("seed", range(8))
def test_random_documents(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        data = random_document(rng)
        assert indented_json(data) == reference(data)


@pytest.mark.parametrize("seed", range(4))
def test_float_free_documents_written_without_the_check(seed: int) -> None:
    """What `float_free=True` relies on: without floats, pydantic-core writes what json.dumps writes."""
    rng = random.Random(100 + seed)
    for _ in range(300):
        data = random_document(rng, floats=False)
        try:
            expected = reference(data)
        except ValueError:  # pragma: no cover - json.dumps writes anything it parsed
            continue
        assert indented_json(data, float_free=True) == expected


@pytest.mark.parametrize("value", FLOATS + INTS + STRINGS + [[], {}, [[]], {"a": {}}, [{}, []], True, None])
def test_edge_values(value: Any) -> None:
    assert indented_json(value) == reference(value)
    assert indented_json({"k": [value, {"x": value}]}) == reference({"k": [value, {"x": value}]})


def test_what_json_dumps_refuses_it_still_refuses() -> None:
    for data in ({"when": Path("x")}, {1, 2}, b"bytes", {(1, 2): 3}):
        with pytest.raises(TypeError):
            json.dumps(data, indent=2, ensure_ascii=False)
        with pytest.raises(TypeError):
            indented_json(data)


def test_keys_that_are_not_strings_are_written_as_json_dumps_writes_them() -> None:
    data = {1: "a", 2.5: "b", True: "c", None: "d"}
    assert indented_json(data) == reference(data)


def test_nesting_deeper_than_pydantic_core_goes() -> None:
    data: list[Any] = []
    node = data
    for _ in range(400):
        node.append([])
        node = node[0]
    assert indented_json(data) == reference(data)


def old_readable(body: str | None) -> str | None:
    """`cassettes.interaction._readable` as it was, with json.dumps."""
    if not body or body[:1] not in "{[":
        return body
    try:
        readable = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        readable.encode("utf-8")
        return readable
    except (ValueError, RecursionError):
        return body


def test_every_body_of_our_cassettes_is_stored_as_before() -> None:
    bodies = [body for path in CASSETTES for it in load_cassette(path) for body in (it.request_body, it.response_body)]
    compact = [json.dumps(json.loads(b), separators=(",", ":")) for b in bodies if b and b[:1] in "{[" and _is_json(b)]
    assert len(compact) > 100
    for body in bodies + compact:
        assert _readable(body) == old_readable(body)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("body", [
    '{"a": 1e-05, "b": [1.0, 2]}', '{"x": NaN}', '[Infinity]', '{"s": "\\ud800"}', '{"s": "\\u00e9\\u2014"}',
    '{"n": ' + "9" * 50 + "}", "[]", "{}", '{"a": {}, "b": []}', "[1, 2", "{not json}", '{"a": 1} trailing',
])
def test_bodies_with_floats_constants_surrogates_or_no_json(body: str) -> None:
    assert _readable(body) == old_readable(body)


def test_results_files_are_written_as_before() -> None:
    results = sorted((ROOT / "cassettes").rglob("results.json"))
    assert results
    for path in results:
        data = json.loads(path.read_text("utf-8"))
        assert dump_json(data) == path.read_text("utf-8")


def test_our_own_files_never_hold_what_json_cannot_read() -> None:
    for value in (float("nan"), float("inf"), float("-inf")):
        with pytest.raises(ValueError):
            dump_json({"max_cost_usd": value})
    assert dump_json({"max_cost_usd": 1.5}) == '{\n  "max_cost_usd": 1.5\n}\n'
