"""Runs judged K times: the majority rule, verdict counts and stability, and scores as the mean over samples."""

import pytest

from factories import gold_of, sampled_claim, sampled_results
from replay.core.grading import grade_results
from replay.core.majority import majority_index
from replay.core.samples import is_stable, sample_verdicts, verdict_counts
from replay.schema.results import ClaimResult, ResultRow

G, NG, SS = "grounded", "not_grounded", "source_silent"


claim, results, gold = sampled_claim, sampled_results, gold_of


# --------------------------------------------------------------------------- majority


@pytest.mark.parametrize("verdicts, index", [
    ([NG, NG, G], 0),         # the most frequent verdict; its earliest sample (not the last one)
    ([G, NG, NG], 1),         # the earliest sample giving the majority verdict
    ([NG, G], 0),             # a tie: the verdict of the earliest sample among the tied ones
    ([G, NG, NG, G], 0),      # a 2-2 tie: grounded came first
    ([None, NG, G], 1),       # a missing verdict is not a verdict to take; the tie goes to the earliest given
    ([None, G, None], 1),     # one sample gave a verdict: it is the majority, though two gave none
    ([None, None], 0),        # no sample gave one: sample 1's record (its error)
    ([SS], 0),
])
def test_majority_index_and_its_ties(verdicts, index):
    assert majority_index(verdicts) == index


def test_the_majority_is_not_the_last_sample():
    # K = 3, verdicts ng, ng, g: the majority is not_grounded (2 of 3); the last sample says grounded.
    # Graded against an outdated claim the majority is a TP, so the confusion's TP is 1, not 0.
    s = grade_results(results(claim("x", NG, NG, G)), gold(x="outdated"))
    assert (s.tp, s.fn) == (1, 0)
    assert s.claims[0].verdict == NG


# --------------------------------------------------------------------------- counts and stability


def test_a_missing_verdict_counts_as_a_verdict_of_its_own():
    # [g, g, none]: two verdicts among the samples (grounded and none), so the claim is unstable; its counts
    # keep the missing one (none: 1) rather than dropping it.
    verdicts = (G, G, None)
    assert not is_stable(verdicts)
    assert verdict_counts(verdicts) == {G: 2, NG: 0, SS: 0, "none": 1}
    assert is_stable((None, None)) and is_stable((NG, NG, NG)) and is_stable((SS,))
    assert not is_stable((G, NG))


def test_sample_verdicts_from_records_rows_and_single_results():
    three = ClaimResult.model_validate(claim("x", G, None, NG))
    assert sample_verdicts(three) == (G, None, NG)
    row = ResultRow.of(three)
    assert row.sample_verdicts == (G, None, NG) and "samples" not in (row.model_extra or {})
    assert sample_verdicts(row) == (G, None, NG)
    once = ClaimResult.model_validate(claim("y", SS))
    assert sample_verdicts(once) == (SS,) and ResultRow.of(once).sample_verdicts is None
    assert sample_verdicts(None) == (None,)


# --------------------------------------------------------------------------- scores over samples

HAND = results(claim("a1", NG, NG, G), claim("a2", NG, G, None), claim("a3", G, NG, G), claim("a4", G, G, G))
HAND_GOLD = gold(a1="outdated", a2="wrong", a3="correct", a4="correct")


def test_mean_precision_recall_with_ranges_by_hand():
    """Worked on paper. Gold: a1 outdated, a2 wrong (positives); a3, a4 correct. K = 3:

        claim  gold      s1  s2  s3
        a1     outdated  ng  ng  g
        a2     wrong     ng  g   -      (- : no verdict)
        a3     correct   g   ng  g
        a4     correct   g   g   g

    sample 1: TP a1 a2, TN a3 a4           P 2/2 = 1    R 2/2 = 1    F1 4/4 = 1    accuracy 4/4 = 1
    sample 2: TP a1, FN a2, FP a3, TN a4   P 1/2        R 1/2        F1 2/4 = .5   accuracy 2/4 = .5
    sample 3: FN a1, FN a2 (no verdict),   P 0/0 undefined  R 0/2 = 0  F1 0/2 = 0  accuracy 2/4 = .5
              TN a3 a4
    mean P over the samples that define it = (1 + .5) / 2 = .75, range [.5, 1]
    mean R = (1 + .5 + 0) / 3 = .5, range [0, 1]; mean F1 = .5, range [0, 1]; accuracy 2/3, range [.5, 1]
    majority: a1 ng (2 of 3), a2 ng (tie ng/g, ng came first), a3 g, a4 g: TP 2, TN 2, nothing wrong.
    unstable: a1, a2 (ng, g and none: three verdicts), a3 = 3; verdicts missing among samples: 1 (a2, s3).
    Were the missing verdict dropped (a2 left out of sample 3), sample 3's accuracy would be 2/3 and the
    mean accuracy (1 + .5 + 2/3) / 3 = .722, not .667.
    """
    s = grade_results(HAND, HAND_GOLD)
    assert s.samples == 3
    assert s.precision == pytest.approx(0.75) and s.precision_range == (0.5, 1.0)
    assert s.recall == pytest.approx(0.5) and s.recall_range == (0.0, 1.0)
    assert s.f1 == pytest.approx(0.5) and s.f1_range == (0.0, 1.0)
    assert s.accuracy == pytest.approx(2 / 3) and s.accuracy_range == (0.5, 1.0)
    assert (s.tp, s.fp, s.fn, s.tn, s.no_verdict) == (2, 0, 0, 2, 0)
    assert s.confusion["not_grounded"]["not_grounded"] == 2 and s.confusion["grounded"]["grounded"] == 2
    assert s.errors == []
    assert s.unstable == 3 and s.sample_no_verdict == 1
    a2 = next(c for c in s.claims if c.id == "a2")
    assert (a2.verdict, a2.stable, a2.verdicts.model_dump()) == (NG, False, {G: 1, NG: 1, SS: 0, "none": 1})
    a4 = next(c for c in s.claims if c.id == "a4")
    assert (a4.verdict, a4.stable, a4.verdicts.model_dump()) == (G, True, {G: 3, NG: 0, SS: 0, "none": 0})


def test_one_sample_scores_as_before_with_equal_ranges():
    # K = 1: a1 TP, a3 FP, a4 TN: P 1/2, R 1/1; the ranges are the values themselves, nothing is unstable.
    s = grade_results(results(claim("a1", NG), claim("a3", NG), claim("a4", G)),
                      gold(a1="outdated", a3="correct", a4="correct"))
    assert (s.samples, s.precision, s.recall, s.precision_range, s.recall_range) == (1, 0.5, 1.0, (0.5, 0.5), (1.0, 1.0))
    assert s.unstable == 0 and s.sample_no_verdict == 0 and all(c.stable for c in s.claims)


def test_a_claim_with_fewer_sample_records_has_no_verdict_in_the_others():
    # b has K = 3 records, c only one: c's samples 2 and 3 have no verdict (an FN on its outdated label).
    s = grade_results(results(claim("b", NG, NG, NG), claim("c", NG)), gold(b="outdated", c="outdated"))
    assert s.samples == 3 and s.sample_no_verdict == 2
    assert s.recall == pytest.approx((1 + 0.5 + 0.5) / 3) and s.recall_range == (0.5, 1.0)
    c = next(x for x in s.claims if x.id == "c")
    assert c.verdicts.none == 2 and not c.stable
