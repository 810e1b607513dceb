"""The byte format of a derived-cache entry's value: data only, read by a reader that cannot run anything.

    payload = encode(value)      # None: a value of a kind this format does not hold
    value = decode(payload)      # ValueError on anything it did not write

A payload is a JSON head (one line), a newline, then a blob area. The head is
`{"fix": [...], "value": skeleton}`: the skeleton holds None, booleans, ints, floats, strings, lists
and dicts with string keys as themselves, a tuple as a list and bytes as null; each fix puts one of
those back, at the path (keys and list indexes from the top) where it stands:

    ["t", path]                  the list there becomes a tuple
    ["b", path, offset, length]  the null there becomes those bytes of the blob area (kept raw: a
                                 page's bytes are not escaped and parsed again)

Fixes are listed innermost first, so a tuple's items are put back before it is made a tuple. The
skeleton is read by `json.loads` alone, at C speed, and only the fixes are walked in Python: a
value with no tuple or bytes in it (a parsed YAML document, always) costs nothing more.

Unlike `marshal` or `pickle`, whose readers build what the bytes say (code objects; interpreter
crashes on crafted input), `json.loads` makes nothing but the plain values above, and a fix that is
not one `encode` would write (an unknown kind, a path through anything but a list or dict, a step
out of range, a tuple made of anything but a list, bytes put anywhere but on a null, a blob outside
the area, blobs read out of the order they were written in, twice, or not at all) raises ValueError,
as do bytes that are not a head at all. So a value holds no more bytes than its payload: no forged
entry can make a few bytes of blob area stand for gigabytes.
"""

from __future__ import annotations

import json
from typing import Any


class _Unsupported(Exception):
    pass


def encode(value: Any) -> bytes | None:
    """The payload of `value`; None when it holds anything but the kinds above."""
    blobs: list[bytes] = []
    fixes: list[list[Any]] = []
    path: list[str | int] = []
    size = 0

    def pack(v: Any) -> Any:
        nonlocal size
        kind = type(v)
        if v is None or kind is str or kind is bool or kind is int or kind is float:
            return v
        if kind is dict:
            out = {}
            for k, x in v.items():
                if type(k) is not str:
                    raise _Unsupported
                t = type(x)
                if t is str or x is None or t is int or t is float or t is bool:  # a leaf: no call, no path
                    out[k] = x
                else:
                    path.append(k)
                    out[k] = pack(x)
                    path.pop()
            return out
        if kind is list or isinstance(v, tuple):  # NamedTuples too: read back as plain tuples, which unpack the same
            items = []
            for i, x in enumerate(v):
                t = type(x)
                if t is str or x is None or t is int or t is float or t is bool:
                    items.append(x)
                else:
                    path.append(i)
                    items.append(pack(x))
                    path.pop()
            if kind is not list:
                fixes.append(["t", list(path)])
            return items
        if kind is bytes:
            blobs.append(v)
            fixes.append(["b", list(path), size, len(v)])
            size += len(v)
            return None
        raise _Unsupported

    try:
        skeleton = pack(value)
        head = json.dumps({"fix": fixes, "value": skeleton}, separators=(",", ":"))  # ASCII: no newline
    except (_Unsupported, RecursionError, ValueError):
        return None
    return head.encode("ascii") + b"\n" + b"".join(blobs)


def decode(payload: bytes) -> Any:
    """The value `encode` wrote as `payload`; ValueError for any other bytes."""
    end = payload.find(b"\n")
    if end < 0:
        raise ValueError("no head line")
    try:
        head = json.loads(payload[:end])
    except (RecursionError, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from exc
    if type(head) is not dict or len(head) != 2 or type(head.get("fix")) is not list or "value" not in head:
        raise ValueError("not an entry head")
    fixes, value = head["fix"], head["value"]
    area = memoryview(payload)[end + 1:]
    if not fixes:
        if area:
            raise ValueError("a blob area no fix reads")
        return value
    used = 0  # the blobs are read in the order `encode` wrote them, each once: a value is no larger than its payload
    root = [value]  # the value as the one item of a list: every fix has a parent to set it in
    for fix in fixes:
        if type(fix) is not list or len(fix) < 2 or type(fix[1]) is not list:
            raise ValueError("a bad fix")
        kind, steps = fix[0], fix[1]
        parent: Any = root
        step: Any = 0
        for following in steps:
            parent = _step(parent, step)
            step = following
        current = _step(parent, step)
        if kind == "t" and len(fix) == 2 and type(current) is list:
            parent[step] = tuple(current)
        elif kind == "b" and len(fix) == 4 and current is None:
            offset, length = fix[2], fix[3]
            if (type(offset) is not int or type(length) is not int or offset != used or length < 0
                    or offset + length > len(area)):
                raise ValueError("a blob outside the entry, or not the next one")
            parent[step] = bytes(area[offset:offset + length])
            used += length
        else:
            raise ValueError("a bad fix")
    if used != len(area):
        raise ValueError("a blob area no fix reads")
    return root[0]


def _step(container: Any, step: Any) -> Any:
    """`container[step]` for a list and an index in it, or a dict and a key of it; ValueError otherwise
    (a tuple already made, a string, a step of the wrong type or out of range)."""
    if type(container) is list:
        if type(step) is int and 0 <= step < len(container):
            return container[step]
    elif type(container) is dict:
        if type(step) is str and step in container:
            return container[step]
    raise ValueError("a fix's path leads nowhere")
