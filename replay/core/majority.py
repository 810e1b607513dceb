"""The majority rule over a claim's samples: which sample's verdict record stands for the claim."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from replay.schema.common import Verdict


def majority_index(verdicts: Sequence[Verdict | None]) -> int:
    """The index of the sample whose record is a claim's top-level record: the earliest sample giving the
    most frequent verdict among the samples that gave one (a tie goes to the verdict the earliest of the
    tied samples gave); 0 when no sample gave a verdict (or there is none)."""
    counts = Counter(v for v in verdicts if v is not None)
    if not counts:
        return 0
    most = max(counts.values())
    return next(i for i, v in enumerate(verdicts) if v is not None and counts[v] == most)
