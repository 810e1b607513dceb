"""A run's verdicts against the gold set, as Inspect AI scores: correct/incorrect per claim, P/R/F1/accuracy per run."""

from __future__ import annotations

from inspect_ai.log import EvalMetric, EvalScore
from inspect_ai.scorer import CORRECT, INCORRECT, Score

from replay.core.grading import ClaimKey, claim_outcome, grade_results, is_correct
from replay.schema.common import GOLD_TO_VERDICT, Verdict
from replay.schema.gold import CompactGold, GoldRow
from replay.schema.results import CompactResults

SCORER = "gold"
"""The name of the score every sample and the run carry."""


def claim_score(gold: GoldRow, verdict: Verdict | None) -> Score:
    """C when the verdict is the one the gold label expects, else I (no verdict is never correct)."""
    outcome = claim_outcome(gold.label, verdict)
    return Score(value=CORRECT if is_correct(gold.label, verdict) else INCORRECT, answer=verdict or "no verdict",
                 explanation=gold.note,
                 metadata={"gold": gold.label, "expected": GOLD_TO_VERDICT[gold.label], "outcome": outcome,
                           "mode": gold.mode})


def gold_by_key(gold: CompactGold) -> dict[ClaimKey, GoldRow]:
    return {(g.file, g.id): g for g in gold.items}


def run_score(results: CompactResults, gold: CompactGold) -> EvalScore:
    """The run's scores as `judge-replay grade` gives them; a ratio with nothing to count (precision when
    nothing was flagged) is left out, since an Inspect metric must be a number."""
    scores = grade_results(results, gold)
    ratios = {"accuracy": scores.accuracy, "precision": scores.precision, "recall": scores.recall, "f1": scores.f1}
    return EvalScore(
        name=SCORER, scorer="judge-replay grade", scored_samples=scores.graded,
        metrics={name: EvalMetric(name=name, value=value) for name, value in ratios.items() if value is not None},
        metadata={"tp": scores.tp, "fp": scores.fp, "fn": scores.fn, "tn": scores.tn,
                  "no_verdict": scores.no_verdict, "graded": scores.graded,
                  "undefined": sorted(name for name, value in ratios.items() if value is None),
                  "gold_without_a_result": scores.unmatched_gold})
