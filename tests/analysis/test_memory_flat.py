"""grade, diff and drift hold little per claim: results and gold held compact, one conversation at a time, long
tables printed as they are laid out. Each holds exactly what the whole-run form held."""

import io
import json
import random
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from replay.cassettes.learn_calls import learn_calls
from replay.cassettes.cassette import load_cassette
from replay.errors import InputError
from replay.analysis.flip_inputs import explain_flips, run_input
from replay.core.flips.report import TEXT_EVIDENCE, TEXT_HELD, gold_labels
from replay.core.gate import adoption_gate
from replay.core.grading import grade_results
from replay.files.results import load_compact_results, load_results
from replay.files.inputs import load_gold
from replay.learn.wire import FETCH_TOOL, no_page_reason
from replay.urls import normalise_learn_url
from replay.schema.claims import Claim, ClaimRow
from replay.schema.results import ClaimResult, CompactResults
from replay.schema.gold import CompactGold, GoldRow
from replay.reports.tables import PRINTED_LINES, print_table
from replay.reports.flips import render_text
from replay.schema.pages import PageVersion
from replay.runs.folder import Run
from replay.core.text import sha256_text
from locations import REPO

ROOT = REPO
CASSETTES = ROOT / "cassettes"
DEMO_RUNS = ["v1-demo", "v2-demo", "v3-demo", "v2-demo-2026-09", "v3-demo-2026-09"]


# --------------------------------------------------------------------------- results held compact


@pytest.mark.parametrize("name", DEMO_RUNS)
def test_compact_results_hold_every_field_of_every_verdict(name):
    full, compact = load_results(CASSETTES / name), load_compact_results(CASSETTES / name)
    assert compact.header.model_dump(exclude={"files"}) == full.model_dump(exclude={"files"})
    assert "stand_ins" in compact.header.model_fields_set  # what `runs.stand_in_notes.stand_ins_of` asks
    assert [f.model_dump(exclude={"results", "tool_calls"}) for f in compact.header.files] == [
        f.model_dump(exclude={"results", "tool_calls"}) for f in full.files]
    assert [(rows.file, rows.error) for rows in compact.files] == [(f.file, f.error) for f in full.files]
    rows = [row for f in compact.files for row in f.results]
    results = [r for f in full.files for r in f.results]
    assert len(rows) == len(results) > 0
    for row, result in zip(rows, results):
        assert {name: getattr(row, name) for name in ClaimResult.model_fields} == {
            name: getattr(result, name) for name in ClaimResult.model_fields}
        assert row.model_extra == (result.model_extra or None)
    assert CompactResults.of(full) == compact


def test_grading_compact_results_and_gold_gives_the_scores_and_gate_of_the_files():
    gold = load_gold(ROOT / "demo" / "gold-correctness-set.json")
    compact_gold = CompactGold.of(gold)
    assert [GoldRow(i.file, i.id, i.label, i.mode, i.note) for i in gold.items] == list(compact_gold.items)
    for name in DEMO_RUNS:
        results = load_results(CASSETTES / name)
        assert grade_results(load_compact_results(CASSETTES / name), compact_gold) == grade_results(results, gold)
    base, cand = load_results(CASSETTES / "v2-demo"), load_results(CASSETTES / "v3-demo")
    scores = {"baseline_scores": grade_results(base, gold), "candidate_scores": grade_results(cand, gold)}
    assert adoption_gate(CompactResults.of(base), CompactResults.of(cand), compact_gold, **scores) == adoption_gate(
        base, cand, gold, **scores)


def _file(**fields):
    return {"file": "docs/a.md", "results": [{"id": "a-1", "judge_verdict": "grounded"}], **fields}


BAD_RESULTS = {
    "a header field and a file are wrong: the header's is named": {"prompt": 5, "files": [{"file": 3}]},
    "a file is no object": {"files": [_file(), "nothing"]},
    "a later file lacks its results": {"files": [_file(), _file(), {"file": "docs/b.md"}]},
    "a verdict is not a verdict": {"files": [_file(results=[{"id": "x", "judge_verdict": "maybe"}])]},
    "files is no list": {"files": {"file": "docs/a.md"}},
    "no files at all": {"prompt": "v3"},
    "a result appears twice": {"files": [_file(), _file()]},
    "top level is a number": 7,
    "a bare list with a bad file": [_file(), {"results": []}],
    "a single file with a bad verdict": {"file": "docs/a.md", "results": [{"judge_verdict": "grounded"}]},
}


@pytest.mark.parametrize("data", BAD_RESULTS.values(), ids=BAD_RESULTS.keys())
def test_compact_results_refuse_a_bad_results_file_with_the_error_load_results_gives(tmp_path, data):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), "utf-8")
    with pytest.raises(InputError) as whole:
        load_results(path)
    with pytest.raises(InputError) as compact:
        load_compact_results(path)
    assert str(compact.value) == str(whole.value)


@pytest.mark.parametrize("data", [[_file()], _file(extra_field=1), {"files": [], "frozen": True}])
def test_compact_results_read_every_accepted_shape(tmp_path, data):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), "utf-8")
    assert load_compact_results(path) == CompactResults.of(load_results(path))


# --------------------------------------------------------------------------- one conversation at a time


@pytest.fixture
def run(cached_project: Path) -> Run:
    shutil.copytree(CASSETTES / "v3-demo", cached_project / "runs" / "v3-demo")
    return Run(cached_project / "runs" / "v3-demo")


def test_a_run_holds_one_conversation_at_a_time(run):
    first, second = (entry.file for entry in run.manifest.claims[:2])
    held = run.conversation(first)
    assert run.conversation(first) is held  # asked again in a row: not read again
    run.conversation(second)
    again = run.conversation(first)
    assert again is not held and again == held  # let go of, and read back the same


def _pages_from_yaml(run: Run) -> dict[str, PageVersion]:
    """Every page the run fetched, straight from the YAML cassettes (last fetch wins)."""
    out = {}
    for entry in run.manifest.claims:
        for call in learn_calls(load_cassette(run.path / entry.cassette)):
            if call.tool != FETCH_TOOL or "url" not in call.arguments:
                continue
            url = str(call.arguments["url"])
            out[normalise_learn_url(url)] = (
                PageVersion(url, None, None, no_page_reason(call.text, call.is_error)) if call.page_missing
                else PageVersion(url, sha256_text(call.text), call.text))
    return out


def test_pages_and_claims_are_the_same_in_whichever_order_they_are_read(run):
    files = [entry.file for entry in run.manifest.claims]
    claims_first = Run(run.path)
    claims = {file: claims_first.claims(file) for file in files}
    assert all(claims.values())
    pages_first = Run(run.path)
    assert pages_first.pages == claims_first.pages == _pages_from_yaml(run)
    assert list(pages_first.pages) == list(_pages_from_yaml(run))
    assert {file: pages_first.claims(file) for file in files} == claims
    for file in files:
        fetched = [c for c in pages_first.learn_calls(file) if c.tool == FETCH_TOOL and "url" in c.arguments]
        assert [page.url for page in pages_first.fetched(file)] == [c.arguments["url"] for c in fetched]


# --------------------------------------------------------------------------- long tables printed in pieces


class Writes(io.StringIO):
    """A file that counts the writes it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def long_table(rows: int) -> Table:
    """A table shaped like drift's: repeated statuses and pages, unique claims, some cells over two lines."""
    rng = random.Random(rows)
    table = Table()
    table.add_column("status", no_wrap=True)
    table.add_column("claim", overflow="fold")
    table.add_column("page", overflow="fold", max_width=40)
    table.add_column("old → new", overflow="fold", ratio=1)
    for i in range(rows):
        change = Text(rng.choice(["quote no longer on the page", "| gpt-4o | 2024-05-13 |"]), style="red")
        if rng.random() < 0.3:
            change.append("\n→ ")
            change.append(f"| gpt-4o | 2025-{i % 12 + 1:02d}-01 |", style="green")
        table.add_row(Text(rng.choice(["value-changed", "quote-gone"]), style="red"), f"docs/kb/{i:04d}.md:c-{i}",
                      rng.choice(["/azure/ai-services/openai/concepts/models", "/azure/foundry/" + "x" * 50]), change)
        if rng.random() < 0.01:
            table.add_section()
    return table


@pytest.mark.parametrize("soft_wrap", [True, False])
def test_a_long_table_is_printed_in_pieces_that_make_rich_s_characters(soft_wrap):
    rows = 3 * PRINTED_LINES
    expected = io.StringIO()
    Console(file=expected, width=160, no_color=True, highlight=False, soft_wrap=soft_wrap).print(
        long_table(rows), soft_wrap=soft_wrap)
    out = Writes()
    print_table(Console(file=out, width=160, no_color=True, highlight=False, soft_wrap=soft_wrap), long_table(rows),
                soft_wrap=soft_wrap)
    assert out.getvalue() == expected.getvalue()
    assert out.writes >= 3  # written as it was laid out, not held whole first


def test_a_short_table_is_printed_at_once():
    out = Writes()
    print_table(Console(file=out, width=160, no_color=True, highlight=False, soft_wrap=True), long_table(20))
    assert out.writes == 1


def test_claims_let_go_of_are_read_again_as_they_were(run):
    files = [entry.file for entry in run.manifest.claims]
    before = {file: run.claims(file) for file in files}
    run.forget_claims()
    assert {file: run.claims(file) for file in files} == before


# --------------------------------------------------------------------------- diff keeps only the gold labels


def test_diff_explained_with_the_gold_labels_alone_is_the_report_of_the_gold_set():
    gold = load_gold(ROOT / "demo" / "gold-correctness-set.json")
    a, b = Run(CASSETTES / "v2-demo"), Run(CASSETTES / "v3-demo-2026-09")
    whole = explain_flips(a, b, gold)
    assert any(flip.gold for flip in whole.flips)
    assert explain_flips(Run(a.path), Run(b.path), gold_labels(gold)) == whole


def test_the_text_report_of_flips_explained_for_text_alone_is_the_same():
    a, b = Run(CASSETTES / "v2-demo"), Run(CASSETTES / "v3-demo-2026-09")
    whole = explain_flips(a, b)
    lean = explain_flips(Run(a.path), Run(b.path), text_only=True)
    diffs = [page.diff for flip in whole.flips for page in flip.evidence.pages]
    assert any(diffs)  # the demo has page flips whose diff would be shown
    assert any(flip.evidence.model_fields_set & set(TEXT_EVIDENCE) for flip in whole.flips)  # confirmed by a sibling run
    for held, flip in zip(lean.flips, whole.flips, strict=True):  # each keeps only what the text report reads
        assert held.evidence.model_dump() == flip.evidence.model_dump(include=set(TEXT_EVIDENCE))
        assert held.model_dump(exclude={"evidence"}) == flip.model_dump(exclude={"evidence"})
    assert whole.held_despite_page_change
    assert [h.model_dump() for h in lean.held_despite_page_change] == [
        h.model_dump(include=set(TEXT_HELD)) for h in whole.held_despite_page_change]
    assert render_text(lean) == render_text(whole)
    assert lean.confirm_commands == whole.confirm_commands


def test_diff_holds_a_run_s_claims_compact_with_every_field(run):
    held = run_input(run).claims
    claims = {(entry.file, c.id): c for entry in run.manifest.claims for c in Run(run.path).claims(entry.file) or []}
    assert held.keys() == claims.keys() and claims
    for key, claim in claims.items():
        assert held[key] == ClaimRow.of(claim)
        assert {name: getattr(held[key], name) for name in Claim.model_fields} == {
            name: getattr(claim, name) for name in Claim.model_fields}
