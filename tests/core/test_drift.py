"""Drift statuses (pure core) on the real before/after Learn pages and on small synthetic pages."""

import json
from pathlib import Path

import pytest

from factories import write_run
from replay.cassettes.interaction import Interaction
from replay.cassettes.cassette import load_cassette, save_cassette
from replay.core.drift import ClaimEvidence, claim_drift, drift_report, is_at_risk
from replay.core.page_lines import quote_in
from replay.urls import normalise_learn_url
from replay.prompts import load_prompt
from replay.schema.claims import ClaimsBatch
from replay.schema.manifest import RunManifest
from replay.schema.pages import PageVersion
from replay.runs.folder import Run
from replay.sim.learn import load_page
from replay.core.text import sha256_text
from locations import DATA

LEARN_PAGES = DATA / "learn-pages"
CHANGES = json.loads((LEARN_PAGES / "changes.json").read_text("utf-8"))  # fails loudly when the folder is absent

# Claims asserting the BEFORE value of changes #0-#12, #15, #19, #20 (numbers, dates, regions, removed rows).
CLAIMS = {
    0: "gpt-4.1-nano has a context window of 1,047,576 tokens.",
    1: "gpt-4.1-mini has a context window of 1,047,576 tokens.",
    2: "gpt-4.1 is available in East US2 (Global Standard).",
    6: "gpt-4 1106-Preview accepts 128,000 input tokens.",
    7: "gpt-35-turbo 0613 has a 4,096 token context window.",
    8: "text-embedding-ada-002 version 2 retires no earlier than October 3, 2025.",
    9: "gpt-4o-mini 2024-07-18 retires no earlier than July 18, 2025.",
    10: "gpt-4o 2024-05-13 retires no earlier than May 20, 2025.",
    11: "gpt-35-turbo 0125 retires no earlier than May 31, 2025.",
    12: "dall-e-3 retires no earlier than April 30, 2025.",
    15: "gpt-4 1106-preview is upgraded to turbo-2024-04-09 from January 27, 2025.",
    19: "A resource allows at most 5 fine-tuned model deployments.",
    20: "A resource holds at most 50 files for fine-tuning.",
}


def page(snapshot: str, file: str) -> PageVersion:
    path = LEARN_PAGES / snapshot / file
    loaded = load_page(path)
    return PageVersion(loaded.url, sha256_text(loaded.body), loaded.body)


def evidence(n: int, claim: str, quote: str, verdict: str = "grounded") -> ClaimEvidence:
    return ClaimEvidence(file="docs/x.md", id=f"c{n}", claim=claim, evidence_url=CHANGES[n]["page_url"],
                         verdict=verdict, quote=quote)


def drift_of(n: int, claim: str, quote: str, verdict: str = "grounded"):
    file = CHANGES[n]["file"]
    return claim_drift(evidence(n, claim, quote, verdict), page("before", file), page("after", file))


@pytest.mark.parametrize("n", [0, 1, 8, 9, 10, 11, 12, 19, 20])
def test_changed_number_or_date_is_value_changed_with_the_row_before_and_after(n):
    change = CHANGES[n]
    d = drift_of(n, CLAIMS[n], change["before"].strip())
    assert d.status == "value-changed"
    assert change["before"].strip() in d.old
    # the counterpart row, also when its key was reworded (#12: dall-e-3 -> dalle-3; #19: Max -> Maximum)
    assert change["after"].strip() in d.new


def test_region_list_replaced_by_a_pointer_is_at_risk():
    d = drift_of(2, CLAIMS[2], CHANGES[2]["before"])
    assert d.status == "value-changed" and "East US2" in d.old and "See the [models table]" in d.new


@pytest.mark.parametrize("n", [6, 7, 15])  # 15: the gpt-4 1106-preview row, not the gpt-4 turbo row left
def test_removed_row_is_quote_gone_not_matched_to_another_models_row(n):
    d = drift_of(n, CLAIMS[n], CHANGES[n]["before"].strip())
    assert d.status == "quote-gone"
    assert d.new is None and CHANGES[n]["before"].strip() in d.old


def test_unchanged_facts_on_a_changed_page_keep_quote_intact():
    models = CHANGES[0]["file"]
    same_row = claim_drift(
        ClaimEvidence("docs/x.md", "out", "gpt-4.1 has a max output of 32,768 tokens.", CHANGES[0]["page_url"],
                      "grounded", "| 32,768 | May 31, 2024 |"),
        page("before", models), page("after", models))
    assert same_row.status == "changed-quote-intact"
    retirements = CHANGES[8]["file"]
    o1 = claim_drift(
        ClaimEvidence("docs/x.md", "o1", "o1 2024-12-17 retires no earlier than December 17, 2025.",
                      CHANGES[8]["page_url"], "grounded", "| `o1` | 2024-12-17 | No earlier than December 17, 2025 |"),
        page("before", retirements), page("after", retirements))
    assert o1.status == "changed-quote-intact"  # re-padded table cells are the same quote


def test_edit_in_another_column_of_the_row_does_not_change_the_claims_value():
    old = "# P\n\n| model | context | output |\n|---|---|---|\n| `gpt-x` | 1,000 | 2,000 |\n"
    new = old.replace("2,000", "3,000")
    before, after = PageVersion("u", sha256_text(old), old), PageVersion("u", sha256_text(new), new)
    context = ClaimEvidence("f", "a", "gpt-x has a context of 1,000 tokens.", "https://learn.microsoft.com/p",
                            "grounded", "`gpt-x` | 1,000")
    output = ClaimEvidence("f", "b", "gpt-x outputs 2,000 tokens.", "https://learn.microsoft.com/p",
                           "grounded", "`gpt-x` | 1,000 | 2,000")
    assert claim_drift(context, before, after).status == "changed-quote-intact"
    d = claim_drift(output, before, after)
    assert (d.status, d.old, d.new) == ("value-changed", "| `gpt-x` | 1,000 | 2,000 |", "| `gpt-x` | 1,000 | 3,000 |")


def test_unchanged_page_and_gone_page():
    file = CHANGES[8]["file"]
    item = evidence(8, CLAIMS[8], CHANGES[8]["before"])
    assert claim_drift(item, page("before", file), page("before", file)).status == "unchanged"
    missing = PageVersion(CHANGES[8]["page_url"], None, None, "not-found")
    gone = claim_drift(item, page("before", file), missing)
    assert gone.status == "page-gone" and gone.new_sha256 is None
    # absent from the later run (its judge read other pages): nothing is known about the page, so not at risk
    # and not safe either
    absent = claim_drift(item, page("before", file), None)
    assert absent.status == "unchecked" and "the later run did not read this page" in absent.note
    never = claim_drift(item, missing, missing)  # nothing was ever readable: no page, not "unchanged"
    assert (never.status, never.note) == ("no-page", "Learn had no page there (it could not be retrieved), then and now")


def test_a_refused_url_has_no_page_and_an_outage_is_not_a_gone_page():
    file = CHANGES[8]["file"]
    item = evidence(8, CLAIMS[8], CHANGES[8]["before"])
    url = "https://azure.microsoft.com/en-us/pricing/details/cognitive-services/openai-service/"
    refused = PageVersion(url, None, None, "refused")
    d = claim_drift(ClaimEvidence("f", "a", "Hourly PTU pricing is $1.", url, "source_silent", ""), refused, refused)
    assert d.status == "no-page" and not is_at_risk(d) and "refused the URL as outside Microsoft Learn" in (d.note or "")
    failed = PageVersion(CHANGES[8]["page_url"], None, None, "failed")
    outage = claim_drift(item, page("before", file), failed)
    assert outage.status == "unchecked" and not is_at_risk(outage) and "says nothing about the page" in (outage.note or "")
    moved = claim_drift(item, page("before", file), PageVersion(CHANGES[8]["page_url"], None, None, "refused"))
    assert moved.status == "page-gone" and "now refuses" in (moved.note or "")


def test_source_silent_claim_whose_value_now_appears_is_at_risk():
    item = ClaimEvidence("docs/x.md", "router", "model-router 2025-05-19 offers a 200,000 token context window.",
                         CHANGES[4]["page_url"], "source_silent", "")
    d = claim_drift(item, page("before", CHANGES[4]["file"]), page("after", CHANGES[4]["file"]))
    assert d.status == "value-changed" and d.old is None and "`model-router` (2025-05-19)" in d.new
    still_silent = ClaimEvidence("docs/x.md", "z", "zeta-9 offers 7,777 tokens.", CHANGES[4]["page_url"],
                                 "source_silent", "")
    assert claim_drift(still_silent, page("before", CHANGES[4]["file"]),
                       page("after", CHANGES[4]["file"])).status == "changed-quote-intact"


def _runs(tmp_path: Path) -> tuple[Run, Run]:
    models, retirements = CHANGES[0], CHANGES[8]
    results = [
        {"file": "docs/models.md", "results": [
            {"id": "m-1", "judge_verdict": "grounded", "evidence_url": models["page_url"],
             "evidence_quote": models["before"].strip()},
            {"id": "m-2", "judge_verdict": "grounded", "evidence_url": models["page_url"],
             "evidence_quote": "| 32,768 | May 31, 2024 |"}]},
        {"file": "docs/retire.md", "results": [
            {"id": "r-1", "judge_verdict": "grounded", "evidence_url": retirements["page_url"],
             "evidence_quote": "| `o1` | 2024-12-17 | No earlier than December 17, 2025 |"}]},
    ]
    runs = []
    for name, snapshot in (("v3-old", "before"), ("v3-new", "after")):
        pages = {"docs/models.md": {models["page_url"]: page(snapshot, models["file"]).text},
                 "docs/retire.md": {retirements["page_url"]: page(snapshot, retirements["file"]).text}}
        runs.append(Run(write_run(tmp_path / name, results=results, pages=pages)))
    claims = {"docs/models.md": [
        {"id": "m-1", "claim": CLAIMS[0], "claim_type": "tpm", "evidence_url": models["page_url"]},
        {"id": "m-2", "claim": "gpt-4.1 has a max output of 32,768 tokens.", "claim_type": "tpm"}],
        "docs/retire.md": [{"id": "r-1", "claim": "o1 2024-12-17 retires no earlier than December 17, 2025.",
                            "claim_type": "status"}]}
    for file, rows in claims.items():
        batch = ClaimsBatch.model_validate({"file": file, "claims": rows})
        model_call = Interaction(method="POST", uri="https://api.anthropic.com/v1/messages", status=200,
                                 request_body=json.dumps({"model": "m", "system": load_prompt("v3").render(batch),
                                                          "messages": [{"role": "user", "content": "Judge."}]}),
                                 response_body="{}")
        cassette = runs[0].cassette_path(file)
        save_cassette(cassette, [model_call, *load_cassette(cassette)])
    return Run(runs[0].path), runs[1]


def test_report_names_only_the_claims_at_risk_and_the_files_to_re_record(tmp_path):
    old, new = _runs(tmp_path)
    assert old.claims("docs/models.md")[0].claim == CLAIMS[0]  # read back from the rendered prompt
    from replay.analysis.drift_inputs import drift_items

    report = drift_report(run="cassettes/v3-old", against="cassettes/v3-new", items=drift_items(old, {}),
                          old_pages=old.pages, new_pages=new.pages, recorded_as=old.manifest,
                          claims_paths={"docs/models.md": "claims/models.json", "docs/retire.md": "claims/retire.json"},
                          rerecord_run="cassettes/v3-old-20261130")
    status = {c.id: c.status for c in report.claims}
    assert status == {"m-1": "value-changed", "m-2": "changed-quote-intact", "r-1": "changed-quote-intact"}
    assert report.at_risk == [{"file": "docs/models.md", "id": "m-1"}]
    assert report.rerecord_commands[0] == ("judge-replay judge --prompt v3 --claims claims/models.json "
                                           "--run cassettes/v3-old-20261130 --mode record --model claude-test --max-tokens 8192")  # as recorded
    assert {p.state for p in report.pages} == {"changed"} and all(p.old_sha256 != p.new_sha256 for p in report.pages)


def test_claim_without_a_cited_page_is_not_at_risk():
    d = claim_drift(ClaimEvidence("f", "a", "X is 5.", None, "source_silent", ""), None, None)
    assert d.status == "no-page" and d.note == "the verdict cites no page" and not is_at_risk(d)


def test_removed_row_with_a_common_value_is_quote_gone_not_an_unrelated_lines_change():
    # "1 K" for Azure for Students: `1` is on many lines; the row that held it (and the quote) was removed
    c = CHANGES[28]
    d = drift_of(28, "Azure for Students subscriptions get 1 K TPM for all models.", c["before"])
    assert d.status == "quote-gone" and d.old == c["before"] and d.new is None


def test_unquoted_claim_whose_fact_is_now_on_a_new_row_is_at_risk_although_its_value_was_on_the_page():
    # `2` was on the old quotas page (DALL-E rows); the Sora 2 row that now states the claim is new
    c = CHANGES[26]
    d = drift_of(26, "The default Sora 2 quota is 2 job requests per minute.", "", verdict="source_silent")
    assert d.status == "value-changed" and d.old is None and d.new == c["after"].strip()


@pytest.mark.parametrize("n, claim, quote", [
    (4, "model-router (2025-05-19) has a context window of 200,000 tokens.",
     "|  Model ID  | Description | Context Window | Max Output Tokens | Training Data (up to)  |"),
    (42, "sora-2 2025-10-15 retires no earlier than 2026-04-30.",
     "| `computer-use-preview` | 2025-03-11 | Preview | n/a | No earlier than 2026-04-14 |  |"),
])
def test_a_not_grounded_claim_whose_fact_a_new_row_now_states_is_at_risk_whatever_line_it_quotes(n, claim, quote):
    # a judge quotes the closest line for a claim it does not ground; the row added since states the
    # claim, and the verdict flips to grounded on the later page. It was "changed-quote-intact" (its quote
    # is still there), not at risk: the check that the page may now ground ran only without a quote
    assert quote_in(quote, page("before", CHANGES[n]["file"]).text)
    d = drift_of(n, claim, quote, verdict="not_grounded")
    assert is_at_risk(d) and d.status == "value-changed" and d.old is None, d
    assert d.new and d.new.strip() in CHANGES[n]["after"] and d.note == (
        "the page now carries the claim's value: a not_grounded verdict may now ground")
    assert drift_of(n, claim, quote, verdict="grounded").status == "changed-quote-intact"  # a quote it rests on


@pytest.mark.parametrize("file, claim, quote", [
    ("foundry-openai-quotas-limits.md", "A resource can run 100 training jobs in total.",
     "| Total number of training jobs per resource | 100 |"),  # now `100.`
    ("foundry-openai-quotas-limits.md", "The message character limit is 1048576.",
     "| Message character limit | 1048576 |"),  # now `1,048,576.`
    ("azure-openai-models.md", "gpt-4.1 has a context window of 1,047,576 tokens.",
     "| `gpt-4.1` (2025-04-14)   | - Text & image input <br> - Text output <br> - Chat completions API <br>- Responses "
     "API <br> - Streaming <br> - Function calling <br> Structured outputs (chat completions)   | 1,047,576 <br> 128,000 "
     "(provisioned managed deployments) | 32,768 | May 31, 2024 |"),  # the values now list items
])
def test_a_quote_whose_line_changed_only_in_punctuation_is_not_at_risk(file, claim, quote):
    # the real pages' edits add a full stop to a cell, thousands separators, list markers: the line says the
    # same words and values in the same order, and the judge still grounds the claim on it (it was quote-gone)
    before, after = page("before", file), page("after", file)
    assert quote in before.text and quote not in after.text
    d = claim_drift(ClaimEvidence("docs/x.md", "x", claim, before.url, "grounded", quote), before, after)
    assert d.status == "changed-quote-intact" and not is_at_risk(d), d
    assert d.note == "the quote's line changed only in punctuation or formatting: the same words and values"
    assert d.old == quote.strip() and d.new and d.new != d.old


def test_a_quote_whose_values_swapped_cells_is_still_gone():
    # the same tokens in another order are another statement: context window and output swapped
    old = "# Models\n\n| model | context | output |\n|---|---|---|\n| m-1 | 128,000 | 32,768 |\n"
    new = old.replace("| 128,000 | 32,768 |", "| 32,768 | 128,000 |")
    item = ClaimEvidence("docs/x.md", "x", "m-1 has a context window of 128,000 tokens.", "https://learn.microsoft.com/m",
                         "grounded", "| m-1 | 128,000 | 32,768 |")
    d = claim_drift(item, PageVersion(item.evidence_url, sha256_text(old), old),
                    PageVersion(item.evidence_url, sha256_text(new), new))
    assert is_at_risk(d), d


def test_values_behind_html_line_breaks_count_as_on_the_line():
    # the gpt-5.2 row states its context window as `400,000<br><br>Input: ...`
    d = drift_of(34, "gpt-5.2 2025-12-11 has a context window of 400,000 tokens.", "", verdict="source_silent")
    assert d.status == "value-changed" and d.new.startswith("| `gpt-5.2` (2025-12-11) |")


RETIREMENTS = "foundry-openai-model-retirements.md"
"""The real retirements page whose rows gained backticks (`Generally Available`) between the snapshots."""


@pytest.mark.parametrize("claim, quote", [
    ("o1 2024-12-17 retires on 2026-07-15.", "| `o1` | 2024-12-17 | Generally Available | 2025-12-17 | 2026-07-15 | `o3` |"),
    ("o3-pro 2025-06-10 is Generally Available.", "o3-pro | 2025-06-10 | **Generally Available**"),
])
def test_a_line_changed_only_in_markdown_formatting_is_not_at_risk(claim, quote):
    before, after = page("before", RETIREMENTS), page("after", RETIREMENTS)
    row = next(line for line in before.text.splitlines() if quote.split("|")[1].strip(" `") in line)
    assert row in after.text.replace("`Generally Available`", "Generally Available")  # formatting moved, no value
    assert row not in after.text and quote not in after.text
    d = claim_drift(ClaimEvidence("docs/x.md", "c", claim, before.url, "grounded", quote), before, after)
    assert d.status == "changed-quote-intact" and "formatting" in (d.note or "")
    report = drift_report(run="a", against="b", items=[ClaimEvidence("docs/x.md", "c", claim, before.url, "grounded",
                                                                      quote)],
                          old_pages={normalise_learn_url(before.url): before},
                          new_pages={normalise_learn_url(after.url): after},
                          recorded_as=RunManifest(run_id="a", prompt="v3", prompt_sha256="0" * 64, model="m",
                                                  recorded_at="2026-01-01T00:00:00Z"),
                          claims_paths={}, rerecord_run="a-2")
    assert report.at_risk == [] and report.rerecord_commands == []


def test_formatting_free_drops_backticks_emphasis_padding_and_keeps_words():
    from replay.core.page_lines import formatting_free

    assert formatting_free("|  `gpt_4o`  | **Generally  Available** | _new_ |") == "|gpt_4o|Generally Available|new|"
    assert formatting_free("a ~~b~~ *c*") == "a b c"
    # a real value change is still one
    assert formatting_free("| `o1` | 2026-07-15 |") != formatting_free("| `o1` | 2026-07-16 |")


def test_each_page_version_is_split_and_tokenised_once_whatever_the_number_of_claims(tmp_path):
    from replay.core import page_lines
    from replay.analysis.drift_inputs import drift_items

    old, new = _runs(tmp_path)
    kwargs = dict(run="a", against="b", items=drift_items(old, {}) * 20, old_pages=old.pages, new_pages=new.pages,
                  recorded_as=old.manifest, claims_paths={}, rerecord_run="a-2")
    page_lines._lines.cache_clear()
    page_lines._page_tokens.cache_clear()
    report = drift_report(**kwargs)
    texts = {p.text for p in [*old.pages.values(), *new.pages.values()] if p.text is not None}
    assert page_lines._lines.cache_info().misses == len(texts) == 4
    assert page_lines._page_tokens.cache_info().misses <= len(texts)
    page_lines._lines.cache_clear()
    assert drift_report(**kwargs).model_dump_json() == report.model_dump_json()  # cold or warm: the same report


def _drift_between(old: str, new: str, claim: str, quote: str):
    url = "https://learn.microsoft.com/m"
    return claim_drift(ClaimEvidence("docs/x.md", "x", claim, url, "grounded", quote),
                       PageVersion(url, sha256_text(old), old), PageVersion(url, sha256_text(new), new))


def test_a_quote_line_whose_words_changed_is_at_risk_though_a_line_like_it_remains():
    # "are supported" became "are not supported" on the quote's line, with no value changed, while the
    # line beside it still reads as the quote's did but for its subject: the claim is at risk, and its
    # lines are the quote's line and what that line says now (not the neighbour that stayed)
    old = ("# Regions\n\nBatch requests are supported in East US.\nStreaming requests are supported in East US.\n"
           "| Feature | Status |\n|---|---|\n| Batch | Supported |\n| Streaming | Supported |\n")
    new = old.replace("Batch requests are supported", "Batch requests are not supported").replace(
        "| Batch | Supported |", "| Batch | Not supported |")
    for quote, now in [("Batch requests are supported in East US.", "Batch requests are not supported in East US."),
                       ("| Batch | Supported |", "| Batch | Not supported |")]:
        d = _drift_between(old, new, "Batch requests are supported in East US.", quote)
        assert is_at_risk(d) and d.status == "quote-gone", (quote, d)
        assert (d.old, d.new) == (quote, now)


@pytest.mark.parametrize("claim", ["m-1 has a context window of 128,000 tokens.", "m-1 has a context window of 128k tokens."])
def test_a_number_spelled_another_way_is_no_value_change(claim):
    # `128000` rewritten `128k` (and `32768` as `32,768`) is the same value: one spelling for every number
    old = "# Models\n\n| model | context | output |\n|---|---|---|\n| m-1 | 128000 | 32768 |\n| m-2 | 64000 | 16384 |\n"
    new = old.replace("| m-1 | 128000 | 32768 |", "| m-1 | 128k | 32,768 |")
    d = _drift_between(old, new, claim, "| m-1 | 128000 | 32768 |")
    assert d.status == "changed-quote-intact" and not is_at_risk(d), d
    assert (d.old, d.new) == ("| m-1 | 128000 | 32768 |", "| m-1 | 128k | 32,768 |")
    assert _drift_between(old, new.replace("128k", "128.5k"), claim, "| m-1 | 128000 | 32768 |").status == "value-changed"
