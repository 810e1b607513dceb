"""The majority rule over samples, worked out by hand."""

from __future__ import annotations

import pytest

from replay.core.majority import majority_index


@pytest.mark.parametrize(("verdicts", "index"), [
    (["grounded"], 0),
    (["grounded", "not_grounded", "not_grounded"], 1),      # the most frequent, its earliest sample
    (["not_grounded", "grounded", "grounded", "not_grounded", "grounded"], 1),
    (["grounded", "not_grounded"], 0),                       # a tie: the earliest sample among the tied
    (["source_silent", "grounded", "not_grounded", "grounded", "not_grounded"], 1),  # tie of grounded/not: earliest
    ([None, "not_grounded", "grounded"], 1),                 # a missing verdict is no vote
    ([None, None, "grounded"], 2),                           # the only verdict wins over two missing ones
    ([None, None], 0),                                       # none gave a verdict: sample 1
    ([], 0),
])
def test_majority_index(verdicts, index) -> None:
    assert majority_index(verdicts) == index


def test_the_last_sample_does_not_win_a_tie() -> None:
    # a planted "majority from the last sample" would answer 3 here
    assert majority_index(["grounded", "not_grounded", "not_grounded", "grounded"]) == 0
