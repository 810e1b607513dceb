"""`judge-replay diff`: formats, --out, --gold, --with, --confirm, exit codes."""

from __future__ import annotations

import json

import pytest

from factories import write_json
from replay._cli.main import main
from test_flips import FILE, MINI, MODELS_URL, V2, V3, change, learn_page, result, run

LOWER = {"id": "models-003", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """v2 -> v3 with the models page changed between them: one prompt flip, one prompt+page flip.
    Runs in tmp_path, so the repository's own `[tool.judge-replay] gold` is not picked up."""
    monkeypatch.chdir(tmp_path)
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    claims = [LOWER, MINI]
    a = run(tmp_path / "runs" / "v2-demo", "v2", V2,
            [result("models-003", "grounded"), result("models-010", "grounded", c["before"].strip())],
            {MODELS_URL: before}, claims=claims)
    b = run(tmp_path / "runs" / "v3-demo", "v3", V3,
            [result("models-003", "not_grounded", rule="R1"), result("models-010", "not_grounded", c["after"].strip())],
            {MODELS_URL: after}, claims=claims)
    gold = write_json(tmp_path / "gold.json", {"items": [{"file": FILE, "id": "models-003", "label": "outdated"},
                                                         {"file": FILE, "id": "models-010", "label": "correct"}]})
    return a, b, gold


def test_json_has_specs_shape(runs, capsys):
    a, b, gold = runs
    assert main(["diff", str(a.path), str(b.path), "--format", "json", "--gold", str(gold)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data)[:4] == ["run_a", "run_b", "paired", "flips"]
    assert data["run_a"] == str(a.path) and data["paired"] == 2 and len(data["flips"]) == 2
    for flip in data["flips"]:
        assert {"file", "id", "verdict_a", "verdict_b", "primary_cause", "causes", "gold", "right", "evidence"} <= set(flip)
    by_id = {f["id"]: f for f in data["flips"]}
    assert by_id["models-010"]["primary_cause"] == "prompt+page" and by_id["models-010"]["right"] == "a"
    assert by_id["models-003"]["right"] == "b" and by_id["models-003"]["gold"] == "outdated"
    assert data["counts"] == {"prompt": 1, "prompt+page": 1} or data["counts"] == {"prompt+page": 2}


def test_text_groups_by_cause_and_counts(runs, capsys):
    a, b, _ = runs
    assert main(["diff", str(a.path), str(b.path)]) == 0
    out = capsys.readouterr().out
    assert "prompt+page (" in out and "models-010" in out and "grounded → not_grounded" in out
    assert "2 paired · 2 flipped" in out
    assert "judge-replay judge" not in out  # commands only with --confirm


def test_confirm_prints_the_record_commands(runs, capsys):
    a, b, _ = runs
    assert main(["diff", str(a.path), str(b.path), "--confirm", "--no-discover"]) == 0
    out = capsys.readouterr().out
    assert "--prompt v2 --claims claims/docs_azure-openai-models.md.yaml.json" in out
    assert f"--mode record --pages-from {b.path}" in out and f"--pages-from {a.path}" in out


def test_markdown_to_file_has_table_and_fenced_diff(runs, tmp_path, capsys):
    a, b, gold = runs
    out_file = tmp_path / "report" / "flips.md"
    assert main(["diff", str(a.path), str(b.path), "--format", "markdown", "--out", str(out_file),
                 "--gold", str(gold)]) == 0
    text = out_file.read_text()
    assert "| claim | A | B | cause | gold | why |" in text
    assert "```diff\n--- models in v2-demo" in text and "+| `gpt-4.1-mini` (2025-04-14)" in text
    assert "wrote" in capsys.readouterr().err


def test_with_run_confirms(runs, tmp_path, capsys):
    a, b, _ = runs
    c = change(1)
    x = run(tmp_path / "elsewhere" / "x", "v2", V2,
            [result("models-003", "grounded"), result("models-010", "not_grounded")],
            {MODELS_URL: learn_page("after", c["file"])}, claims=[LOWER, MINI])
    assert main(["diff", str(a.path), str(b.path), "--format", "json", "--with", str(x.path)]) == 0
    flips = {f["id"]: f for f in json.loads(capsys.readouterr().out)["flips"]}
    assert flips["models-010"]["evidence"]["confirmed_cause"] == "page"
    assert flips["models-003"]["evidence"]["confirmed_cause"] == "prompt"


def test_bad_input_exits_2(runs, tmp_path, capsys):
    a, b, _ = runs
    assert main(["diff", str(a.path), str(tmp_path / "missing")]) == 2
    assert "missing: no such run folder" in capsys.readouterr().err
    bad = tmp_path / "gold.json"
    bad.write_text("{nope")
    assert main(["diff", str(a.path), str(b.path), "--gold", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "gold.json: not valid JSON" in err and "Traceback" not in err
    assert main(["diff", str(a.path), str(b.path), "--format", "pdf"]) == 2


def test_gold_defaults_to_the_project_setting_when_the_file_exists(runs, tmp_path, capsys):
    a, b, gold = runs
    (tmp_path / "pyproject.toml").write_text('[tool.judge-replay]\ngold = "missing-gold.json"\n')
    assert main(["diff", str(a.path), str(b.path), "--format", "json"]) == 0
    assert all(f["gold"] is None for f in json.loads(capsys.readouterr().out)["flips"])
    (tmp_path / "pyproject.toml").write_text(f'[tool.judge-replay]\ngold = "{gold.name}"\n')
    assert main(["diff", str(a.path), str(b.path), "--format", "json"]) == 0
    flips = {f["id"]: f for f in json.loads(capsys.readouterr().out)["flips"]}
    assert flips["models-003"]["gold"] == "outdated" and flips["models-003"]["right"] == "b"
