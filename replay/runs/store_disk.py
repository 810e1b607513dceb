"""How the page store keeps its values in diskcache's database: JSON and bytes, never a pickle.

diskcache's own disks unpickle a value (or a key) whose row says so, and read a value file from
whatever path a row names, so a store carried in a repository could run code or read any file. This
disk keeps every key as text and every value inline in its row, tagged: `J` + JSON (dicts, lists,
strings, numbers) or `B` + raw bytes (page texts). Reading a row of any other kind (a pickled or
file-backed value, a pickled key, an unknown tag) raises `DamagedValue`: the store is damaged, or
not ours, and is said so (`PageStore`), never read.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import diskcache  # type: ignore[import-untyped]
from diskcache.core import MODE_RAW  # type: ignore[import-untyped]


class DamagedValue(ValueError):
    """A row of the store that this disk did not write."""


class DataDisk(diskcache.Disk):  # type: ignore[misc]
    """A diskcache disk that holds string keys, and JSON or bytes values, inline (see the module docstring)."""

    def put(self, key: Any) -> tuple[Any, bool]:
        if type(key) is not str:
            raise TypeError("page store keys are text")
        return key, True

    def get(self, key: Any, raw: bool) -> Any:
        if not raw or type(key) is not str:
            raise DamagedValue("a key the page store does not write (not text)")
        return key

    def store(self, value: Any, read: bool, key: Any = None) -> tuple[int, int, None, sqlite3.Binary]:
        if read:
            raise TypeError("the page store keeps no file values")
        data = b"B" + value if type(value) is bytes else b"J" + json.dumps(value).encode("utf-8")
        return len(data), MODE_RAW, None, sqlite3.Binary(data)

    def fetch(self, mode: int, filename: Any, value: Any, read: bool) -> Any:
        if read or mode != MODE_RAW or filename is not None or type(value) is not bytes or not value:
            raise DamagedValue("a value the page store does not write (a pickle, a value file, or not tagged)")
        tag, body = value[:1], value[1:]
        if tag == b"B":
            return body
        if tag == b"J":
            try:
                return json.loads(body)
            except (ValueError, RecursionError) as exc:
                raise DamagedValue(f"a JSON value that does not read ({exc})") from exc
        raise DamagedValue("a value with an unknown tag")
