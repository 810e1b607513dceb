"""The gate with samples: its rule on mean P and R, and the decision's stability against the model's noise."""

import pytest

from replay.core.gate import Side, adoption_gate
from replay.core.grading import grade_results
from replay.core.model_noise import (PRIOR_GRID, prior_weights, projected, rerun_flag_distribution, settle_target,
                                     side_outcomes, stability)
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


def test_prior_weights_worked_on_paper():
    """One side, K = 2: A flagged in both samples (x = 2), B in one of two (x = 1); two values of `a` weighed.
    P(x of 2 | Beta(a, a)), without the binomial factor, is B(a + x, a + 2 - x) / B(a, a):
        x = 2: (a + 1) a / ((2a + 1) 2a) = (a + 1) / (2 (2a + 1));   x = 1: a^2 / ((2a + 1) 2a) = a / (2 (2a + 1)).
    a = 1/2: 3/8 x 1/8 = 3/64;   a = 1: 1/3 x 1/6 = 1/18.
    Weights 3/64 : 1/18 = 27 : 32, so 27/59 and 32/59: one flip in four samples favours the noisier prior.
    """
    side = side_outcomes(results(claim("A", NG, NG), claim("B", NG, G)), gold(A="outdated", B="correct"))
    assert side.claims == ((True, 2.0), (False, 1.0))
    assert prior_weights(side, (0.5, 1.0)) == pytest.approx([27 / 59, 32 / 59])


def test_rerun_distribution_worked_on_paper():
    """Prior Beta(1, 1), a claim flagged in 2 of 3 samples: posterior Beta(3, 2), B(3, 2) = 1/12.
    A re-run of 3 flags it t times with probability C(3, t) B(3 + t, 5 - t) / B(3, 2):
        t = 0: 1 x B(3, 5) x 12 = 12 x 2!4!/7! = 4/35;   t = 1: 3 x B(4, 4) x 12 = 36 x 3!3!/7! = 9/35;
        t = 2: 3 x B(5, 3) x 12 = 36 x 4!2!/7! = 12/35;  t = 3: 1 x B(6, 2) x 12 = 12/42 = 10/35.
    """
    assert rerun_flag_distribution(1.0, 2.0, 3.0, 3) == pytest.approx([4 / 35, 9 / 35, 12 / 35, 10 / 35])


def test_stability_worked_on_paper():
    """Gold: A, B outdated, C correct. Baseline K = 1: A ng (TP), B g (FN), C g (TN): P 1, R 1/2.
    Candidate K = 2: A [ng, ng], B [ng, g], C [g, g]:
        slot 1: TP A B, TN C: P 1, R 1;  slot 2: TP A, FN B, TN C: P 1, R 1/2;  mean P 1, mean R 3/4.
    The rule holds (P held at 1, R lifted from 1/2 to 3/4): the rule alone adopts.

    With a prior as decided as can be (a = 1e-6: a claim whose samples agree keeps its outcome), only B
    moves: its posterior is Beta(1, 1), uniform. A re-run of the candidate's 2 samples flags B t times with
    probability 1/3 each for t = 0, 1, 2 (C(2, t) B(1 + t, 3 - t) / B(1, 1)); P stays 1, mean R is 1/2 + t/4,
    so the rule fails only when t = 0: the decision holds in 2/3 of re-runs. (Resampling B's two samples
    instead would give 3/4: a re-run also carries the doubt about B's flag rate, not only its coin. And
    resampling the claims instead would give about 12/27: B must be drawn, and A too, or the baseline's P is
    undefined.)
    Projected to T samples per side, B's evidence is T/2 flags of T: posterior Beta(T/2, T/2), and the rule
    fails when none of T fresh samples flags B: B(T/2, 3T/2) / B(T/2, T/2).
        T = 3: B(1.5, 4.5) / B(1.5, 1.5) = 7/32, stable 25/32 = 0.78;   T = 5: 0.093, stable 0.907;
        T = 10: B(5, 15) / B(5, 5) = 9! 14! / (19! 4!) = 0.0108, stable 0.989 >= 0.95: 10 samples settle it.
    """
    decided = (1e-6,)
    base, cand = side_outcomes(BASELINE, GOLD), side_outcomes(CANDIDATE, GOLD)
    assert (base.k, cand.k) == (1, 2)
    assert cand.claims == ((True, 2.0), (True, 1.0), (False, 0.0))
    assert stability(base, cand, True, grid=decided) == pytest.approx(2 / 3, abs=0.025)
    assert stability(projected(base, 3), projected(cand, 3), True, grid=decided) == pytest.approx(25 / 32, abs=0.025)
    assert stability(projected(base, 5), projected(cand, 5), True, grid=decided) == pytest.approx(0.907, abs=0.02)
    assert settle_target(base, cand, True, 0.95, grid=decided) == 10


def test_the_gate_refuses_an_unstable_adoption_and_prints_what_would_settle_it():
    """The case above through the gate, with its prior weighed from the runs: on three claims, one of
    which flipped, a noisy judge is as likely as a decided one, so A and C may flip too: the decision holds
    in well under 95% of re-runs, and no projection up to 20 samples settles it. The commands then ask for
    twice the larger K on each side (4): 3 more for the baseline, 2 more for the candidate; cost per sample
    = the run's cost / its K: 3 x 0.30 + 2 x 0.80 / 2 = 0.90 + 0.80."""
    decision = gate(BASELINE, CANDIDATE, baseline_side=Side("runs/base", 0.30),
                    candidate_side=Side("runs/cand", 0.80))
    noise = decision.model_noise
    assert not decision.adopt
    assert noise.stability is not None and noise.stability < 0.6
    assert decision.reason.startswith("do not adopt: model noise: the decision holds in ")
    assert "simulated re-runs of the judge (K 1 baseline, 2 candidate; 95% needed)" in decision.reason
    assert "the rule alone: adopt: P 1.00→1.00, R 0.50→0.75" in decision.reason
    assert noise.measured and noise.samples == {"baseline": 1, "candidate": 2} and noise.settle_samples is None
    assert noise.settle == ["judge-replay judge --mode record --add-samples 3 --run runs/base",
                            "judge-replay judge --mode record --add-samples 2 --run runs/cand"]
    assert noise.settle_cost_usd == pytest.approx(1.70)


def _agreeing(catch: int, wrong_flags: int, flipping: int = 0):
    """40 claims (c0-c19 outdated, c20-c39 correct), each giving one verdict in all 3 samples: the first
    `catch` outdated claims flagged and the first `wrong_flags` correct ones; plus `flipping` correct claims
    m0... flagged in one sample of three."""
    labels = {**{f"c{i}": "outdated" if i < 20 else "correct" for i in range(40)},
              **{f"m{i}": "correct" for i in range(flipping)}}
    claims = [claim(f"c{i}", *[NG if i < catch or 20 <= i < 20 + wrong_flags else G] * 3) for i in range(40)]
    claims += [claim(f"m{i}", NG, G, G) for i in range(flipping)]
    return results(*claims), gold(**labels)


def test_an_agreeing_claim_may_flip_as_often_as_the_runs_other_claims_say():
    # The candidate catches 2 more outdated claims than the baseline (8 against 6) and wrongly flags 1
    # fewer correct one (3 against 4), in every sample: P 0.60 -> 0.73, R 0.30 -> 0.40. When no claim of
    # either run flipped, the weight lies on the most decided priors, and the decision holds in nearly every
    # re-run. Ten correct claims flagged once in three samples on both sides (the same on each side, so
    # the rule still adopts) say the judge flips: the agreeing claims may flip too, and the decision holds
    # less often.
    (base, labels), (cand, _) = _agreeing(6, 4), _agreeing(8, 3)
    quiet = stability(side_outcomes(base, labels), side_outcomes(cand, labels), True)
    (base_noisy, noisy_labels), (cand_noisy, _) = _agreeing(6, 4, flipping=10), _agreeing(8, 3, flipping=10)
    noisy_side = side_outcomes(base_noisy, noisy_labels)
    noisy = stability(noisy_side, side_outcomes(cand_noisy, noisy_labels), True)
    quiet_a = sum(a * w for a, w in zip(PRIOR_GRID, prior_weights(side_outcomes(base, labels))))
    noisy_a = sum(a * w for a, w in zip(PRIOR_GRID, prior_weights(noisy_side)))
    assert quiet_a < 0.05 < noisy_a
    assert quiet >= 0.95 > noisy


def test_a_tie_held_by_agreeing_samples_is_not_proof():
    # The old resampling called this certain (no claim's samples differ, so nothing could move): the
    # candidate catches one more outdated claim (R 6/20 -> 7/20) and holds P at 1, with no flip anywhere. A
    # re-run flips an agreeing claim rarely, but over 120 claim-samples a side, one wrong flag on the
    # candidate's side (and none on the baseline's) is enough to break the tie on P.
    (base, labels), (cand, _) = _agreeing(6, 0), _agreeing(7, 0)
    decision = gate(base, cand, labels)
    assert decision.model_noise.stability is not None and 0.5 < decision.model_noise.stability < 0.95
    assert not decision.adopt


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
    # that the rule fails on the means, yet some re-runs would adopt (C not flagged in any fresh sample).
    cand = results(claim("A", NG, NG, NG), claim("B", G, NG, G), claim("C", NG, G, G))
    decision = gate(BASELINE, cand, candidate_side=Side(None, None))
    assert not decision.adopt
    noise = decision.model_noise
    assert noise.stability is not None and noise.stability < 0.95
    assert "a re-run might adopt" in decision.reason
    assert any("not a run folder" in line for line in noise.settle)
    assert noise.settle_cost_usd is None  # the baseline's cost is unknown too
