"""Scoring judge results against a gold set: pairing on (file, id), P/R/F1/accuracy, confusion, breakdowns."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from replay.core.samples import Spread, is_stable, majority, padded, sample_verdicts, verdict_counts
from replay.schema.claims import AnyClaim
from replay.schema.common import GOLD_TO_VERDICT, VERDICTS, Verdict
from replay.schema.gold import CompactGold, GoldItem, GoldRow, GoldSet
from replay.schema.results import ClaimResult, CompactResults, ResultRow, ResultsFile
from replay.schema.scores import ClaimError, ClaimSamples, Scores, VerdictCounts

ClaimKey = tuple[str, str]
"""(file, id): how gold items and results pair."""
Outcome = Literal["TP", "FP", "FN", "TN"]
NO_VERDICT = "none"
"""The confusion-matrix column of claims with no verdict."""
UNKNOWN = "(unknown)"
"""Breakdown key of claims whose type is not known."""
NO_MODE = "(none)"
"""Breakdown key of gold items that name no failure mode."""

Results = ResultsFile | CompactResults
"""Results as read (`ResultsFile`) or as grade holds them (`CompactResults`): the same fields by the same names."""
AnyResult = ClaimResult | ResultRow
Gold = GoldSet | CompactGold
"""A gold set as read (`GoldSet`) or as grade holds it (`CompactGold`): the same fields by the same names."""

_FLAGGED: Verdict = "not_grounded"
_BAD_LABELS = ("outdated", "wrong")


@dataclass(frozen=True)
class PairedClaim:
    """A gold item and the result judged for it (None: the results hold no verdict for it)."""

    gold: GoldItem | GoldRow
    result: AnyResult | None
    file_error: str | None = None
    """The error of the result's claims file as a whole, if it failed."""

    @property
    def key(self) -> ClaimKey:
        return (self.gold.file, self.gold.id)

    @property
    def verdict(self) -> Verdict | None:
        """The claim's verdict: the majority of its samples (a claim judged once: its verdict)."""
        return majority(self.verdicts)

    @property
    def verdicts(self) -> tuple[Verdict | None, ...]:
        """The claim's verdict in each sample, in sample order (one when judged once or not at all)."""
        return sample_verdicts(self.result)


@dataclass(frozen=True)
class Pairing:
    """Gold items in gold order with their results, and the results no gold item asks about."""

    paired: list[PairedClaim]
    unmatched_results: list[tuple[str, AnyResult]]


def pair_claims(results: Results, gold: Gold) -> Pairing:
    """Pair every gold item with its result on (file, id); nothing is dropped. A name spelt in another
    Unicode form on the two sides (`modèles` composed in one file, decomposed in the other, as a Mac may
    write it) is the same name: a gold item no result has by its exact spelling pairs on the NFC form."""
    by_key: dict[ClaimKey, AnyResult] = {}
    file_errors: dict[str, str | None] = {}
    for fr in results.files:
        file_errors[fr.file] = fr.error
        for r in fr.results:
            by_key[(fr.file, r.id)] = r
    spelt: dict[ClaimKey, ClaimKey] = {}
    if not all((f + i).isascii() for f, i in by_key):
        spelt = {_nfc(k): k for k in by_key}
    keys = [(g, (g.file, g.id) if (g.file, g.id) in by_key or not spelt else spelt.get(_nfc((g.file, g.id)), (g.file, g.id)))
            for g in gold.items]
    paired = [PairedClaim(g, by_key.get(key), file_errors.get(key[0], file_errors.get(g.file))) for g, key in keys]
    gold_keys = {key for _, key in keys}
    unmatched = [(fr.file, r) for fr in results.files for r in fr.results if (fr.file, r.id) not in gold_keys]
    return Pairing(paired, unmatched)


def _nfc(key: ClaimKey) -> ClaimKey:
    return unicodedata.normalize("NFC", key[0]), unicodedata.normalize("NFC", key[1])


def claim_outcome(label: str, verdict: Verdict | None) -> Outcome | None:
    """The binary outcome: positive = the judge flagged the claim `not_grounded`.

    A claim with no verdict is never TP, FP or TN: on an `outdated`/`wrong` claim it is an FN (a flag
    was missed), on a `correct`/`unsourced` claim it has no outcome (None): nothing was judged.
    """
    flagged = verdict == _FLAGGED
    bad = label in _BAD_LABELS
    if flagged:
        return "TP" if bad else "FP"
    if bad:
        return "FN"
    return "TN" if verdict is not None else None


def is_correct(label: str, verdict: Verdict | None) -> bool:
    """3-class correctness: the verdict is the one the gold label maps to (no verdict is never correct)."""
    return verdict is not None and verdict == GOLD_TO_VERDICT[label]


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


@dataclass
class Tally:
    """Counts of one group of graded claims, and the ratios they give.

    `graded` counts every gold claim of the group; `no_verdict` those without a verdict (also in `fn` when
    their gold label is outdated/wrong, in none of TP/FP/FN/TN otherwise), so
    tp + fp + fn + tn + (no_verdict on correct/unsourced claims) == graded.
    """

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    no_verdict: int = 0
    correct: int = 0
    graded: int = 0

    def add(self, label: str, verdict: Verdict | None) -> None:
        outcome = claim_outcome(label, verdict)
        if outcome is not None:
            setattr(self, outcome.lower(), getattr(self, outcome.lower()) + 1)
        self.no_verdict += verdict is None
        self.correct += is_correct(label, verdict)
        self.graded += 1

    @property
    def precision(self) -> float | None:
        return ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        # 2TP / (2TP + FP + FN) equals 2PR / (P + R) where both are defined, and is 0 (not undefined)
        # when the judge flagged claims but got none right.
        return ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    @property
    def accuracy(self) -> float | None:
        """Claims whose verdict is the one the gold label expects, over every graded claim (a claim
        without a verdict counts against it)."""
        return ratio(self.correct, self.graded)

    def as_dict(self) -> dict[str, Any]:
        return {
            "graded": self.graded, "tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
            "no_verdict": self.no_verdict, "precision": self.precision, "recall": self.recall, "f1": self.f1,
            "accuracy": self.accuracy,
        }


def empty_confusion() -> dict[str, dict[str, int]]:
    """expected verdict -> judge verdict (or `none`) -> 0, every cell present."""
    return {expected: {v: 0 for v in (*VERDICTS, NO_VERDICT)} for expected in VERDICTS}


def _breakdown(paired: Iterable[PairedClaim], key: Callable[[PairedClaim], str]) -> dict[str, dict[str, Any]]:
    groups: dict[str, Tally] = {}
    for p in paired:
        groups.setdefault(key(p), Tally()).add(p.gold.label, p.verdict)
    return {k: groups[k].as_dict() for k in sorted(groups)}


def claim_info(
    key: ClaimKey, result: AnyResult | None, claims: Mapping[ClaimKey, AnyClaim | None] | None
) -> tuple[str | None, str | None]:
    """(claim text, claim type): from the claims given, else from the result's extra fields."""
    claim = claims.get(key) if claims else None
    if claim is not None:
        return claim.claim, claim.claim_type
    extra = (result.model_extra or {}) if result else {}
    text, ctype = extra.get("claim"), extra.get("claim_type")
    return (text if isinstance(text, str) else None), (ctype if isinstance(ctype, str) else None)


NO_RESULT = "no result for this claim"
"""`ClaimError.judge_error` of a claim the results hold nothing of (followed by its file's error, when its
file failed)."""


def _error(p: PairedClaim, claims: Mapping[ClaimKey, AnyClaim | None] | None) -> ClaimError:
    verdict, r = p.verdict, p.result
    outcome = claim_outcome(p.gold.label, verdict)
    if verdict is None:
        kind: Literal["FP", "FN", "mismatch", "no_verdict"] = "no_verdict"
    elif outcome in ("FP", "FN"):
        kind = "FP" if outcome == "FP" else "FN"
    else:
        kind = "mismatch"
    text, ctype = claim_info(p.key, r, claims)
    if r is None:
        judge_error = f"{NO_RESULT} ({p.file_error})" if p.file_error else NO_RESULT
    elif verdict is None:
        judge_error = r.error or p.file_error or "no verdict given"
    else:
        judge_error = None
    return ClaimError(
        file=p.gold.file, id=p.gold.id, gold=p.gold.label, expected=GOLD_TO_VERDICT[p.gold.label],
        verdict=verdict, kind=kind, outcome=outcome, claim=text, claim_type=ctype, mode=p.gold.mode,
        note=p.gold.note, rule=r.rule if r else "", evidence_url=r.evidence_url if r else "",
        evidence_quote=r.evidence_quote if r else "", quote_verified=r.quote_verified if r else None,
        reason=r.reason if r else "", judge_error=judge_error,
    )


def grade_results(
    results: Results, gold: Gold, claims: Mapping[ClaimKey, AnyClaim | None] | None = None
) -> Scores:
    """Score `results` against `gold` (the scoring rules).

    Every gold item is graded. A claim has *no verdict* when its result has no `judge_verdict` (an API
    failure, a cut-off or unparseable answer: the result's `error` says which) or when the results hold no
    result for it at all (its conversation never ran or the judge skipped it); a result that has a verdict
    is graded on it, whatever else it carries. A claim with no verdict is counted in `no_verdict` and
    listed in `errors` with its error; it is never TP, FP or TN, it is an FN when the gold says
    outdated/wrong, and it always counts against accuracy. `claims` ((file, id) -> Claim) supplies claim
    texts and types for the breakdown and the errors; results' own `claim`/`claim_type` fields are the
    fallback.
    """
    pairing = pair_claims(results, gold)
    total = Tally()
    confusion = empty_confusion()
    errors: list[ClaimError] = []
    for p in pairing.paired:
        total.add(p.gold.label, p.verdict)
        confusion[GOLD_TO_VERDICT[p.gold.label]][p.verdict or NO_VERDICT] += 1
        if not is_correct(p.gold.label, p.verdict):
            errors.append(_error(p, claims))
    samples = sample_tallies(pairing.paired)
    spreads = [Spread.of(getattr(t, name) for t in samples.tallies) for name in ("precision", "recall", "f1", "accuracy")]

    def claim_type(p: PairedClaim) -> str:
        return claim_info(p.key, p.result, claims)[1] or UNKNOWN

    return Scores(
        precision=spreads[0].mean, recall=spreads[1].mean, f1=spreads[2].mean, accuracy=spreads[3].mean,
        tp=total.tp, fp=total.fp, fn=total.fn, tn=total.tn, no_verdict=total.no_verdict, graded=total.graded,
        errors=errors, confusion=confusion,
        by_claim_type=_breakdown(pairing.paired, claim_type),
        by_mode=_breakdown(pairing.paired, lambda p: p.gold.mode or NO_MODE),
        unmatched_gold=[{"file": p.gold.file, "id": p.gold.id} for p in pairing.paired if p.result is None],
        unmatched_results=[{"file": f, "id": r.id} for f, r in pairing.unmatched_results],
        quote_unverified=sum(r.quote_verified is False for fr in results.files for r in fr.results),
        samples=samples.k, precision_range=spreads[0].range, recall_range=spreads[1].range,
        f1_range=spreads[2].range, accuracy_range=spreads[3].range,
        unstable=sum(not c.stable for c in samples.claims), sample_no_verdict=sum(t.no_verdict for t in samples.tallies),
        claims=samples.claims,
    )


@dataclass(frozen=True)
class SampleTallies:
    """A run's claims scored sample by sample: sample k of every claim makes the k-th run."""

    k: int
    tallies: list[Tally]
    """One per sample, each scored as a run of its own (a claim with no record of a sample: no verdict there)."""
    claims: list[ClaimSamples]
    """Every paired claim, in gold order, with its verdict counts."""


def sample_tallies(paired: Iterable[PairedClaim]) -> SampleTallies:
    """Score each sample of the paired claims as a run of its own, and count each claim's verdicts."""
    claims = [(p, p.verdicts) for p in paired]
    k = max((len(vs) for _, vs in claims), default=1)
    tallies = [Tally() for _ in range(k)]
    listed: list[ClaimSamples] = []
    for p, vs in claims:
        vs = padded(vs, k)
        for tally, v in zip(tallies, vs, strict=True):
            tally.add(p.gold.label, v)
        listed.append(ClaimSamples(file=p.gold.file, id=p.gold.id, verdict=majority(vs), verdicts=VerdictCounts(**verdict_counts(vs)),
                                   stable=is_stable(vs)))
    return SampleTallies(k, tallies, listed)
