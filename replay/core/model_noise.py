"""Model-noise stability of the gate: the judge's own samples resampled, and what more samples would settle.

Each claim keeps its gold label; what is drawn again is which of its recorded samples stands in each sample
slot, on each side (with replacement, claims held fixed, a fixed seed): a decision that flips in many such
resamples rests on the model's coin flips, not on the prompts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from replay.core.grading import Gold, Results, claim_outcome, pair_claims, ratio
from replay.core.samples import mean_of, padded

RESAMPLES = 2_000
PROJECTION_RESAMPLES = 1_000
SEED = 20_261_206
"""Fixed seed: the same runs always give the same stability."""
SETTLE_TARGETS = (3, 5, 10, 20)
"""Samples per claim on each side tried, in order, when projecting what would settle an unstable decision."""
_CODES = {"TP": 0, "FP": 1, "FN": 2}
_OTHER = 3


@dataclass(frozen=True)
class SideOutcomes:
    """One side of the gate as its samples saw it: each graded claim's binary outcome in each sample
    (0 TP, 1 FP, 2 FN, 3 neither), with the claims that gave the same outcome in every sample counted apart."""

    k: int
    fixed: tuple[int, int, int]
    """TP, FP and FN of the claims whose outcome is the same in every sample (in every slot of a resample)."""
    varying: tuple[tuple[int, ...], ...]
    """The outcome codes of each claim whose samples differ on the outcome, in sample order."""


def side_outcomes(results: Results, gold: Gold) -> SideOutcomes:
    """The per-sample outcomes of every gold claim (a claim with no record of a sample: no verdict there)."""
    paired = [(p.gold.label, p.verdicts) for p in pair_claims(results, gold).paired]
    k = max((len(vs) for _, vs in paired), default=1)
    fixed = [0, 0, 0, 0]
    varying = []
    for label, vs in paired:
        codes = tuple(_code(claim_outcome(label, v)) for v in padded(vs, k))
        if len(set(codes)) == 1:
            fixed[codes[0]] += 1
        else:
            varying.append(codes)
    return SideOutcomes(k, (fixed[0], fixed[1], fixed[2]), tuple(varying))


def _code(outcome: str | None) -> int:
    return _CODES.get(outcome, _OTHER) if outcome is not None else _OTHER


def mean_precision_recall(slots: Sequence[Sequence[int]]) -> tuple[float | None, float | None]:
    """Mean P and mean R over sample slots given as [TP, FP, FN, ...] counts (each over the slots that
    define it, as grading averages them)."""
    ps = [p for p in (ratio(s[0], s[0] + s[1]) for s in slots) if p is not None]
    rs = [r for r in (ratio(s[0], s[0] + s[2]) for s in slots) if r is not None]
    return (mean_of(ps) if ps else None), (mean_of(rs) if rs else None)


def rule_holds(base: tuple[float | None, float | None], cand: tuple[float | None, float | None]) -> bool:
    """The adoption rule on mean P and R: both at least the baseline's, one strictly greater (undefined: no)."""
    (pb, rb), (pc, rc) = base, cand
    if pb is None or rb is None or pc is None or rc is None:
        return False
    return pc >= pb and rc >= rb and (pc > pb or rc > rb)


def _resampled(side: SideOutcomes, slots: int, rng: random.Random) -> tuple[float | None, float | None]:
    """Mean P and R of one resample with `slots` sample slots: in each slot, every varying claim's outcome is
    one of its samples drawn at random."""
    counts = []
    for _ in range(slots):
        tally = [*side.fixed, 0]
        for codes in side.varying:
            tally[codes[int(rng.random() * len(codes))]] += 1
        counts.append(tally)
    return mean_precision_recall(counts)


def stability(baseline: SideOutcomes, candidate: SideOutcomes, observed: bool, *, slots: tuple[int, int] | None = None,
              resamples: int = RESAMPLES, seed: int = SEED) -> float:
    """The share of resamples whose rule decision equals `observed` (the decision on the recorded means).

    `slots`: sample slots per side (baseline, candidate), default each side's K: more than K projects what
    that many samples would give, if each claim's verdicts came as often as its recorded samples gave them.
    """
    rng = random.Random(seed)
    kb, kc = slots or (baseline.k, candidate.k)
    same = 0
    for _ in range(resamples):
        same += rule_holds(_resampled(baseline, kb, rng), _resampled(candidate, kc, rng)) == observed
    return same / resamples if resamples else 1.0


def settle_target(baseline: SideOutcomes, candidate: SideOutcomes, observed: bool, required: float,
                  resamples: int = PROJECTION_RESAMPLES, seed: int = SEED) -> int | None:
    """The fewest samples per claim on each side (of `SETTLE_TARGETS`, above both sides' K) at which the
    decision is projected to be stable; None when none is."""
    above = max(baseline.k, candidate.k)
    for target in (t for t in SETTLE_TARGETS if t > above):
        if stability(baseline, candidate, observed, slots=(target, target), resamples=resamples, seed=seed) >= required:
            return target
    return None
