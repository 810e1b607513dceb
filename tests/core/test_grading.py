"""Grading against the gold set: a hand-computed case, pairing, breakdowns, adjudication page regions."""

from factories import write_run
from replay.analysis.adjudication import adjudicate, page_region, run_claims
from replay.core.grading import grade_results
from replay.schema.claims import Claim
from replay.schema.gold import GoldSet
from replay.schema.results import ResultsFile
from replay.runs.folder import Run


def _result(id_, verdict, **extra):
    return {"id": id_, "judge_verdict": verdict, **extra}


GOLD = GoldSet.model_validate({"name": "hand", "items": [
    {"file": "a.md", "id": "a-1", "label": "outdated", "mode": "FN2"},
    {"file": "a.md", "id": "a-2", "label": "wrong"},
    {"file": "a.md", "id": "a-3", "label": "correct"},
    {"file": "a.md", "id": "a-4", "label": "correct", "mode": "FP3", "note": "theoretical vs benchmark"},
    {"file": "a.md", "id": "a-5", "label": "unsourced"},
    {"file": "a.md", "id": "a-6", "label": "unsourced"},
    {"file": "b.md", "id": "b-1", "label": "outdated", "mode": "FN3"},
    {"file": "b.md", "id": "b-2", "label": "wrong"},
    {"file": "b.md", "id": "b-3", "label": "outdated"},
    {"file": "b.md", "id": "b-4", "label": "correct"},
]})

RESULTS = ResultsFile.model_validate({"files": [
    {"file": "a.md", "results": [
        _result("a-1", "not_grounded", claim_type="version"),          # TP, right
        _result("a-2", "grounded", claim_type="tpm"),                  # FN, wrong
        _result("a-3", "grounded", claim_type="version"),              # TN, right
        _result("a-4", "not_grounded", claim_type="sku", quote_verified=False),  # FP, wrong
        _result("a-5", "source_silent", claim_type="region"),          # TN, right
        _result("a-6", "not_grounded", claim_type="region"),           # FP, wrong
    ]},
    {"file": "b.md", "results": [
        _result("b-1", "source_silent"),                               # FN, wrong
        _result("b-2", None, error="invalid verdict 'maybe'"),         # FN (no verdict), wrong
        # b-3 has no result at all: FN (no verdict), wrong
        _result("b-4", "source_silent"),                               # TN, wrong (3-class)
        _result("b-9", "grounded", quote_verified=False),              # no gold item
    ]},
]})

CLAIMS = {
    ("b.md", "b-1"): Claim(id="b-1", claim="Feature X is GA.", claim_type="status"),
    ("b.md", "b-2"): Claim(id="b-2", claim="Feature Y is in preview.", claim_type="status"),
    ("b.md", "b-3"): Claim(id="b-3", claim="X maps to Y.", claim_type="taxonomy"),
    ("b.md", "b-4"): Claim(id="b-4", claim="Z maps to W.", claim_type="taxonomy"),
}


def test_hand_computed_scores():
    # By hand: TP = {a-1} = 1; FP = {a-4, a-6} = 2; FN = {a-2, b-1, b-2, b-3} = 4; TN = {a-3, a-5, b-4} = 3;
    # no verdict = {b-2 (error), b-3 (no result)} = 2, both on outdated/wrong claims, so both are FN.
    # P = 1/(1+2) = 1/3; R = 1/(1+4) = 1/5; F1 = 2*1/(2*1+2+4) = 1/4 (= 2PR/(P+R) = (2/15)/(8/15));
    # accuracy: 3-class right = {a-1, a-3, a-5} = 3 of 10 graded gold items = 3/10.
    s = grade_results(RESULTS, GOLD, CLAIMS)
    assert (s.tp, s.fp, s.fn, s.tn, s.no_verdict, s.graded) == (1, 2, 4, 3, 2, 10)
    assert s.precision == 1 / 3 and s.recall == 1 / 5 and s.f1 == 1 / 4 and s.accuracy == 3 / 10
    assert s.confusion == {
        "grounded": {"grounded": 1, "not_grounded": 1, "source_silent": 1, "none": 0},        # a-3, a-4, b-4
        "not_grounded": {"grounded": 1, "not_grounded": 1, "source_silent": 1, "none": 2},    # a-2, a-1, b-1, b-2 b-3
        "source_silent": {"grounded": 0, "not_grounded": 1, "source_silent": 1, "none": 0},   # a-6, a-5
    }
    assert s.quote_unverified == 2  # a-4 and b-9 (every result counts, graded or not)
    assert s.unmatched_gold == [{"file": "b.md", "id": "b-3"}]
    assert s.unmatched_results == [{"file": "b.md", "id": "b-9"}]


def test_errors_list_every_disagreement_and_no_verdict():
    s = grade_results(RESULTS, GOLD, CLAIMS)
    kinds = {(e.id, e.kind, e.outcome) for e in s.errors}
    assert kinds == {("a-2", "FN", "FN"), ("a-4", "FP", "FP"), ("a-6", "FP", "FP"), ("b-1", "FN", "FN"),
                     ("b-2", "no_verdict", "FN"), ("b-3", "no_verdict", "FN"), ("b-4", "mismatch", "TN")}
    by_id = {e.id: e for e in s.errors}
    assert by_id["b-2"].judge_error == "invalid verdict 'maybe'"
    assert by_id["b-3"].judge_error == "no result for this claim" and by_id["b-3"].claim == "X maps to Y."
    assert by_id["a-4"].mode == "FP3" and by_id["a-4"].note == "theoretical vs benchmark"
    assert by_id["a-4"].quote_verified is False and by_id["a-4"].expected == "grounded"


def test_breakdowns_by_claim_type_and_mode():
    s = grade_results(RESULTS, GOLD, CLAIMS)
    t = s.by_claim_type
    assert sorted(t) == ["region", "sku", "status", "taxonomy", "tpm", "version"]
    assert t["version"] == {"graded": 2, "tp": 1, "fp": 0, "fn": 0, "tn": 1, "no_verdict": 0,
                            "precision": 1.0, "recall": 1.0, "f1": 1.0, "accuracy": 1.0}
    # region: a-5 TN (right), a-6 FP (wrong): P = 0/1, R undefined, F1 = 0/(0+1+0) = 0, accuracy 1/2
    assert t["region"] == {"graded": 2, "tp": 0, "fp": 1, "fn": 0, "tn": 1, "no_verdict": 0,
                           "precision": 0.0, "recall": None, "f1": 0.0, "accuracy": 0.5}
    assert t["taxonomy"]["fn"] == 1 and t["taxonomy"]["tn"] == 1 and t["taxonomy"]["precision"] is None
    m = s.by_mode
    assert sorted(m) == ["(none)", "FN2", "FN3", "FP3"]
    # no mode: a-2 FN, a-3 TN, a-5 TN, a-6 FP, b-2 FN, b-3 FN, b-4 TN -> accuracy = {a-3, a-5} = 2/7
    assert (m["(none)"]["tp"], m["(none)"]["fp"], m["(none)"]["fn"], m["(none)"]["tn"]) == (0, 1, 3, 3)
    assert m["(none)"]["accuracy"] == 2 / 7 and m["FN2"]["recall"] == 1.0


def test_undefined_ratios_are_none():
    gold = GoldSet.model_validate({"items": [{"file": "a.md", "id": "1", "label": "correct"}]})
    results = ResultsFile.model_validate({"files": [{"file": "a.md", "results": [_result("1", "grounded")]}]})
    s = grade_results(results, gold)
    assert (s.precision, s.recall, s.f1, s.accuracy) == (None, None, None, 1.0)
    empty = grade_results(ResultsFile(files=[]), GoldSet(items=[]))
    assert (empty.precision, empty.recall, empty.f1, empty.accuracy, empty.graded) == (None, None, None, None, 0)


PAGE = "# Models\n\nintro\n\n| model | context |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n| gpt-4o | 128,000 |\n\nfooter\n"
URL = "https://learn.microsoft.com/en-us/azure/models"


def test_page_region_around_quote_then_values():
    region, note, found = page_region(PAGE, "| gpt-4.1 | 1,047,576 |", "GPT-4.1 has 200k+ context")
    assert found is True and note == "around the quote (line 7)"
    assert region.splitlines() == [
        "     4 |",
        "     5 | | model | context |",
        "     6 | |---|---|",
        ">    7 | | gpt-4.1 | 1,047,576 |",
        "     8 | | gpt-4o | 128,000 |",
        "     9 |",
        "    10 | footer",
    ]
    # quote not in the page: centred on the claim's value tokens; 128k matches 128,000 as a number
    region, note, found = page_region(PAGE, "gpt-4o: 128k", "GPT-4o offers 128k context")
    assert found is False and note.startswith("the quote is not in the recorded page; around the claim's values")
    assert [line for line in region.splitlines() if line.startswith(">")] == [">    8 | | gpt-4o | 128,000 |"]
    region, note, found = page_region(PAGE, "", "GPT-5 offers 400k context")
    assert region is None and found is None and "do not occur" in note


def test_a_page_is_tokenised_once_for_every_claim_resting_on_it():
    from replay.analysis.adjudication import _line_values

    page = PAGE + "\n".join(f"| model-{i} | {i * 1000:,} |" for i in range(200))  # a page no other test uses
    _line_values.cache_clear()
    for claim in ("GPT-4o offers 128k context", "model-7 takes 7,000", "GPT-5 offers 400k context"):
        page_region(page, "not in the page", claim)
    info = _line_values.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    region, _, _ = page_region(page, "not in the page", "model-7 takes 7,000")  # the same anchor as without it
    assert [line for line in region.splitlines() if line.startswith(">")] == [">   18 | | model-7 | 7,000 |"]


def test_adjudication_reads_the_run_cassettes(tmp_path):
    run = write_run(tmp_path / "run", results=[{"file": "a.md", "results": [
        _result("1", "grounded", evidence_url=URL, evidence_quote="| gpt-4.1 | 1,047,576 |", reason="states it",
                claim="GPT-4.1 offers a 200k+ token context window.", claim_type="version"),
        _result("2", "grounded", evidence_url="https://learn.microsoft.com/azure/gone", evidence_quote="x"),
        _result("3", "grounded", evidence_url="https://learn.microsoft.com/azure/never", evidence_quote="x"),
    ]}], pages={"a.md": {URL: PAGE, "https://learn.microsoft.com/azure/gone": None}})
    gold = GoldSet.model_validate({"items": [
        {"file": "a.md", "id": i, "label": "outdated", "mode": "FN2"} for i in ("1", "2", "3")]})
    r = Run(run)
    s = adjudicate(grade_results(r.results, gold, run_claims(r)), r)
    e1, e2, e3 = s.errors
    assert e1.quote_in_page is True and e1.page_url == URL and ">    7 | | gpt-4.1 | 1,047,576 |" in e1.page_region
    assert e1.claim == "GPT-4.1 offers a 200k+ token context window." and e1.reason == "states it"
    assert e2.page_region is None and e2.page_note == "the page could not be retrieved when the run was recorded"
    assert e3.page_region is None and e3.page_note == "run run recorded no fetch of this page"


def test_counts_confusion_and_accuracy_agree_with_claims_without_a_verdict():
    # c-2 and c-3 have no verdict on negative gold claims: in no binary cell, in the "none" column
    gold = GoldSet.model_validate({"items": [
        {"file": "c.md", "id": "c-1", "label": "correct"}, {"file": "c.md", "id": "c-2", "label": "correct"},
        {"file": "c.md", "id": "c-3", "label": "unsourced"}, {"file": "c.md", "id": "c-4", "label": "wrong"}]})
    results = ResultsFile.model_validate({"files": [{"file": "c.md", "error": "API error 500", "results": [
        _result("c-1", "grounded"), _result("c-2", None, error="API error 500"),
        _result("c-4", None, error="API error 500")]}]})
    s = grade_results(results, gold)
    # by hand: c-1 TN (right); c-2, c-3 no verdict, no outcome; c-4 no verdict -> FN. accuracy 1/4
    assert (s.tp, s.fp, s.fn, s.tn, s.no_verdict, s.graded) == (0, 0, 1, 1, 3, 4)
    assert s.accuracy == 1 / 4 and s.recall == 0.0 and s.precision is None
    assert sum(row["none"] for row in s.confusion.values()) == s.no_verdict
    assert sum(sum(row.values()) for row in s.confusion.values()) == s.graded
    assert sum(s.confusion[v][v] for v in s.confusion) / s.graded == s.accuracy
    by_id = {e.id: e for e in s.errors}
    assert by_id["c-3"].judge_error == "no result for this claim (API error 500)" and by_id["c-3"].outcome is None
    assert by_id["c-4"].outcome == "FN" and by_id["c-2"].judge_error == "API error 500"
