"""`judge-replay grade` through the real entry point: JSON keys, formats, bad files, settings, freezing."""

import json

import pytest

from factories import write_json, write_run
from replay.cli.main import main

URL = "https://learn.microsoft.com/en-us/azure/models"
PAGE = "# Models\n\n| model | context |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n| gpt-4o | 128,000 |\n"
CLAIM = "GPT-4.1 offers a 200k+ token context window."


def _file(v1, v2):
    return [{"file": "docs/a.md", "results": [
        {"id": "a-1", "judge_verdict": v1, "evidence_url": URL, "evidence_quote": "| gpt-4.1 | 1,047,576 |",
         "reason": "the page states 1,047,576", "quote_verified": True, "claim": CLAIM, "claim_type": "version"},
        {"id": "a-2", "judge_verdict": v2, "evidence_url": URL, "evidence_quote": "", "reason": "",
         "claim": "GPT-4o offers 128k context.", "claim_type": "version"},
    ]}]


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "runs" / "v2", prompt="v2", results=_file("grounded", "grounded"),
              pages={"docs/a.md": {URL: PAGE}})
    write_run(tmp_path / "runs" / "v3", prompt="v3", results=_file("not_grounded", "grounded"),
              pages={"docs/a.md": {URL: PAGE}})
    write_json(tmp_path / "gold.json", {"name": "g", "items": [
        {"file": "docs/a.md", "id": "a-1", "label": "outdated", "mode": "FN2", "note": "model page states 1,047,576"},
        {"file": "docs/a.md", "id": "a-2", "label": "correct"},
        {"file": "docs/a.md", "id": "a-3", "label": "wrong"}]})
    return tmp_path


def test_grade_json_keys_and_types(project, capsys):
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for scores in (out, out["baseline"]):
        assert {"precision", "recall", "f1", "accuracy", "tp", "fp", "fn", "tn", "no_verdict", "errors",
                "confusion", "stand_ins"} <= set(scores)
        assert all(isinstance(scores[k], int) for k in ("tp", "fp", "fn", "tn", "no_verdict"))
        assert all(scores[k] is None or 0 <= scores[k] <= 1 for k in ("precision", "recall", "f1", "accuracy"))
    # v3: a-1 TP, a-2 TN, a-3 no result -> no verdict, FN. P = 1/1, R = 1/2, F1 = 2/(2+0+1) = 2/3, accuracy 2/3
    assert (out["tp"], out["fp"], out["fn"], out["tn"], out["no_verdict"]) == (1, 0, 1, 1, 1)
    assert out["stand_ins"] == [] and out["notes"] == []  # recorded against the real services
    assert (out["precision"], out["recall"], out["f1"], out["accuracy"]) == (1.0, 0.5, 2 / 3, 2 / 3)
    assert out["unmatched_gold"] == [{"file": "docs/a.md", "id": "a-3"}]
    assert out["confusion"]["not_grounded"] == {"grounded": 0, "not_grounded": 1, "source_silent": 0, "none": 1}
    # both versions lack a verdict for a-3: no comparison. a-3 is not in the runs' claims files, so no
    # --retry-failed command (it would find nothing failed); the reason says what the claim is instead
    assert out["baseline"]["precision"] is None and out["baseline"]["no_verdict"] == 1
    gate = out["gate"]
    assert gate["adopt"] is False and gate["within_noise"] is None
    assert gate["reason"].startswith("do not adopt: the candidate has 1 claim without a verdict out of 3")
    assert "and the baseline has 1 claim without a verdict out of 3" in gate["reason"]
    never = ("are not failed in runs/{}: claims it never judged (the gold set names claims its claims files do not "
             "hold), or results that are not the run's own")
    assert gate["reason"].endswith(
        "; to re-record the candidate's claims without a verdict: the claims without a verdict in docs/a.md "
        + never.format("v3") + "; to re-record the baseline's claims without a verdict: the claims without a "
        "verdict in docs/a.md " + never.format("v2"))
    assert isinstance(gate["mcnemar_p"], float) and gate["only_candidate_right"] == 1


def test_grade_text_shows_the_page_region(project, capsys):
    assert main(["grade", "runs/v2", "--gold", "gold.json"]) == 0
    out = capsys.readouterr().out
    assert "P n/a  R 0.000" in out and "FN: gold outdated (expects not_grounded), judge grounded" in out
    assert CLAIM in out and "mode FN2" in out and "found in the recorded page" in out
    assert ">    5 | | gpt-4.1 | 1,047,576 |" in out


def test_grade_markdown_to_a_file(project, capsys):
    assert main(["grade", "runs/v2/results.json", "--gold", "gold.json", "--markdown", "--out", "report.md"]) == 0
    text = (project / "report.md").read_text()
    assert text.startswith("## Grade: `runs/v2/results.json (prompt v2 · model claude-test)` against `gold.json`")
    assert "| not_grounded | 1 | 0 | 0 | 1 |" in text  # confusion row: a-1 judged grounded, a-3 no verdict
    assert ("```text\n     2 |\n     3 | | model | context |\n     4 | |---|---|\n"
            ">    5 | | gpt-4.1 | 1,047,576 |") in text
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("which", ["gold", "results", "baseline"])
def test_bad_files_exit_2_naming_the_file(project, capsys, which):
    bad = write_json(project / "bad.json", {"items": [{"file": "a", "id": "1", "label": "maybe"}]} if which == "gold"
                     else {"nothing": []})
    args = {"gold": ["grade", "runs/v3", "--gold", "bad.json"],
            "results": ["grade", "bad.json", "--gold", "gold.json"],
            "baseline": ["grade", "runs/v3", "--gold", "gold.json", "--baseline", "bad.json"]}[which]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"judge-replay: {bad.name}:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_missing_file_and_missing_gold(project, capsys):
    assert main(["grade", "nope.json", "--gold", "gold.json"]) == 2
    assert "nope.json: no such file" in capsys.readouterr().err
    assert main(["grade", "runs/v3"]) == 2
    assert "no gold set" in capsys.readouterr().err


def test_gold_from_project_settings(project, capsys, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.judge-replay]\ngold = "gold.json"\n')
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    assert main(["grade", "../runs/v3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gold"] == "../gold.json"


def test_freeze_a_run_and_a_results_file(project, capsys):
    assert main(["grade", "runs/v2", "--freeze"]) == 0
    assert "froze runs/v2/results.json" in capsys.readouterr().err
    for name in ("results.json", "run.json"):
        assert json.loads((project / "runs" / "v2" / name).read_text())["frozen"] is True
    results = json.loads((project / "runs" / "v2" / "results.json").read_text())
    assert list(results)[:5] == ["prompt", "prompt_sha256", "model", "recorded_at", "frozen"]
    # freezing again changes nothing; grading a frozen file says so
    assert main(["grade", "runs/v2", "--freeze", "--gold", "gold.json", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and json.loads(captured.out)["tp"] == 0
    assert main(["grade", "runs/v2", "--unfreeze"]) == 0
    assert json.loads((project / "runs" / "v2" / "run.json").read_text())["frozen"] is False
    bare = write_json(project / "bare.json", _file("grounded", "grounded"))
    assert main(["grade", str(bare), "--freeze"]) == 2
    assert "bare.json: cannot be frozen" in capsys.readouterr().err


def test_a_folder_holding_only_a_results_json_is_graded_and_frozen(project, capsys):
    (project / "hand").mkdir()
    write_json(project / "hand" / "results.json", {"files": _file("not_grounded", "grounded")})
    assert main(["grade", "hand", "--gold", "gold.json", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["tp"], out["fp"], out["fn"], out["tn"]) == (1, 0, 1, 1)
    assert out["errors"][0]["page_note"] == "no recorded pages: the results are not a run folder (give --run RUN)"
    assert main(["grade", "hand", "--freeze"]) == 0
    assert "froze hand/results.json" in capsys.readouterr().err
    assert json.loads((project / "hand" / "results.json").read_text())["frozen"] is True
    (project / "empty").mkdir()
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "empty"]) == 2
    assert capsys.readouterr().err == "judge-replay: empty: run folder has no results.json\n"


HOSTILE = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \x1b[2J\u202e<script>alert(1)</script> a|b \x9b31m"
HOSTILE_PAGE = "# Models\n\n| model | context |\n|---|---|\n| gpt-4.1 | 1,047,576 \x1b[31m<b>red</b> |\n"


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """A run and a gold set whose every data string carries terminal controls, HTML and pipes."""
    monkeypatch.chdir(tmp_path)
    quote = "| gpt-4.1 | 1,047,576 \x1b[31m<b>red</b> |"
    write_run(tmp_path / "runs" / "x", results=[{"file": "docs/a\x1b[1m.md", "results": [
        {"id": "a-1\x07", "judge_verdict": "grounded", "evidence_url": URL, "evidence_quote": quote,
         "reason": HOSTILE, "quote_verified": True, "claim": HOSTILE, "claim_type": "tpm\x1b[5m|<i>"}]}],
        pages={"docs/a\x1b[1m.md": {URL: HOSTILE_PAGE}})
    write_json(tmp_path / "gold.json", {"name": "g\x1b[5m<u>", "items": [
        {"file": "docs/a\x1b[1m.md", "id": "a-1\x07", "label": "outdated", "mode": "FN2|\x1b[2J<b>", "note": HOSTILE}]})
    return tmp_path


def _no_controls(text):
    return not any(c in text for c in ("\x1b", "\x07", "\x9b", "\u202e"))


def test_terminal_output_shows_data_never_controls(hostile, capsys):
    assert main(["grade", "runs/x", "--gold", "gold.json", "--baseline", "runs/x"]) == 0
    out = capsys.readouterr().out
    assert _no_controls(out)
    assert "\\x1b]8;;https://evil.example\\x07click" in out and "\\x9b31m" in out and "\\u202e" in out
    assert "a-1\\x07" in out and "tpm\\x1b[5m|<i>" in out and "FN2|\\x1b[2J<b>" in out  # ids and table cells
    assert "1,047,576 \\x1b[31m<b>red</b>" in out  # the page region


def test_markdown_output_escapes_html_pipes_and_controls(hostile, capsys):
    assert main(["grade", "runs/x", "--gold", "gold.json", "--baseline", "runs/x", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert _no_controls(md)
    assert "<script>" not in md and "<b>" not in md.split("```text")[0] and "<i>" not in md and "<u>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md
    # table cells: pipes escaped, and the `[` of a link too
    assert "| tpm\\x1b\\[5m\\|&lt;i&gt; |" in md and "| FN2\\|\\x1b\\[2J&lt;b&gt; |" in md
    # the page region is a fenced block: shown as text, controls made visible, HTML left as the page has it
    assert ">    5 | | gpt-4.1 | 1,047,576 \\x1b[31m<b>red</b> |" in md


def test_help_ends_with_an_example(capsys):
    for command in ("grade", "bakeoff"):
        assert main([command, "--help"]) == 0
        lines = capsys.readouterr().out.rstrip().splitlines()
        assert lines[-1].strip().startswith(f"judge-replay {command} "), command
        assert any(line.strip() == "Examples:" for line in lines[-4:]), command


def _with_usage(run_dir, model, usage, batch_ids=None):
    """Give a run's results a model and token usage (as a run recorded before costs were kept)."""
    results = json.loads((run_dir / "results.json").read_text())
    results["model"] = model
    results["files"][0]["usage"] = usage
    (run_dir / "results.json").write_text(json.dumps(results))
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["model"], manifest["batch_ids"] = model, batch_ids
    (run_dir / "run.json").write_text(json.dumps(manifest))


def test_grade_shows_each_runs_cost_in_every_format(project, capsys):
    # v3: 1,000,000 input at $2 + 100,000 output at $10 = $3.00, through batches: $1.50; v2: a model with no price
    _with_usage(project / "runs" / "v3", "claude-sonnet-5-5", {"input_tokens": 1_000_000, "output_tokens": 100_000},
                batch_ids=["msgbatch_1"])
    _with_usage(project / "runs" / "v2", "my-own-model", {"input_tokens": 10})
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cost_usd"] == pytest.approx(1.5) and out["baseline"]["cost_usd"] is None
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "runs/v2"]) == 0
    text = capsys.readouterr().out
    assert "cost: $1.5000 (Message Batches, half price)" in text and "cost: unknown: the model has no price (add it" in text
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--markdown"]) == 0
    assert "cost: $1.5000 (Message Batches, half price)" in capsys.readouterr().out

    # [tool.judge-replay.prices] prices the model that had none; a bad table is one line naming the file
    (project / "pyproject.toml").write_text('[tool.judge-replay.prices]\nmy-own-model = {input = 1000, output = 1}\n')
    assert main(["grade", "runs/v2", "--gold", "gold.json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost_usd"] == pytest.approx(0.01)
    (project / "pyproject.toml").write_text('[tool.judge-replay.prices]\nmy-own-model = {input = -1, output = 1}\n')
    assert main(["grade", "runs/v2", "--gold", "gold.json", "--json"]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml: [tool.judge-replay] prices.my-own-model.input must be a number from 0 to 1,000,000" in err
    assert len(err.strip().splitlines()) == 1
    # TOML has inf and nan: neither is a price (a cost of NaN would be invalid JSON); nor is a price so large
    # that a run's cost is too large for a number (it would show "unknown": a typo, not a price)
    for bad in ("inf", "nan", "-inf", "1e308", "1000001"):
        (project / "pyproject.toml").write_text(f'[tool.judge-replay.prices]\nmy-own-model = {{input = 1, output = {bad}}}\n')
        assert main(["grade", "runs/v2", "--gold", "gold.json", "--json"]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and "NaN" not in captured.err and "Traceback" not in captured.err
        assert captured.err.strip().splitlines() == [
            f"judge-replay: pyproject.toml: [tool.judge-replay] prices.my-own-model.output must be a number from 0 to "
            f"1,000,000 (USD per million tokens), not {float(bad) if '.' in bad or 'e' in bad or 'n' in bad else int(bad)!r}"]


def test_a_price_override_reprices_every_command_alike(project, capsys):
    # v3 was recorded at $3.00 (1,000,000 input at $2 + 100,000 output at $10, both stored); an override of
    # $1 input and $4 output makes it $1.40 in grade and cassettes list alike: recorded usage, current table
    _with_usage(project / "runs" / "v3", "claude-sonnet-5-5", {"input_tokens": 1_000_000, "output_tokens": 100_000})
    for name in ("results.json", "run.json"):
        stored = json.loads((project / "runs" / "v3" / name).read_text())
        stored["cost_usd"] = 3.0
        for entry in stored.get("files", []) + stored.get("claims", []):
            entry["cost_usd"] = 3.0
        (project / "runs" / "v3" / name).write_text(json.dumps(stored))
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost_usd"] == pytest.approx(3.0)
    (project / "pyproject.toml").write_text('[tool.judge-replay.prices]\nclaude-sonnet-5-5 = {input = 1, output = 4}\n')
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost_usd"] == pytest.approx(1.4)
    assert main(["grade", "runs/v3", "--gold", "gold.json"]) == 0
    assert "cost: $1.4000" in capsys.readouterr().out
    assert main(["cassettes", "list", "runs", "--json"]) == 0
    costs = {r["run"]: r["cost_usd"] for r in json.loads(capsys.readouterr().out)}
    assert costs["v3"] == pytest.approx(1.4)


def _judged(project, run, claims):
    """The claims file `run` judged, written where its manifest says, with the sha256 a recording keeps."""
    import hashlib

    manifest = json.loads((project / "runs" / run / "run.json").read_text())
    entry = manifest["claims"][0]
    path = project / "runs" / run / entry["path"]
    write_json(path, {"file": "docs/a.md", "claims": claims})
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (project / "runs" / run / "run.json").write_text(json.dumps(manifest))


CLAIMS = [{"id": "a-1", "claim": CLAIM, "claim_type": "version", "evidence_url": URL},
          {"id": "a-2", "claim": "GPT-4o offers 128k context.", "claim_type": "version", "evidence_url": URL}]


def test_the_gate_adopts_nothing_when_the_two_runs_judged_different_claims(project, capsys):
    write_json(project / "gold2.json", {"name": "g", "items": [{"file": "docs/a.md", "id": "a-1", "label": "outdated"},
                                                              {"file": "docs/a.md", "id": "a-2", "label": "correct"}]})
    _judged(project, "v2", CLAIMS)
    _judged(project, "v3", CLAIMS)
    assert main(["grade", "runs/v3", "--gold", "gold2.json", "--baseline", "runs/v2", "--json"]) == 0
    assert "different claims" not in json.loads(capsys.readouterr().out)["gate"]["reason"]
    # the same claims written another way (indented): still the same claims
    path = project / "runs" / "v3" / json.loads((project / "runs" / "v3" / "run.json").read_text())["claims"][0]["path"]
    path.write_text(json.dumps({"file": "docs/a.md", "claims": CLAIMS}, indent=4))
    _judged(project, "v3", CLAIMS)
    assert main(["grade", "runs/v3", "--gold", "gold2.json", "--baseline", "runs/v2", "--json"]) == 0
    assert "different claims" not in json.loads(capsys.readouterr().out)["gate"]["reason"]
    # a claim added that the gold set does not hold: the graded claims are the same
    _judged(project, "v3", [*CLAIMS, {"id": "a-9", "claim": "New since.", "claim_type": "version"}])
    assert main(["grade", "runs/v3", "--gold", "gold2.json", "--baseline", "runs/v2", "--json"]) == 0
    assert "different claims" not in json.loads(capsys.readouterr().out)["gate"]["reason"]
    # a gold claim one run did not judge (dropped from its claims file): not the same claims either
    _judged(project, "v3", [CLAIMS[0]])
    assert main(["grade", "runs/v3", "--gold", "gold2.json", "--baseline", "runs/v2", "--json"]) == 0
    assert "judged different claims in 1 claims file" in json.loads(capsys.readouterr().out)["gate"]["reason"]
    # a claim edited between the runs: P and R no longer compare the prompts
    _judged(project, "v3", [{**CLAIMS[0], "claim": "GPT-4.1 offers a 1M token context window."}, CLAIMS[1]])
    assert main(["grade", "runs/v3", "--gold", "gold2.json", "--baseline", "runs/v2", "--json"]) == 0
    gate = json.loads(capsys.readouterr().out)["gate"]
    assert gate["adopt"] is False and gate["within_noise"] is None
    assert gate["reason"].startswith("do not adopt: the two runs judged different claims in 1 claims file (docs/a.md)")
    # and what else stands in the way is said too, with how to fix it: here a claim its conversation left
    # without a verdict
    results = json.loads((project / "runs" / "v3" / "results.json").read_text())
    results["files"][0]["results"][1].update(judge_verdict=None, error="API error 529")
    (project / "runs" / "v3" / "results.json").write_text(json.dumps(results))
    assert main(["grade", "runs/v3", "--gold", "gold2.json", "--baseline", "runs/v2", "--json"]) == 0
    reason = json.loads(capsys.readouterr().out)["gate"]["reason"]
    assert reason.startswith("do not adopt: the two runs judged different claims in 1 claims file (docs/a.md)")
    assert "; also the candidate has 1 claim without a verdict out of 2 (" in reason
    assert "; to re-record the candidate's claims without a verdict: judge-replay judge --prompt v3 " in reason


def test_names_spelt_in_another_unicode_form_pair_all_the_same(tmp_path, monkeypatch, capsys):
    """A gold set written on a Mac may spell `modèles` decomposed (NFD) where the results compose it
    (NFC): the same claims, graded as such, with no claim left without a verdict."""
    import unicodedata

    monkeypatch.chdir(tmp_path)
    composed = "docs/modèles.md"
    write_json(tmp_path / "results.json", {"files": [{"file": composed, "results": [
        {"id": "m-1", "judge_verdict": "not_grounded"}, {"id": "m-2", "judge_verdict": "grounded"}]}]})
    write_json(tmp_path / "gold.json", {"name": "g", "items": [
        {"file": unicodedata.normalize("NFD", composed), "id": "m-1", "label": "outdated"},
        {"file": unicodedata.normalize("NFD", composed), "id": "m-2", "label": "correct"}]})
    assert main(["grade", "results.json", "--gold", "gold.json", "--json"]) == 0
    out, err = capsys.readouterr()
    scores = json.loads(out)
    assert (scores["tp"], scores["tn"], scores["no_verdict"], scores["precision"], scores["recall"]) == (1, 1, 0, 1.0, 1.0)
    assert "no result" not in err and "no gold item" not in err


def test_a_gold_set_far_larger_than_the_run_is_summarised_in_text_and_listed_whole_in_json(project, capsys):
    # a gold set for a whole knowledge base, graded against a run of one file: 120 gold claims of 60 files
    # the run never judged. Text and markdown name the first 50 of each list and say how many more; they
    # adjudicate only what the results hold (a-1, a-3 has no result and no panel); --json lists every one
    items = [{"file": "docs/a.md", "id": "a-1", "label": "correct"}, {"file": "docs/a.md", "id": "a-3", "label": "wrong"}]
    items += [{"file": f"docs/x{i // 2}.md", "id": f"x{i}", "label": "correct"} for i in range(120)]
    write_json(project / "big.json", {"name": "kb", "items": items})
    assert main(["grade", "runs/v3", "--gold", "big.json"]) == 0
    text = capsys.readouterr().out
    assert "121 gold item(s) have no result (graded as no verdict): docs/a.md:a-3, docs/x0.md:x0," in text
    assert "docs/x24.md:x48, ... and 71 more\n" in text and "x49" not in text.split("without a verdict")[0]
    assert "  ... and 11 more files (--json lists every claim)" in text  # 61 files without a verdict, 50 named
    assert "Disagreements with the gold set (122)" in text
    assert "(121 of them: gold claims the results do not hold, listed above, with nothing more to show)" in text
    assert "docs/a.md · a-1 — FP" in text and "· a-3 —" not in text and "· x0 —" not in text
    assert main(["grade", "runs/v3", "--gold", "big.json", "--markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "and 71 more" in markdown and "a-1 — FP" in markdown and "· a-3 —" not in markdown
    assert main(["grade", "runs/v3", "--gold", "big.json", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["unmatched_gold"]) == 121 and len(out["errors"]) == 122 and out["no_verdict"] == 121
