"""The gate with samples: its rule on mean P and R, and the decision's stability against the model's noise."""

import pytest

from replay.core.gate import Side, adoption_gate
from replay.core.grading import grade_results
from replay.core.model_noise import settle_target, side_outcomes, stability
from factories import gold_of as gold
from factories import sampled_claim as claim
from factories import sampled_results as results

G, NG = "grounded", "not_grounded"

GOLD = gold(A="outdated", B="outdated", C="correct")
BASELINE = results(claim("A", NG), claim("B", G), claim("C", G))
CANDIDATE = results(claim("A", NG, NG), claim("B", NG, G), claim("C", G, G))


def gate(baseline, candidate, gold_set=GOLD, **sides):
    return adoption_gate(baseline, candidate, gold_set, baseline_scores=grade_results(baseline, gold_set),
                         candidate_scores=grade_results(candidate, gold_set), **sides)


def test_stability_worked_on_paper():
    """Gold: A, B outdated, C correct. Baseline K = 1: A ng (TP), B g (FN), C g (TN): P 1, R 1/2.
    Candidate K = 2: A [ng, ng], B [ng, g], C [g, g]:
        slot 1: TP A B, TN C: P 1, R 1;  slot 2: TP A, FN B, TN C: P 1, R 1/2;  mean P 1, mean R 3/4.
    The rule holds (P held at 1, R lifted from 1/2 to 3/4): the rule alone adopts.
    A resample draws, in each of the candidate's 2 slots, one of B's two samples (A and C give the same
    outcome in every sample; the baseline has one sample per claim, so it never moves). A slot's R is 1
    when it drew ng, 1/2 when it drew g; P is 1 always. Mean R > 1/2 (the rule holds) unless both slots drew
    g: probability 1 - (1/2)^2 = 0.75. So the decision holds in about 75% of resamples: below 0.95, not
    adopted.
    With K' samples per side the rule fails only when all K' slots draw g: 1 - (1/2)^K'. K' = 3 gives
    0.875 (< 0.95), K' = 5 gives 0.969 (>= 0.95): 5 samples per side settle it, 4 more for the baseline and
    3 more for the candidate.
    """
    base, cand = side_outcomes(BASELINE, GOLD), side_outcomes(CANDIDATE, GOLD)
    assert (base.k, cand.k) == (1, 2)
    assert cand.fixed == (1, 0, 0) and cand.varying == ((0, 2),)  # A always TP; B TP or FN; C neither
    assert stability(base, cand, True) == pytest.approx(0.75, abs=0.03)
    assert settle_target(base, cand, True, 0.95) == 5

    decision = gate(BASELINE, CANDIDATE, baseline_side=Side("runs/base", 0.30),
                    candidate_side=Side("runs/cand", 0.80))
    noise = decision.model_noise
    assert not decision.adopt
    assert decision.reason.startswith("do not adopt: model noise: the decision holds in 7")
    assert "the rule alone: adopt: P 1.00→1.00, R 0.50→0.75" in decision.reason
    assert noise.measured and noise.samples == {"baseline": 1, "candidate": 2} and noise.settle_samples == 5
    assert noise.settle == ["judge-replay judge --mode record --add-samples 4 --run runs/base",
                            "judge-replay judge --mode record --add-samples 3 --run runs/cand"]
    # cost per sample = the run's cost / its K: 4 x 0.30 + 3 x 0.80 / 2 = 1.20 + 1.20
    assert noise.settle_cost_usd == pytest.approx(2.40)


def test_samples_that_agree_are_no_model_noise_however_few_the_claims():
    # Every claim gives the same verdict in each of its 3 samples: whichever samples a resample draws, the
    # means are the recorded ones, so the decision holds in every resample (1.0). Resampling the claims
    # instead (the gold-set bootstrap) would move it: on 3 claims, drawing A three times loses the lift.
    base = results(claim("A", NG, NG, NG), claim("B", G, G, G), claim("C", G, G, G))
    cand = results(claim("A", NG, NG, NG), claim("B", NG, NG, NG), claim("C", G, G, G))
    decision = gate(base, cand)
    assert decision.adopt and decision.model_noise.stability == 1.0
    assert "model noise: the decision holds in 100.0% of 2000 resamples" in decision.reason
    assert decision.model_noise.settle == []


def test_stability_resamples_samples_within_claims_not_claims():
    # Baseline K = 2 on 4 claims, all TP or TN in every sample except D, which is FP in one sample of two.
    # Candidate: the same but D is never flagged. Only D's draw moves anything: the candidate's P is 1 in
    # every resample; the baseline's mean P is below 1 unless both its slots drew D's TN: 1/4 of resamples.
    # The candidate lifts or holds P (R equal at 1): the rule holds in 3/4 of resamples, fails in 1/4.
    labels = gold(A="outdated", B="outdated", C="correct", D="correct")
    base = results(claim("A", NG, NG), claim("B", NG, NG), claim("C", G, G), claim("D", NG, G))
    cand = results(claim("A", NG, NG), claim("B", NG, NG), claim("C", G, G), claim("D", G, G))
    share = stability(side_outcomes(base, labels), side_outcomes(cand, labels), True)
    assert share == pytest.approx(0.75, abs=0.03)


def test_one_sample_each_side_decides_as_before_and_measures_no_model_noise():
    base = results(claim("A", NG), claim("B", G), claim("C", G))
    cand = results(claim("A", NG), claim("B", NG), claim("C", G))
    decision = gate(base, cand)
    assert decision.adopt and decision.reason.startswith("adopt: P 1.00→1.00, R 0.50→1.00")
    assert "model noise" not in decision.reason
    assert decision.model_noise.model_dump() == {
        "measured": False, "stability": None, "samples": {"baseline": 1, "candidate": 1}, "resamples": 0,
        "required": 0.95, "settle": [], "settle_samples": None, "settle_cost_usd": None}


def test_the_gate_refuses_while_any_sample_lacks_a_verdict():
    # The candidate's B has a majority verdict (ng, ng, none) but its third sample gave none.
    cand = results(claim("A", NG, NG, NG), claim("B", NG, NG, None), claim("C", G, G, G))
    decision = gate(BASELINE, cand)
    assert not decision.adopt
    assert "the candidate lacks 1 verdict among its 3 samples of 3 claims" in decision.reason
    assert decision.model_noise.measured and decision.model_noise.stability is None


def test_a_refusal_unstable_against_model_noise_says_a_rerun_might_adopt():
    # Candidate B: [g, ng, g]: mean R (1/2 + 1 + 1/2) / 3 = 2/3 > 1/2 would adopt; make it worse on C so
    # that the rule fails on the means, yet some resamples would adopt (C's FP drawn away).
    cand = results(claim("A", NG, NG, NG), claim("B", G, NG, G), claim("C", NG, G, G))
    decision = gate(BASELINE, cand, candidate_side=Side(None, None))
    assert not decision.adopt
    noise = decision.model_noise
    assert noise.stability is not None and noise.stability < 0.95
    assert "a re-run might adopt" in decision.reason
    assert any("not a run folder" in line for line in noise.settle)
    assert noise.settle_cost_usd is None  # the baseline's cost is unknown too
