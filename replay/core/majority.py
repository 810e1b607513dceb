"""The majority rule of a claim's samples: which sample's verdict record stands for the claim."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from replay.schema.common import Verdict


def majority_index(verdicts: Sequence[Verdict | None]) -> int:
    """The index of the sample whose record is a claim's top-level record.

    The majority verdict is the most frequent among the samples that gave a verdict; a tie goes to the
    verdict of the earliest sample among the tied verdicts; the record is the earliest sample giving that
    verdict. When no sample gave a verdict (or there are none), sample 1 (index 0).
    """
    if len(verdicts) <= 1:  # a claim judged once (the usual run): its one record
        return 0
    counts = Counter(v for v in verdicts if v is not None)
    if not counts:
        return 0
    top = max(counts.values())
    return next(i for i, v in enumerate(verdicts) if v is not None and counts[v] == top)
