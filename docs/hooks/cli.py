"""mkdocs hook: help text that mkdocs-click put on the commands page as markdown stays text.

A command's description is rendered as markdown, so a placeholder in it such as
`judge-bakeoff-results-<prompt>.json` would reach the page as an unknown HTML element, which a browser
does not show. On that page, every tag that is not one markdown itself writes is escaped back to text.
"""

from __future__ import annotations

import re
from typing import Any

PAGE = "reference/cli.md"
MARKDOWN_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "span", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "th", "thead", "tr", "ul",
})
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9_-]*)(?:\s[^<>]*)?/?>")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != PAGE:
        return html
    return _TAG.sub(lambda m: m.group(0) if m.group(1).lower() in MARKDOWN_TAGS
                    else m.group(0).replace("<", "&lt;").replace(">", "&gt;"), html)
