"""`judge-replay diff`: formats, --out, --gold, --with, --confirm, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import parse_printed_command, write_json
from replay.cli.main import main
from replay.reports.flips import render_json
from replay.schema.flips import FlipReport
from core.test_flips import FILE, MINI, MODELS_URL, V2, V3, change, learn_page, result, run
from locations import REPO

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
    commands = [line.strip() for line in out.splitlines() if line.strip().startswith("judge-replay judge")]
    assert len(commands) == 2
    assert "--prompt v2 --claims runs/v2-demo/claims/docs_azure-openai-models.md.yaml.json" in commands[0]
    assert f"--pages-from {b.path}" in commands[0] and f"--pages-from {a.path}" in commands[1]
    for command in commands:  # each parses with the real CLI and names files that exist where it was printed
        params = parse_printed_command(command)
        assert params["mode"] == "record" and all(Path(p).is_file() for p in params["claims"])
        assert Path(params["pages_from"]).is_dir() and not Path(params["run_dir"]).exists()


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


def test_planted_controls_and_html_in_the_data_never_reach_the_terminal_or_the_markdown_raw(tmp_path, capsys):
    planted = "\x1b]0;owned\x07\x1b[2J"
    cid = f"x-1{planted}"
    claim = {"id": cid, "claim": f"<img src=x onerror=alert(1)> gpt-x has 1,000 tokens {planted}.",
             "claim_type": "version", "evidence_url": MODELS_URL}
    old = f"# P\n\n| model | context |\n|---|---|\n| gpt-x | 1,000 {planted} |\n"
    new = old.replace("1,000", "2,000")
    a = run(tmp_path / "a", "v3", V3, [result(cid, "grounded", f"| gpt-x | 1,000 {planted} |")], {MODELS_URL: old},
            claims=[claim])
    b = run(tmp_path / "b", "v3", V3, [result(cid, "not_grounded")], {MODELS_URL: new}, claims=[claim])
    for fmt in ("text", "markdown"):
        assert main(["diff", str(a.path), str(b.path), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "x-1" in out and "\x1b" not in out and "\x07" not in out, fmt
        assert "\\x1b]0;owned\\x07" in out, fmt
    assert "&lt;img src=x onerror=alert(1)&gt;" in out and "<img" not in out  # the markdown of the last round


def test_out_given_a_folder_is_a_usage_error(runs, tmp_path, capsys):
    a, b, _ = runs
    assert main(["diff", str(a.path), str(b.path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "Traceback" not in err


def test_runs_made_against_the_stand_ins_are_marked_in_every_format(runs, tmp_path, capsys):
    a, b, _ = runs
    manifest = json.loads((b.path / "run.json").read_text())
    (b.path / "run.json").write_text(json.dumps({**manifest, "stand_ins": ["learn", "model"],
                                                 "anthropic_base_url": "http://127.0.0.1:8932"}))
    note = "runs used the local stand-in judge (test equipment), not Claude: runs/v3-demo"
    for fmt in ("text", "markdown", "json", "html"):
        assert main(["diff", str(a.path), "runs/v3-demo", "--format", fmt, "--confirm", "--no-discover"]) == 0
        out = capsys.readouterr().out
        assert note in out, fmt
        assert "pages came from the local Learn stand-in (test equipment), not learn.microsoft.com: runs/v3-demo" in out
    report = json.loads(main(["diff", str(a.path), "runs/v3-demo", "--format", "json"]) == 0 and
                        capsys.readouterr().out)
    assert report["runs"]["b"]["stand_ins"] == ["learn", "model"] and report["runs"]["a"]["stand_ins"] == []
    # the controlled run that uses B's prompt is recorded against B's model endpoint: the stand-in's
    crossed = next(c for c in report["confirm_commands"] if "--prompt v3" in c)
    assert parse_printed_command(crossed)["anthropic_base_url"] == "http://127.0.0.1:8932"


def test_a_failed_conversation_is_no_verdict_in_every_format(runs, capsys):
    a, b, gold = runs
    error = "the answer was cut off (stop_reason max_tokens)"
    results = json.loads((b.path / "results.json").read_text())
    for fr in results["files"]:
        fr["error"] = error
        fr["results"] = [{"id": r["id"], "error": error} for r in fr["results"]]
    write_json(b.path / "results.json", results)
    assert main(["diff", str(a.path), str(b.path), "--format", "json", "--gold", str(gold)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(f["id"], f["verdict_b"], f["primary_cause"], f["evidence"]["no_verdict"]) for f in data["flips"]] == [
        ("models-003", None, "unknown", {"side": "b", "error": error}),
        ("models-010", None, "unknown", {"side": "b", "error": error})]
    assert data["counts"] == {"unknown": 2}
    assert main(["diff", str(a.path), str(b.path)]) == 0
    text = capsys.readouterr().out
    assert "models-003  grounded → no verdict" in text and f"unknown: no verdict in B: {error}" in text
    assert main(["diff", str(a.path), str(b.path), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| grounded | no verdict | **unknown** |" in markdown and "| none |" not in markdown


def test_an_unreadable_sibling_folder_is_skipped_with_a_note_in_every_format(runs, tmp_path, capsys):
    """A broken run folder beside the two runs (results.json not JSON; run.json not JSON) never fails
    the diff: discovery leaves it out and every format says so in one line."""
    a, b, _ = runs
    broken = run(tmp_path / "runs" / "v2-broken", "v2", V2, [result("models-003", "grounded")], {}, claims=[LOWER])
    (broken.path / "results.json").write_text("{not json", "utf-8")
    (tmp_path / "runs" / "half").mkdir()
    (tmp_path / "runs" / "half" / "run.json").write_text("[", "utf-8")
    for fmt in ("text", "markdown", "json", "html"):
        assert main(["diff", str(a.path), str(b.path), "--format", fmt]) == 0, fmt
        out = capsys.readouterr().out
        assert "skipped 2 sibling run folder(s) that cannot be read" in out, fmt
        assert "v2-broken/results.json: not valid JSON" in out and "half/run.json" in out, fmt
        if fmt == "json":
            [note] = [n for n in json.loads(out)["notes"] if n.startswith("skipped")]
            assert "\n" not in note


def test_confirm_on_the_bundled_runs_records_outside_the_project_and_says_how_to_compare(capsys, monkeypatch):
    """The bundled demo runs are the project's test data: new controlled runs go to a temporary folder (not
    beside them, where the snapshot test and `diff`'s sibling discovery would pick them up), and the last
    command compares with them explicitly; every printed command parses with the real CLI."""
    import tempfile

    repo = REPO
    monkeypatch.chdir(repo)
    assert main(["diff", "cassettes/v2-demo", "cassettes/v3-demo", "--confirm"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()
             if line.strip().startswith("judge-replay ") and "→" not in line]  # not the report's title line
    records = [line for line in lines if line.startswith("judge-replay judge ")]
    assert records and all(f"--run {tempfile.gettempdir()}/" in line for line in records)
    folders = [line.split("--run ")[1].split()[0] for line in records]
    assert lines[-1] == ("judge-replay diff cassettes/v2-demo cassettes/v3-demo "
                         + " ".join(f"--with {folder}" for folder in folders))
    for line in lines:
        parse_printed_command(line)


# --------------------------------------------------------------------------- the JSON is the typed report


def _closed(schema: object) -> object:
    """The schema with every object's properties closed (`additionalProperties: false` where it names them):
    a key the records do not define fails validation."""
    if isinstance(schema, dict):
        closed = {k: _closed(v) for k, v in schema.items()}
        if "properties" in schema:
            closed["additionalProperties"] = False
        return closed
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


def _printed_schema(capsys) -> dict:
    assert main(["schema", "diff"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("pair", [("v2-demo", "v3-demo"), ("v2-demo", "v3-demo-2026-09"), ("v2-demo", "v2-demo-2026-09"),
                                  ("v1-demo", "v3-demo")])
def test_the_json_report_is_what_the_printed_schema_describes_and_reads_back_to_the_same_bytes(pair, capsys, monkeypatch):
    """Every key the JSON has is a field the schema describes with its type (a key written null where the
    schema says it is absent fails), and the report read back writes the same bytes (absent keys stay absent)."""
    import jsonschema

    monkeypatch.chdir(REPO)
    schema = _printed_schema(capsys)
    assert main(["diff", *(f"cassettes/{run}" for run in pair), "--format", "json", "--gold",
                 "demo/gold-correctness-set.json"]) == 0
    text = capsys.readouterr().out
    jsonschema.validate(json.loads(text), _closed(schema))
    assert render_json(FlipReport.model_validate_json(text)) == text


def test_the_json_of_a_run_without_a_verdict_or_with_a_page_one_run_lacks_is_what_the_schema_describes(runs, capsys):
    import jsonschema

    a, b, _ = runs
    results = json.loads((b.path / "results.json").read_text())
    results["files"][0]["results"][0].update(judge_verdict=None, error="the conversation was cut off")
    (b.path / "results.json").write_text(json.dumps(results))
    assert main(["diff", str(a.path), str(b.path), "--format", "json"]) == 0
    text = capsys.readouterr().out
    flips = {f["id"]: f for f in json.loads(text)["flips"]}
    assert flips["models-003"]["evidence"]["no_verdict"] == {"side": "b", "error": "the conversation was cut off"}
    assert "pages" not in flips["models-003"]["evidence"] and "pages" in flips["models-010"]["evidence"]
    jsonschema.validate(json.loads(text), _closed(_printed_schema(capsys)))
    assert render_json(FlipReport.model_validate_json(text)) == text


def test_every_field_of_the_diff_schema_says_what_it_holds_and_none_is_left_open(capsys):
    schema = _printed_schema(capsys)
    records = {"FlipReport": schema, **schema["$defs"]}
    assert {"Flip", "FlipEvidence", "PageEvidence", "PromptComparison", "ControlledRun", "HeldClaim"} <= set(records)
    for name, record in records.items():
        assert record.get("description"), name
        for field, prop in record["properties"].items():
            assert prop.get("description"), f"{name}.{field} has no description"
    assert '"additionalProperties": true' not in json.dumps(schema)  # no `dict[str, Any]` left
    roles = schema["$defs"]["ControlledRun"]["properties"]["role"]["anyOf"][0]["enum"]
    assert roles == ["A's prompt with B's pages", "B's prompt with A's pages", "a repeat of A", "a repeat of B"]


def _bundled_runs(tmp_path, monkeypatch):
    """A copy of the bundled runs and their claims, worked on in tmp_path."""
    import shutil

    for folder in ("cassettes", "demo/claims"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cassettes"


def _results(run_dir):
    return json.loads((run_dir / "results.json").read_text("utf-8"))


def test_siblings_serve_only_when_they_verify_hold_the_same_claims_and_are_complete(tmp_path, monkeypatch, capsys):
    """v2-demo-2026-09 (A's prompt with B's pages) confirms page flips; damaged, partial or judging other
    claims, it is skipped with the reason, and the flips it confirmed are no longer confirmed."""
    import shutil

    runs = _bundled_runs(tmp_path, monkeypatch)
    argv = ["diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--format", "json"]
    assert main(argv) == 0
    trusted = json.loads(capsys.readouterr().out)
    assert any(f["evidence"].get("confirmed_by") == "v2-demo-2026-09" for f in trusted["flips"])
    assert not [n for n in trusted["notes"] if "would have served" in n]

    crossed = runs / "v2-demo-2026-09"
    for name, damage, why in [
        ("damaged", lambda r: r["files"][0]["results"][0].update(judge_verdict="source_silent"),
         "does not verify (docs/"),
        ("partial", lambda r: r["files"][0].update(error="API error 529: overloaded"), "a partial recording: 1 claims file(s) failed"),
    ]:
        if not (runs / "kept").exists():
            shutil.copytree(crossed, runs / "kept")
        results = _results(runs / "kept")
        damage(results)
        write_json(crossed / "results.json", results)
        assert main(argv) == 0, name
        report = json.loads(capsys.readouterr().out)
        [note] = [n for n in report["notes"] if "would have served" in n]
        assert f"cassettes/v2-demo-2026-09: {why}" in note, (name, note)
        assert not any(f["evidence"].get("confirmed_by") == "v2-demo-2026-09" for f in report["flips"]), name
        shutil.copy(runs / "kept" / "results.json", crossed / "results.json")
    shutil.rmtree(runs / "kept")

    manifest = json.loads((crossed / "run.json").read_text("utf-8"))
    manifest["claims"][0]["sha256"] = "0" * 64
    write_json(crossed / "run.json", manifest)
    assert main(argv) == 0
    [note] = [n for n in json.loads(capsys.readouterr().out)["notes"] if "would have served" in n]
    assert "cassettes/v2-demo-2026-09: judged other claims files than A and B" in note

    assert main([*argv, "--no-siblings"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not [n for n in report["notes"] if n.startswith("skipped")] and not report["controlled_runs"]


def test_a_at_outside_git_or_at_a_commit_without_the_run_is_a_usage_error(runs, tmp_path, capsys):
    a, b, _ = runs
    assert main(["diff", "--a-at", "HEAD", str(a.path), str(b.path)]) == 2
    assert "--a-at: git rev-parse failed" in capsys.readouterr().err
    import subprocess

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    (tmp_path / "other.txt").write_text("x", "utf-8")
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "other.txt"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "no runs"], cwd=tmp_path, check=True)
    assert main(["diff", "--a-at", "HEAD", str(a.path), str(b.path)]) == 2
    err = capsys.readouterr().err
    assert "--a-at: git archive failed" in err and "runs/v2-demo" in err and "Traceback" not in err, err
