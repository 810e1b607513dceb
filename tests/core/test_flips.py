"""Flip attribution: why a claim's verdict moved between two runs (prompt, page, path, model, unknown)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from factories import parse_printed_command, write_json, write_run
from replay.analysis import flip_inputs
from replay.core.flips.prompt_diff import prompt_changes
from replay.core.page_diff import region_diff, side_by_side
from replay.prompts import load_prompt
from replay.schema.claims import ClaimsBatch
from replay.schema.flip_evidence import CitedRule, NoVerdict, SearchResults
from replay.schema.flips import UnpairedClaim
from replay.schema.gold import GoldSet
from replay.runs.folder import Run
from locations import DATA

LEARN_PAGES = DATA / "learn-pages"
MODELS_URL = "https://learn.microsoft.com/azure/ai-services/openai/concepts/models"
FILE = "docs/azure-openai-models.md"
V2, V3 = load_prompt("v2").text, load_prompt("v3").text


def explain_flips(*args, **kw):
    """`flip_inputs.explain_flips` for the hand-made runs of these tests: they hold no model traffic, so a
    sibling cannot replay and is not verified here (tests/cli/test_diff.py covers siblings that must verify)."""
    kw.setdefault("verify_siblings", False)
    return flip_inputs.explain_flips(*args, **kw)


def learn_page(version: str, name: str) -> str:
    """A real page body (front matter dropped, as the Learn endpoint serves it), read in place."""
    path = LEARN_PAGES / version / name
    assert path.is_file(), f"{path} is missing: tests/data/learn-pages is part of the test data"
    text = path.read_text("utf-8")
    return text.split("\n---\n", 1)[1].lstrip("\n")


def change(n: int) -> dict:
    return json.loads((LEARN_PAGES / "changes.json").read_text("utf-8"))[n]


def result(cid: str, verdict: str, quote: str = "", rule: str = "", url: str = MODELS_URL) -> dict:
    return {"id": cid, "judge_verdict": verdict, "rule": rule, "evidence_url": url, "evidence_quote": quote,
            "reason": f"because {verdict}"}


def run(folder: Path, prompt: str, text: str, results: list[dict], pages: dict, *, claims: list[dict] | None = None,
        model: str = "claude-test", file: str = FILE, **kw) -> Run:
    folder = write_run(folder, prompt=prompt, prompt_text=text, model=model,
                       results=[{"file": file, "results": results}], pages={file: pages}, **kw)
    if claims is not None:  # the claims file the manifest names, where the run's paths resolve
        manifest = json.loads((folder / "run.json").read_text())
        write_json(folder / manifest["claims"][0]["path"], {"file": file, "claims": claims})
    return Run(folder)


LOWER_BOUND = {"id": "models-003", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
               "evidence_url": MODELS_URL}
MINI = {"id": "models-010", "claim": "gpt-4.1-mini has a 1,047,576 token context window.", "claim_type": "version",
        "evidence_url": MODELS_URL}
OUTPUT = {"id": "models-020", "claim": "gpt-4.1 max output is 32,768 tokens.", "claim_type": "version",
          "evidence_url": MODELS_URL}


def test_prompt_change_v2_to_v3_cites_the_new_rule(tmp_path):
    page = learn_page("after", "azure-openai-models.md")
    q = "| `gpt-4.1` (2025-04-14)   | - Text & image input"
    a = run(tmp_path / "v2", "v2", V2, [result("models-003", "grounded", q)], {MODELS_URL: page},
            claims=[LOWER_BOUND])
    b = run(tmp_path / "v3", "v3", V3, [result("models-003", "not_grounded", q, rule="R1")], {MODELS_URL: page},
            claims=[LOWER_BOUND])
    gold = GoldSet(items=[{"file": FILE, "id": "models-003", "label": "outdated"}])
    report = explain_flips(a, b, gold)
    assert report.paired == 1 and len(report.flips) == 1
    flip = report.flips[0]
    assert flip.primary_cause == "prompt" and flip.causes == ["prompt"]
    assert flip.gold == "outdated" and flip.right == "b"
    ev = flip.evidence.prompt
    assert ev.rule_b == CitedRule(rule="R1", title="Lower-bound understatement", in_a=False, in_b=True)
    assert ev.rule_a is None and "rule_a" not in ev.model_dump()  # A cites no rule: absent, not null
    assert sorted(ev.rules_added) == [f"R{i}" for i in range(1, 8)] and not ev.rules_removed
    assert "v3 CALIBRATION RULES — read all seven before judging" in ev.sections_added
    assert any(c.was == "⚠️ EXACT-VALUE RULE" for c in ev.sections_changed)
    page_ev = flip.evidence.pages[0]
    assert page_ev.changed is False and page_ev.sha256_a == page_ev.sha256_b
    assert page_ev.quote_a_in_b is True and page_ev.quote_b_in_a is True
    assert flip.summary.startswith("prompt: B cites R1 (Lower-bound understatement), new in v3")
    assert flip.summary.endswith("page unchanged")
    assert report.counts == {"prompt": 1}


def test_prompt_sections_and_rules_diff_both_ways():
    changes = prompt_changes(V3, V2)
    assert sorted(changes.rules_removed) == [f"R{i}" for i in range(1, 8)] and not changes.rules_added
    assert prompt_changes(V2, V2).sections_changed == []


def test_page_change_in_a_real_table_row_shows_old_and_new_value(tmp_path):
    c = change(1)  # gpt-4.1-mini context window gains 128,000 (provisioned managed deployments)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    assert c["before"] in before and c["after"] in after
    a = run(tmp_path / "a", "v3", V3, [result("models-010", "grounded", c["before"].strip())], {MODELS_URL: before},
            claims=[MINI])
    b = run(tmp_path / "b", "v3", V3, [result("models-010", "not_grounded", c["after"].strip())],
            {MODELS_URL: after}, claims=[MINI])
    flip = explain_flips(a, b).flips[0]
    assert flip.primary_cause == "page" and flip.causes == ["page"]
    page = flip.evidence.pages[0]
    assert page.changed is True and page.near_claim is True and page.diff
    assert page.quote_a_in_b is False and page.quote_b_in_a is False
    minus = [l for l in page.diff.splitlines() if l.startswith("-|")]
    plus = [l for l in page.diff.splitlines() if l.startswith("+|")]
    assert "-" + c["before"] in minus and "+" + c["after"] in plus
    assert "model-router" not in page.diff  # the section added further down is not this claim's change
    assert "128,000" in flip.summary and "1,047,576" in flip.summary and "in models" in flip.summary
    assert flip.summary.startswith("page: 'gpt-4.1-mini … ") and flip.summary.endswith("prompt unchanged")
    assert page.sha256_a and page.sha256_b and f"sha {page.sha256_a[:4]}→{page.sha256_b[:4]}" in flip.summary


def test_claim_held_while_its_page_changed_elsewhere_is_counted_not_flipped(tmp_path):
    before, after = learn_page("before", "azure-openai-models.md"), learn_page("after", "azure-openai-models.md")
    q = "| 32,768 |"
    a = run(tmp_path / "a", "v3", V3, [result("models-020", "grounded", q)], {MODELS_URL: before}, claims=[OUTPUT])
    b = run(tmp_path / "b", "v3", V3, [result("models-020", "grounded", q)], {MODELS_URL: after}, claims=[OUTPUT])
    report = explain_flips(a, b)
    assert report.flips == [] and report.paired == 1
    [held] = report.held_despite_page_change
    assert held.id == "models-020" and held.verdict == "grounded"
    assert held.sha256_a != held.sha256_b


def test_region_diff_says_elsewhere_when_no_hunk_touches_the_claim():
    old = "# T\n\n| a | 1 |\n| b | 2 |\n\nintro\n\n## Other\n\nx is 9\n"
    new = old.replace("x is 9", "x is 10")
    diff = region_diff(old, new, values=["1"], quotes=["| a | 1 |"])
    assert diff.changed and not diff.near_claim and diff.note == "page changed elsewhere" and diff.unified == ""
    touched = region_diff(old, new.replace("| a | 1 |", "| a | 3 |"), values=["1"], quotes=[])
    assert touched.near_claim and "-| a | 1 |" in touched.unified and "+| a | 3 |" in touched.unified
    assert "x is" not in touched.unified
    rows = side_by_side(touched.unified)
    assert [(r.kind, r.old_no, r.new_no) for r in rows if r.kind == "change"] == [("change", 3, 3)]


def test_prompt_and_page_both_changed(tmp_path):
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    a = run(tmp_path / "a", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    b = run(tmp_path / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: after}, claims=[MINI])
    flip = explain_flips(a, b, discover=False).flips[0]
    assert flip.primary_cause == "prompt+page" and flip.causes == ["prompt", "page"]
    assert flip.summary.startswith("prompt+page: v2 → v3 (adds R1, R2, R3, R4, R5, R6, R7;")
    assert "128,000" in flip.summary


def test_evidence_path_same_prompt_same_pages_different_reads(tmp_path):
    other = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
    claim = {"id": "q-1", "claim": "gpt-4.1 Global Standard quota is 5 million TPM.", "claim_type": "tpm",
             "evidence_url": None}
    pages = {MODELS_URL: "# Models\n\n| gpt-4.1 | 1 M TPM |\n", other: "# Quotas\n\n| gpt-4.1 | 5 million TPM |\n"}
    search = {"query": claim["claim"], "results": [{"title": "Quotas", "content": "…", "contentUrl": other},
                                                  {"title": "Models", "content": "…", "contentUrl": MODELS_URL}]}
    a = run(tmp_path / "a", "v3", V3, [result("q-1", "not_grounded", "| gpt-4.1 | 1 M TPM |", url=MODELS_URL)],
            pages, claims=[claim])
    b = run(tmp_path / "b", "v3", V3, [result("q-1", "grounded", "| gpt-4.1 | 5 million TPM |", url=other)],
            {other: pages[other]}, claims=[claim])
    add_search(a, FILE, claim["claim"], search)
    add_search(b, FILE, claim["claim"], search)
    flip = explain_flips(Run(a.path), Run(b.path)).flips[0]
    assert flip.primary_cause == "evidence_path" and flip.causes == ["evidence_path"]
    path = flip.evidence.path
    assert path.a.read == [MODELS_URL, other] and path.b.read == [other]
    assert path.a.searched == [claim["claim"]]
    assert flip.summary == ("evidence_path: A read models + quotas-limits, B read quotas-limits; "
                            "same prompt and page versions")


def test_a_search_that_returned_other_pages_is_a_change_of_learn_not_of_the_evidence_path(tmp_path):
    """The same query, other results (Learn's index changed: a new page ranks first): the pages available
    differ, so the evidence_path cause (the same pages available) does not apply; Learn changed: `page`."""
    other = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
    claim = {"id": "q-1", "claim": "gpt-4.1 Global Standard quota is 5 million TPM.", "claim_type": "tpm",
             "evidence_url": None}
    pages = {MODELS_URL: "# Models\n\n| gpt-4.1 | 1 M TPM |\n", other: "# Quotas\n\n| gpt-4.1 | 5 million TPM |\n"}
    before = {"results": [{"title": "Models", "content": "…", "contentUrl": MODELS_URL}]}
    after = {"results": [{"title": "Quotas", "content": "…", "contentUrl": other},
                         {"title": "Models", "content": "…", "contentUrl": MODELS_URL}]}
    a = run(tmp_path / "a", "v3", V3, [result("q-1", "not_grounded", "| gpt-4.1 | 1 M TPM |", url=MODELS_URL)],
            {MODELS_URL: pages[MODELS_URL]}, claims=[claim])
    b = run(tmp_path / "b", "v3", V3, [result("q-1", "grounded", "| gpt-4.1 | 5 million TPM |", url=other)],
            pages, claims=[claim])
    add_search(a, FILE, claim["claim"], {"query": claim["claim"], **before})
    add_search(b, FILE, claim["claim"], {"query": claim["claim"], **after})
    flip = explain_flips(Run(a.path), Run(b.path)).flips[0]
    assert flip.primary_cause == "page" and "evidence_path" in flip.causes
    assert flip.evidence.searches_changed == {claim["claim"]: SearchResults(a=[MODELS_URL], b=[other, MODELS_URL])}
    assert flip.summary.startswith("page: Learn's search for 'gpt-4.1 Global Standard quota is 5 million TPM.' "
                                   "returned other pages (models → quotas-limits + models); prompt unchanged")


def add_search(r: Run, file: str, query: str, reply: dict) -> None:
    """Prepend a search exchange to a run's cassette (as the judge's first Learn call)."""
    from replay.cassettes.interaction import Interaction
    from replay.cassettes.cassette import load_cassette, save_cassette
    from replay.learn.wire import SEARCH_TOOL, sse_message

    path = r.cassette_path(file)
    body = {"jsonrpc": "2.0", "id": 99, "method": "tools/call",
            "params": {"name": SEARCH_TOOL, "arguments": {"query": query}}}
    msg = {"result": {"content": [{"type": "text", "text": json.dumps(reply)}]}, "jsonrpc": "2.0", "id": 99}
    it = Interaction(method="POST", uri="https://learn.microsoft.com/api/mcp", request_body=json.dumps(body),
                     status=200, response_body=sse_message(msg),
                     response_headers={"content-type": ["text/event-stream"]})
    save_cassette(path, [it, *load_cassette(path)])


def test_a_prompt_with_one_section_reworded_says_one_section_differs(tmp_path):
    page = learn_page("after", "azure-openai-models.md")
    reworded = V2.replace("## Hard rules\n", "## Hard rules\n\nBe brief.\n", 1)
    assert reworded != V2
    a = run(tmp_path / "a", "v2", V2, [result("models-003", "grounded")], {MODELS_URL: page}, claims=[LOWER_BOUND])
    b = run(tmp_path / "b", "mine.md", reworded, [result("models-003", "not_grounded")], {MODELS_URL: page},
            claims=[LOWER_BOUND])
    flip = explain_flips(a, b, discover=False).flips[0]
    assert flip.primary_cause == "prompt" and "v2 → mine.md (1 section differs)" in flip.summary


def test_model_when_prompt_pages_and_path_are_the_same(tmp_path):
    page = learn_page("after", "azure-openai-models.md")
    a = run(tmp_path / "a", "v3", V3, [result("models-003", "grounded")], {MODELS_URL: page}, claims=[LOWER_BOUND],
            model="claude-sonnet-4-5")
    b = run(tmp_path / "b", "v3", V3, [result("models-003", "not_grounded")], {MODELS_URL: page},
            claims=[LOWER_BOUND], model="claude-sonnet-4-6")
    flip = explain_flips(a, b, discover=False).flips[0]
    assert flip.primary_cause == "model" and flip.causes == ["model"]
    assert flip.evidence.model.a.model == "claude-sonnet-4-5"
    assert "claude-sonnet-4-5 → claude-sonnet-4-6" in flip.summary
    # another model is no repeat: A and B do not measure each other's noise
    assert flip.evidence.repeats is None
    # with the same model, A and B are themselves two repeats of the same prompt on the same page
    same = run(tmp_path / "c", "v3", V3, [result("models-003", "not_grounded")], {MODELS_URL: page},
               claims=[LOWER_BOUND], model="claude-sonnet-4-5")
    flip = explain_flips(a, same, discover=False).flips[0]
    assert flip.evidence.repeats.a_and_b.n == 2 and "same model claude-sonnet-4-5" in flip.summary


def test_unknown_when_no_learn_traffic_was_recorded(tmp_path):
    page = learn_page("after", "azure-openai-models.md")
    a = run(tmp_path / "a", "v2", V2, [result("models-003", "grounded")], {MODELS_URL: page}, claims=[LOWER_BOUND])
    b = run(tmp_path / "b", "v3", V3, [result("models-003", "not_grounded", rule="R1")], {}, claims=[LOWER_BOUND])
    b.cassette_path(FILE).unlink()
    flip = explain_flips(Run(a.path), Run(b.path)).flips[0]
    assert flip.primary_cause == "unknown" and "prompt" in flip.causes
    assert "no Learn traffic recorded for this claim in B" in flip.summary


def test_unpaired_claims_are_listed(tmp_path):
    a = run(tmp_path / "a", "v3", V3, [result("x-1", "grounded"), result("x-2", "grounded")], {})
    b = run(tmp_path / "b", "v3", V3, [result("x-1", "grounded"), result("x-3", "grounded")], {})
    report = explain_flips(a, b)
    assert report.paired == 1 and report.flips == []
    assert report.unpaired == [UnpairedClaim(file=FILE, id="x-2", only_in="a"),
                               UnpairedClaim(file=FILE, id="x-3", only_in="b")]


def test_crossed_run_confirms_the_page_moved_it(tmp_path):
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    a = run(tmp_path / "runs" / "a", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    b = run(tmp_path / "runs" / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: after},
            claims=[MINI])
    report = explain_flips(a, b)
    assert report.flips[0].primary_cause == "prompt+page" and not report.flips[0].evidence.confirmations
    # --confirm: the exact commands that would record the two missing combinations, as pasted here
    claims_file = os.path.relpath(a.path / "claims" / "docs_azure-openai-models.md.yaml.json")
    assert report.confirm_commands[0] == (
        f"judge-replay judge --prompt v2 --claims {claims_file} --run {tmp_path}/runs/a-prompt-b-pages "
        f"--mode record --model claude-test --pages-from {tmp_path}/runs/b")
    params = parse_printed_command(report.confirm_commands[0])
    assert Path(params["claims"][0]).is_file() and Path(params["pages_from"]) == b.path
    assert "--prompt v3" in report.confirm_commands[1] and f"--pages-from {tmp_path}/runs/a" in report.confirm_commands[1]

    # A's prompt with B's pages gives B's verdict: the page moved it (found as a sibling folder)
    x = run(tmp_path / "runs" / "a-prompt-b-pages", "v2", V2, [result("models-010", "not_grounded")],
            {MODELS_URL: after}, claims=[MINI])
    manifest = json.loads((x.path / "run.json").read_text())
    manifest["pages_from"] = str(b.path)
    write_json(x.path / "run.json", manifest)
    flip = explain_flips(a, b).flips[0]
    assert flip.evidence.confirmed_by == "a-prompt-b-pages" and flip.evidence.confirmed_cause == "page"
    # both inputs changed, the controlled run held the prompt fixed: the page is the primary cause
    assert flip.primary_cause == "page" and flip.causes == ["prompt", "page"]
    assert flip.summary.startswith("page (confirmed by a controlled run; the prompt changed too): ")
    assert flip.evidence.confirmations[0].combination == "A's prompt with B's pages"
    assert "confirmed by a-prompt-b-pages: A's prompt with B's pages gives not_grounded → the page moved it" in flip.summary
    assert explain_flips(a, b).confirm_commands == []
    # not discovered when asked not to; passed explicitly instead
    assert explain_flips(a, b, discover=False).flips[0].evidence.confirmed_by is None
    assert explain_flips(a, b, None, [Run(x.path)], discover=False).flips[0].evidence.confirmed_by == "a-prompt-b-pages"


def test_crossed_run_with_a_verdict_points_to_the_prompt(tmp_path):
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    a = run(tmp_path / "a", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    b = run(tmp_path / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: after}, claims=[MINI])
    x = run(tmp_path / "x", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: after}, claims=[MINI])
    flip = explain_flips(a, b, None, [x], discover=False).flips[0]
    assert flip.evidence.confirmed_cause == "prompt" and flip.evidence.confirmations[0].points_to == "prompt"


def test_a_crossed_run_with_a_third_verdict_singles_out_neither_input(tmp_path):
    # A's prompt on B's pages gives neither A's nor B's verdict: both inputs moved it together. The
    # "neither" was dropped, so a second crossed run pointing to one input decided alone, and the
    # summary said "the neither moved it"
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    a = run(tmp_path / "a", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    b = run(tmp_path / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: after}, claims=[MINI])
    third = run(tmp_path / "x", "v2", V2, [result("models-010", "source_silent")], {MODELS_URL: after}, claims=[MINI])
    page = run(tmp_path / "y", "v3", V3, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    for extras in ([third], [third, page], [page, third]):
        flip = explain_flips(a, b, None, extras, discover=False).flips[0]
        assert flip.primary_cause == "prompt+page" and flip.evidence.confirmed_cause == "prompt+page", extras
        assert "the neither" not in flip.summary and "confirmed by" not in flip.summary
        assert "the controlled runs do not single out one input (" in flip.summary
        assert "x: A's prompt with B's pages gives source_silent" in flip.summary and flip.summary.endswith(
            "): prompt and page moved it together")
    assert explain_flips(a, b, None, [page], discover=False).flips[0].primary_cause == "page"  # one, agreeing


def test_a_page_changed_only_where_no_verdict_rests_is_not_what_moved_it(tmp_path):
    # the models page changed between the runs, but each run's quote occurs in both versions: the page
    # content the verdicts rest on did not change (`page` is that content changing). With the same
    # prompt it is not `page` but unknown (noise, or the change elsewhere); a repeat that flips makes it
    # model noise; with the prompt changed, it is the prompt
    before, after = learn_page("before", "azure-openai-models.md"), learn_page("after", "azure-openai-models.md")
    q = "| 32,768 |"
    assert q in before and q in after and before != after
    a = run(tmp_path / "r" / "a", "v3", V3, [result("models-020", "grounded", q)], {MODELS_URL: before}, claims=[OUTPUT])
    b = run(tmp_path / "r" / "b", "v3", V3, [result("models-020", "not_grounded", q)], {MODELS_URL: after},
            claims=[OUTPUT])
    flip = explain_flips(a, b, discover=False).flips[0]
    assert flip.primary_cause == "unknown" and "page" not in flip.causes, flip
    assert flip.summary == (
        "unknown: models changed, but not where either verdict rests (each quote occurs in both versions, or only "
        "the formatting changed); same prompt and evidence path: model noise, or the page's change elsewhere "
        "(diff --confirm re-records the claim to tell)")
    run(tmp_path / "r" / "b-again", "v3", V3, [result("models-020", "grounded", q)], {MODELS_URL: after}, claims=[OUTPUT])
    assert explain_flips(a, b).flips[0].primary_cause == "model"  # B's pages again, and A's verdict: noise
    v2 = run(tmp_path / "v2", "v2", V2, [result("models-020", "grounded", q)], {MODELS_URL: before}, claims=[OUTPUT])
    flip = explain_flips(v2, b, discover=False).flips[0]
    assert flip.primary_cause == "prompt" and flip.summary.endswith("; models changed, not where either verdict rests")


def test_a_page_flip_to_grounded_names_the_line_that_now_grounds_it_not_a_change_at_the_old_quote(tmp_path):
    # change #34: a new gpt-5.2 row. A (not_grounded) quoted the closest row, which changed too (a typo
    # fixed); B grounds on the new row. The explanation named the typo fix
    c = change(34)
    url = c["page_url"]
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    claim = {"id": "c34", "claim": "gpt-5.2 (2025-12-11) is available as a reasoning model.", "claim_type": "status",
             "evidence_url": url}
    new_row = c["after"].strip().splitlines()[0]
    assert new_row in after and new_row not in before
    old_quote = next(line for line in before.splitlines() if "cusotom" in line)
    a = run(tmp_path / "a", "v3", V3, [result("c34", "not_grounded", old_quote, url=url)], {url: before}, claims=[claim])
    b = run(tmp_path / "b", "v3", V3, [result("c34", "grounded", new_row, url=url)], {url: after}, claims=[claim])
    flip = explain_flips(a, b, discover=False).flips[0]
    assert flip.primary_cause == "page"
    assert flip.evidence.pages[0].new_line == new_row.strip() and "cusotom" not in flip.summary, flip.summary


def test_repeats_within_noise_are_labelled_model(tmp_path):
    page = learn_page("after", "azure-openai-models.md")
    a = run(tmp_path / "r" / "v2", "v2", V2, [result("models-003", "grounded")], {MODELS_URL: page},
            claims=[LOWER_BOUND])
    b = run(tmp_path / "r" / "v3", "v3", V3, [result("models-003", "not_grounded", rule="R1")], {MODELS_URL: page},
            claims=[LOWER_BOUND])
    # two more v2 runs on the same page: one already says not_grounded
    run(tmp_path / "r" / "v2-again", "v2", V2, [result("models-003", "not_grounded")], {MODELS_URL: page},
        claims=[LOWER_BOUND])
    run(tmp_path / "r" / "v2-third", "v2", V2, [result("models-003", "grounded")], {MODELS_URL: page},
        claims=[LOWER_BOUND])
    flip = explain_flips(a, b).flips[0]
    rep = flip.evidence.repeats.a
    assert rep.n == 3 and rep.verdicts == {"grounded": 2, "not_grounded": 1}
    assert rep.flip_rate == pytest.approx(0.333)
    assert flip.primary_cause == "model" and flip.causes == ["prompt", "model"]
    assert flip.summary.startswith("model: within noise: 3 runs with the same prompt and pages gave grounded 2, "
                                   "not_grounded 1 (flip rate 0.33)")


def test_bad_run_folder_is_an_input_error(tmp_path):
    from replay.errors import InputError

    with pytest.raises(InputError, match="no such run folder"):
        Run(tmp_path / "nope")


def test_page_diff_of_a_section_added_at_the_end_of_a_real_page(tmp_path):
    # the after page of change #34 gains whole sections; a touched hunk ends in blank lines (it used to crash)
    c = change(34)
    url = c["page_url"]
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    claim = {"id": "gpt52", "claim": "gpt-5.2 2025-12-11 has a context window of 400,000 tokens.",
             "claim_type": "version", "evidence_url": url}
    a = run(tmp_path / "a", "v3", V3, [result("gpt52", "source_silent", url=url)], {url: before}, claims=[claim])
    b = run(tmp_path / "b", "v3", V3, [result("gpt52", "grounded", c["after"].strip(), url=url)], {url: after},
            claims=[claim])
    [flip] = explain_flips(a, b).flips
    assert flip.primary_cause == "page" and flip.evidence.pages[0].near_claim is True
    assert "+" + c["after"] in (flip.evidence.pages[0].diff or "").splitlines()


@pytest.mark.parametrize("n, claim, expected", [
    # the retirements page was restructured: the row moved far down, re-padded
    (8, "text-embedding-ada-002 version 2 retires no earlier than October 3, 2025.",
     "'text-embedding-ada-002 … 2, October 3, 2025' → 'text-embedding-ada-002 … 2, April 30, 2026'"),
    # a row added where A found nothing: not some other line that carries an `11`
    (16, "gpt-4.1 2025-04-14 retires no earlier than April 11, 2026.",
     "a line now in model-retirements reads '| `gpt-4.1` | 2025-04-14 | No earlier than April 11, 2026 | |'"),
])
def test_page_flip_summary_names_the_claims_row_before_and_after(tmp_path, n, claim, expected):
    c = change(n)
    url = c["page_url"]
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    item = {"id": "c", "claim": claim, "claim_type": "status", "evidence_url": url}
    if c["before"] is None:
        ra, rb = result("c", "source_silent", url=url), result("c", "grounded", c["after"].strip(), url=url)
    else:
        ra, rb = result("c", "grounded", c["before"].strip(), url=url), result("c", "not_grounded", url=url)
    a = run(tmp_path / "a", "v3", V3, [ra], {url: before}, claims=[item])
    b = run(tmp_path / "b", "v3", V3, [rb], {url: after}, claims=[item])
    [flip] = explain_flips(a, b).flips
    assert flip.primary_cause == "page" and expected in flip.summary


def test_discovery_uses_only_siblings_that_hold_one_side_fixed_and_says_which_and_why(tmp_path):
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    third = after.replace(c["after"], c["after"].replace("128,000", "256,000"))
    runs = tmp_path / "runs"
    a = run(runs / "a", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    b = run(runs / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: after}, claims=[MINI])
    # named to sort first: B's prompt on A's pages (a real controlled run, but the less telling one)
    run(runs / "aaa-my-v3", "v3", V3, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    # A's prompt on a third version of the page: holds no side fixed
    run(runs / "aab-third-pages", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: third}, claims=[MINI])
    # B's pages but a third prompt: holds no side fixed either
    other = run(runs / "aac-other-prompt", "v1", load_prompt("v1").text, [result("models-010", "grounded")],
                {MODELS_URL: after}, claims=[MINI])
    manifest = json.loads((other.path / "run.json").read_text())
    write_json(other.path / "run.json", {**manifest, "pages_from": str(b.path)})
    run(runs / "z-a-prompt-b-pages", "v2", V2, [result("models-010", "not_grounded")], {MODELS_URL: after},
        claims=[MINI])

    report = explain_flips(a, b)
    assert report.extra_runs == ["z-a-prompt-b-pages", "aaa-my-v3"]
    flip = report.flips[0]
    assert flip.evidence.confirmed_by == "z-a-prompt-b-pages" and flip.primary_cause == "page"
    used = {c.run: c for c in report.controlled_runs}
    assert used["z-a-prompt-b-pages"].role == "A's prompt with B's pages"
    assert used["aaa-my-v3"].role == "B's prompt with A's pages"
    assert used["aaa-my-v3"].found == "sibling folder"
    assert used["z-a-prompt-b-pages"].why.startswith("z-a-prompt-b-pages: A's prompt with B's pages for 1 flipped claim")

    from replay.reports.flips_html import render_html
    from replay.reports.flips_markdown import render_markdown
    from replay.reports.flips import render_text

    for text in (render_text(report), render_markdown(report), render_html(report)):
        assert "A&#x27;s prompt with B&#x27;s pages for 1" in text or "A's prompt with B's pages for 1" in text
        assert "aab-third-pages" not in text and "aac-other-prompt" not in text


@pytest.mark.parametrize("prompt_b, text_b", [("v3", V3), ("v2", V2)], ids=["prompt-changed", "same-prompt"])
def test_a_claim_without_a_verdict_on_one_side_is_unknown_never_a_judge_flip(tmp_path, prompt_b, text_b):
    # B's conversation failed: its claims have no verdict. Nothing moved a verdict of the judge: neither the
    # prompt (v2 → v3) nor the model (same prompt, same pages) is its cause, and a repeat of A that
    # disagrees with A does not make it "within noise"
    page = learn_page("after", "azure-openai-models.md")
    error = "API error 529: overloaded (after 3 retries)"
    runs = tmp_path / "runs"
    a = run(runs / "a", "v2", V2, [result("models-003", "grounded"), result("models-010", "grounded")],
            {MODELS_URL: page}, claims=[LOWER_BOUND, MINI])
    failed = write_run(runs / "b", prompt=prompt_b, prompt_text=text_b, model="claude-test", pages={FILE: {}},
                       results=[{"file": FILE, "error": error, "results": [{"id": "models-003", "error": error},
                                                                          {"id": "models-010"}]}])
    run(runs / "a-again", "v2", V2, [result("models-003", "not_grounded"), result("models-010", "not_grounded")],
        {MODELS_URL: page}, claims=[LOWER_BOUND, MINI])
    gold = GoldSet(items=[{"file": FILE, "id": "models-003", "label": "outdated"}])
    report = explain_flips(a, Run(failed), gold)
    assert [(f.id, f.verdict_a, f.verdict_b, f.primary_cause, f.causes) for f in report.flips] == [
        ("models-003", "grounded", None, "unknown", []), ("models-010", "grounded", None, "unknown", [])]
    flip, quiet = report.flips
    assert flip.evidence.no_verdict == NoVerdict(side="b", error=error)
    assert flip.evidence.reasons.b == f"no verdict: {error}" and flip.evidence.repeats is None
    assert flip.summary == f"unknown: no verdict in B: {error}"
    # a claim with no error of its own carries its conversation's error
    assert quiet.summary == f"unknown: no verdict in B: {error}"
    assert flip.gold == "outdated" and flip.right == "neither"
    assert report.counts == {"unknown": 2} and report.confirm_commands == []
    # B → A: the missing side is A
    assert explain_flips(Run(failed), a).flips[0].summary == f"unknown: no verdict in A: {error}"

    from replay.reports.flips_html import render_html
    from replay.reports.flips_markdown import render_markdown
    from replay.reports.flips import render_text

    text = render_text(report)
    assert "grounded → no verdict" in text and "none" not in text
    markdown = render_markdown(report)
    assert "| grounded | no verdict | **unknown** |" in markdown and f"**B**: no verdict: {error}" in markdown
    assert "None" not in markdown
    html = render_html(report)
    assert '<span class="v v-none">no verdict</span>' in html and f"no verdict: {error}" in html


def test_a_sibling_recorded_with_another_model_is_no_controlled_run_and_says_so(tmp_path):
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    runs = tmp_path / "runs"
    a = run(runs / "a", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    b = run(runs / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: after}, claims=[MINI])
    # A's prompt on B's pages, but recorded with another model: it moves two inputs, not one
    run(runs / "a-prompt-b-pages", "v2", V2, [result("models-010", "not_grounded")], {MODELS_URL: after},
        claims=[MINI], model="claude-other")
    # a repeat of B with another model measures no noise of B's either
    run(runs / "b-repeat", "v3", V3, [result("models-010", "grounded")], {MODELS_URL: after}, claims=[MINI],
        model="claude-other")
    report = explain_flips(a, b)
    [flip] = report.flips
    assert flip.primary_cause == "prompt+page" and not flip.evidence.confirmations and flip.evidence.repeats is None
    assert report.extra_runs == []
    notes = {c.run: c for c in report.controlled_runs}
    assert set(notes) == {"a-prompt-b-pages", "b-repeat"} and all(c.role is None for c in notes.values())
    assert notes["a-prompt-b-pages"].why.startswith(
        "a-prompt-b-pages: not used: recorded with model claude-other, not the compared runs' (claude-test)")
    # still missing: the commands to record them (with the compared runs' model)
    assert report.confirm_commands and all("--model claude-test" in cmd for cmd in report.confirm_commands)
    # passed explicitly with --with, the same: named, not used
    given = explain_flips(a, b, None, [Run(runs / "a-prompt-b-pages")], discover=False)
    assert not given.flips[0].evidence.confirmations
    assert given.controlled_runs[0].role is None and "claude-other" in given.controlled_runs[0].why

    # the same sibling recorded with the compared runs' model is used, and its line names the model
    run(runs / "a-prompt-b-pages", "v2", V2, [result("models-010", "not_grounded")], {MODELS_URL: after},
        claims=[MINI], model="claude-test")
    report = explain_flips(a, b)
    assert report.flips[0].primary_cause == "page"
    used = {c.run: c for c in report.controlled_runs}["a-prompt-b-pages"]
    assert used.role == "A's prompt with B's pages" and "model claude-test" in used.why


def test_no_crossed_run_is_suggested_when_the_compared_runs_differ_in_model(tmp_path):
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    a = run(tmp_path / "a", "v2", V2, [result("models-010", "grounded")], {MODELS_URL: before}, claims=[MINI])
    b = run(tmp_path / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: after}, claims=[MINI],
            model="claude-other")
    report = explain_flips(a, b)
    assert report.flips[0].primary_cause == "prompt+page"
    # A's prompt on B's pages with either model still moves two inputs against one of the runs
    assert not any("--pages-from" in cmd for cmd in report.confirm_commands)


def test_a_cited_url_that_is_no_url_is_named_as_itself_not_a_crash(tmp_path, capsys):
    """The model may cite any text as its evidence URL; `https://[...` does not parse as a URL."""
    from replay.cli.main import main

    page = learn_page("after", "azure-openai-models.md")
    cited = "https://[learn.microsoft.com/x"
    a = run(tmp_path / "a", "v3", V3, [result("models-003", "grounded")], {MODELS_URL: page}, claims=[LOWER_BOUND])
    b = run(tmp_path / "b", "v3", V3, [result("models-003", "not_grounded", rule="R1", url=cited)], {MODELS_URL: page},
            claims=[LOWER_BOUND])
    [flip] = explain_flips(a, b, discover=False).flips
    assert "prompt" not in flip.causes
    code = main(["diff", str(a.path), str(b.path)])
    out, err = capsys.readouterr()
    assert code in (0, 1) and "models-003" in out and "internal error" not in err


def test_a_claim_edited_between_the_runs_is_no_prompt_page_or_model_flip(tmp_path):
    """The same (file, id) with another text: the flip cannot be put on the prompt, the page or the model,
    and a run of the edited claim is no repeat of the other (it would pass for noise)."""
    page = learn_page("after", "azure-openai-models.md")
    edited = {**MINI, "claim": "gpt-4.1-mini has a 128,000 token context window."}
    a = run(tmp_path / "r" / "a", "v3", V3, [result("models-010", "grounded")], {MODELS_URL: page}, claims=[MINI])
    b = run(tmp_path / "r" / "b", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: page}, claims=[edited])
    flip = explain_flips(a, b, discover=False).flips[0]
    assert flip.primary_cause == "unknown" and flip.causes == []
    assert flip.evidence.claim_changed.b.claim == edited["claim"]
    assert flip.summary.startswith("unknown: the runs judged different claims under this id (its text changed: ")
    assert "128,000" in flip.summary and "1,047,576" in flip.summary
    # claims given on the command line (`diff --claims`) fill in what a run does not say, never replace it
    given = [ClaimsBatch.model_validate({"file": FILE, "claims": [edited]})]
    assert explain_flips(a, b, discover=False, claims=given).flips[0].primary_cause == "unknown"
    # with the claim as A judged it, the same prompt and page: a model flip, and the edited run is no repeat
    c = run(tmp_path / "r" / "c", "v3", V3, [result("models-010", "not_grounded")], {MODELS_URL: page}, claims=[MINI])
    flip = explain_flips(a, c).flips[0]  # b, a sibling, is discovered but judged another claim
    assert flip.primary_cause == "model"
    assert flip.evidence.repeats.a_and_b.runs == [a.name, c.name]


def test_two_pages_of_one_name_are_told_apart_in_an_evidence_path():
    # "B read model-retirements + model-retirements" named two pages (ai-services and ai-foundry) alike
    from replay.urls import page_names

    services = "https://learn.microsoft.com/azure/ai-services/openai/concepts/model-retirements"
    foundry = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/model-retirements"
    quotas = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
    assert page_names([services, foundry, quotas, services]) == {
        services: "azure/ai-services/openai/concepts/model-retirements",
        foundry: "azure/ai-foundry/openai/concepts/model-retirements", quotas: "quotas-limits"}


def test_a_run_s_own_samples_are_its_repeats_and_mark_the_flip_unstable(tmp_path):
    # v2 → v3 on the same page: the prompt changed, so the flip would be the prompt's. But B (v3) judged the
    # claim 3 times: not_grounded, grounded, not_grounded; one of its own samples gave A's verdict, so the
    # majority flip is within B's model noise, with no sibling run, and the claim is marked unstable on B.
    page = learn_page("after", "azure-openai-models.md")
    a = run(tmp_path / "a", "v2", V2, [result("models-003", "grounded")], {MODELS_URL: page}, claims=[LOWER_BOUND])
    sampled = {**result("models-003", "not_grounded"), "samples": [
        result("models-003", "not_grounded"), result("models-003", "grounded"), result("models-003", "not_grounded")]}
    b = run(tmp_path / "b", "v3", V3, [sampled], {MODELS_URL: page}, claims=[LOWER_BOUND], samples=3)
    flip = explain_flips(a, b, discover=False).flips[0]
    assert (flip.verdict_a, flip.verdict_b) == ("grounded", "not_grounded")
    assert flip.primary_cause == "model" and "prompt" in flip.causes
    own = flip.evidence.repeats.samples_b
    assert own.n == 3 and own.verdicts == {"not_grounded": 2, "grounded": 1} and own.runs[0] == "b sample 1"
    assert flip.evidence.repeats.unstable == ["b"]
    assert "run B's own 3 samples of the claim gave not_grounded 2, grounded 1" in flip.summary
    assert "[unstable claim: run B's own samples disagree on it]" in flip.summary

    # B's samples all agree: a stable claim; the prompt moved it, the samples are recorded, nothing is unstable
    steady = {**result("models-003", "not_grounded"), "samples": [result("models-003", "not_grounded")] * 3}
    c = run(tmp_path / "c", "v3", V3, [steady], {MODELS_URL: page}, claims=[LOWER_BOUND], samples=3)
    flip = explain_flips(a, c, discover=False).flips[0]
    assert flip.primary_cause == "prompt" and flip.evidence.repeats.samples_b.n == 3
    assert "unstable" not in flip.evidence.repeats.model_dump(exclude_unset=True) and "unstable" not in flip.summary
