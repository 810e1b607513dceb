"""What flip explanation reads of a run, built at the edge: conversations, pages read, searches, results."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from replay.core.text import sha256_text
from replay.schema.claims import AnyClaim
from replay.schema.results import ClaimResult, ResultRow
from replay.urls import normalise_learn_url

Key = tuple[str, str]
"""(claims file, claim id): the pairing key."""
Result = ClaimResult | ResultRow
"""One verdict: as read, or as the edge holds a run's thousands (`ResultRow`, the same fields)."""


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class PageRead:
    """A page as one run's judge got it (sha256/text None: the page could not be retrieved)."""

    url: str
    sha256: str | None
    text: str | None


@dataclass(frozen=True, slots=True)
class SearchMade:
    """A `microsoft_docs_search` call and the URLs it returned, in rank order."""

    query: str
    result_urls: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    """The recorded Learn traffic of one claims file's conversation."""

    fetches: tuple[PageRead, ...] = ()
    searches: tuple[SearchMade, ...] = ()
    _last_fetch: dict[str, PageRead] = field(init=False, repr=False, compare=False)
    """Normalised URL -> its last fetch (made once: every claim of the file asks)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_last_fetch", {normalise_learn_url(page.url): page for page in self.fetches})

    def fetched(self, url: str) -> PageRead | None:
        """The last fetch of a URL in this conversation."""
        return self._last_fetch.get(normalise_learn_url(url))


@dataclass(frozen=True)
class RunInput:
    """One run, as the explainer needs it."""

    name: str
    label: str
    """How the user named the run (its path as given)."""
    prompt_name: str | None = None
    prompt_text: str | None = None
    prompt_sha256: str | None = None
    model: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    pages_from: str | None = None
    """The run that served this run's Learn calls, as an alias comparable with `aliases`."""
    aliases: frozenset[str] = frozenset()
    """Every way a manifest's `pages_from` may name this run (name, path as given, resolved path)."""
    results: Mapping[Key, Result] = field(default_factory=dict)
    claims: Mapping[Key, AnyClaim] = field(default_factory=dict)
    conversations: Mapping[str, Conversation] = field(default_factory=dict)
    """claims file -> its recorded Learn traffic; a file missing here was not recorded."""
    pages: Mapping[str, PageRead] = field(default_factory=dict)
    """normalised URL -> the page anywhere in the run (last fetch wins)."""

    prompt_arg: str | None = None
    """What to pass to `judge --prompt` to run this run's prompt again."""
    claims_paths: Mapping[str, str] = field(default_factory=dict)
    """claims file -> its claims file path, as a command run from the current folder takes it."""
    anthropic_base_url: str | None = None
    """The Messages API endpoint the run was recorded against (a stand-in's, stored canonically), if not the SDK's."""
    stand_ins: tuple[str, ...] = ()
    """Which services of the run were the local stand-ins (`learn`, `model`)."""
    file_errors: Mapping[str, str] = field(default_factory=dict)
    """claims file -> why its conversation failed, for the files that did."""

    @functools.cached_property
    def prompt_id(self) -> str | None:
        """What identifies the prompt: the sha of its text, else the manifest's sha."""
        return sha256_text(self.prompt_text) if self.prompt_text is not None else self.prompt_sha256
