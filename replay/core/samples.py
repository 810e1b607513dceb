"""A claim's samples: their verdicts, verdict counts and stability, and a run scored as the mean of its samples."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from replay.core.majority import majority_index
from replay.schema.common import VERDICTS, Verdict
from replay.schema.results import ClaimResult, ResultRow, recorded_sample_verdicts

NONE = "none"
"""The verdict-count key of samples that gave no verdict."""


def sample_verdicts(result: ClaimResult | ResultRow | None) -> tuple[Verdict | None, ...]:
    """A claim result's verdicts, one per sample in sample order: its `samples` records when it has them,
    else its own verdict (a run judged once). None: the results hold nothing for the claim (one sample
    without a verdict)."""
    if result is None:
        return (None,)
    held = result.sample_verdicts if isinstance(result, ResultRow) else recorded_sample_verdicts(result)
    return held if held is not None else (result.judge_verdict,)


def padded(verdicts: Sequence[Verdict | None], k: int) -> tuple[Verdict | None, ...]:
    """`verdicts` made `k` long: a sample the claim has no record of has no verdict."""
    return (*verdicts, *([None] * (k - len(verdicts))))


def verdict_counts(verdicts: Iterable[Verdict | None]) -> dict[str, int]:
    """How many samples gave each verdict, every key present (`none`: no verdict)."""
    counts = {v: 0 for v in (*VERDICTS, NONE)}
    for v in verdicts:
        counts[v or NONE] += 1
    return counts


def is_stable(verdicts: Sequence[Verdict | None]) -> bool:
    """Every sample gave the same verdict; a missing verdict is a verdict of its own (`none`)."""
    return len(set(verdicts)) <= 1


def majority(verdicts: Sequence[Verdict | None]) -> Verdict | None:
    """The majority verdict (`core.majority`): the verdict of the claim's top-level record."""
    return verdicts[majority_index(verdicts)] if verdicts else None


@dataclass(frozen=True)
class Spread:
    """A ratio over samples: its mean over the samples that define it, with min and max (None: none does)."""

    mean: float | None
    low: float | None
    high: float | None

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        defined = [v for v in values if v is not None]
        if not defined:
            return cls(None, None, None)
        return cls(mean_of(defined), min(defined), max(defined))

    @property
    def range(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)


def mean_of(values: Sequence[float]) -> float:
    """The mean, summed in order (the gate's resamples sum the same way, so equal inputs give equal means)."""
    total = 0.0
    for v in values:
        total += v
    return total / len(values)
