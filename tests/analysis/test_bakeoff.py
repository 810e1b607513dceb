"""`judge-replay bakeoff` over synthetic runs (`--no-replay`): table, gate, flips, results files, frozen files."""

import json
import shutil
from pathlib import Path

import pytest

from factories import write_json, write_run
from replay.analysis.bakeoff_results import results_file_name
from replay.cassettes.matching import results_differences
from replay.cli.main import main
from replay.schema.results import ResultsFile
from locations import REPO

URL = "https://learn.microsoft.com/azure/models"
PAGE = "# Models\n\n| model | context |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n| gpt-4o | 128,000 |\n"
CLAIMS = {"a-1": "GPT-4.1 offers a 200k+ token context window.", "a-2": "GPT-4o offers 128k context.",
          "a-3": "GPT-4o is retired."}


def _results(verdicts):
    return [{"file": "docs/a.md", "results": [
        {"id": i, "judge_verdict": v, "evidence_url": URL, "evidence_quote": "", "reason": f"{i} reason",
         "quote_verified": False if i == "a-2" else None, "claim": CLAIMS[i], "claim_type": "version"}
        for i, v in verdicts.items()]}]


BASE = {"a-1": "grounded", "a-2": "grounded", "a-3": "source_silent"}
CAND = {"a-1": "not_grounded", "a-2": "grounded", "a-3": "not_grounded"}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "cassettes" / "v2-demo", prompt="v2", model="claude-x", results=_results(BASE),
              pages={"docs/a.md": {URL: PAGE}}, recorded_at="2026-11-01T00:00:00Z")
    write_run(tmp_path / "cassettes" / "v3-demo", prompt="v3", model="claude-x", results=_results(CAND),
              pages={"docs/a.md": {URL: PAGE}}, recorded_at="2026-11-02T00:00:00Z")
    write_json(tmp_path / "gold.json", {"name": "g", "items": [
        {"file": "docs/a.md", "id": "a-1", "label": "outdated", "mode": "FN2"},
        {"file": "docs/a.md", "id": "a-2", "label": "correct"},
        {"file": "docs/a.md", "id": "a-3", "label": "wrong", "mode": "FN3"}]})
    (tmp_path / "pyproject.toml").write_text(
        '[tool.judge-replay]\ngold = "gold.json"\nbaseline = "cassettes/v2-demo"\ncandidates = ["cassettes/v3-demo"]\n'
        'bakeoff-out-dir = "."\n')  # the results files in the project folder, asked for by the setting
    return tmp_path


def _tree(root):
    """Every file and folder under `root` with its bytes (None for a folder)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def test_a_bakeoff_not_asked_for_results_files_writes_nothing(project, capsys, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("JUDGE_REPLAY_CACHE_DIR", str(tmp_path_factory.mktemp("user-cache")))  # the user's, not the project's
    (project / "pyproject.toml").write_text(
        '[tool.judge-replay]\ngold = "gold.json"\nbaseline = "cassettes/v2-demo"\ncandidates = ["cassettes/v3-demo"]\n')
    before = _tree(project)
    for args in ([], ["--json"], ["--markdown"], ["--force"]):
        assert main(["bakeoff", "--no-replay", *args]) == 0
        captured = capsys.readouterr()
        assert "wrote" not in captured.err and "wrote" not in captured.out
        if args == ["--json"]:
            out = json.loads(captured.out)
            assert out["written"] == [] and [v["results_file"] for v in out["versions"]] == [None, None]
    assert _tree(project) == before


def test_the_out_dir_flag_wins_over_the_setting(project, capsys):
    assert main(["bakeoff", "--no-replay", "--json", "--out-dir", "elsewhere"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["written"]) == [
        "elsewhere/judge-bakeoff-results-v2.json", "elsewhere/judge-bakeoff-results-v3.json"]
    assert not list(project.glob("judge-bakeoff-results-*.json"))


def _stand_ins(run_dir, names):
    manifest = json.loads((run_dir / "run.json").read_text())
    manifest["stand_ins"] = names
    (run_dir / "run.json").write_text(json.dumps(manifest))


def test_bakeoff_json_from_settings(project, capsys):
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    base, cand = out["versions"]
    assert (base["prompt"], base["run"], base["source"], base["replay_reproduced"]) == (
        "v2", "cassettes/v2-demo", "recorded", None)
    # baseline: a-1 FN, a-2 TN, a-3 FN -> P undefined, R 0; candidate: a-1 TP, a-2 TN, a-3 TP -> P 1, R 1
    assert (base["scores"]["precision"], base["scores"]["recall"]) == (None, 0.0)
    assert (cand["scores"]["precision"], cand["scores"]["recall"], cand["scores"]["accuracy"]) == (1.0, 1.0, 1.0)
    assert cand["scores"]["quote_unverified"] == 1
    gate = out["gates"][0]
    assert (gate["baseline"], gate["candidate"], gate["adopt"]) == ("cassettes/v2-demo", "cassettes/v3-demo", False)
    assert "baseline precision is undefined" in gate["reason"] and gate["only_candidate_right"] == 2
    flips = out["flips"][0]["flips"]
    assert [(f["id"], f["baseline"], f["candidate"], f["gold"], f["right"]) for f in flips] == [
        ("a-1", "grounded", "not_grounded", "outdated", "candidate"),
        ("a-3", "source_silent", "not_grounded", "wrong", "candidate")]
    assert flips[0]["claim"] == CLAIMS["a-1"] and all(f["cause"] for f in flips)
    # the results files, named by prompt, carrying the run's metadata, in the project root
    written = ResultsFile.model_validate_json((project / "judge-bakeoff-results-v3.json").read_text())
    assert (written.prompt, written.model, written.recorded_at, written.frozen) == (
        "v3", "claude-x", "2026-11-02T00:00:00Z", False)
    assert [r.judge_verdict for r in written.files[0].results] == ["not_grounded", "grounded", "not_grounded"]
    assert sorted(out["written"]) == ["judge-bakeoff-results-v2.json", "judge-bakeoff-results-v3.json"]
    # a second bake-off on the same runs changes no file
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == []


def test_bakeoff_terminal_says_stand_in_first(project, capsys):
    _stand_ins(project / "cassettes" / "v3-demo", ["learn", "model"])
    assert main(["bakeoff", "--no-replay", "--out-dir", "out"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first == "runs used the local stand-in judge (test equipment), not Claude: cassettes/v3-demo"
    assert "v3 (candidate)" in out and "gate: DO NOT ADOPT" in out and "Verdict flips v2 → v3: 2" in out
    assert f'docs/a.md:a-1 "{CLAIMS["a-1"]}": grounded → not_grounded; gold outdated; candidate right; cause ' in out
    assert (project / "out" / "judge-bakeoff-results-v2.json").is_file()


def test_bakeoff_markdown_flags_and_adopt(project, capsys):
    # a baseline that flags a-1 rightly: P 1/1, R 1/2; the candidate lifts R to 2/2 holding P -> adopt
    write_run(project / "runs" / "v2b", prompt="v2", results=_results({**BASE, "a-1": "not_grounded"}),
              pages={"docs/a.md": {URL: PAGE}})
    assert main(["bakeoff", "--no-replay", "--markdown", "--baseline", "runs/v2b",
                 "--candidate", "cassettes/v3-demo", "--out-dir", "out"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("## Judge prompt bake-off")
    assert "| v2 (baseline) | runs/v2b | claude-test | 1.000 | 0.500 |" in text
    assert "- gate: ADOPT" in text and "- adopt: P 1.00→1.00, R 0.50→1.00; but only 1 discordant claim (" in text
    assert "<details><summary>Disagreements of v2 (runs/v2b) with the gold set: 1</summary>" in text


def test_frozen_results_file_is_not_overwritten(project, capsys):
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    assert main(["grade", "judge-bakeoff-results-v2.json", "--freeze"]) == 0
    capsys.readouterr()
    # unchanged results: nothing to overwrite, the bake-off runs
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    capsys.readouterr()
    write_run(project / "cassettes" / "v2-demo", prompt="v2", model="claude-x", results=_results(CAND),
              pages={"docs/a.md": {URL: PAGE}}, recorded_at="2026-11-01T00:00:00Z")
    before = (project / "judge-bakeoff-results-v2.json").read_text()
    assert main(["bakeoff", "--no-replay"]) == 2
    err = capsys.readouterr().err
    assert "judge-bakeoff-results-v2.json" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert (project / "judge-bakeoff-results-v2.json").read_text() == before
    assert main(["bakeoff", "--no-replay", "--force", "--json"]) == 0
    rewritten = json.loads((project / "judge-bakeoff-results-v2.json").read_text())
    assert rewritten["frozen"] is True and rewritten["files"][0]["results"][0]["judge_verdict"] == "not_grounded"


def test_a_frozen_runs_results_file_is_written_frozen(project, capsys):
    assert main(["grade", "cassettes/v2-demo", "--freeze"]) == 0
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    capsys.readouterr()
    assert json.loads((project / "judge-bakeoff-results-v2.json").read_text())["frozen"] is True
    assert json.loads((project / "judge-bakeoff-results-v3.json").read_text())["frozen"] is False
    # the frozen run re-recorded (forced, so it stays frozen) with other verdicts: the file is kept
    write_run(project / "cassettes" / "v2-demo", prompt="v2", model="claude-x", results=_results(CAND),
              pages={"docs/a.md": {URL: PAGE}}, recorded_at="2026-11-01T00:00:00Z")
    assert main(["grade", "cassettes/v2-demo", "--freeze"]) == 0
    before = (project / "judge-bakeoff-results-v2.json").read_text()
    assert main(["bakeoff", "--no-replay"]) == 2
    assert "refusing to overwrite frozen results" in capsys.readouterr().err
    assert (project / "judge-bakeoff-results-v2.json").read_text() == before


def test_bakeoff_usage_errors(project, capsys):
    assert main(["bakeoff", "--no-replay", "--gold", "missing.json"]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
    (project / "pyproject.toml").write_text('[tool.judge-replay]\ngold = "gold.json"\nbaseline = "cassettes/v2-demo"\n')
    assert main(["bakeoff", "--no-replay"]) == 2
    assert "no candidate run" in capsys.readouterr().err
    assert main(["bakeoff", "--no-replay", "--candidate", "cassettes/nope"]) == 2
    assert "cassettes/nope: no such run folder" in capsys.readouterr().err


def test_same_prompt_twice_gets_distinct_results_files(project, capsys):
    write_run(project / "cassettes" / "v3-again", prompt="v3", results=_results(CAND),
              pages={"docs/a.md": {URL: PAGE}})
    assert main(["bakeoff", "--no-replay", "--json", "--candidate", "cassettes/v3-demo",
                 "--candidate", "cassettes/v3-again"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [v["results_file"] for v in out["versions"]] == [
        "judge-bakeoff-results-v2.json", "judge-bakeoff-results-v3-v3-demo.json",
        "judge-bakeoff-results-v3-v3-again.json"]
    assert len(out["gates"]) == 2


def test_versions_whose_names_would_collide_still_get_a_results_file_each(project, capsys):
    """The same prompt in two folders of one name, and prompt files whose names differ only in letters a
    results file name leaves out: each version's results file is its own (none written over another)."""
    write_run(project / "other" / "v3-demo", prompt="v3", results=_results(CAND), pages={"docs/a.md": {URL: PAGE}})
    for name in ("prompt-é", "prompt-ü"):
        (project / f"{name}.md").write_text("# Judge\n")
        write_run(project / "runs" / name, prompt=f"{name}.md", results=_results(CAND), pages={"docs/a.md": {URL: PAGE}})
    assert main(["bakeoff", "--no-replay", "--json", "--candidate", "cassettes/v3-demo", "--candidate", "other/v3-demo",
                 "--candidate", "runs/prompt-é", "--candidate", "runs/prompt-ü", "--out-dir", "out"]) == 0
    files = [v["results_file"] for v in json.loads(capsys.readouterr().out)["versions"]]
    assert len(set(files)) == 5 and len(list((project / "out").glob("*.json"))) == 5
    assert files[1].startswith("out/judge-bakeoff-results-v3-v3-demo-") and files[3].startswith("out/judge-bakeoff-results-prompt-_")


def test_replay_differences_and_names():
    recorded = ResultsFile.model_validate({"files": _results(BASE)})
    replayed = ResultsFile.model_validate({"files": _results({**BASE, "a-3": "not_grounded"})})
    assert results_differences(recorded.files, recorded.files) == []
    (line,) = results_differences(recorded.files, replayed.files)
    assert line.startswith("docs/a.md: claim a-3: judge_verdict") and "source_silent" in line and "not_grounded" in line
    assert results_file_name("v3") == "judge-bakeoff-results-v3.json"


def test_files_only_one_side_has_are_reported_in_name_order():
    """Not in a set's order, which changes with the hash seed from one run of `cassettes verify` to the next."""
    files = [{"file": f"docs/{n:02d}.md", "results": []} for n in range(40)]
    recorded = ResultsFile.model_validate({"files": files[::-1]}).files
    assert results_differences(recorded, []) == [
        f"docs/{n:02d}.md: recorded, but the replay produced no result for it" for n in range(40)]
    assert results_differences([], recorded) == [
        f"docs/{n:02d}.md: produced by the replay, but not in the recorded results.json" for n in range(40)]
    assert results_file_name("prompts/my prompt.md") == "judge-bakeoff-results-my_prompt.json"


def test_bakeoff_shows_data_never_controls_in_text_and_markdown(project, capsys):
    hostile = "GPT-4.1 \x1b]8;;https://evil.example\x07offers\x1b]8;;\x07 <script>x</script> a|b \x1b[2J"
    for run, verdicts in (("v2-demo", BASE), ("v3-demo", CAND)):
        results = _results(verdicts)
        results[0]["results"][0]["claim"] = hostile
        write_run(project / "cassettes" / run, prompt=run[:2], model="claude-x\x1b[31m", results=results,
                  pages={"docs/a.md": {URL: PAGE}})
    assert main(["bakeoff", "--no-replay", "--out-dir", "out"]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in ("\x1b", "\x07"))
    assert 'docs/a.md:a-1 "GPT-4.1 \\x1b]8;;https://evil.example\\x07offers' in out  # the flip line
    assert "claude-x\\x1b[31m" in out  # a table cell
    assert main(["bakeoff", "--no-replay", "--out-dir", "out", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert not any(c in md for c in ("\x1b", "\x07")) and "<script>" not in md
    assert "&lt;script&gt;x&lt;/script&gt; a|b" in md  # a flip line (prose: pipes harmless)
    assert "| claude-x\\x1b\\[31m |" in md and "<details><summary>" in md  # `[` escaped: no link can start


def test_bakeoff_json_says_what_each_run_rests_on(project, capsys):
    _stand_ins(project / "cassettes" / "v3-demo", ["learn", "model"])
    assert main(["bakeoff", "--no-replay", "--json", "--out-dir", "out"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [v["stand_ins"] for v in out["versions"]] == [[], ["learn", "model"]]
    assert out["notes"][0] == "runs used the local stand-in judge (test equipment), not Claude: cassettes/v3-demo"
    assert all(v["scores"]["no_verdict"] == 0 for v in out["versions"])
    assert main(["bakeoff", "--no-replay", "--markdown", "--out-dir", "out"]) == 0
    assert ("> **runs used the local stand-in judge (test equipment), not Claude: cassettes/v3-demo**"
            in capsys.readouterr().out)


def test_a_frozen_results_file_is_never_rewritten_to_gain_new_fields(project, capsys):
    # a frozen file written before results files carried `stand_ins` or costs: kept byte for byte (it holds
    # the same verdicts), and the bake-off says it wrote nothing
    assert main(["grade", "cassettes/v2-demo", "--freeze"]) == 0
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    capsys.readouterr()
    path = project / "judge-bakeoff-results-v2.json"
    older = json.loads(path.read_text())
    del older["stand_ins"]
    for f in older["files"]:
        f.pop("cost_usd")
    older.pop("cost_usd")
    path.write_text(json.dumps(older, indent=2))
    before = path.read_bytes()
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["written"] == [] and "wrote" not in captured.err
    assert path.read_bytes() == before
    # a changed verdict in it still is a change: refused without --force
    changed = json.loads(path.read_text())
    changed["files"][0]["results"][0]["judge_verdict"] = "not_grounded"
    path.write_text(json.dumps(changed))
    assert main(["bakeoff", "--no-replay", "--json"]) == 2
    assert "refusing to overwrite frozen results" in capsys.readouterr().err


def test_a_claim_without_a_verdict_is_no_verdict_with_its_error_never_a_judge_flip(project, capsys):
    # the two runs share their prompt text: before, a failed claim was explained as a model flip
    error = "API error 529: overloaded (after 3 retries)"
    results = _results({"a-1": "not_grounded", "a-2": "grounded"})  # a-3 is not in the results at all
    results[0]["results"][0] = {"id": "a-1", "error": error}
    write_run(project / "cassettes" / "v3-demo", prompt="v3", model="claude-x", results=results,
              pages={"docs/a.md": {URL: PAGE}}, recorded_at="2026-11-02T00:00:00Z")
    main(["bakeoff", "--no-replay", "--out-dir", "out"])
    out = capsys.readouterr().out
    assert (f'docs/a.md:a-1 "{CLAIMS["a-1"]}": grounded → no verdict; gold outdated; neither right; '
            f"cause unknown (no verdict in B: {error})") in out
    assert (f'docs/a.md:a-3 "{CLAIMS["a-3"]}": source_silent → no verdict; gold wrong; neither right; '
            "cause unknown (no verdict in B: the claim is not in its results)") in out
    main(["bakeoff", "--no-replay", "--out-dir", "out", "--json"])
    flips = json.loads(capsys.readouterr().out)["flips"][0]["flips"]
    assert [(f["id"], f["candidate"], f["cause"]) for f in flips] == [("a-1", None, "unknown"), ("a-3", None, "unknown")]


def test_a_run_whose_replay_does_not_reproduce_it_fails_the_bakeoff(tmp_path, monkeypatch, capsys):
    """The report grades the replay and says REPLAY MISMATCH; the exit code says it too (1), so a CI job
    that runs the bake-off cannot pass on a run that no longer reproduces."""
    root = REPO
    for version in ("v2", "v3"):
        shutil.copytree(root / "cassettes" / f"{version}-demo", tmp_path / f"{version}-demo")
    shutil.copytree(root / "demo" / "claims", tmp_path / "demo" / "claims")  # where the runs' manifests name them
    results = json.loads((tmp_path / "v3-demo" / "results.json").read_text("utf-8"))
    edited = results["files"][0]["results"][0]
    edited["judge_verdict"] = "source_silent" if edited["judge_verdict"] != "source_silent" else "grounded"
    (tmp_path / "v3-demo" / "results.json").write_text(json.dumps(results), "utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(["bakeoff", "--gold", str(root / "demo" / "gold-correctness-set.json"), "--baseline", "v2-demo",
                 "--candidate", "v3-demo", "--out-dir", "out"])
    out, err = capsys.readouterr()
    assert code == 1 and "REPLAY MISMATCH: replaying v3-demo did not reproduce its results.json (1 claim(s) differ" in err
    assert err.rstrip().splitlines()[-1].startswith("judge-replay: bakeoff: replaying v3-demo did not reproduce")
    assert "gate: ADOPT" in out  # the report is still printed, grading the replay
    # the untouched run reproduces: exit 0
    assert main(["bakeoff", "--gold", str(root / "demo" / "gold-correctness-set.json"), "--baseline", "v2-demo",
                 "--candidate", "v2-demo", "--out-dir", "out2"]) == 0


def test_freezing_a_run_while_a_recording_into_it_runs_is_refused(project):
    """The recording would swap its new run in and the freeze would be lost: refused, as a second recording is."""
    from replay.analysis.frozen import set_frozen
    from replay.errors import UsageError
    from replay.runs.writer import RunFolderWriter

    run = project / "cassettes" / "v3-demo"
    with RunFolderWriter(run):
        with pytest.raises(UsageError, match="another recording into .* is in progress"):
            set_frozen(run)
    assert set_frozen(run) == [run / "results.json", run / "run.json"]
    assert json.loads((run / "run.json").read_text())["frozen"] is True
    assert not (project / "cassettes" / ".judge-replay-staging").exists()  # its lock went with it
