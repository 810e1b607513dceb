"""A cassette's YAML read back with string operations, for exactly the shapes `yaml_writer.block_yaml` writes.

libyaml's safe loader builds a cassette character by character, then through a Python constructor per
node; a cassette is a few dozen short lines around a handful of large literal blocks and quoted lines.
`read_block_yaml` reads that subset: block mappings (plain keys) and sequences at the writer's
indentation, plain scalars that resolve to a string, a decimal integer, `true`/`false` or `null`,
`{}`/`[]`, single- and double-quoted scalars on one line, and literal blocks `|`, `|-`, `|2`, `|2-`
(a block is cut out by its indentation with one regular-expression search and un-indented with one
`str.replace`). It returns what `yaml.load(text, CSafeLoader)` returns, or None wherever it is not
certain to: any character libyaml treats specially or refuses (tab, CR, NEL, the BOM, a control
character), a line ending in a space, an empty line outside a block, a comment, an anchor, alias, tag,
flow collection, directive or document marker, a folded or kept block, a key given twice, a
continuation line, a plain scalar of any other type (float, date, `yes`, `~`, merge key). The caller
then reads the text with `files.safe_yaml.load_yaml`, whose checks (aliases, nesting) stay the only
ones that matter: a document read here has no alias and is at most MAX_DEPTH levels deep.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

from replay.files.safe_yaml import Loader

MAX_DEPTH = 64
"""Deepest nesting read here (a cassette has 6 levels); deeper documents are left to libyaml."""
MAX_KEY = 128
"""Longest key read here (libyaml limits a simple key to 1024 characters on one line)."""

_REFUSED = re.compile(r"[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
"""Characters read nowhere here: tab, CR and the other line breaks libyaml knows (NEL, U+2028, U+2029),
the BOM, what libyaml refuses as not printable, lone surrogates."""
_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]{0,%d}):(?= |\n)" % (MAX_KEY - 1))
"""A plain key and its `:`, followed by a space or the line's end."""
_SPACES = re.compile(r" *")
_SINGLE_QUOTED = re.compile(r"'((?:[^'\n]|'')*)'\n")
_ESCAPE = re.compile(r"\\(?:x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.DOTALL)
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r", "e": "\x1b",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029", '"': '"', "\\": "\\"}
"""The one-character escapes of a double-quoted scalar read here (libyaml writes these)."""
_PLAIN_START = frozenset(" -?:,[]{}#&*!|>'\"%@`")
"""What a plain scalar may not start with (`-` may, before a digit: a negative number)."""
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")
_BLOCK_END: dict[int, re.Pattern[str]] = {}
_STR, _INT, _BOOL, _NULL = (f"tag:yaml.org,2002:{name}" for name in ("str", "int", "bool", "null"))


_PRINTABLE_ASCII = b"\n" + bytes(range(0x20, 0x7F))


def _refused(text: str) -> bool:
    """Whether `text` holds a character read nowhere here (`_REFUSED`), looked for among the characters
    beyond printable ASCII and the line feed only (a cassette has a few among millions)."""
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        return True  # a lone surrogate
    return _REFUSED.search(encoded.translate(None, _PRINTABLE_ASCII).decode("utf-8")) is not None


class _Unsure(Exception):
    """A line this reader does not read with certainty."""


def read_block_yaml(text: str) -> dict[str, Any] | None:
    """What `yaml.load(text, Loader=CSafeLoader)` returns, for a document in the shapes `block_yaml`
    writes; None for anything else (the caller then uses `load_yaml`)."""
    if not text.endswith("\n") or " \n" in text or _refused(text):
        return None
    try:
        value, end = _Reader(text).mapping(0, 0, 0)
    except _Unsure:
        return None
    return value if end == len(text) else None


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text

    def indent(self, pos: int) -> int:
        """The indentation of the line at `pos` (-1 at the end of the text); an empty line is refused."""
        if pos == len(self.text):
            return -1
        match = _SPACES.match(self.text, pos)
        assert match is not None
        if self.text[match.end()] == "\n":
            raise _Unsure  # an empty (or blank) line outside a block
        return match.end() - pos

    def mapping(self, start: int, col: int, depth: int) -> tuple[dict[str, Any], int]:
        """The block mapping whose first key is at `start`, in column `col`; and where the line after it starts."""
        if depth > MAX_DEPTH:
            raise _Unsure
        text = self.text
        out: dict[str, Any] = {}
        pos = start
        while True:
            match = _KEY.match(text, pos)
            if match is None:
                raise _Unsure
            key = match.group(1)
            if key in out or _plain_tag(key) != _STR:
                raise _Unsure  # a key given twice (libyaml keeps the last), or one that is not a string
            after = match.end()
            if text[after] == "\n":
                out[key], pos = self.nested(after + 1, col, depth)
            else:
                out[key], pos = self.inline(after + 1, col, depth, literal=True)
            indent = self.indent(pos)
            if indent < col:
                return out, pos
            if indent > col:
                raise _Unsure  # a continuation line, or indentation the writer does not use
            pos += col

    def nested(self, pos: int, col: int, depth: int) -> tuple[Any, int]:
        """The value of a key in column `col` that ends its line: a sequence in the same column, or a
        mapping two columns in."""
        indent = self.indent(pos)
        if indent == col and self.text.startswith("- ", pos + col):
            return self.sequence(pos, col, depth + 1)
        if indent == col + 2:
            return self.mapping(pos + col + 2, col + 2, depth + 1)
        raise _Unsure  # an empty value (null), or indentation the writer does not use

    def sequence(self, pos: int, col: int, depth: int) -> tuple[list[Any], int]:
        """The block sequence whose first `- ` starts the line at `pos`, in column `col`."""
        if depth > MAX_DEPTH:
            raise _Unsure
        text = self.text
        out: list[Any] = []
        while True:
            item = pos + col + 2
            if _KEY.match(text, item) is not None:
                value, pos = self.mapping(item, col + 2, depth + 1)
            else:
                value, pos = self.inline(item, col, depth, literal=False)
            out.append(value)
            indent = self.indent(pos)
            if indent < col or (indent == col and not text.startswith("- ", pos + col)):
                return out, pos
            if indent > col:
                raise _Unsure

    def inline(self, pos: int, col: int, depth: int, *, literal: bool) -> tuple[Any, int]:
        """The value that starts at `pos` on its line (after `key: ` of a mapping in column `col`, or
        after `- `), and where the next line starts. `literal`: a literal block may start here."""
        text = self.text
        end = text.index("\n", pos)
        first = text[pos]
        if first == '"':
            if end - pos < 2 or text[end - 1] != '"':
                raise _Unsure
            return _double_quoted(text[pos + 1:end - 1]), end + 1
        if first == "'":
            match = _SINGLE_QUOTED.match(text, pos)
            if match is None or match.end() != end + 1:
                raise _Unsure
            return match.group(1).replace("''", "'"), end + 1
        if first == "|":
            if not literal:
                raise _Unsure
            return self.literal(text[pos:end], end, col)
        value = text[pos:end]
        if value == "{}":
            return {}, end + 1
        if value == "[]":
            return [], end + 1
        return _plain(value), end + 1

    def literal(self, header: str, end: int, col: int) -> tuple[str, int]:
        """The literal block whose header (`|`, `|-`, `|2`, `|2-`) ends at `end`, of a key in column `col`:
        its lines are indented by col + 2 (the writer's choice, and libyaml's reading of `2`)."""
        if header not in ("|", "|-", "|2", "|2-"):
            raise _Unsure
        text = self.text
        indent = col + 2
        pattern = _BLOCK_END.get(indent)
        if pattern is None:
            pattern = _BLOCK_END[indent] = re.compile(r"\n(?!%s|\n)" % (" " * indent))
        match = pattern.search(text, end)
        stop = len(text) - 1 if match is None else match.start()
        block = text[end + 1:stop]
        if not block or block.endswith("\n"):
            raise _Unsure  # an empty block, or trailing empty lines (chomping)
        pad = " " * indent
        if header[1:2] != "2" and (block[indent:indent + 1] in ("", " ", "\n") or not block.startswith(pad)):
            raise _Unsure  # without an indicator, libyaml takes the first line's indentation
        value = ("\n" + block).replace("\n" + pad, "\n")[1:]
        if header.endswith("-"):
            return value, stop + 1
        return value + "\n", stop + 1


def _plain(value: str) -> Any:
    """A plain scalar as the safe loader resolves it: a string, a decimal integer, a boolean or null."""
    first = value[0]
    if first in _PLAIN_START and not (first == "-" and value[1:2].isdigit()):
        raise _Unsure
    if ": " in value or value.endswith(":") or " #" in value:
        raise _Unsure  # a mapping inside a value, or a comment
    tag = _plain_tag(value)
    if tag == _STR:
        return value
    if tag == _INT and len(value) <= 1000 and _DECIMAL.fullmatch(value):  # longer: the loader says what is wrong
        return int(value)
    if tag == _BOOL and value in ("true", "false"):
        return value == "true"
    if tag == _NULL and value == "null":
        return None
    raise _Unsure  # a float, a date, `yes`, `~`, a merge key, an octal or hex number...


@functools.lru_cache(maxsize=4096)
def _plain_tag(value: str) -> str:
    """The tag the safe loader's resolver gives a plain scalar (`value` is the scalar as written)."""
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    return tag


_RESOLVER = Loader("")
"""The safe loader's own resolver (its implicit types)."""


def _double_quoted(body: str) -> str:
    """The value of a double-quoted scalar on one line, `body` being what stands between the quotes.
    Escapes are read left to right, so a run of backslashes pairs from its left: with each `\\\\` set
    aside (as NUL, which the text cannot hold), every backslash left starts an escape, the common
    ones are replaced with `str.replace`, and a body with others is read by `_ESCAPE`."""
    if "\\" not in body:
        if '"' in body:
            raise _Unsure  # a quote that ends the scalar before the line does
        return body
    paired = body.replace("\\\\", "\0")
    if paired.count('"') != paired.count('\\"') or paired.endswith("\\"):
        raise _Unsure  # an unescaped quote inside, or the last quote escaped
    value = paired.replace('\\"', '"').replace("\\n", "\n").replace("\\r", "\r").replace("\\t", "\t")
    if "\\" in value:
        return _ESCAPE.sub(_escape, body)
    return value.replace("\0", "\\")


def _escape(match: re.Match[str]) -> str:
    hex_digits = match.group(1) or match.group(2) or match.group(3)
    if hex_digits is None:
        char = _ESCAPES.get(match.group(4))
        if char is None:
            raise _Unsure
        return char
    code = int(hex_digits, 16)
    if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
        raise _Unsure  # libyaml refuses these
    return chr(code)
