"""Model-noise stability of the gate: would the decision hold on a re-run, and what more samples would settle it.

Each graded claim has a binary outcome per sample: flagged `not_grounded` (TP on an outdated or wrong claim,
FP on a correct or unsourced one) or not (FN, or neither). A claim's probability of being flagged is
unknown; its samples are evidence of it, and so is how often the run's other claims flip:

- prior: each claim's flag probability is Beta(a, a), one `a` per side, so the prior says how decided the
  judge is, never which way. `a` is not assumed: it is weighed over `PRIOR_GRID` (equally weighted on a
  log scale) by how well it explains the side's flag counts (the beta-binomial likelihood, all claims
  pooled). A run whose claims rarely flip gives a small `a`, under which a claim whose samples agree is
  nearly settled; a run with many flips gives a larger `a`, under which even a claim whose few samples
  agreed may flip next time.
- posterior: a claim flagged in x of n samples has Beta(a + x, a + n - x).
- a re-run: on each side, `a` drawn from its posterior weights, each claim's flag probability from its
  posterior, then K fresh samples (the side's K); the rule applied to their mean P and R.

Stability is the share of simulated re-runs (a fixed seed) that reach the decision the recorded means
reach. A projection to T samples assumes each claim's further samples flag it as often as its recorded
ones did, and asks the same of re-runs with T samples per side.
"""

from __future__ import annotations

import random
from bisect import bisect, bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from math import exp, lgamma, log

from replay.core.grading import Gold, Results, claim_outcome, pair_claims, ratio
from replay.core.samples import mean_of, padded

RESAMPLES = 2_000
"""Simulated re-runs behind a stability."""
PROJECTION_RESAMPLES = 1_000
SEED = 20_261_206
"""Fixed seed: the same runs always give the same stability."""
SETTLE_TARGETS = (3, 5, 10, 20)
"""Samples per claim on each side tried, in order, when projecting what would settle an unstable decision."""
PRIOR_GRID = tuple(0.01 * 2 ** (j / 2) for j in range(21))
"""The values of the prior's `a` weighed (0.01 to 10.24, a factor √2 apart, equal prior weight each): from a
judge whose close calls almost never flip to one that flips a coin on every claim."""


@dataclass(frozen=True)
class SideCounts:
    """One side of the gate as its samples saw it: per graded claim, whether the gold flags it (outdated or
    wrong) and in how many of its `samples` the judge flagged it."""

    k: int
    """Samples per claim of the side (a re-run draws this many)."""
    claims: tuple[tuple[bool, float], ...]
    """(gold flags it, samples that flagged it), per claim in gold order."""
    samples: float = 0.0
    """The evidence per claim: the side's K, or more in a projection (then the flag counts are scaled)."""

    @property
    def evidence(self) -> float:
        return self.samples or float(self.k)

    @property
    def bad(self) -> int:
        """Claims the gold flags (the denominator of recall)."""
        return sum(flags for flags, _ in self.claims)


def side_outcomes(results: Results, gold: Gold) -> SideCounts:
    """Every gold claim's flag count over the side's samples (a sample without a verdict does not flag it)."""
    paired = [(p.gold.label, p.verdicts) for p in pair_claims(results, gold).paired]
    k = max((len(vs) for _, vs in paired), default=1)
    claims = []
    for label, vs in paired:
        outcomes = [claim_outcome(label, v) for v in padded(vs, k)]
        bad = label in ("outdated", "wrong")
        claims.append((bad, float(sum(o in ("TP", "FP") for o in outcomes))))
    return SideCounts(k, tuple(claims))


def projected(side: SideCounts, samples: int) -> SideCounts:
    """The side as if it had `samples` samples per claim, each claim flagged as often as its recorded samples
    flagged it (flag counts scaled, so a claim's evidence grows but its share does not move)."""
    scale = samples / side.evidence
    return SideCounts(samples, tuple((bad, x * scale) for bad, x in side.claims), float(samples))


def _log_beta(x: float, y: float) -> float:
    return lgamma(x) + lgamma(y) - lgamma(x + y)


def prior_weights(side: SideCounts, grid: Sequence[float] = PRIOR_GRID) -> list[float]:
    """The posterior weight of each `a` of `grid` (equal prior weights): proportional to the product over
    claims of P(x of n flagged | Beta(a, a)) = B(a + x, a + n - x) / B(a, a) (the binomial factor is the
    same for every `a`); normalized to sum to 1."""
    n = side.evidence
    counts = Counter(x for _, x in side.claims)
    logs = [sum(m * (_log_beta(a + x, a + n - x) - _log_beta(a, a)) for x, m in counts.items()) for a in grid]
    top = max(logs)
    weights = [exp(v - top) for v in logs]
    total = sum(weights)
    return [w / total for w in weights]


def rerun_flag_distribution(a: float, flagged: float, evidence: float, slots: int) -> list[float]:
    """P(a re-run of `slots` samples flags the claim t times), t = 0..slots, for a claim flagged in `flagged`
    of `evidence` samples under the prior Beta(a, a): beta-binomial with Beta(a + flagged, a + evidence -
    flagged), C(slots, t) B(a + flagged + t, a + evidence - flagged + slots - t) / B(a + flagged, a + ...)."""
    alpha, beta = a + flagged, a + evidence - flagged
    base = _log_beta(alpha, beta)
    log_choose = [lgamma(slots + 1) - lgamma(t + 1) - lgamma(slots - t + 1) for t in range(slots + 1)]
    return [exp(log_choose[t] + _log_beta(alpha + t, beta + slots - t) - base) for t in range(slots + 1)]


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


@dataclass(frozen=True)
class _Group:
    """Claims of one side with the same re-run distribution at one `a`: how many, which way the gold labels
    them, the most likely flag count `mode` with its probability, and the cumulative distribution of the
    other counts (given that the count is not the mode)."""

    bad: bool
    claims: int
    mode: int
    log_mode: float
    others: list[int]
    cumulative: list[float]


class _Rerun:
    """Draws re-runs of one side: its prior weights and each claim's re-run distribution, cached per `a`."""

    def __init__(self, side: SideCounts, grid: Sequence[float]) -> None:
        self.side, self.grid, self.slots = side, grid, side.k
        self.cumulative = list(accumulate(prior_weights(side, grid)))
        self.groups = sorted(Counter(side.claims).items())
        self.bad = side.bad
        self._tables: dict[int, list[_Group]] = {}

    def _table(self, index: int) -> list[_Group]:
        if index not in self._tables:
            a, groups = self.grid[index], []
            for (bad, x), m in self.groups:
                pmf = rerun_flag_distribution(a, x, self.side.evidence, self.slots)
                mode = max(range(len(pmf)), key=pmf.__getitem__)
                others = [t for t in range(len(pmf)) if t != mode]
                rest = sum(pmf[t] for t in others)
                if rest <= 0:
                    others = []
                cumulative = list(accumulate(pmf[t] / rest for t in others))[:-1]
                groups.append(_Group(bad, m, mode, log(pmf[mode]) if pmf[mode] < 1 else 0.0, others, cumulative))
            self._tables[index] = groups
        return self._tables[index]

    def draw(self, rng: random.Random) -> tuple[float | None, float | None]:
        """Mean P and R of one simulated re-run."""
        k = self.slots
        index = min(bisect(self.cumulative, rng.random() * self.cumulative[-1]), len(self.grid) - 1)
        flagged = [[0] * k, [0] * k]  # per slot: flagged correct claims (FP), flagged bad claims (TP)
        every = [0, 0]  # claims flagged in every slot
        for group in self._table(index):
            # the claims whose count is not the mode, found by geometric skips (exact, and one draw per
            # such claim rather than one per claim: most claims of a run keep their verdict)
            counts, moded, i = [], group.claims, 0
            while True:
                if group.log_mode < 0:
                    i += int(log(1.0 - rng.random()) / group.log_mode)
                if i >= group.claims or not group.others:
                    break
                counts.append(group.others[bisect_right(group.cumulative, rng.random())])
                moded -= 1
                i += 1
            row = flagged[group.bad]
            counts.extend([group.mode] * moded)
            for t in counts:
                if t == k:
                    every[group.bad] += 1
                elif t:
                    _flag_slots(row, t, k, rng)
        counts_per_slot = []
        for s in range(k):
            tp, fp = flagged[1][s] + every[1], flagged[0][s] + every[0]
            counts_per_slot.append((tp, fp, self.bad - tp))
        return mean_precision_recall(counts_per_slot)


def _flag_slots(row: list[int], t: int, k: int, rng: random.Random) -> None:
    """Flag the claim in `t` of the `k` slots of `row`, the slots drawn at random (0 < t < k)."""
    chosen: set[int] = set()
    pick = t if 2 * t <= k else k - t  # draw the fewer: the flagged slots, or the slots left unflagged
    while len(chosen) < pick:
        chosen.add(int(rng.random() * k))
    if pick == t:
        for s in chosen:
            row[s] += 1
    else:
        for s in range(k):
            row[s] += s not in chosen


def stability(baseline: SideCounts, candidate: SideCounts, observed: bool, *, resamples: int = RESAMPLES,
              seed: int = SEED, grid: Sequence[float] = PRIOR_GRID) -> float:
    """The share of simulated re-runs (each side's K fresh samples, module docstring) whose rule decision
    equals `observed` (the decision on the recorded means)."""
    if not resamples:
        return 1.0
    rng = random.Random(seed)
    base, cand = _Rerun(baseline, grid), _Rerun(candidate, grid)
    same = sum(rule_holds(base.draw(rng), cand.draw(rng)) == observed for _ in range(resamples))
    return same / resamples


def settle_target(baseline: SideCounts, candidate: SideCounts, observed: bool, required: float,
                  resamples: int = PROJECTION_RESAMPLES, seed: int = SEED,
                  grid: Sequence[float] = PRIOR_GRID) -> int | None:
    """The fewest samples per claim on each side (of `SETTLE_TARGETS`, above both sides' K) at which the
    decision is projected to be stable (`projected`); None when none is."""
    above = max(baseline.k, candidate.k)
    for target in (t for t in SETTLE_TARGETS if t > above):
        share = stability(projected(baseline, target), projected(candidate, target), observed,
                          resamples=resamples, seed=seed, grid=grid)
        if share >= required:
            return target
    return None
