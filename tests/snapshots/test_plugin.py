"""The verdict snapshot plugin, used from a throwaway project (pytester) with its own run folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from factories import sampled_claim, write_run
from replay.errors import InputError
from replay.snapshots.session import session_records
from replay.snapshots.verdicts import RunVerdicts
from replay.judge.runner import run_judge
from replay.sim import start_learn, start_model

pytest_plugins = ["pytester"]

URL_A = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
URL_B = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"

TEST_VERDICTS = """
import pytest
from replay import RunVerdicts

@pytest.mark.parametrize("run", {runs!r})
def test_verdicts(run, verdict_snapshot):
    assert RunVerdicts.recorded(f"runs/{{run}}") == verdict_snapshot
"""


def claim(cid: str, verdict: str, rule: str = "", url: str = URL_A, quote: str = "", verified: bool | None = None,
          reason: str = "because") -> dict[str, Any]:
    return {"id": cid, "judge_verdict": verdict, "rule": rule, "evidence_url": url, "evidence_quote": quote,
            "reason": reason, "quote_verified": verified}


def r1_files(**overrides: dict[str, Any]) -> list[dict[str, Any]]:
    """Run r1: two claims files, claims deliberately out of id order."""
    a2 = claim("a-2", "not_grounded", "R1", quote="| gpt-4.1 | 1,047,576 |", verified=True)
    a1 = claim("a-1", "grounded", "R3", url=URL_A.replace("/azure", "/en-us/azure") + "/", quote="GPT-4o  is GA",
               verified=True)
    b1 = claim("b-1", "source_silent", url=URL_B)
    claims = {"a-1": a1, "a-2": a2, "b-1": b1}
    for cid, change in overrides.items():
        claims[cid] = {**claims[cid], **change}
    return [
        {"file": "docs/a.md", "results": [claims["a-2"], claims["a-1"]], "usage": {"input_tokens": 900, "output_tokens": 80},
         "turns": 3, "tool_calls": [{"tool": "microsoft_docs_fetch", "arguments": {"url": URL_A}, "url": URL_A}]},
        {"file": "docs/b.md", "results": [claims["b-1"]], "turns": 2},
    ]


def r2_files() -> list[dict[str, Any]]:
    return [{"file": "docs/c.md", "results": [claim("c-1", "grounded", "R2", quote="TPM 450K", verified=False)]}]



@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # under pytest-xdist this test runs in a worker: the inner session must not believe it is one too
    # (syrupy then leaves its report to a controller that does not exist)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)
    """A project with runs r1 and r2 and one parametrized snapshot test over both."""
    write_run(pytester.path / "runs" / "r1", results=r1_files())
    write_run(pytester.path / "runs" / "r2", results=r2_files())
    pytester.makepyfile(test_verdicts=TEST_VERDICTS.format(runs=["r1", "r2"]))
    return pytester


def commit_all(project: pytest.Pytester) -> str:
    """Make the project a git repository holding everything in it, in one commit; its short hash."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                              cwd=project.path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "runs and their snapshots")
    return git("log", "-1", "--format=%h")


def run_in_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A printed command pasted into a shell in `cwd`, with this venv's `judge-replay` on the PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def snapshot_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_update_writes_one_small_json_per_run_and_claims_file(project: pytest.Pytester) -> None:
    result = project.runpytest("--snapshot-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 snapshots generated*"])
    assert list(snapshot_files(project.path / "snapshots")) == [
        "r1/docs_a.md.json", "r1/docs_b.md.json", "r2/docs_c.md.json"]
    assert not (project.path / "__snapshots__").exists()

    doc = json.loads((project.path / "snapshots" / "r1" / "docs_a.md.json").read_text())
    prompt_sha = json.loads((project.path / "runs" / "r1" / "run.json").read_text())["prompt_sha256"]
    assert doc == {
        "serializer_version": 1, "prompt": "v3", "prompt_sha256": prompt_sha[:12], "model": "claude-test",
        "file": "docs/a.md",
        "claims": [
            {"id": "a-1", "verdict": "grounded", "rule": "R3", "evidence_url": URL_A, "quote_verified": True,
             "quote_hash": doc["claims"][0]["quote_hash"]},
            {"id": "a-2", "verdict": "not_grounded", "rule": "R1", "evidence_url": URL_A, "quote_verified": True,
             "quote_hash": doc["claims"][1]["quote_hash"]},
        ]}
    assert len(doc["claims"][0]["quote_hash"]) == 12 and doc["claims"][0]["quote_hash"] != doc["claims"][1]["quote_hash"]
    silent = json.loads((project.path / "snapshots" / "r1" / "docs_b.md.json").read_text())["claims"][0]
    assert silent["verdict"] == "source_silent" and silent["quote_hash"] is None and silent["quote_verified"] is None

    again = project.runpytest()
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["*2 snapshots passed*"])


def test_missing_snapshot_fails_and_says_how_to_write_it(project: pytest.Pytester) -> None:
    result = project.runpytest("-k", "r2")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*no snapshot of run r2 yet: `pytest --snapshot-update` writes snapshots/r2/ (1 file)*"])


def test_flipped_verdicts_fail_listing_exactly_the_changed_claims(project: pytest.Pytester) -> None:
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    commit = commit_all(project)
    files = r1_files(**{"a-1": {"judge_verdict": "not_grounded", "rule": "R2"}})
    files[1]["results"] = [claim("b-2", "grounded", "R5", url=URL_B, quote="x", verified=True)]  # b-1 gone, b-2 new
    write_run(project.path / "runs" / "r1", results=files)

    result = project.runpytest("-vv")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    explain = f"judge-replay diff --a-at {commit} runs/r1 runs/r1"
    result.stdout.fnmatch_lines([
        "*run r1 differs from its snapshot snapshots/r1/: 1 verdict flipped, 1 claim added, 1 removed",
        "*explain the flips: " + explain,
        "*accept: pytest --snapshot-update, then review `git diff snapshots/r1/`",
        "*  docs/a.md:a-1  grounded → not_grounded  (rule R2, was R3)",
        "*  docs/b.md:b-2  added: grounded  (rule R5)",
        "*  docs/b.md:b-1  removed (was source_silent)",
    ])
    assert "a-2" not in out  # unchanged claims are not listed
    assert "1 snapshot failed" in out and "1 snapshot passed" in out
    # the printed command works where it was printed, and from a subfolder with the path adjusted; it
    # leaves nothing behind: no git worktree, no folder beside the project, no temporary folder
    def git_worktrees() -> str:
        return subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=project.path, capture_output=True,
                              text=True, check=True).stdout
    before, beside = git_worktrees(), sorted(project.path.parent.iterdir())
    (project.path / "sub").mkdir()
    for command, cwd in ((explain, project.path), (explain.replace("runs/r1", "../runs/r1"), project.path / "sub")):
        done = run_in_shell(command, cwd)
        assert done.returncode == 0, done.stderr
        assert "a-1  grounded → not_grounded" in done.stdout and f"runs/r1@{commit} → " in done.stdout
        assert "judge-replay-at-" not in done.stdout + done.stderr  # the temporary folder is never named
    assert git_worktrees() == before and sorted(project.path.parent.iterdir()) == beside
    (project.path / "sub").rmdir()

    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    assert json.loads((project.path / "snapshots" / "r1" / "docs_b.md.json").read_text())["claims"][0]["id"] == "b-2"
    project.runpytest().assert_outcomes(passed=2)


def test_no_explain_command_diffs_against_a_commit_whose_run_is_not_the_snapshots(project: pytest.Pytester) -> None:
    # the command diffs the run as the last commit of the snapshot holds it: that commit must hold the
    # snapshot as it is now, and the run the snapshot was written from. It pointed at a commit anyway, and
    # its diff explained other flips than the test reported
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    commit_all(project)
    write_run(project.path / "runs" / "r1", results=r1_files(**{"a-1": {"judge_verdict": "not_grounded"}}))
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)  # (a) the update is not committed
    write_run(project.path / "runs" / "r1", results=r1_files(**{"a-2": {"judge_verdict": "grounded"}}))
    out = project.runpytest("-vv").stdout.str()
    assert "explain the flips: no git commit holds snapshots/r1/ with its run" in out and "--a-at" not in out
    # (b) the snapshot committed without its run: the commit holds the old run beside the new snapshot
    subprocess.run(["git", "add", "snapshots"], cwd=project.path, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "snapshots only"],
                   cwd=project.path, check=True, capture_output=True)
    assert subprocess.run(["git", "status", "--porcelain", "snapshots"], cwd=project.path, capture_output=True,
                          text=True).stdout == ""
    out = project.runpytest("-vv").stdout.str()
    assert "explain the flips: no git commit holds snapshots/r1/ with its run" in out and "--a-at" not in out


def test_seven_flips_at_default_verbosity_are_all_named(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # pytest cuts an assertion message after 8 lines unless -vv is given or it runs on CI: the plugin's
    # terminal summary names every flip anyway
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    many = [{"file": "docs/a.md", "results": [claim(f"a-{i:02}", "grounded") for i in range(7)]}]
    write_run(project.path / "runs" / "r1", results=many)
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    flipped = [{"file": "docs/a.md", "results": [claim(f"a-{i:02}", "not_grounded", "R2") for i in range(7)]}]
    write_run(project.path / "runs" / "r1", results=flipped)

    result = project.runpytest("-k", "r1")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines([
        "*run r1 differs from its snapshot snapshots/r1/: 7 verdicts flipped, 0 claims added, 0 removed",
        "*Full output truncated*",
        "*verdict snapshots that differ (judge-replay)*",
        "run r1 differs from its snapshot snapshots/r1/: 7 verdicts flipped, 0 claims added, 0 removed",
        "explain the flips: no git commit holds snapshots/r1/ with its run*",
        "accept: pytest --snapshot-update, then review `git diff snapshots/r1/`",
        *(f"  docs/a.md:a-{i:02}  grounded → not_grounded  (rule R2)" for i in range(7)),
    ])


def test_every_worker_s_mismatches_reach_the_summary_under_xdist(project: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pytest-xdist worker keeps its own records; the controller prints the summary with every worker's."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    write_run(project.path / "runs" / "r1", results=r1_files(**{"a-1": {"judge_verdict": "not_grounded"}}))
    write_run(project.path / "runs" / "r2", results=[{"file": "docs/c.md", "results": [claim("c-1", "source_silent")]}])

    result = project.runpytest_subprocess("-p", "xdist", "-n", "2")
    result.assert_outcomes(failed=2)
    summary = result.stdout.str().split("verdict snapshots that differ (judge-replay)", 1)[1]
    assert "docs/a.md:a-1  grounded → not_grounded" in summary and "docs/c.md:c-1  grounded → source_silent" in summary


def test_an_inner_session_keeps_its_own_records_and_gives_the_running_one_back(
        project: pytest.Pytester, request: pytest.FixtureRequest) -> None:
    """A session's records live in its own `config.stash`: an inner (pytester) session's mismatches, owners
    and failed runs are its own, and once it ends, a failed replay is the outer session's again."""
    outer = session_records(request.config)
    before = (set(outer.failed_runs), list(outer.mismatches), dict(outer.owners))
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    write_run(project.path / "runs" / "r1", results=r1_files(**{"a-1": {"judge_verdict": "not_grounded"}}))
    (project.path / "runs" / "r2" / "results.json").write_text("{broken")

    recorder = project.inline_run()
    recorder.assertoutcome(failed=2)
    [finished] = recorder.getcalls("pytest_unconfigure")
    inner = session_records(finished.config)
    assert inner is not outer and inner.failed_runs == {"r2"} and set(inner.owners) == {"r1"}
    assert len(inner.mismatches) == 1 and inner.mismatches[0][0].startswith("run r1 differs from its snapshot")
    assert (set(outer.failed_runs), list(outer.mismatches), dict(outer.owners)) == before

    with pytest.raises(InputError):  # a run failing to load here, after the inner session: noted in this one
        RunVerdicts.recorded(project.path / "runs" / "r2")
    try:
        assert "r2" in outer.failed_runs and inner.failed_runs == {"r2"}
    finally:
        outer.failed_runs.discard("r2")


def test_a_claims_file_leaving_the_run_fails_then_its_file_goes(project: pytest.Pytester) -> None:
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    write_run(project.path / "runs" / "r1", results=r1_files()[:1])

    result = project.runpytest("-k", "r1")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(["*0 verdicts flipped, 0 claims added, 1 removed*",
                                 "*compare the runs: no git commit holds snapshots/r1/ with its run*",
                                 "*docs/b.md:b-1  removed*"])
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    assert list(snapshot_files(project.path / "snapshots" / "r1")) == ["docs_a.md.json"]


def test_volatile_fields_changing_does_not_fail(project: pytest.Pytester) -> None:
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    files = r1_files(**{"a-1": {"reason": "a whole new explanation", "evidence_quote": "GPT-4o is  GA"},
                        "a-2": {"reason": ""}})
    files[0]["usage"] = {"input_tokens": 1, "output_tokens": 2}
    files[0]["turns"] = 9
    files[0]["tool_calls"] = []
    write_run(project.path / "runs" / "r1", results=files, recorded_at="2027-01-01T00:00:00Z")
    before = snapshot_files(project.path / "snapshots")

    project.runpytest().assert_outcomes(passed=2)
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    assert snapshot_files(project.path / "snapshots") == before


def test_a_quote_or_rule_change_with_the_same_verdict_is_reported(project: pytest.Pytester) -> None:
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    write_run(project.path / "runs" / "r1", results=r1_files(**{"a-2": {"evidence_quote": "| gpt-4.1 | 300,000 |",
                                                                         "quote_verified": False}}))
    result = project.runpytest("-k", "r1")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines([
        "*0 verdicts flipped, 0 claims added, 0 removed, 1 changed otherwise",
        "*docs/a.md:a-2  same verdict (not_grounded), changed: quote_hash, quote_verified True → False"])
    assert "explain the flips" not in result.stdout.str()


def test_keyword_subset_leaves_other_runs_snapshots_alone(project: pytest.Pytester) -> None:
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    r2_folder = project.path / "snapshots" / "r2"
    r2_before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in r2_folder.iterdir()}

    subsets = [(["-k", "r1", "--snapshot-update"], 1), (["-k", "r1"], 1), (["-k", "not r2", "--snapshot-update"], 1),
               (["test_verdicts.py::test_verdicts[r1]", "--snapshot-update"], 0)]
    for args, deselected in subsets:
        result = project.runpytest(*args)
        result.assert_outcomes(passed=1, deselected=deselected)
        out = result.stdout.str()
        assert "unused" not in out and "Deleted" not in out, args
        assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in r2_folder.iterdir()} == r2_before

    # a run that really is gone: its snapshot is unused, and --snapshot-update removes it
    shutil.rmtree(project.path / "runs" / "r2")
    project.makepyfile(test_verdicts=TEST_VERDICTS.format(runs=["r1"]))
    unused = project.runpytest()
    assert unused.ret == 1
    unused.stdout.fnmatch_lines(["*1 snapshot unused*"])
    cleaned = project.runpytest("--snapshot-update")
    assert cleaned.ret == 0
    cleaned.stdout.fnmatch_lines(["*1 unused snapshot deleted*"])
    assert not r2_folder.exists() and (project.path / "snapshots" / "r1" / "docs_a.md.json").is_file()


def test_a_run_that_fails_to_load_keeps_its_snapshot(project: pytest.Pytester) -> None:
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    (project.path / "runs" / "r2" / "results.json").write_text("{broken")
    for args in ([], ["--snapshot-update"]):
        result = project.runpytest(*args)
        result.assert_outcomes(passed=1, failed=1)
        out = result.stdout.str()
        assert "not valid JSON" in out and "unused" not in out
    assert (project.path / "snapshots" / "r2" / "docs_c.md.json").is_file()


def test_two_runs_of_one_folder_name_never_share_a_snapshot(pytester: pytest.Pytester) -> None:
    """`runs/a/v3-demo` and `runs/b/v3-demo` would both snapshot as `v3-demo/`: the second is refused
    (its test errors, naming both), so an update never writes one run's verdicts over the other's."""
    write_run(pytester.path / "runs" / "a" / "v3-demo", results=r1_files())
    write_run(pytester.path / "runs" / "b" / "v3-demo", results=r2_files())
    pytester.makepyfile(test_verdicts=TEST_VERDICTS.format(runs=["a/v3-demo", "b/v3-demo"]))
    result = pytester.runpytest("--snapshot-update")
    result.assert_outcomes(passed=1, failed=1)
    assert "two runs of one folder name share a snapshot" in result.stdout.str()
    assert list(snapshot_files(pytester.path / "snapshots")) == ["v3-demo/docs_a.md.json", "v3-demo/docs_b.md.json"]
    pytester.runpytest("-k", "a/v3-demo").assert_outcomes(passed=1)  # the first run's snapshot is its own


def test_an_interrupted_update_deletes_no_snapshot(project: pytest.Pytester) -> None:
    """Ctrl-C before a run's verdicts were compared: that the session never asserted them is no reason to call
    its snapshot unused."""
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    before = list(snapshot_files(project.path / "snapshots"))
    project.makepyfile(test_verdicts="""
from replay import RunVerdicts

def test_verdicts(verdict_snapshot):
    raise KeyboardInterrupt  # Ctrl-C while the run replays, before its verdicts are compared
    assert RunVerdicts.recorded("runs/r1") == verdict_snapshot
""")
    done = project.runpytest_subprocess("--snapshot-update")  # as a person runs it (Ctrl-C ends pytest itself)
    assert list(snapshot_files(project.path / "snapshots")) == before
    # syrupy then notes that unused detection is disabled: the plugin says why (no flag of the user's)
    done.stdout.fnmatch_lines(["*judge-replay: the session was interrupted, so no snapshot is deleted or reported as "
                               "unused (the --snapshot-disable-unused syrupy names is set for that, not by you)*"])


def test_snapshot_dir_option(project: pytest.Pytester) -> None:
    project.runpytest("--snapshot-update", "--replay-snapshot-dir", "review/verdicts").assert_outcomes(passed=2)
    assert list(snapshot_files(project.path / "review" / "verdicts")) == [
        "r1/docs_a.md.json", "r1/docs_b.md.json", "r2/docs_c.md.json"]
    assert not (project.path / "snapshots").exists()
    project.runpytest("--replay-snapshot-dir=review/verdicts").assert_outcomes(passed=2)
    help_text = project.runpytest("--help").stdout.str()
    assert "judge-replay verdict snapshots" in help_text and "--replay-snapshot-dir" in help_text


def test_only_run_verdicts_compare(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(verdict_snapshot):\n    assert {'verdict': 'grounded'} == verdict_snapshot\n")
    result = pytester.runpytest("--snapshot-update")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TypeError: verdict_snapshot compares the verdicts of a run*got dict*"])
    assert not (pytester.path / "snapshots").exists()


# --------------------------------------------------------------------------- replayed runs, end to end

MODELS_PAGE = "# Models\n\n| Model | Context window |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n| gpt-4o | {gpt4o} |\n"
QUOTAS_PAGE = "# Quotas\n\nThe default quota for gpt-4o global standard deployments is 450,000 tokens per minute.\n"
CLAIMS = {
    "models": {"file": "docs/models.md", "claims": [
        {"id": "m-1", "claim": "gpt-4o has a context window of 128,000 tokens.", "claim_type": "version",
         "evidence_url": URL_A},
        {"id": "m-2", "claim": "gpt-4.1 has a context window of 1,047,576 tokens.", "claim_type": "version",
         "evidence_url": URL_A}]},
    "quotas": {"file": "docs/quotas.md", "claims": [
        {"id": "q-1", "claim": "The default quota for gpt-4o global standard is 450,000 tokens per minute.",
         "claim_type": "tpm", "evidence_url": URL_B}]},
}


def write_pages(folder: Path, gpt4o: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.md").write_text(f"---\nurl: {URL_A}\ntitle: Models\n---\n{MODELS_PAGE.format(gpt4o=gpt4o)}")
    (folder / "quotas.md").write_text(f"---\nurl: {URL_B}\ntitle: Quotas\n---\n{QUOTAS_PAGE}")


def record_r1(pages: Path) -> None:
    """Record run r1 (cwd: the project) with both stand-ins, then stop them."""
    with start_learn(pages) as learn, start_model() as model:
        run_judge("v3", ["claims"], "runs/r1", "record", model="claude-stand-in", learn_url=learn.url,
                  anthropic_base_url=model.url, progress=False)


def test_rerecording_with_one_page_changed_fails_listing_exactly_the_flipped_claims(pytester: pytest.Pytester) -> None:
    for name, batch in CLAIMS.items():
        pytester.makefile(".json", **{f"claims/{name}": json.dumps(batch)})
    write_pages(pytester.path / "pages", gpt4o="128,000")
    record_r1(pytester.path / "pages")
    pytester.makepyfile(test_demo="""
from replay import replay_run

def test_x(verdict_snapshot):
    assert replay_run("runs/r1") == verdict_snapshot
""")
    # the stand-ins are stopped: every snapshot run below replays from the cassettes
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    assert list(snapshot_files(pytester.path / "snapshots")) == ["r1/docs_models.md.json", "r1/docs_quotas.md.json"]
    pytester.runpytest().assert_outcomes(passed=1)

    write_pages(pytester.path / "pages", gpt4o="64,000")
    record_r1(pytester.path / "pages")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*run r1 differs from its snapshot snapshots/r1/: 1 verdict flipped, 0 claims added, 0 removed",
        "*explain the flips: no git commit holds snapshots/r1/ with its run*",
        "*  docs/models.md:m-1  grounded → not_grounded*",
    ])
    out = result.stdout.str()
    assert "m-2" not in out and "q-1" not in out


# --------------------------------------------------------------------------- the message, directly


def test_explain_names_header_and_version_changes_and_formatting_only_differences(tmp_path: Path) -> None:
    from replay.schema.results import ResultsFile
    from replay.snapshots.verdicts import RunVerdicts
    from replay.snapshots.extension import VerdictSnapshotExtension
    from replay.snapshots.mismatch import explain_mismatch

    results = ResultsFile.model_validate({"prompt": "v2", "prompt_sha256": "a" * 64, "model": "m1", "files": r2_files()})
    old = VerdictSnapshotExtension().serialize(RunVerdicts("r2", results))
    new_results = results.model_copy(update={"prompt": "v3", "model": "m2"})
    new = VerdictSnapshotExtension().serialize(RunVerdicts("r2", new_results))
    lines = explain_mismatch(new, old, snapshot_folder=tmp_path / "r2")
    assert lines[1].startswith("accept: pytest --snapshot-update, then review `git diff ") and lines[1].endswith("r2/`")
    assert lines[2] == "  header: prompt v2 → v3, model m1 → m2"
    assert not any("explain the flips" in line for line in lines)

    older = old.replace('"serializer_version": 1', '"serializer_version": 0')
    assert "serializer version 0, this is version 1" in explain_mismatch(old, older, snapshot_folder=tmp_path / "r2")[2]
    reformatted = old.replace('\n  "run"', '  "run"')
    assert explain_mismatch(old, reformatted, snapshot_folder=tmp_path / "r2")[2] == (
        "  the claims are the same: the snapshot files differ only in their formatting")
    assert RunVerdicts("r2", results) == RunVerdicts("r2", results.model_copy(update={"recorded_at": "now"}))
    assert RunVerdicts("r2", results) != RunVerdicts("r2", new_results)


def test_run_paths_and_snapshots_are_taken_from_the_rootdir_when_pytest_starts_in_a_subfolder(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project.makeini("[pytest]\n")  # the rootdir: the project, wherever pytest is started
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    sub = project.path / "tests" / "deeper"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    result = project.runpytest(str(project.path / "test_verdicts.py"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 snapshots passed*"])
    assert not (sub / "snapshots").exists() and not (sub / "runs").exists()

def sampled_files(a1: tuple[str | None, ...], a2: tuple[str | None, ...]) -> list[dict[str, Any]]:
    """A run judged len(a1) times per claim: a-1 and a-2 with these verdicts in sample order."""
    return [{"file": "docs/a.md", "results": [sampled_claim("a-1", *a1, rule="R1"), sampled_claim("a-2", *a2, rule="R2")]}]


def test_a_run_with_samples_fails_on_a_majority_change_or_a_stable_claim_unsettled_not_within_its_spread(
        project: pytest.Pytester) -> None:
    ng, g = "not_grounded", "grounded"
    write_run(project.path / "runs" / "r1", results=sampled_files((ng, ng, g), (g, g, g)), samples=3)
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    stored = json.loads((project.path / "snapshots" / "r1" / "docs_a.md.json").read_text())["claims"]
    assert stored[0]["verdicts"] == {"grounded": 1, "not_grounded": 2, "source_silent": 0, "none": 0}
    assert stored[1]["verdict"] == g and stored[1]["verdicts"]["grounded"] == 3
    assert "verdicts" not in json.loads((project.path / "snapshots" / "r2" / "docs_c.md.json").read_text())["claims"][0]

    # a-1 was unstable (ng 2, g 1) and is now ng 3: same majority, inside its recorded spread: shown, not failed
    write_run(project.path / "runs" / "r1", results=sampled_files((ng, ng, ng), (g, g, g)), samples=3)
    result = project.runpytest("-W", "default")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*SampleSpreadWarning: verdicts moved within their samples' recorded spread*",
                                 "*docs/a.md:a-1  majority not_grounded held, within its recorded spread: verdicts "
                                 "grounded 1, not_grounded 2 → not_grounded 3"])

    # a-2 was stable (g 3) and is now g 2, no verdict 1: still a grounded majority, but unsettled: fails
    write_run(project.path / "runs" / "r1", results=sampled_files((ng, ng, g), (g, None, g)), samples=3)
    result = project.runpytest("-vv")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*run r1 differs from its snapshot snapshots/r1/: 0 verdicts flipped, 0 claims added, 0 removed, "
        "1 stable became unstable",
        "*  docs/a.md:a-2  stable grounded became unstable: verdicts grounded 3 → grounded 2, none 1"])

    # a-1's majority moves from ng (2 of 3) to g (2 of 3): fails, naming the claim
    write_run(project.path / "runs" / "r1", results=sampled_files((ng, g, g), (g, g, g)), samples=3)
    result = project.runpytest("-vv")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*1 verdict flipped*", "*  docs/a.md:a-1  not_grounded → grounded*"])


def test_the_plugin_registers_the_key_of_its_environment(project: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A claim id holding the user's key (a run written before it was one) reaches no snapshot file and no
    line of the summary."""
    key = "sk-ant-api03-" + "Jq4tW8zLm2Rx7Vb9Nc3Kd6Hf1Gp5Ys0TuXeAoBiWv"
    write_run(project.path / "runs" / "r1", results=r1_files(**{"a-1": {"id": f"a-{key}"}}))
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    project.runpytest("--snapshot-update").assert_outcomes(passed=2)
    write_run(project.path / "runs" / "r1", results=r1_files(**{"a-1": {"id": f"a-{key}", "judge_verdict": "not_grounded"}}))
    result = project.runpytest("-vv")
    result.assert_outcomes(passed=1, failed=1)
    written = "".join(p.read_text("utf-8") for p in (project.path / "snapshots").rglob("*") if p.is_file())
    shown = result.stdout.str() + result.stderr.str()
    assert "a-REDACTED" in written and "a-REDACTED" in shown
    for text in (written, shown):
        assert not [key[i:i + 12] for i in range(len(key) - 11) if key[i:i + 12] in text]
