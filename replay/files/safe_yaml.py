"""YAML read safely from any file: safe tags only, nesting and alias expansion bounded, errors name the file.

A 372-byte "billion laughs" document (anchors of anchors) loads in microseconds but expands to
billions of values in anything that walks it, and a recursive alias never ends. Both are refused
before the document is built (a linear check of the node graph, made only when the text may hold an
anchor). Nesting deeper than 1000 levels is refused by libyaml itself.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any

import yaml

from replay.errors import InputError
from replay.files.json_text import RepeatedKeys
from replay.secrets.excerpts import excerpt

try:  # libyaml is ~10x faster; fall back to pure Python where it is missing
    Loader: Any = yaml.CSafeLoader
    Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    Loader, Dumper = yaml.SafeLoader, yaml.SafeDumper

MAX_EXPANDED = 1_000_000
"""Most values a document may expand to once its aliases are followed."""
MAX_ALIASED_CHARS = 16 * 1024 * 1024
"""Most characters of text aliases may add to a document beyond what it spells out (an alias to one
long string, repeated, costs whoever walks the document as much as the string written out)."""
_ANCHOR = re.compile(r"(?:^|[\s\[{,:?-])&[^\s\[\]{},]")
"""Something that may be an anchor; a document without one has no alias (the fast path)."""


class _EveryValueLoader(Loader):  # type: ignore[misc]
    """A loader whose mappings keep every value of a key given twice (`files.json_text.RepeatedKeys`), as a scanner
    must see them: a parser keeps the last, and the first would go unread."""

    def construct_every_member(self, node: yaml.MappingNode) -> Iterator[RepeatedKeys]:
        data = RepeatedKeys()
        data.pairs = []
        yield data  # filled after: a mapping may hold itself through an alias
        self.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = self.construct_object(key_node)
            if not isinstance(key, Hashable):
                raise yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                        "found unhashable key", key_node.start_mark)
            value = self.construct_object(value_node)
            data[key] = value
            data.pairs.append((key, value))


_EveryValueLoader.add_constructor("tag:yaml.org,2002:map", _EveryValueLoader.construct_every_member)


def load_yaml(text: str, path: str | Path, *, every_value: bool = False) -> Any:
    """The document in `text` (read from `path`, named in errors). Nesting is bounded by libyaml (1000
    levels; the pure-Python loader by the recursion limit). `every_value`: every mapping keeps every value
    of a key given twice in it (`files.json_text.RepeatedKeys`; `cassettes audit` scans them all)."""
    loader_class = _EveryValueLoader if every_value else Loader
    try:
        if not _ANCHOR.search(text):
            return yaml.load(text, Loader=loader_class)
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_expansion(node, path, len(text) + MAX_ALIASED_CHARS)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise InputError(path, f"not valid YAML ({_problem(exc)})") from exc
    except RecursionError:
        raise InputError(path, "not valid YAML (nested too deeply)") from None
    except ValueError as exc:  # a plain scalar Python cannot make: an int of over 4,300 digits, a date of month 13
        raise InputError(path, f"not valid YAML (a value that cannot be read: {exc})") from None


def _problem(exc: yaml.YAMLError) -> str:
    """What libyaml says is wrong, and where: `exceeded maximum nesting depth, line 1000`."""
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.problem, exc.context) if p]
        mark = exc.problem_mark or exc.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        return "; ".join(" ".join(p.split()) for p in parts) + where
    return excerpt(" ".join(str(exc).split()), 200, mark="")


def _check_expansion(root: yaml.Node, path: str | Path, max_chars: int) -> None:
    """Refuse a recursive alias, or aliases that expand the document past MAX_EXPANDED values or
    `max_chars` characters of scalar text. Each node's expanded size is computed once (iteratively),
    so the check is linear in the file."""
    size: dict[int, int] = {}
    chars: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            chars[key] = sum(chars[id(c)] for c in children) + (len(node.value) if isinstance(node, yaml.ScalarNode) else 0)
            if size[key] > MAX_EXPANDED:
                raise InputError(path, f"YAML aliases expand it to more than {MAX_EXPANDED:,} values (an alias bomb?)")
            if chars[key] > max_chars:
                raise InputError(path, f"YAML aliases expand its text by more than {MAX_ALIASED_CHARS:,} characters (an alias bomb?)")
            continue
        if key in size:
            continue
        if key in on_path:
            raise InputError(path, "YAML holds a recursive alias (a value that contains itself)")
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise InputError(path, "YAML holds a recursive alias (a value that contains itself)")
            if id(child) not in size:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
