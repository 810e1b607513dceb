"""Reports and inputs read or written piece by piece are byte for byte what the whole forms are."""

import json
from pathlib import Path

import pytest

from replay.errors import InputError
from replay.files.json_text import MAX_JSON_DEPTH, indented_json
from replay.files.results import _compact_results_streamed, load_compact_results, load_results
from replay.schema.results import CompactResults
from locations import REPO

ROOT = REPO
CASSETTES = ROOT / "cassettes"
DEMO_RUNS = ["v1-demo", "v2-demo", "v3-demo", "v2-demo-2026-09", "v3-demo-2026-09"]


# --------------------------------------------------------------------------- results read one file at a time


@pytest.mark.parametrize("name", DEMO_RUNS)
def test_a_results_file_is_read_one_claims_file_at_a_time_into_what_the_whole_parse_gives(name):
    path = CASSETTES / name / "results.json"
    streamed = _compact_results_streamed(path, path.read_text("utf-8"))
    assert streamed is not None  # the shape every run writes is read piece by piece
    assert streamed == CompactResults.of(load_results(path)) == load_compact_results(path)


def _file(i=0, **fields):
    return {"file": f"docs/{i}.md", "results": [{"id": f"c-{i}", "judge_verdict": "grounded"}], **fields}


GOOD = {
    "indented": indented_json({"prompt": "v3", "frozen": True, "files": [_file(0), _file(1)]}),
    "compact, odd spacing": '\r\n\t{"prompt" :"v3"  ,"files":[ ' + json.dumps(_file(0)) + ' ,\n' + json.dumps(_file(1)) + "]}\n",
    "no files": '{"files": []}',
    "no files, spaced": '{ "files" : [ \n ] } ',
    "extra header fields": json.dumps({"custom": {"a": [1, 2]}, "cost_usd": 1.5, "files": [_file(extra=[{"x": None}])]}),
    "non-ASCII and escapes": json.dumps({"prompt": "é\u2028\"\\", "files": [_file(0, note="概要 😀")]}, ensure_ascii=False),
    "escaped non-ASCII": json.dumps({"prompt": "é😀", "files": [_file(0, note="概要 \u0007")]}),
    "escaped key": '{"fil\\u0065s": [' + json.dumps(_file(0)) + "]}",
}


@pytest.mark.parametrize("text", GOOD.values(), ids=GOOD.keys())
def test_every_results_text_of_the_usual_shape_reads_the_same_piece_by_piece(tmp_path, text):
    path = tmp_path / "results.json"
    path.write_text(text, "utf-8")
    streamed = _compact_results_streamed(path, text)
    assert streamed is not None
    assert streamed == CompactResults.of(load_results(path)) == load_compact_results(path)


def _nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


OTHER = {
    "a key after files": json.dumps({"files": [_file()], "prompt": "v3"}),
    "files twice": '{"files": [], "files": [' + json.dumps(_file()) + "]}",
    "a header key twice": '{"prompt": "a", "prompt": "b", "files": []}',
    "no files key": json.dumps({"prompt": "v3"}),
    "files no list": json.dumps({"files": {"file": "a"}}),
    "bare list": json.dumps([_file()]),
    "single file": json.dumps(_file()),
    "a file nested too deep": json.dumps({"files": [_file(extra=_nested(MAX_JSON_DEPTH - 3))]}),
    "a header field nested too deep": json.dumps({"x": _nested(MAX_JSON_DEPTH), "files": []}),
    "exactly as deep as allowed": json.dumps({"files": [_file(extra=_nested(MAX_JSON_DEPTH - 4))]}),
    "trailing garbage": json.dumps({"files": [_file()]}) + " x",
    "trailing comma in files": '{"files": [' + json.dumps(_file()) + ",]}",
    "trailing comma in the object": '{"prompt": "a",}',
    "bad file, then a syntax error": '{"files": [{"file": 3}, {"file": ]}',
    "bad header, then a bad file": json.dumps({"prompt": 5, "files": [{"file": 3}]}),
    "good files, then a bad one": json.dumps({"files": [_file(0), _file(1), {"file": "x"}]}),
    "a bad file, then a bad file": json.dumps({"files": [{"results": []}, {"file": 4}]}),
    "a result twice": json.dumps({"files": [_file(0), _file(0)]}),
    "NaN": '{"cost_usd": NaN, "files": []}',
    "NaN in a file": '{"files": [' + json.dumps(_file(cost_usd=1)).replace("1}", "Infinity}") + "]}",
    "a long number": '{"files": [], "turns": ' + "9" * 5000 + "}",
    "unterminated": '{"files": [' + json.dumps(_file()),
    "empty": "  ",
    "a number": "7",
    "a second BOM": "\ufeff" + json.dumps({"files": []}),
}


@pytest.mark.parametrize("text", OTHER.values(), ids=OTHER.keys())
def test_any_other_results_text_is_read_or_refused_as_the_whole_parse_does(tmp_path, text):
    path = tmp_path / "results.json"
    path.write_text(text, "utf-8")
    try:
        whole = CompactResults.of(load_results(path))
    except InputError as exc:
        with pytest.raises(InputError) as refused:
            load_compact_results(path)
        assert str(refused.value) == str(exc)
    else:
        assert load_compact_results(path) == whole


# --------------------------------------------------------------------------- reports printed as they are made


def _report_of_many_flips(flips: int):
    """The demo's v2 -> v3-demo-2026-09 report, its flips repeated to at least `flips` of them."""
    from replay.analysis.flip_inputs import explain_flips
    from replay.runs.folder import Run

    report = explain_flips(Run(CASSETTES / "v2-demo"), Run(CASSETTES / "v3-demo-2026-09"), text_only=True)
    assert report.flips
    return report.model_copy(update={"flips": report.flips * -(-flips // len(report.flips))})


def test_the_text_diff_is_handed_on_in_pieces_that_make_the_whole_report():
    from replay.reports.plain_table import PRINTED_LINES
    from replay.reports.flips import render_text, write_text

    report = _report_of_many_flips(3 * PRINTED_LINES // 2)  # two lines each at least: three pieces' worth
    pieces: list[str] = []
    write_text(report, pieces.append)
    assert len(pieces) >= 3  # handed on as it was laid out, not held whole
    assert all(piece.endswith("\n") for piece in pieces)  # whole lines: a secret never spans two pieces
    assert "".join(pieces) == render_text(report)


def test_the_line_printer_prints_a_long_report_in_pieces_with_rich_s_characters():
    import io

    from rich.console import Console

    from replay.reports.plain_table import PRINTED_LINES, LinePrinter

    lines = [f"  docs/kb/{i:04d}.md [bold]c-{i}[/]  grounded → not_grounded  {'é' * (i % 7)}" for i in range(3 * PRINTED_LINES)]
    by_rich, by_us = io.StringIO(), io.StringIO()
    rich_console = Console(file=by_rich, width=110, no_color=True, highlight=False)
    writes: list[str] = []

    class Counted(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(text)
            return super().write(text)

    ours = Counted()
    printer = LinePrinter(Console(file=ours, width=110, no_color=True, highlight=False))
    for line in lines:
        rich_console.print(line)
        printer.print(line)
    printer.flush()
    assert ours.getvalue() == by_rich.getvalue()
    assert len(writes) >= 3


def test_a_secret_in_a_claim_is_redacted_in_the_streamed_text_diff_as_in_the_whole(tmp_path):
    from replay.secrets import registry as _secrets
    from replay.reports.flips import render_text, write_text

    report = _report_of_many_flips(1)
    secret = "sk-ant-streamed-secret-0123456789"
    first = report.flips[0]
    report.flips[0] = first.model_copy(update={"summary": f"{first.summary} {secret}", "id": f"{first.id}-{secret}"})
    _secrets.remember(secret)
    try:
        pieces: list[str] = []
        write_text(report, pieces.append)
        streamed = "".join(pieces)
        assert secret not in streamed
        assert streamed == render_text(report)
    finally:
        _secrets.forget_all()


# --------------------------------------------------------------------------- drift's table


def _drift_report(rows: int = 120):
    """A drift report shaped like a large run's: statuses, pages, notes and changed table rows repeat."""
    import random

    from replay.schema.drift import DriftClaim, DriftReport

    rng = random.Random(rows)
    row = "| gpt-4o | {} | Global Standard | East US, Sweden Central, West Europe, Japan East | {} |"
    claims = []
    for i in range(rows):
        status = rng.choice(["value-changed", "quote-gone", "page-gone", "unchecked", "unchanged", "no-page"])
        url = rng.choice(["https://learn.microsoft.com/azure/ai-services/openai/concepts/models",
                          "https://learn.microsoft.com/azure/foundry/概要", None])
        old = new = None
        note = rng.choice(["the quote is no longer on the page", "line 12 moved \x1b[31m", None])
        if status == "value-changed":
            old, new = row.format("2024-05-13", rng.choice(["GA", "préview"])), row.format("2024-11-20", "GA")
            if rng.random() < 0.3:
                old, new = "Quota: 30K TPM", rng.choice(["Quota: 50K TPM", None])
        claims.append(DriftClaim(file=f"docs/kb/{i % 9:04d}.md", id=f"c-{i}", evidence_url=url, status=status,
                                 old=old, new=new, verdict=rng.choice(["grounded", "not_grounded", None]), note=note))
    return DriftReport(run="runs/before", against="runs/after", claims=claims, at_risk=[])


def test_drift_s_table_shares_the_cells_many_rows_repeat():
    from replay.cli.drift import claims_table

    report = _drift_report()
    table = claims_table(report)
    status, page, change = table.columns[0]._cells, table.columns[3]._cells, table.columns[4]._cells
    assert len(status) > len({c.status for c in report.claims}) >= len({id(cell) for cell in status})
    assert len({id(cell) for cell in page}) < len(page)
    assert len({id(cell) for cell in change}) < len(change)


@pytest.mark.parametrize("colour", [False, True])
def test_drift_s_table_with_shared_cells_prints_what_one_of_its_own_cells_does(colour):
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from replay.cli.drift import claims_table
    from replay.reports.tables import print_table

    table = claims_table(_drift_report())
    own = Table()
    for column in table.columns:
        own.add_column(column.header, no_wrap=column.no_wrap, overflow=column.overflow, max_width=column.max_width,
                       ratio=column.ratio)
    for index, row in enumerate(table.rows):
        own.add_row(*(c._cells[index].copy() if isinstance(c._cells[index], Text) else c._cells[index]
                      for c in table.columns), end_section=row.end_section)

    def printed(t: Table) -> str:
        out = io.StringIO()
        console = Console(file=out, width=160, force_terminal=colour, no_color=not colour, highlight=False,
                          color_system="standard" if colour else None)
        print_table(console, t)
        return out.getvalue()

    assert printed(table) == printed(own)


# --------------------------------------------------------------------------- per-claim records held small


def test_drift_statuses_are_the_records_validation_makes():
    from replay.analysis.drift_inputs import run_drift
    from replay.schema.drift import DriftClaim
    from replay.runs.folder import Run

    report = run_drift(Run(CASSETTES / "v3-demo"), Run(CASSETTES / "v3-demo-2026-09"), run_name="v3-demo",
                       against_name="v3-demo-2026-09", today="20261130")
    assert len({c.status for c in report.claims}) >= 3
    for claim in report.claims:
        assert claim == DriftClaim.model_validate(claim.model_dump())
        assert claim.model_dump_json() == DriftClaim.model_validate(claim.model_dump()).model_dump_json()
    assert len({id(claim.model_fields_set) for claim in report.claims}) == 1  # one set for all


@pytest.mark.parametrize("name", ["v2-demo", "v3-demo"])
def test_grade_holds_a_run_s_claims_compact_and_lets_each_file_s_go(name):
    from replay.analysis.adjudication import run_claims
    from replay.schema.claims import ClaimRow
    from replay.runs.folder import Run

    run = Run(CASSETTES / name)
    held = run_claims(run)
    assert held and held == {key: ClaimRow.of(claim) for key, claim in Run(run.path).all_claims().items()}
    assert all(type(claim) is ClaimRow for claim in held.values())
    assert not run._batches  # no claims file's pydantic claims kept


# --------------------------------------------------------------------------- JSON, markdown and HTML in pieces


def _random_json(rng, depth=0):
    kind = rng.random()
    if depth > 3 or kind < 0.4:
        return rng.choice([None, True, False, 0, -7, 10**20, 1.5, 1e-05, 2.5e300, "", "plain", "é\u2028\x1b[31m\ud800",
                           "line\nbreak", "quote \" and \\ back", "概要"])
    if kind < 0.7:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "b", "é", "flips", "k\x07"]) + str(i): _random_json(rng, depth + 1)
            for i in range(rng.randint(0, 3))}


@pytest.mark.parametrize("seed", range(60))
def test_json_written_in_pieces_is_the_whole_dump(seed):
    import random

    from replay.files.json_text import dump_json, dump_json_pieces

    rng = random.Random(seed)
    items = [_random_json(rng) for _ in range(rng.choice([0, 1, 2, 7]))]
    data = {f"k{i}": _random_json(rng) for i in range(rng.randint(0, 4))}
    keys = list(data)
    at = rng.randint(0, len(keys))  # where the list stands among the other keys (or after them all)
    ordered = {**{k: data[k] for k in keys[:at]}, "flips": None, **{k: data[k] for k in keys[at:]}}
    pieces = list(dump_json_pieces(ordered, "flips", iter(items)))
    assert "".join(pieces) == dump_json({**ordered, "flips": items})
    assert all(piece.endswith("\n") for piece in pieces)


def _demo_reports(copies=1):
    from replay.analysis.flip_inputs import explain_flips
    from replay.runs.folder import Run

    for a, b in [("v2-demo", "v3-demo"), ("v3-demo", "v3-demo-2026-09"), ("v2-demo", "v3-demo-2026-09")]:
        report = explain_flips(Run(CASSETTES / a), Run(CASSETTES / b))
        yield report.model_copy(update={"flips": report.flips * copies})


@pytest.mark.parametrize("copies", [0, 1, 40])
def test_the_json_diff_in_pieces_is_the_dump_of_the_whole_report(copies):
    from replay.files.json_text import dump_json
    from replay.reports.flips import json_pieces, render_json

    for report in _demo_reports(copies):
        pieces = list(json_pieces(report))
        assert "".join(pieces) == render_json(report) == dump_json(report.model_dump(mode="json"))
        assert all(piece.endswith("\n") for piece in pieces)
        assert len(pieces) >= min(len(report.flips), 2)


@pytest.mark.parametrize("seed", range(20))
def test_parts_joined_in_pieces_are_the_parts_joined(seed):
    import random

    from replay.reports.flips import _joined

    rng = random.Random(seed)
    parts = [rng.choice(["", "a", "two\nlines", "x" * rng.randint(0, 70000), "é→"]) for _ in range(rng.randint(0, 1200))]
    pieces = list(_joined(iter(parts)))
    assert "".join(pieces) == "\n".join(parts)
    assert pieces and all(piece.startswith("\n") for piece in pieces[1:])  # cut before a line break


def test_the_markdown_and_html_diffs_are_made_flip_by_flip():
    from replay.reports.flips_html import flip_article, html_pieces, render_html
    from replay.reports.flips_markdown import markdown_pieces, render_markdown

    for report in _demo_reports(300):
        html = list(html_pieces(report))
        assert len(html) > 3 and "".join(html) == render_html(report)
        assert all(flip_article(f) in "".join(html) for f in report.flips[:5])
        markdown = list(markdown_pieces(report))
        assert len(markdown) > 3 and "".join(markdown) == render_markdown(report)


def test_a_secret_is_redacted_from_a_report_written_in_pieces_as_from_the_whole(tmp_path):
    from replay.secrets import registry as _secrets
    from replay.files.atomic import atomic_write_chunks, atomic_write_text
    from replay.reports.flips_html import html_pieces, render_html
    from replay.reports.flips import json_pieces, render_json
    from replay.reports.flips_markdown import markdown_pieces, render_markdown

    secret = "sk-ant-pieces-secret-0123456789"
    report = next(_demo_reports(50))
    first = report.flips[0]
    report.flips[0] = first.model_copy(update={"summary": f"{first.summary} {secret}",
                                               "evidence": first.evidence.model_copy(update={"claim": f"key {secret}"})})
    _secrets.remember(secret)
    try:
        for pieces, whole in ((json_pieces, render_json), (markdown_pieces, render_markdown), (html_pieces, render_html)):
            atomic_write_chunks(tmp_path / "pieces", pieces(report))
            atomic_write_text(tmp_path / "whole", whole(report))
            written = (tmp_path / "pieces").read_text("utf-8")
            assert written == (tmp_path / "whole").read_text("utf-8") and secret not in written
    finally:
        _secrets.forget_all()


def test_a_record_in_pieces_is_its_whole_dump_extra_fields_and_all():
    from replay.files.json_text import dump_json, model_json_pieces
    from replay.schema.results import ResultsFile

    for name in DEMO_RUNS:
        results = load_results(CASSETTES / name)
        opened = ResultsFile.model_validate({**results.model_dump(mode="json"), "zz_extra": [1, "é"], "aa_extra": None})
        for record in (results, opened):
            assert "".join(model_json_pieces(record, "files")) == dump_json(record.model_dump(mode="json"))
    report = _drift_report(300)
    pieces = list(model_json_pieces(report, "claims"))
    assert len(pieces) > 300 and "".join(pieces) == dump_json(report.model_dump(mode="json"))
