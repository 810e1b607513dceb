"""The bake-off's headline numbers (P/R/F1/accuracy, TP/FP/FN/TN, McNemar p, bootstrap CIs, gate decisions),
worked out by hand from the demo's gold set and the demo runs' verdicts, never pasted from the program.

How each number was derived (read this before updating it after a re-record of the demo runs):

1. The hand tables below (`POSITIVE`, `UNSOURCED`, `NOT_GROUNDED`, `SOURCE_SILENT`) were written by reading
   demo/gold-correctness-set.json and cassettes/<v>-demo/results.json claim by claim.
   `test_hand_tables_are_the_demo_data` checks them against those files: when the demo runs are
   re-recorded, that test fails first and says which set moved; rework the sums in the comments from it.
2. Binary outcome (docs "Scoring", positive = flagged `not_grounded`): TP = flagged and gold
   outdated/wrong; FP = flagged and gold correct/unsourced; FN = positive gold not flagged; TN = the rest.
   There are 43 gold claims: 14 positive (5 outdated + 9 wrong), 26 correct, 3 unsourced.
3. Accuracy counts a claim right when its verdict is the gold label's verdict (correct -> grounded,
   outdated/wrong -> not_grounded, unsourced -> source_silent).
4. McNemar: the discordant claims (right in one version only, TP or TN: the outcome P and R count) are
   listed by hand; the exact two-sided p is computed here from their counts with math.comb.
5. The bootstrap CIs are recomputed here by a separate implementation of the documented scheme
   (`replay.core.gate`: random.Random(SEED), 2000 resamples of the 43 claims with replacement, the same draws
   for both versions, percentile interval with linear interpolation) from outcome vectors built from the
   hand tables, and checked against properties any correct paired CI has.
"""

from __future__ import annotations

import json
import random
import re
from contextlib import redirect_stdout
from io import StringIO
from math import comb, floor
from pathlib import Path

import pytest

from replay.cli.main import main
from replay.core.gate import RESAMPLES, SEED
from replay.core.grading import grade_results
from replay.files.inputs import load_gold
from replay.files.results import load_results
from locations import REPO

ROOT = REPO
GOLD = ROOT / "demo" / "gold-correctness-set.json"
RUNS = {v: ROOT / "cassettes" / f"{v}-demo" for v in ("v1", "v2", "v3")}

# gold labels outdated (o) or wrong (w): the 14 positive claims
POSITIVE = {
    "models-002", "models-006", "quotas-002", "quotas-003", "ptu-002",                   # outdated (5)
    "models-008", "quotas-004", "quotas-009", "ptu-003", "regions-002", "lifecycle-002",  # wrong (9)
    "lifecycle-004", "eval-004", "eval-005",
}
UNSOURCED = {"models-010", "quotas-007", "ptu-006"}
# every other gold claim (26) is `correct`

NOT_GROUNDED = {
    # v1 flags two claims: one wrong (quotas-009), one correct (quotas-008)
    "v1": {"quotas-008", "quotas-009"},
    # v2 flags 15: 9 positives + 6 correct claims (models-004, models-005, quotas-006, quotas-008, ptu-004, eval-003)
    "v2": {"models-004", "models-005", "models-006", "models-008", "quotas-004", "quotas-006", "quotas-008",
           "quotas-009", "ptu-002", "ptu-004", "regions-002", "lifecycle-002", "lifecycle-004", "eval-003",
           "eval-005"},
    # v3 flags 15: 13 positives + quotas-008 (correct) + ptu-006 (unsourced)
    "v3": {"models-002", "models-006", "models-008", "quotas-003", "quotas-004", "quotas-008", "quotas-009",
           "ptu-002", "ptu-003", "ptu-006", "regions-002", "lifecycle-002", "lifecycle-004", "eval-004",
           "eval-005"},
}
SOURCE_SILENT = {
    "v1": {"models-010", "quotas-007", "ptu-003", "ptu-006", "eval-004"},
    "v2": {"models-010", "quotas-007", "ptu-003", "ptu-006", "eval-004"},
    "v3": {"models-010", "quotas-007"},
}
# every other claim of each run is judged `grounded`; no demo claim is without a verdict

# Hand-worked headline scores: (TP, FP, FN, TN, no verdict), P, R, F1, accuracy.
#   v2: TP = |NG ∩ POS| = 9; FP = 15 - 9 = 6; FN = 14 - 9 = 5 (models-002, quotas-002, quotas-003, ptu-003,
#       eval-004); TN = 29 - 6 = 23. P = 9/15, R = 9/14, F1 = 2·9/(2·9 + 6 + 5) = 18/29.
#       accuracy: 9 flagged positives + 20 correct claims judged grounded (26 - 6 flagged) + 3 unsourced
#       judged source_silent = 32/43.
#   v3: TP = 15 - 2 = 13; FP = 2; FN = 14 - 13 = 1 (quotas-002); TN = 29 - 2 = 27. P = 13/15, R = 13/14,
#       F1 = 26/29. accuracy: 13 + 25 correct judged grounded (26 - quotas-008) + 2 unsourced judged
#       source_silent (ptu-006 was flagged) = 40/43.
#   v1: TP = 1; FP = 1; FN = 13; TN = 28. P = 1/2, R = 1/14, F1 = 2/16. accuracy: 1 + 25 (26 - quotas-008)
#       + 3 = 29/43.
HEADLINE = {
    "v2": ((9, 6, 5, 23, 0), 9 / 15, 9 / 14, 18 / 29, 32 / 43),
    "v3": ((13, 2, 1, 27, 0), 13 / 15, 13 / 14, 26 / 29, 40 / 43),
    "v1": ((1, 1, 13, 28, 0), 1 / 2, 1 / 14, 2 / 16, 29 / 43),
}

# Discordant claims (right, TP or TN, in one version only), by hand from the tables above (no claim moves
# between grounded and source_silent only, so the 3-class count would be the same):
#   v3 vs v2: only v3 right: the 4 positives v3 flags and v2 misses (models-002, quotas-003, ptu-003,
#             eval-004) + the 5 correct claims v2 flagged and v3 judges grounded (models-004, models-005,
#             quotas-006, ptu-004, eval-003) = 9; only v2 right: ptu-006 (unsourced; v2 source_silent,
#             v3 flags it) = 1.
#   v1 vs v2: only v1 right: the 5 correct claims v2 flagged wrongly (models-004, models-005, quotas-006,
#             ptu-004, eval-003); only v2 right: the 8 positives v2 flags and v1 misses (all of v2's TP but
#             quotas-009, which v1 flags too) = 8.
DISCORDANT = {"v3": (9, 1), "v1": (5, 8)}
"""candidate -> (only the candidate right, only the baseline v2 right)"""


def exact_mcnemar(only_candidate: int, only_baseline: int) -> float:
    """Two-sided exact McNemar: twice the binomial(n, 1/2) tail at the smaller count, capped at 1."""
    n, k = only_candidate + only_baseline, min(only_candidate, only_baseline)
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)


def hand_verdict(version: str, claim_id: str) -> str:
    if claim_id in NOT_GROUNDED[version]:
        return "not_grounded"
    return "source_silent" if claim_id in SOURCE_SILENT[version] else "grounded"


def gold_ids() -> list[str]:
    """The demo gold set's claim ids in file order (the bootstrap resamples positions in this order)."""
    return [item["id"] for item in json.loads(GOLD.read_text("utf-8"))["items"]]


def test_hand_tables_are_the_demo_data():
    gold = json.loads(GOLD.read_text("utf-8"))["items"]
    assert len(gold) == 43 and len({g["id"] for g in gold}) == 43  # ids alone identify the demo's claims
    assert {g["id"] for g in gold if g["label"] in ("outdated", "wrong")} == POSITIVE
    assert {g["id"] for g in gold if g["label"] == "unsourced"} == UNSOURCED
    for version, run in RUNS.items():
        files = json.loads((run / "results.json").read_text("utf-8"))["files"]
        verdicts = {r["id"]: r.get("judge_verdict") for f in files for r in f["results"]}
        assert {i for i, v in verdicts.items() if v == "not_grounded"} == NOT_GROUNDED[version], version
        assert {i for i, v in verdicts.items() if v == "source_silent"} == SOURCE_SILENT[version], version
        assert {i for i, v in verdicts.items() if v is None} == set(), version
        assert set(verdicts) == {g["id"] for g in gold}, version


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_headline_scores_of_each_version(version):
    counts, precision, recall, f1, accuracy = HEADLINE[version]
    s = grade_results(load_results(RUNS[version]), load_gold(GOLD))
    assert (s.tp, s.fp, s.fn, s.tn, s.no_verdict) == counts
    assert s.precision == pytest.approx(precision, abs=1e-12) and s.recall == pytest.approx(recall, abs=1e-12)
    assert s.f1 == pytest.approx(f1, abs=1e-12) and s.accuracy == pytest.approx(accuracy, abs=1e-12)
    # the confusion matrix agrees with the counts: flagged column = TP + FP, positive row = TP + FN
    flagged = sum(row["not_grounded"] for row in s.confusion.values())
    assert flagged == counts[0] + counts[1] and sum(s.confusion["not_grounded"].values()) == 14
    assert sum(row["none"] for row in s.confusion.values()) == counts[4]


def test_hand_derived_accuracy_matches_the_hand_verdicts():
    # the accuracy sums in the comments, recounted claim by claim from the hand tables
    expected = {"outdated": "not_grounded", "wrong": "not_grounded", "correct": "grounded",
                "unsourced": "source_silent"}
    gold = json.loads(GOLD.read_text("utf-8"))["items"]
    for version, (_, _, _, _, accuracy) in HEADLINE.items():
        right = sum(hand_verdict(version, g["id"]) == expected[g["label"]] for g in gold)
        assert right / 43 == pytest.approx(accuracy, abs=1e-12)


@pytest.fixture(scope="module")
def bakeoff_json(tmp_path_factory):
    """`judge-replay bakeoff --json` on the demo runs' recorded results, run from a temporary folder (nothing
    is written in the repository): v2 the baseline, v3 and v1 the candidates, as pyproject.toml configures."""
    cwd = tmp_path_factory.mktemp("bakeoff")
    mp = pytest.MonkeyPatch()
    mp.chdir(cwd)
    try:
        buffer = StringIO()
        with redirect_stdout(buffer):
            code = main(["bakeoff", "--no-replay", "--json", "--out-dir", str(cwd), "--gold", str(GOLD),
                         "--baseline", str(RUNS["v2"]), "--candidate", str(RUNS["v3"]), "--candidate", str(RUNS["v1"])])
    finally:
        mp.undo()
    assert code == 0
    return json.loads(buffer.getvalue())


def _gate(out, candidate):
    (gate,) = [g for g in out["gates"] if g["candidate"].endswith(f"cassettes/{candidate}-demo")]
    return gate


@pytest.mark.parametrize("candidate", ["v3", "v1"])
def test_mcnemar_p_from_the_discordant_counts(bakeoff_json, candidate):
    only_c, only_b = DISCORDANT[candidate]
    gate = _gate(bakeoff_json, candidate)
    assert (gate["only_candidate_right"], gate["only_baseline_right"]) == (only_c, only_b)
    # v3: n = 10, k = 1: 2·(C(10,0) + C(10,1))/2^10 = 22/1024 = 0.021484375
    # v1: n = 13, k = 5: 2·(1 + 13 + 78 + 286 + 715 + 1287)/2^13 = 4760/8192 = 0.5810546875
    assert gate["mcnemar_p"] == pytest.approx(exact_mcnemar(only_c, only_b), abs=1e-15)
    assert gate["mcnemar_p"] == pytest.approx({"v3": 22 / 1024, "v1": 4760 / 8192}[candidate], abs=1e-15)


def test_gate_decisions(bakeoff_json):
    v3, v1 = _gate(bakeoff_json, "v3"), _gate(bakeoff_json, "v1")
    # v3 against v2: P 9/15 -> 13/15 and R 9/14 -> 13/14 both rise: adopt (the adoption gate)
    assert v3["adopt"] is True and v3["within_noise"] is False
    assert v3["reason"].startswith("adopt: P 0.60→0.87, R 0.64→0.93; 10 discordant claims (9 only the candidate")
    # v1 against v2: P 9/15 -> 1/2 and R 9/14 -> 1/14 both fall: do not adopt
    assert v1["adopt"] is False
    assert v1["reason"].startswith("do not adopt: P 0.60→0.50, R 0.64→0.07: the candidate is worse")
    # deltas are the hand-worked differences
    assert v3["delta_precision"] == pytest.approx(13 / 15 - 9 / 15) and v3["delta_recall"] == pytest.approx(4 / 14)
    assert v1["delta_precision"] == pytest.approx(1 / 2 - 9 / 15) and v1["delta_recall"] == pytest.approx(-8 / 14)


# --------------------------------------------------------------------------- the bootstrap, re-implemented


def _outcomes(version: str) -> list[str]:
    """Binary outcome per gold claim, in gold order, from the hand tables."""
    out = []
    for claim_id in gold_ids():
        flagged, positive = hand_verdict(version, claim_id) == "not_grounded", claim_id in POSITIVE
        out.append(("TP" if positive else "FP") if flagged else ("FN" if positive else "TN"))
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def reference_cis(baseline: str, candidate: str, seed: int = SEED) -> tuple[tuple[float, float], tuple[float, float]]:
    """The documented paired percentile bootstrap, written independently of replay.core.gate."""
    b, c = _outcomes(baseline), _outcomes(candidate)
    rng = random.Random(seed)
    n = len(b)
    d_p, d_r = [], []
    for _ in range(RESAMPLES):
        idx = rng.choices(range(n), k=n)  # one draw of claims, used for both versions (paired)
        bs, cs = [b[i] for i in idx], [c[i] for i in idx]
        tp_b, fp_b, fn_b = bs.count("TP"), bs.count("FP"), bs.count("FN")
        tp_c, fp_c, fn_c = cs.count("TP"), cs.count("FP"), cs.count("FN")
        if tp_b + fp_b and tp_c + fp_c:
            d_p.append(tp_c / (tp_c + fp_c) - tp_b / (tp_b + fp_b))
        if tp_b + fn_b and tp_c + fn_c:
            d_r.append(tp_c / (tp_c + fn_c) - tp_b / (tp_b + fn_b))
    return ((_percentile(d_p, 0.025), _percentile(d_p, 0.975)), (_percentile(d_r, 0.025), _percentile(d_r, 0.975)))


@pytest.mark.parametrize("candidate", ["v3", "v1"])
def test_bootstrap_cis_match_an_independent_implementation(bakeoff_json, candidate):
    gate = _gate(bakeoff_json, candidate)
    (p_lo, p_hi), (r_lo, r_hi) = reference_cis("v2", candidate)
    assert gate["delta_precision_ci"] == pytest.approx([p_lo, p_hi], abs=1e-8)
    assert gate["delta_recall_ci"] == pytest.approx([r_lo, r_hi], abs=1e-8)
    assert gate["bootstrap_resamples"] == RESAMPLES == 2000


@pytest.mark.parametrize("candidate", ["v3", "v1"])
def test_bootstrap_cis_have_the_properties_of_a_paired_ci(bakeoff_json, candidate):
    gate = _gate(bakeoff_json, candidate)
    for name, delta in (("delta_precision_ci", gate["delta_precision"]), ("delta_recall_ci", gate["delta_recall"])):
        lo, hi = gate[name]
        assert -1 <= lo < delta < hi <= 1, name  # the observed difference lies inside its interval
    # swapping the versions negates every resampled difference: the interval mirrors
    (p_lo, p_hi), (r_lo, r_hi) = reference_cis(candidate, "v2")
    assert gate["delta_precision_ci"] == pytest.approx([-p_hi, -p_lo], abs=1e-8)
    assert gate["delta_recall_ci"] == pytest.approx([-r_hi, -r_lo], abs=1e-8)
    # a version against itself: every paired resample gives 0
    assert reference_cis(candidate, candidate) == ((0.0, 0.0), (0.0, 0.0))


def test_v3_recall_gain_is_beyond_noise_and_v1_recall_loss_is_significant(bakeoff_json):
    # v3 gains 4 of 14 positives with no loss (only-v3-right positives 4, only-v2-right positives 0): every
    # resample's ΔR is >= 0 and most are > 0, so the 95% CI's lower end is above 0.
    assert _gate(bakeoff_json, "v3")["delta_recall_ci"][0] > 0
    # v1 loses 8 of v2's 9 true positives and gains none: the whole ΔR interval lies below 0.
    assert _gate(bakeoff_json, "v1")["delta_recall_ci"][1] < 0


# --------------------------------------------------------------------------- the README shows these numbers


def _readme_bakeoff_block() -> str:
    text = (ROOT / "README.md").read_text("utf-8")
    section = text.split("## What the bake-off prints", 1)[1]
    return section.split("```text", 1)[1].split("```", 1)[0]


def test_readme_bakeoff_output_shows_the_hand_worked_numbers():
    block = _readme_bakeoff_block()
    rows = {}
    for line in block.splitlines():
        if m := re.match(r"│ (v\d) \((?:baseline|candidate)\)", line):
            rows[m.group(1)] = [cell.strip() for cell in line.strip("│").split("│")]
    assert set(rows) == {"v1", "v2", "v3"}
    for version, ((tp, fp, fn, tn, none), p, r, f1, acc) in HEADLINE.items():
        # columns: prompt, run, model, P, R, F1, accuracy, TP, FP, FN, TN, no verdict, unverified quotes
        assert rows[version][3:12] == [f"{p:.3f}", f"{r:.3f}", f"{f1:.3f}", f"{acc:.3f}", str(tp), str(fp), str(fn),
                                       str(tn), str(none)], version
    (p_lo, p_hi), (r_lo, r_hi) = reference_cis("v2", "v3")
    assert (f"adopt: P 0.60→0.87, R 0.64→0.93; 10 discordant claims (9 only the candidate got right, 1 only the "
            f"baseline; McNemar p={exact_mcnemar(9, 1):.3g}), ΔP 95% CI [{p_lo:.2f}, {p_hi:.2f}], "
            f"ΔR 95% CI [{r_lo:.2f}, {r_hi:.2f}]: beyond noise on a gold set of 43") in block
    (_, _), (r_lo, r_hi) = reference_cis("v2", "v1")
    assert (f"do not adopt: P 0.60→0.50, R 0.64→0.07: the candidate is worse; ΔR 95% CI [{r_lo:.2f}, {r_hi:.2f}] "
            f"lies below 0: significantly worse on a gold set of 43") in block
    assert "gate: ADOPT" in block and "gate: DO NOT ADOPT" in block
