"""The byte format of a derived-cache entry's value: data only, read by a reader that cannot run anything.

    payload = encode(value)      # None: a value of a kind this format does not hold
    value = decode(payload)      # ValueError on anything it did not write

A payload is a JSON skeleton (one line), a newline, then a blob area. JSON holds None, booleans, ints,
floats, strings, lists and dicts with string keys as themselves; a tuple becomes `{"\\u0000t": [...]}`,
bytes `{"\\u0000b": [offset, length]}` into the blob area (kept raw: a page's bytes are not escaped
and parsed again), and a dict of the data whose only key starts with NUL becomes `{"\\u0000d": [[k, v]]}`,
so nothing the data holds is read as a tag. A skeleton with no tag at all (a parsed YAML document,
always) is returned as `json.loads` gives it; otherwise its object hook puts the tuples and bytes back.

Unlike `marshal` or `pickle`, whose readers build what the bytes say (code objects; interpreter
crashes on crafted input), `json.loads` and its hook make nothing but the plain values above, and any
bytes they did not write (a bad tag, a blob outside the area, nesting too deep) raise ValueError.
"""

from __future__ import annotations

import json
from typing import Any

_T, _B, _D = "\0t", "\0b", "\0d"


class _Unsupported(Exception):
    pass


def encode(value: Any) -> bytes | None:
    """The payload of `value`; None when it holds anything but the kinds above."""
    blobs: list[bytes] = []
    size = [0]
    tagged = [False]

    def pack(v: Any) -> Any:
        if v is None or type(v) in (str, bool, int, float):
            return v
        if type(v) is list:
            return [pack(x) for x in v]
        if type(v) is dict:
            if not all(type(k) is str for k in v):
                raise _Unsupported
            if len(v) == 1 and next(iter(v)).startswith("\0"):
                tagged[0] = True
                return {_D: [[k, pack(x)] for k, x in v.items()]}
            return {k: pack(x) for k, x in v.items()}
        if isinstance(v, tuple):  # NamedTuples too: read back as plain tuples, which unpack the same
            tagged[0] = True
            return {_T: [pack(x) for x in v]}
        if type(v) is bytes:
            tagged[0] = True
            blobs.append(v)
            size[0] += len(v)
            return {_B: [size[0] - len(v), len(v)]}
        raise _Unsupported

    try:
        skeleton = pack(value)
        head = json.dumps({"tagged": tagged[0], "value": skeleton}, separators=(",", ":"))  # ASCII: no newline
    except (_Unsupported, RecursionError, ValueError):
        return None
    return head.encode("ascii") + b"\n" + b"".join(blobs)


def decode(payload: bytes) -> Any:
    """The value `encode` wrote as `payload`; ValueError for any other bytes."""
    end = payload.find(b"\n")
    if end < 0:
        raise ValueError("no skeleton line")
    if not payload.startswith(b'{"tagged":true,'):
        return _plain(json.loads(payload[:end]))
    area = memoryview(payload)[end + 1:]

    def tags(v: dict[str, Any]) -> Any:  # called by json for each object, innermost first
        if len(v) != 1:
            return v
        key, inner = next(iter(v.items()))
        if key == _T and type(inner) is list:
            return tuple(inner)
        if key == _B:
            if (type(inner) is not list or len(inner) != 2 or type(inner[0]) is not int or type(inner[1]) is not int
                    or inner[0] < 0 or inner[1] < 0 or inner[0] + inner[1] > len(area)):
                raise ValueError("a blob outside the entry")
            return bytes(area[inner[0]:inner[0] + inner[1]])
        if key == _D and type(inner) is list:
            if not (len(inner) == 1 and type(inner[0]) is list and len(inner[0]) == 2 and type(inner[0][0]) is str):
                raise ValueError("a bad escaped mapping")
            return {inner[0][0]: inner[0][1]}
        if key.startswith("\0"):
            raise ValueError("an unknown tag")
        return v

    try:
        head = json.loads(payload[:end], object_hook=tags)
    except (RecursionError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from exc
    if not isinstance(head, dict) or set(head) != {"tagged", "value"} or head["tagged"] is not True:
        raise ValueError("not an entry skeleton")
    return head["value"]


def _plain(head: Any) -> Any:
    if not isinstance(head, dict) or set(head) != {"tagged", "value"} or head["tagged"] is not False:
        raise ValueError("not an entry skeleton")
    return head["value"]
