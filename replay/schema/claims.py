"""A claims batch (one JSON file per documentation file) and its claims."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from replay.schema.common import ClaimType, _Open

# --------------------------------------------------------------------------- inputs


class Claim(_Open):
    """One factual claim extracted from a documentation file."""

    id: str = Field(min_length=1)
    """Claim id, unique within its file (e.g. `models-003`)."""
    claim: str = Field(min_length=1)
    """The claim text."""
    claim_type: ClaimType
    """What kind of volatile value the claim asserts."""
    evidence_url: str | None = None
    """The Learn page the claim cites; missing or null means the judge searches."""


@dataclass(frozen=True, slots=True)
class ClaimRow:
    """A `Claim` as diff holds a run's thousands: the same fields, without the bookkeeping a pydantic model
    keeps per instance."""

    id: str
    claim: str
    claim_type: ClaimType
    evidence_url: str | None

    @classmethod
    def of(cls, claim: Claim) -> ClaimRow:
        return cls(claim.id, claim.claim, claim.claim_type, claim.evidence_url)


AnyClaim = Claim | ClaimRow
"""One claim: as read, or as grade and diff hold a run's thousands (`ClaimRow`, the same fields)."""


def as_judged(claim: AnyClaim) -> tuple[str, str, str | None]:
    """What of a claim its verdict rests on: its text, type and cited page (two runs judged the same claim
    when these are equal, whatever its id)."""
    return claim.claim, claim.claim_type, claim.evidence_url


class ClaimsBatch(_Open):
    """A claims file: every claim of one documentation file, judged in one conversation."""

    file: str = Field(min_length=1)
    """The documentation file the claims come from (the pairing key with `id`)."""
    claims: list[Claim] = Field(min_length=1)
    """The claims, in file order (at least one: a conversation about no claim would be paid for nothing)."""
