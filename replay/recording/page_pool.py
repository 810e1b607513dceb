"""Another run's Learn exchanges, pooled: the pages of a page-pinned run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from replay.cassettes.cassette import CASSETTE_SUFFIX, load_cassette
from replay.cassettes.interaction import Interaction
from replay.cassettes.matching import (
    CanonicalRequest,
    RequestKey,
    canonical_request,
)
from replay.errors import InputError

if TYPE_CHECKING:
    pass


class _PagePool:
    """Every Learn exchange of another run's cassettes, pooled: the pages of a page-pinned run."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise InputError(folder, "no such run folder (given as --pages-from)")
        files = sorted(folder.glob("*" + CASSETTE_SUFFIX))
        if not files:
            raise InputError(folder, "holds no cassettes to serve pages from")
        self.folder = folder
        self.interactions: list[Interaction] = []
        self.requests: list[CanonicalRequest] = []
        self.index: dict[RequestKey, int] = {}
        for path in files:
            for it in load_cassette(path):
                creq = canonical_request(it.method, it.uri, it.request_body)
                if creq.kind != "learn":
                    continue
                self.index.setdefault(creq.key, len(self.interactions))
                self.interactions.append(it)
                self.requests.append(creq)

    def get(self, creq: CanonicalRequest) -> Interaction | None:
        i = self.index.get(creq.key)
        return None if i is None else self.interactions[i]
