"""Markdown of data: text that renders as itself, never as a link, image, HTML, heading, emphasis or cell.

Every data string (a claim, a gold note, a model's reason or quote, a file or folder name) goes into a
markdown report through one of these. What GitHub's renderer (cmark-gfm and its extensions) would turn
into markup is escaped:

- HTML and entities: `<`, `>`, `&` as entities (no tag, no comment, no `<https://...>` autolink);
- links, images, footnotes, reference definitions: `[` and `]` backslash-escaped;
- emphasis and strikethrough: `*`, `~` and a `_` that could open or close emphasis (one inside a word,
  as in `claim_type`, cannot, and is left as it is); a backslash that would escape what follows it
  (code spans are left to render: their text shows as it is);
- bare URLs and e-mail addresses, which GitHub links on its own: the `:` of `scheme://` and the `.`
  of `www.` backslash-escaped (the text shows the same, unlinked); a word joiner (U+2060, invisible)
  after each `@` (no e-mail, `mailto:` or `xmpp:` link, no @mention that would notify someone);
- what starts a line's block (`#` heading, `>` quote, `-`, `+`, `1.` list, `=` underline) when the data
  starts the line;
- `|` in table cells (`markdown_cell`).
"""

from __future__ import annotations

import html
import re
from typing import Any

from replay.core.display import printable

_ESCAPED = re.compile(r"\\(?=[!-/:-@\[-`{-~]|$)|[*~\[\]]|(?<![^\W_])_|_(?![^\W_])|:(?=//)|(?i:(?<=\bwww)\.)")
"""Backslash-escaped in data: a backslash that would escape what follows it, emphasis and strikethrough
marks, link and image brackets, an `_` not inside a word, the `:` of `scheme://` and the `.` of `www.`
(GitHub's autolinks). Code ticks are left: a code span shows its text as it is, and every span of ours
comes before the data on its line, so a tick of the data cannot pair with one of ours."""
_LINE_START = re.compile(r"^(\s*)(?:([#>+=-])|(\d+)(?=[.)]))")
"""A block a line starting with the data would open: a heading, a quote, a list, a setext underline."""
WORD_JOINER = "\u2060"
"""Invisible, and between `@` and a name it makes no e-mail link and no @mention."""


def _inline(value: Any) -> str:
    """A data string made one line of markdown text that makes no inline markup."""
    text = html.escape(printable(str(value).replace("\r\n", " ").replace("\n", " ")), quote=False)
    return _ESCAPED.sub(lambda m: "\\" + m.group(), text).replace("@", "@" + WORD_JOINER)


def markdown_text(value: Any) -> str:
    """A data string for markdown prose: terminal-safe (`printable`), one line, and every character that
    would make markup escaped (see the module docstring), a block it would open where it starts a line too."""
    return _LINE_START.sub(lambda m: m.group(1) + (f"\\{m.group(2)}" if m.group(2) else f"{m.group(3)}\\"),
                           _inline(value), count=1)


def markdown_cell(value: Any) -> str:
    """A data string for a markdown table cell (where no block starts): as `markdown_text`, its pipes
    escaped."""
    return _inline(value).replace("|", "\\|")


def markdown_html(value: Any) -> str:
    """A data string inside an HTML block of a markdown report (a `<details>` summary line), where no
    markdown is read: terminal-safe, one line, HTML-escaped."""
    return html.escape(printable(str(value).replace("\r\n", " ").replace("\n", " ")), quote=False)


def markdown_code(value: Any) -> str:
    """A data string as inline markdown code: terminal-safe, one line, delimited by more backticks than it
    holds in a row (code spans show HTML as text, so none is escaped)."""
    text = printable(str(value).replace("\r\n", " ").replace("\n", " "))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_fence(text: str) -> str:
    """A fence for a block of data text: three backticks, or more than the longest run of them in it."""
    return "`" * max(3, max((len(run) for run in re.findall("`+", text)), default=0) + 1)
