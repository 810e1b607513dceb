"""The adoption gate, the exact McNemar test and the paired bootstrap."""

import random

import pytest

from replay.core.gate import PairedOutcome, _interval, adoption_gate, bootstrap_delta_cis, gate_rule, mcnemar_exact_p, paired_outcomes
from replay.core.grading import grade_results, ratio
from replay.schema.gold import GoldSet
from replay.schema.results import ResultsFile
from replay.schema.scores import Scores


def scores(p, r):
    return Scores(precision=p, recall=r, f1=None, accuracy=None, tp=0, fp=0, fn=0, tn=0)


@pytest.mark.parametrize("base, cand, adopt, words", [
    ((0.8, 0.7), (0.9, 0.85), True, "adopt: P 0.80→0.90, R 0.70→0.85"),          # beats on both
    ((0.8, 0.7), (0.8, 0.85), True, "adopt: P 0.80→0.80, R 0.70→0.85"),          # holds P, lifts R
    ((0.8, 0.7), (0.9, 0.7), True, "adopt: P 0.80→0.90, R 0.70→0.70"),           # lifts P, holds R
    ((0.8, 0.7), (0.9, 0.6), False, "a trade-off"),                               # trade-off
    ((0.8, 0.7), (0.7, 0.9), False, "a trade-off"),
    ((0.8, 0.7), (0.8, 0.7), False, "P and R are equal, nothing gained"),         # equal
    ((0.8, 0.7), (0.7, 0.6), False, "the candidate is worse"),
    ((0.8, 0.7), (None, 0.9), False, "candidate precision is undefined"),         # None
    ((0.8, None), (0.9, 0.9), False, "baseline recall is undefined"),
])
def test_gate_rule(base, cand, adopt, words):
    decided, reason = gate_rule(scores(*base), scores(*cand))
    assert decided is adopt
    assert words in reason and reason.startswith("adopt:" if adopt else "do not adopt:")


@pytest.mark.parametrize("b, c, p", [
    (0, 4, 0.125),                 # 2 * (1/16)
    (4, 0, 0.125),
    (1, 9, 0.021484375),           # 2 * (1 + 10) / 1024
    (2, 10, 0.03857421875),        # 2 * (1 + 12 + 66) / 4096
    (0, 10, 0.001953125),          # 2 / 1024
    (3, 3, 1.0),                   # capped at 1
    (2, 3, 1.0),                   # 2 * (1 + 5 + 10) / 32 = 1
    (0, 0, 1.0),                   # no discordant pair: no evidence either way
])
def test_mcnemar_exact_against_binomial(b, c, p):
    assert mcnemar_exact_p(b, c) == p


def _results(verdicts):
    return ResultsFile.model_validate({"files": [{"file": "a.md", "results": [
        {"id": str(i), "judge_verdict": v} for i, v in enumerate(verdicts) if v is not None]}]})


def _gold(labels):
    return GoldSet.model_validate({"items": [{"file": "a.md", "id": str(i), "label": label}
                                      for i, label in enumerate(labels)]})


LABELS = ["outdated"] * 10 + ["correct"] * 10
BASE = ["not_grounded"] * 5 + ["grounded"] * 5 + ["grounded"] * 8 + ["not_grounded"] * 2
CAND = ["not_grounded"] * 9 + ["grounded"] * 1 + ["grounded"] * 9 + ["not_grounded"] * 1


def test_bootstrap_is_deterministic_and_paired():
    outcomes = paired_outcomes(_results(BASE), _results(CAND), _gold(LABELS))
    first = bootstrap_delta_cis(outcomes)
    assert first == bootstrap_delta_cis(outcomes)
    assert bootstrap_delta_cis(outcomes, seed=1) != first
    (p_lo, p_hi), (r_lo, r_hi) = first
    assert p_lo <= 0.9 - 5 / 7 <= p_hi and r_lo <= 0.4 <= r_hi
    same = paired_outcomes(_results(BASE), _results(BASE), _gold(LABELS))
    assert bootstrap_delta_cis(same) == ((0.0, 0.0), (0.0, 0.0))


def _bootstrap_with_choices(outcomes, resamples, seed, level=0.95):
    """The bootstrap as first written: `rng.choices` draws, six columns summed over the draws."""
    rng = random.Random(seed)
    n = len(outcomes)
    columns = [[int(getattr(o, side) == outcome) for o in outcomes]
               for side in ("baseline", "candidate") for outcome in ("TP", "FP", "FN")]
    d_precision, d_recall = [], []
    for _ in range(resamples):
        draws = rng.choices(range(n), k=n)
        tp_b, fp_b, fn_b, tp_c, fp_c, fn_c = (sum(col[i] for i in draws) for col in columns)
        p_b, p_c = ratio(tp_b, tp_b + fp_b), ratio(tp_c, tp_c + fp_c)
        r_b, r_c = ratio(tp_b, tp_b + fn_b), ratio(tp_c, tp_c + fn_c)
        if p_b is not None and p_c is not None:
            d_precision.append(p_c - p_b)
        if r_b is not None and r_c is not None:
            d_recall.append(r_c - r_b)
    return _interval(d_precision, level), _interval(d_recall, level)


@pytest.mark.parametrize("n", [1, 2, 7, 43, 400, 3001])
def test_the_bootstrap_draws_what_rng_choices_draws(n):
    """The published intervals are those of `rng.choices` resampling: same draws, same figures, exactly."""
    rng = random.Random(n)
    kinds = ["TP", "FP", "FN", "TN", None]
    outcomes = [PairedOutcome(rng.choice(kinds), rng.choice(kinds), True, True) for _ in range(n)]
    for seed in (1, 20_260_601):
        assert bootstrap_delta_cis(outcomes, resamples=150, seed=seed) == _bootstrap_with_choices(outcomes, 150, seed)


def test_adoption_gate_reports_noise_plainly():
    gold, base, cand = _gold(LABELS), _results(BASE), _results(CAND)
    decision = adoption_gate(base, cand, gold, baseline_scores=grade_results(base, gold),
                             candidate_scores=grade_results(cand, gold))
    # baseline P 5/7, R 5/10; candidate P 9/10, R 9/10.
    # only the candidate right: 4 outdated + 1 correct = 5; only the baseline: 0
    assert decision.adopt and (decision.only_candidate_right, decision.only_baseline_right) == (5, 0)
    assert decision.mcnemar_p == 0.0625 and decision.within_noise is True
    assert decision.reason.startswith("adopt: P 0.71→0.90, R 0.50→0.90; but only 5 discordant claims")
    assert "McNemar p=0.0625" in decision.reason and decision.reason.endswith("within noise on a gold set of 20")
    assert decision.delta_recall == 0.4 and decision.paired == 20 and decision.bootstrap_resamples == 2000


def test_adoption_gate_beyond_noise_holding_precision():
    gold = _gold(["outdated"] * 30 + ["correct"] * 30)
    base = _results(["not_grounded"] + ["grounded"] * 59)                               # P 1/1, R 1/30
    cand = _results(["not_grounded"] * 28 + ["grounded"] * 32)                          # P 28/28, R 28/30
    decision = adoption_gate(base, cand, gold, baseline_scores=grade_results(base, gold),
                             candidate_scores=grade_results(cand, gold))
    # 27 discordant claims, all the candidate's: p = 2 / 2**27; P is held at 1.0, so only ΔR's CI counts
    assert decision.adopt and decision.within_noise is False and decision.mcnemar_p == 2 / 2**27
    assert decision.delta_precision == 0 and decision.delta_recall_ci[0] > 0
    assert decision.reason.startswith("adopt: P 1.00→1.00, R 0.03→0.93; 27 discordant claims")
    assert decision.reason.endswith("beyond noise on a gold set of 60")


def test_mcnemar_counts_the_outcome_p_and_r_count_not_the_three_classes():
    """A correct claim moved from grounded to source_silent (or an unsourced one from source_silent to
    grounded) moves neither P nor R: it is no discordant claim, on either side."""
    gold = _gold(["outdated"] * 10 + ["correct"] * 12)
    base = _results(["not_grounded"] * 2 + ["grounded"] * 8 + ["not_grounded"] * 2 + ["grounded"] * 10)
    # the candidate flags all 10 outdated claims, and judges 8 correct ones source_silent (TN all the same)
    cand = _results(["not_grounded"] * 10 + ["not_grounded"] * 2 + ["source_silent"] * 8 + ["grounded"] * 2)
    decision = adoption_gate(base, cand, gold, baseline_scores=grade_results(base, gold),
                             candidate_scores=grade_results(cand, gold))
    # baseline P 2/4, R 2/10; candidate P 10/12, R 10/10: the 8 outdated claims only it flags, none the other way
    assert (decision.only_candidate_right, decision.only_baseline_right) == (8, 0)
    assert decision.mcnemar_p == 2 / 2**8 and decision.adopt
    assert "discordant" not in decision.reason  # McNemar says beyond noise (counted 3-class: 8 each way, p=1)


@pytest.mark.parametrize("base, cand, reason", [
    # the baseline flags nothing: its precision is undefined, so there is no difference to call noise
    (["grounded"] * 4, ["not_grounded"] * 2 + ["grounded"] * 2, "do not adopt: baseline precision is undefined (it flagged no claim not_grounded)"),
    # the same verdicts: no difference at all, not "differences within noise"
    (["not_grounded", "grounded"] * 2, ["not_grounded", "grounded"] * 2,
     "do not adopt: P 1.00→1.00, R 1.00→1.00: P and R are equal, nothing gained: both versions got the same claims right"),
])
def test_a_gate_that_compared_nothing_says_nothing_about_noise(base, cand, reason):
    gold = _gold(["outdated", "correct", "outdated", "correct"])
    decision = adoption_gate(_results(base), _results(cand), gold, baseline_scores=grade_results(_results(base), gold),
                             candidate_scores=grade_results(_results(cand), gold))
    assert not decision.adopt and decision.reason == reason and decision.within_noise is None


def test_missing_results_count_as_wrong_in_the_pairing():
    gold = _gold(["outdated", "correct"])
    outcomes = paired_outcomes(_results(["not_grounded", None]), _results([None, "grounded"]), gold)
    # no verdict on an outdated claim is an FN; on a correct claim it has no outcome (never TN); wrong either way
    assert [(o.baseline, o.candidate, o.baseline_correct, o.candidate_correct) for o in outcomes] == [
        ("TP", "FN", True, False), (None, "TN", False, True)]


def test_a_rejection_on_a_significantly_worse_metric_is_not_noise():
    gold = _gold(["outdated"] * 30 + ["correct"] * 30)
    base = _results(["not_grounded"] * 28 + ["grounded"] * 32)                          # P 28/28, R 28/30
    cand = _results(["not_grounded"] + ["grounded"] * 59)                               # P 1/1, R 1/30
    decision = adoption_gate(base, cand, gold, baseline_scores=grade_results(base, gold),
                             candidate_scores=grade_results(cand, gold))
    assert not decision.adopt and decision.within_noise is False and decision.delta_recall_ci[1] < 0
    assert decision.reason.startswith("do not adopt: P 1.00→1.00, R 0.93→0.03")
    assert decision.reason.endswith("lies below 0: significantly worse on a gold set of 60")


def test_a_rejection_within_noise_says_the_decision_rests_on_noise():
    gold = _gold(LABELS)
    base = _results(["not_grounded"] * 6 + ["grounded"] * 4 + ["grounded"] * 10)        # P 6/6, R 6/10
    cand = _results(["not_grounded"] * 5 + ["grounded"] * 5 + ["grounded"] * 10)        # P 5/5, R 5/10
    decision = adoption_gate(base, cand, gold, baseline_scores=grade_results(base, gold),
                             candidate_scores=grade_results(cand, gold))
    assert not decision.adopt and decision.within_noise is True and decision.mcnemar_p == 1.0
    assert decision.reason == (
        "do not adopt: P 1.00→1.00, R 0.60→0.50: the candidate is worse; but only 1 discordant claim "
        "(0 only the candidate got right, 1 only the baseline; McNemar p=1) and ΔR 95% CI [-0.33, 0.00] spans 0: "
        "the decision rests on differences within noise on a gold set of 20")


def test_a_move_hidden_by_rounding_is_shown_with_more_decimals():
    # P 0.600 -> 0.596 is no hold: at two decimals both read 0.60, and "a trade-off" would look like a typo
    decided, reason = gate_rule(scores(0.6, 0.07), scores(0.596, 0.78))
    assert not decided and reason == "do not adopt: P 0.600→0.596, R 0.07→0.78: a trade-off, one rose while the other fell"
