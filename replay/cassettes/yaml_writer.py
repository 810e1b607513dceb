"""A cassette's YAML written directly: the bytes `yaml.dump` writes for it, for the shapes cassettes have.

`yaml.dump` spends most of a recording's writing time on its per-node representer and libyaml's
character-by-character emitter, while a cassette is a few mappings around a handful of large strings.
`block_yaml` writes block-style mappings, sequences of scalars or mappings, and scalars, with the
settings `cassettes.cassette` dumps with (`sort_keys`, `allow_unicode`, `width=100_000`, its `_BlockDumper`, whose
representer asks for a literal block for multi-line text). A large multi-line string is written with
string operations, following libyaml's rules: a literal block (`|-`, `|`, an indentation indicator when
it starts with a space or a line break) where libyaml allows one, else a double-quoted line with
libyaml's escapes. A single-line string is written as `yaml.dump` writes it alone (its own output,
remembered), which does not depend on where it stands while the line stays under the width. Anything
else (a multi-line string that libyaml would single-quote or fold, a line near the width, a `|+`
block, a sequence of sequences, a lone surrogate) returns None, and the caller uses `yaml.dump`.
`tests/test_record_speed_yaml.py` holds the output to `yaml.dump`'s on every cassette we have and on
fuzzed strings.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

WIDTH = 100_000
"""The line width the cassette writer dumps with: libyaml folds a scalar at a space past it."""
MAX_KEY = 100
"""Longest mapping key written here (libyaml writes a key of more than 128 characters as `? key`)."""
MAX_INDENT = 64
"""Deepest indentation written here (cassettes need 8)."""
_MARGIN = 256
"""Characters a line may hold before its scalar (indentation, key, `: `): a line written here stays
this far below WIDTH, so libyaml would not have folded it either."""

_NOT_PRINTABLE = re.compile(r"[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
"""What libyaml does not write as is in a literal block (`IS_PRINTABLE`; a line feed is a break there)."""
_PRINTABLE_ASCII = b"\n" + bytes(range(0x20, 0x7F))
_ESCAPED = re.compile(r"[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
"""What libyaml escapes in a double-quoted scalar besides `"` and `\\`: the not printable, line breaks
(incl. NEL, U+2028, U+2029), the BOM."""
_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
"""What libyaml takes for a line break."""
_WHITESPACE = re.compile(r"\s")
_ESCAPES = {
    "\0": "0", "\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r", "\x1b": "e",
    "\x85": "N", "\u2028": "L", "\u2029": "P",
}


class _Unsupported(Exception):
    """A shape this writer leaves to `yaml.dump`."""


def block_yaml(data: dict[str, Any], dumper: Any) -> str | None:
    """`yaml.dump(data, Dumper=dumper, sort_keys=True, allow_unicode=True, width=WIDTH)`, or None where
    this writer does not follow libyaml (see the module docstring). `dumper` is the Dumper the caller
    would use (its representer decides when a literal block is asked for)."""
    if not data:
        return None
    out: list[str] = []
    try:
        _mapping(data, 0, "", out, dumper)
    except _Unsupported:
        return None
    return "".join(out)


def _mapping(data: dict[str, Any], indent: int, first: str, out: list[str], dumper: Any) -> None:
    """The entries of a non-empty mapping, one a line at `indent`; the first line starts with `first`."""
    if indent > MAX_INDENT or not all(isinstance(key, str) for key in data):
        raise _Unsupported
    pad = " " * indent
    for n, key in enumerate(sorted(data)):
        out.append(first if n == 0 else pad)
        out.append(_key(key, dumper))
        out.append(":")
        _value(data[key], indent, out, dumper)


def _value(value: Any, indent: int, out: list[str], dumper: Any) -> None:
    """What follows `key:` at `indent`, to the end of its last line."""
    if isinstance(value, dict):
        if not value:
            out.append(" {}\n")
            return
        out.append("\n")
        _mapping(value, indent + 2, " " * (indent + 2), out, dumper)
    elif isinstance(value, list):
        if not value:
            out.append(" []\n")
            return
        out.append("\n")
        item_lead = " " * indent + "- "
        for item in value:
            if isinstance(item, dict) and item:
                _mapping(item, indent + 2, item_lead, out, dumper)
            elif isinstance(item, (dict, list)) or (isinstance(item, str) and "\n" in item):
                raise _Unsupported
            else:
                out.append(item_lead[:-1])
                out.extend(_scalar(item, indent + 2, dumper))
    else:
        out.extend(_scalar(value, indent + 2, dumper))


def _scalar(value: Any, content_indent: int, dumper: Any) -> tuple[str, ...]:
    """A scalar after its `key:` or `-`, in pieces (a large string is not copied into a line of its
    own before the cassette is joined): the leading space, the scalar, the line end; a literal block's
    lines are indented by `content_indent`."""
    if value is None:
        return (" null\n",)
    if value is True or value is False:
        return (" true\n",) if value else (" false\n",)
    if type(value) is int:
        return (f" {value}\n",)
    if type(value) is not str:
        raise _Unsupported
    if "\n" not in value:
        return " ", _line(value, dumper), "\n"
    if "\r" in value:  # an event stream's CRLF: double-quoted, and often the same reply again
        return " ", _quoted_with_cr(value), "\n"
    return " ", *_multiline(value, content_indent), "\n"


def _multiline(value: str, content_indent: int) -> tuple[str, ...]:
    """A string holding a line feed, as libyaml writes it when the cassette representer asks for a
    literal block where the text allows one (no CR, no line ending in whitespace) and no style otherwise
    (which libyaml then writes single-quoted, or double-quoted where single quotes cannot hold it)."""
    rest = _beyond_printable_ascii(value)
    if _NOT_PRINTABLE.search(rest):
        return (_double_quoted(value, rest),)  # libyaml allows neither a block nor single quotes
    if "\u2028" in rest or "\u2029" in rest:
        raise _Unsupported  # YAML's own line breaks besides LF (CR and NEL are not printable)
    space_break = " \n" in value
    if _WHITESPACE.search(rest) is None:  # then the only whitespace left is the space
        line_ends_in_whitespace = space_break or value.endswith(" ")
    else:
        line_ends_in_whitespace = _ends_a_line_in_whitespace(value)
    if not line_ends_in_whitespace:
        return _literal(value, content_indent)  # asked for, and allowed: no space before a break, none at the end
    if space_break or "\n " in value:
        return (_double_quoted(value, rest),)
    raise _Unsupported  # libyaml would single-quote it, over several lines


@functools.lru_cache(maxsize=64)
def _quoted_with_cr(value: str) -> str:
    """`_multiline` of a string holding a CR (not printable: double-quoted), remembered (a recording
    stores the same page reply, read by many conversations, many times)."""
    return _double_quoted(value, _beyond_printable_ascii(value))


def _beyond_printable_ascii(value: str) -> str:
    """The characters of `value` other than printable ASCII and the line feed, in order: what the checks
    of libyaml's rules look at, found with whole-string operations (a page's text has a few among
    thousands). A lone surrogate cannot be written as UTF-8: yaml.dump says so."""
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Unsupported from None
    return encoded.translate(None, _PRINTABLE_ASCII).decode("utf-8")


def _ends_a_line_in_whitespace(value: str) -> bool:
    """Whether a line ends in whitespace as `str.rstrip` sees it (what the cassette representer checks)."""
    last_characters = "".join([line[-1:] for line in value.split("\n")])
    return _WHITESPACE.search(last_characters) is not None


def _literal(value: str, indent: int) -> tuple[str, ...]:
    """A literal block scalar, as libyaml writes it (for text whose only line break is LF), in pieces."""
    hint = "2" if value[0] in " \n" else ""  # libyaml's indentation indicator is its best indent
    if value.endswith("\n"):
        if value == "\n" or value.endswith("\n\n"):
            raise _Unsupported  # `|+`, after which libyaml may end the document with `...`
        chomp, value = "", value[:-1]
    else:
        chomp = "-"
    pad = " " * indent
    if "\n\n" in value or value.startswith("\n"):
        return f"|{hint}{chomp}\n", "\n".join(pad + line if line else "" for line in value.split("\n"))
    return f"|{hint}{chomp}\n", pad, value.replace("\n", "\n" + pad)


def _double_quoted(value: str, rest: str) -> str:
    """A double-quoted scalar on one line (libyaml folds one longer than the width: left to yaml.dump).
    `rest`: `value`'s characters beyond printable ASCII and the line feed (`_beyond_printable_ascii`)."""
    text = value.replace("\\", "\\\\").replace('"', '\\"')
    if _ESCAPED.search(rest.replace("\r", "").replace("\t", "")) is None:  # the common case: only these to escape
        text = text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    else:
        text = _ESCAPED.sub(_escape, text)
    if len(text) + _MARGIN > WIDTH:
        raise _Unsupported
    return f'"{text}"'


def _escape(m: re.Match[str]) -> str:
    char = m.group()
    short = _ESCAPES.get(char)
    if short is not None:
        return "\\" + short
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        raise _Unsupported  # a lone surrogate cannot be written as UTF-8: yaml.dump says so
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def _line(value: str, dumper: Any) -> str:
    """A single-line string as `yaml.dump` writes it as a mapping value."""
    if len(value) > 256:
        return _dumped_line(value, dumper)
    return _remembered_line(value, dumper)


@functools.lru_cache(maxsize=8192)
def _remembered_line(value: str, dumper: Any) -> str:
    return _dumped_line(value, dumper)


def _dumped_line(value: str, dumper: Any) -> str:
    text: str = yaml.dump({"k": value}, Dumper=dumper, allow_unicode=True, width=WIDTH)
    if not text.startswith("k: ") or not text.endswith("\n") or _has_break(text[:-1]) or len(text) + _MARGIN > WIDTH:
        raise _Unsupported  # written over several lines (libyaml also breaks lines at CR, NEL, U+2028, U+2029)
    return text[3:-1]


def _has_break(text: str) -> bool:
    return any(char in text for char in _BREAKS)


@functools.lru_cache(maxsize=1024)
def _key(key: str, dumper: Any) -> str:
    """A mapping key as `yaml.dump` writes it (a simple key on one line)."""
    if len(key) > MAX_KEY or "\n" in key:
        raise _Unsupported
    text: str = yaml.dump({key: 0}, Dumper=dumper, allow_unicode=True, width=WIDTH)
    if not text.endswith(": 0\n") or _has_break(text[:-1]) or text.startswith("? "):
        raise _Unsupported
    return text[:-4]
