"""Grading output: scores, the per-claim disagreements, and the gate's decision."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from replay.schema.common import GoldLabel, Verdict

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


class Scores(BaseModel):
    """Scores of one results file against a gold set (the `grade --json` output)."""

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


class GateDecision(BaseModel):
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
