"""One version of a Learn page as a run's judge read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NoPage = Literal["refused", "not-found", "failed"]
"""Why a fetch reply is no page: `refused` (the server's answer to a URL outside Learn: there never was a
Learn page), `not-found` (Learn's "could not be retrieved": it has no page there now), `failed` (a tool
error or an empty reply: a failure, which says nothing about the page)."""



@dataclass(frozen=True, slots=True)
class PageVersion:
    """One version of a Learn page as a run's judge read it."""

    url: str
    """The URL as the judge asked for it."""
    sha256: str | None
    """sha256 of the page text; None when the reply was no page (`no_page` says why)."""
    text: str | None
    no_page: NoPage | None = None
    """Why the reply was no page (`learn.wire.no_page_reason`): refused, not-found or failed; None for a page."""
