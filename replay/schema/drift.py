"""Drift output: each claim's status against a later page, and the pages compared."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from replay.schema.common import DriftStatus, Verdict


class DriftClaim(BaseModel):
    """Drift status of one claim's evidence."""

    file: str
    id: str
    evidence_url: str | None
    status: DriftStatus
    old: str | None = None
    new: str | None = None
    old_sha256: str | None = None
    new_sha256: str | None = None
    verdict: Verdict | None = None
    """The claim's verdict in the run whose pages drifted."""
    quote: str = ""
    """The evidence quote that verdict recorded."""
    note: str | None = None
    """Why the status is what it is, in a few words (which line moved, what is missing)."""


class DriftPage(BaseModel):
    """One page a run read, against its later version."""

    url: str
    old_sha256: str | None
    """None when the run could not retrieve the page."""
    new_sha256: str | None
    """None when the later version could not be retrieved."""
    state: Literal["unchanged", "changed", "gone", "appeared", "no-page", "unchecked"]
    claims: int = 0
    """How many claims rest on this page."""


class DriftReport(BaseModel):
    """`judge-replay drift` output."""

    run: str
    against: str
    claims: list[DriftClaim]
    at_risk: list[dict[str, str]]
    rerecord_commands: list[str] = []
    """Commands that re-record only the claims files with a claim at risk (empty when none is)."""
    rerecord_note: str | None = None
    """Where the re-record command records, and what a run folder there does to the project."""
    pages: list[DriftPage] = []
    """Every page the claims rest on, old and new content hash."""
    snapshot: str | None = None
    """With `--live`: the page snapshot folder the fetched pages were recorded into (usable as `--against`)."""
    stand_ins: dict[str, list[str]] = {}
    """`run` and `against`: which services of each were the local stand-ins (`learn`, `model`)."""
    notes: list[str] = []
    """What a reader must know first (runs made against the local stand-ins, test equipment)."""
