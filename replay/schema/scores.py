"""Grading output: scores, the per-claim disagreements, and the gate's decision."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from replay.schema.common import GoldLabel, Verdict
from replay.schema.field_docs import DescribedRecord

# --------------------------------------------------------------------------- grading


class ClaimError(BaseModel):
    """One judge-vs-gold disagreement (or a claim with no verdict), with what adjudication needs."""

    file: str
    id: str
    gold: GoldLabel | None = None
    expected: Verdict | None = None
    verdict: Verdict | None = None
    kind: Literal["FP", "FN", "mismatch", "no_verdict", "no_gold"] = "mismatch"
    claim: str | None = None
    claim_type: str | None = None
    mode: str | None = None
    note: str | None = None
    rule: str = ""
    evidence_url: str = ""
    evidence_quote: str = ""
    quote_verified: bool | None = None
    reason: str = ""
    page_region: str | None = None
    """The page text around the quote, from the run's cassette."""
    outcome: Literal["TP", "FP", "FN", "TN"] | None = None
    """The claim's binary outcome (positive = flagged `not_grounded`); None for a result with no gold, and
    for a claim with no verdict whose gold label is correct/unsourced (it is neither TN nor FP)."""
    judge_error: str | None = None
    """Why the claim has no verdict (the result's error, its file's error, or no result at all)."""
    quote_in_page: bool | None = None
    """The quote occurs in the page recorded for `evidence_url`; None when no page or no quote."""
    page_url: str | None = None
    """The recorded page `page_region` comes from."""
    page_note: str | None = None
    """What `page_region` is centred on (the quote, the claim's values), or why there is none."""


class VerdictCounts(DescribedRecord):
    """How many of a claim's samples gave each verdict."""

    grounded: int = 0
    not_grounded: int = 0
    source_silent: int = 0
    none: int = 0
    """Samples that gave no verdict (a failed or cut-off conversation, an unusable answer)."""


class ClaimSamples(DescribedRecord):
    """One graded claim's verdicts over the run's samples."""

    file: str
    id: str
    verdict: Verdict | None
    """The majority verdict (the claim's top-level verdict; None when no sample gave one)."""
    verdicts: VerdictCounts
    """How many samples gave each verdict (`none`: no verdict)."""
    stable: bool
    """Every sample gave the same verdict (a missing verdict counts as a verdict of its own, `none`)."""


class Scores(DescribedRecord):
    """Scores of one results file against a gold set (`grade --json`).

    With K samples per claim, precision, recall, F1 and accuracy are the means over the samples (each
    sample scored as a run of its own), with their ranges; the counts, the confusion matrix and the
    errors are those of the majority verdicts."""

    precision: float | None
    recall: float | None
    f1: float | None
    accuracy: float | None
    tp: int
    fp: int
    fn: int
    tn: int
    no_verdict: int = 0
    """Graded claims without a verdict (an API failure, a cut-off answer, no result at all): never TP, FP
    or TN; FN when the gold says outdated/wrong; always against accuracy."""
    graded: int = 0
    errors: list[ClaimError] = []
    confusion: dict[str, dict[str, int]] = {}
    """gold-mapped verdict -> judge verdict (or `none`) -> count."""
    by_claim_type: dict[str, dict[str, Any]] = {}
    by_mode: dict[str, dict[str, Any]] = {}
    unmatched_gold: list[dict[str, str]] = []
    """Gold items with no result."""
    unmatched_results: list[dict[str, str]] = []
    """Results with no gold item."""
    quote_unverified: int = 0
    """Results whose quote was not found in the page fetched for them."""
    samples: int = 1
    """Samples per claim the run recorded (K); 1 for a run judged once."""
    precision_range: tuple[float, float] | None = None
    """[min, max] of precision over the samples (equal for K = 1); None when no sample defines it."""
    recall_range: tuple[float, float] | None = None
    """[min, max] of recall over the samples."""
    f1_range: tuple[float, float] | None = None
    """[min, max] of F1 over the samples."""
    accuracy_range: tuple[float, float] | None = None
    """[min, max] of accuracy over the samples."""
    unstable: int = 0
    """Graded claims whose samples gave more than one verdict (a missing verdict counts as one)."""
    sample_no_verdict: int = 0
    """(claim, sample) pairs without a verdict: each is a no-verdict claim of that sample's own score."""
    claims: list[ClaimSamples] = []
    """Every graded claim, in gold order, with its verdict counts over the samples."""


class ModelNoise(DescribedRecord):
    """How stable the gate's decision is against the model's own noise (re-runs simulated from the samples)."""

    measured: bool
    """False when both sides were judged once (K = 1): model noise was not measured."""
    stability: float | None = None
    """Share of simulated re-runs (each side's K samples drawn afresh: each claim's verdicts as likely as its
    samples and the run's other claims make them; a fixed seed) that reach the same decision as the observed
    means; None when not measured."""
    samples: dict[str, int] = {}
    """Samples per claim of each side: `{"baseline": K, "candidate": K}`."""
    resamples: int = 0
    """Simulated re-runs behind `stability`."""
    required: float = 0.95
    """The stability a decision needs (`[tool.judge-replay] gate-stability`)."""
    settle: list[str] = []
    """The `judge --add-samples` commands projected to make the decision stable (empty when it is)."""
    settle_samples: int | None = None
    """Samples per claim on each side at which the decision is projected to be stable (None: not projected)."""
    settle_cost_usd: float | None = None
    """Estimated USD of `settle` (the recorded cost per sample, at current prices); None when unknown."""


class GateDecision(DescribedRecord):
    """The adoption gate, candidate against baseline."""

    adopt: bool
    reason: str
    within_noise: bool | None = None
    """True when the P/R differences are not distinguishable from noise on this gold set."""
    mcnemar_p: float | None = None
    only_candidate_right: int = 0
    only_baseline_right: int = 0
    delta_precision_ci: tuple[float, float] | None = None
    delta_recall_ci: tuple[float, float] | None = None
    paired: int = 0
    """Gold claims both versions were compared on."""
    delta_precision: float | None = None
    """P_candidate - P_baseline; None when either is undefined."""
    delta_recall: float | None = None
    """R_candidate - R_baseline; None when either is undefined."""
    bootstrap_resamples: int = 0
    """Paired bootstrap resamples behind the CIs (fixed seed: the same inputs give the same CIs)."""
    model_noise: ModelNoise = ModelNoise(measured=False)
    """The decision's stability against the model's own noise, measured when either side has K >= 2 samples."""
