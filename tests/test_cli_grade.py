"""`judge-replay grade` through the real entry point: JSON keys, formats, bad files, settings, freezing."""

import json

import pytest

from factories import write_json, write_run
from replay._cli.main import main

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
        assert {"precision", "recall", "f1", "accuracy", "tp", "fp", "fn", "tn", "errors", "confusion"} <= set(scores)
        assert all(isinstance(scores[k], int) for k in ("tp", "fp", "fn", "tn"))
        assert all(scores[k] is None or 0 <= scores[k] <= 1 for k in ("precision", "recall", "f1", "accuracy"))
    # v3: a-1 TP, a-2 TN, a-3 no result -> FN. P = 1/1, R = 1/2, F1 = 2/(2+0+1) = 2/3, accuracy 2/3
    assert (out["tp"], out["fp"], out["fn"], out["tn"]) == (1, 0, 1, 1)
    assert (out["precision"], out["recall"], out["f1"], out["accuracy"]) == (1.0, 0.5, 2 / 3, 2 / 3)
    assert out["unmatched_gold"] == [{"file": "docs/a.md", "id": "a-3"}]
    assert out["confusion"]["not_grounded"] == {"grounded": 0, "not_grounded": 1, "source_silent": 0, "none": 1}
    # the baseline flagged nothing: P undefined, so the gate says no and says why
    assert out["baseline"]["precision"] is None
    assert out["gate"]["adopt"] is False and "baseline precision is undefined" in out["gate"]["reason"]
    assert isinstance(out["gate"]["mcnemar_p"], float) and out["gate"]["only_candidate_right"] == 1


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
