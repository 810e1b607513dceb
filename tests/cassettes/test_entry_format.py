"""The cache entry's value format: every value it holds comes back equal and of the same types, and any
bytes it did not write give ValueError (never another error, never a value of another kind)."""

from __future__ import annotations

import json
import random
from collections import namedtuple
from typing import Any

import pytest

from replay.cassettes.entry_format import decode, encode


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (a tuple is not a list, True is not 1)."""
    if type(a) is not type(b) and not (isinstance(a, tuple) and type(b) is tuple):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b) or (a != a and b != b)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    leaves = [None, True, False, 0, -7, 2**70, 1.5, float("inf"), "", "text", "\0t", "é\n\u2028", b"", b"\0\n\xff" * 3]
    if depth > 4 or rng.random() < 0.35:
        return rng.choice(leaves)
    kind = rng.choice(["list", "tuple", "dict", "dict"])
    items = [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    keys = ["a", "\0t", "\0b", "fix", "value", "", "\n"]
    return {rng.choice(keys) + str(i): x for i, x in enumerate(items)}


def test_values_come_back_equal_and_of_the_same_types() -> None:
    rng = random.Random(26)
    values = [_random_value(rng) for _ in range(400)]
    values += [None, (), [()], ((),), {"\0t": [1]}, {"\0b": [0, 1]}, {"fix": [], "value": 1}, b"x", (b"x", [b"y", (b"",)])]
    for value in values:
        payload = encode(value)
        assert payload is not None
        assert _same(value, decode(payload)), value


def test_named_tuples_come_back_as_tuples_that_unpack_the_same() -> None:
    Pair = namedtuple("Pair", "a b")
    back = decode(encode([Pair(1, b"two")]) or b"")
    assert back == [(1, b"two")] and type(back[0]) is tuple


@pytest.mark.parametrize("value", [{1: "int key"}, {"a": {2.0}}, [object()], bytearray(b"x"), type("L", (list,), {})()])
def test_a_value_of_another_kind_is_not_held(value: Any) -> None:
    assert encode(value) is None


def test_a_plain_value_has_no_fix_and_its_bytes_are_json() -> None:
    payload = encode({"interactions": [{"a": [1, "x"]}]})
    assert payload == b'{"fix":[],"value":{"interactions":[{"a":[1,"x"]}]}}\n'


def _payload(head: Any, area: bytes = b"") -> bytes:
    return json.dumps(head).encode() + b"\n" + area


@pytest.mark.parametrize("payload", [
    b"", b"no newline", b"\n", b"[]\n", b'{"value": 1}\n', b'{"fix": {}, "value": 1}\n',
    b'{"fix": [], "value": 1, "more": 2}\n', b"\xff\xfe\n", b"[" * 100_000 + b"\n",
    _payload({"fix": [["x", []]], "value": [1]}),                       # an unknown kind
    _payload({"fix": [["t", []]], "value": "a string"}),                # a tuple of a string
    _payload({"fix": [["t", [0]]], "value": [[1]], "spare": 0}),         # a head with another key
    _payload({"fix": [["t", [5]]], "value": [[1]]}),                     # an index out of range
    _payload({"fix": [["t", [-1]]], "value": [[1]]}),                    # a negative index
    _payload({"fix": [["t", [True]]], "value": [[1]]}),                  # a boolean index
    _payload({"fix": [["t", ["k"]]], "value": [[1]]}),                   # a key into a list
    _payload({"fix": [["t", [0]]], "value": {"0": [1]}}),                # an index into a dict
    _payload({"fix": [["t", ["0", "x"]]], "value": {"0": "abc"}}),       # a path through a string
    _payload({"fix": [["t", [0]], ["t", [0, 0]]], "value": [[[1]]]}),    # a path through a tuple already made
    _payload({"fix": [["t", []]], "value": [1], "x": 1}),
    _payload({"fix": [["b", [0], 0, 1]], "value": [1]}, b"x"),           # bytes over something but null
    _payload({"fix": [["b", [0], 0, 2]], "value": [None]}, b"x"),        # a blob past the area
    _payload({"fix": [["b", [0], -1, 1]], "value": [None]}, b"x"),
    _payload({"fix": [["b", [0], 0.0, 1]], "value": [None]}, b"x"),
    _payload({"fix": [["b", [0], 0]], "value": [None]}, b"x"),
    _payload({"fix": [["t", [0], 1]], "value": [[1]]}),
    _payload({"fix": [["t"]], "value": [[1]]}),
    _payload({"fix": ["t"], "value": [[1]]}),
    _payload({"fix": [["t", 0]], "value": [[1]]}),
    _payload({"fix": [["b", [0], 0, 1], ["b", [1], 0, 1]], "value": [None, None]}, b"x"),  # a blob read twice
    _payload({"fix": [["b", [0], 1, 1], ["b", [1], 0, 1]], "value": [None, None]}, b"xy"),  # out of order
    _payload({"fix": [["b", [0], 1, 1]], "value": [None]}, b"xy"),       # bytes of the area left unread
    _payload({"fix": [], "value": 1}, b"x"),                             # an area no fix reads
])
def test_bytes_it_did_not_write_are_a_value_error(payload: bytes) -> None:
    with pytest.raises(ValueError):
        decode(payload)


def test_damaged_payloads_give_a_value_or_a_value_error_never_another_error() -> None:
    rng = random.Random(3)
    good = [encode(_random_value(random.Random(seed))) or b"" for seed in range(40)]
    for _ in range(3000):
        payload = bytearray(rng.choice(good))
        for _ in range(rng.randint(1, 4)):
            if payload and rng.random() < 0.6:
                payload[rng.randrange(len(payload))] = rng.choice(b'[]{}",:0123456789tbfixvalue\n\x00-')
            elif payload:
                start = rng.randrange(len(payload))
                del payload[start:start + rng.randint(1, 8)]
        try:
            decode(bytes(payload))
        except ValueError:
            pass


def test_what_a_payload_decodes_to_is_bounded_by_its_size() -> None:
    """Issue 26 review: each bytes fix could copy the whole blob area, so a forged entry of a few MB (a
    large area, and many nulls each given all of it) made gigabytes. The blobs are read as `encode`
    writes them, one after the other, each once."""
    nulls = 200  # a payload of 1 MiB that made 200 MiB (100,000 nulls in 5 MiB: 100 GiB)
    payload = _payload({"fix": [["b", [i], 0, 1 << 20] for i in range(nulls)], "value": [None] * nulls},
                       b"x" * (1 << 20))
    with pytest.raises(ValueError):
        decode(payload)
