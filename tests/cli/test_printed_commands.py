"""Printed commands run as printed: against stand-ins on ports other than their defaults (the form run
folders store), every `judge-replay judge` command we print carries the endpoints the user gave, and
running it, exactly as printed, records against them."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from factories import write_json
from replay.cli.main import main
from replay.core.commands import Endpoints, add_samples_command, rerecord_command, retry_failed_command
from replay.runs.folder import Run
from replay.sim import start_learn, start_model
from replay.urls import LEARN_STAND_IN_PORT, MODEL_STAND_IN_PORT

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
QUOTAS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
MODELS_PAGE = "# Models\n\n| Model | Context window |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n"
QUOTAS_PAGE = "# Quotas\n\nThe default quota for gpt-4o is 450,000 tokens per minute.\n"


class Served:
    """A stand-in and the requests it logged."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.url = ""

    def log(self, line: str) -> None:
        self.requests.append(line)


def _pages(folder: Path, quotas: str = QUOTAS_PAGE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.md").write_text(f"---\nurl: {MODELS_URL}\n---\n{MODELS_PAGE}", "utf-8")
    (folder / "quotas.md").write_text(f"---\nurl: {QUOTAS_URL}\n---\n{quotas}", "utf-8")
    return folder


@pytest.fixture
def workdir(workdir: Path) -> Path:
    _pages(workdir / "pages")
    write_json(workdir / "claims" / "a.json", {"file": "docs/a.md", "claims": [
        {"id": "a-1", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL}]})
    write_json(workdir / "claims" / "b.json", {"file": "docs/b.md", "claims": [
        {"id": "b-1", "claim": "The default quota for gpt-4o is 450,000 tokens per minute.", "claim_type": "tpm",
         "evidence_url": QUOTAS_URL}]})
    write_json(workdir / "gold.json", {"name": "g", "items": [
        {"file": "docs/a.md", "id": "a-1", "label": "outdated"}, {"file": "docs/b.md", "id": "b-1", "label": "correct"}]})
    return workdir


@pytest.fixture
def served(workdir: Path) -> Iterator[tuple[Served, Served]]:
    """The two stand-ins on free ports (never their defaults), each logging its requests."""
    learn, model = Served(), Served()
    with start_learn(workdir / "pages", log=learn.log) as lh, start_model(log=model.log) as mh:
        learn.url, model.url = lh.url, mh.url
        assert f":{LEARN_STAND_IN_PORT}/" not in lh.url and f":{MODEL_STAND_IN_PORT}" not in mh.url
        yield learn, model


def _record(served: tuple[Served, Served], run: str = "runs/r") -> None:
    learn, model = served
    assert main(["judge", "--prompt", "v3", "--claims", "claims", "--run", run, "--mode", "record",
                 "--learn-url", learn.url, "--anthropic-base-url", model.url, "--no-progress"]) == 0


def _given_by_environment(monkeypatch: pytest.MonkeyPatch, served: tuple[Served, Served]) -> None:
    monkeypatch.setenv("JUDGE_REPLAY_LEARN_URL", served[0].url)
    monkeypatch.setenv("JUDGE_REPLAY_ANTHROPIC_BASE_URL", served[1].url)


def _run_as_printed(command: str, served: tuple[Served, Served], capsys: Any) -> int:
    """Run a printed command exactly as printed (no environment variable naming an endpoint), and check it
    talked to both stand-ins."""
    argv = shlex.split(command)
    assert argv[0] == "judge-replay"
    before = [len(s.requests) for s in served]
    with pytest.MonkeyPatch.context() as env:
        env.delenv("JUDGE_REPLAY_LEARN_URL", raising=False)
        env.delenv("JUDGE_REPLAY_ANTHROPIC_BASE_URL", raising=False)
        code = main(argv[1:])
    capsys.readouterr()
    assert [len(s.requests) > n for s, n in zip(served, before)] == [True, True], command
    return code


def _fail_file(run: Path, file: str) -> None:
    """The run as after a failed conversation of `file`: its claims without a verdict."""
    results = json.loads((run / "results.json").read_text("utf-8"))
    for f in results["files"]:
        if f["file"] == file:
            f["error"] = "API error 529: overloaded"
            f["results"] = [{"id": r["id"], "error": "API error 529: overloaded"} for r in f["results"]]
    write_json(run / "results.json", results)


def test_the_stored_endpoints_are_the_canonical_ones(workdir: Path, served: tuple[Served, Served]) -> None:
    """What the printed commands must not fall back on: run.json keeps the default ports."""
    _record(served)
    m = Run(workdir / "runs" / "r").manifest
    assert (m.learn_url, m.anthropic_base_url) == (f"http://127.0.0.1:{LEARN_STAND_IN_PORT}/api/mcp",
                                                    f"http://127.0.0.1:{MODEL_STAND_IN_PORT}")


def test_the_gates_retry_command_carries_the_endpoints_given_and_runs_as_printed(
        workdir: Path, served: tuple[Served, Served], capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _record(served, "runs/base")
    _record(served, "runs/cand")
    _fail_file(workdir / "runs" / "cand", "docs/b.md")
    capsys.readouterr()
    _given_by_environment(monkeypatch, served)
    assert main(["grade", "runs/cand", "--gold", "gold.json", "--baseline", "runs/base", "--json"]) == 0
    reason = json.loads(capsys.readouterr().out)["gate"]["reason"]
    command = reason.split("to re-record the candidate's claims without a verdict: ")[1]
    assert f"--learn-url {served[0].url}" in command and f"--anthropic-base-url {served[1].url}" in command
    assert command.endswith("--retry-failed")
    assert _run_as_printed(command, served, capsys) == 0
    assert all(r.judge_verdict for f in Run(workdir / "runs" / "cand").results.files for r in f.results)
    # with no endpoint given, the command is the run's own (stored) form, as before
    monkeypatch.delenv("JUDGE_REPLAY_LEARN_URL")
    monkeypatch.delenv("JUDGE_REPLAY_ANTHROPIC_BASE_URL")
    _fail_file(workdir / "runs" / "cand", "docs/b.md")
    assert main(["bakeoff", "--no-replay", "--gold", "gold.json", "--baseline", "runs/base", "--candidate",
                 "runs/cand", "--json"]) == 0
    reason = json.loads(capsys.readouterr().out)["gates"][0]["reason"]
    assert f"--learn-url http://127.0.0.1:{LEARN_STAND_IN_PORT}/api/mcp" in reason


def test_the_replay_miss_command_carries_the_endpoints_given_and_runs_as_printed(
        workdir: Path, served: tuple[Served, Served], capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _record(served)
    claims = json.loads((workdir / "claims" / "a.json").read_text("utf-8"))
    claims["claims"][0]["claim"] = "GPT-4.1 offers a 300k+ token context window."  # the recorded requests no longer match
    write_json(workdir / "claims" / "a.json", claims)
    capsys.readouterr()
    _given_by_environment(monkeypatch, served)
    code = main(["judge", "--mode", "replay", "--run", "runs/r", "--prompt", "v3", "--claims", "claims",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code != 0 and "to re-record:" in err, err
    command = err.split("to re-record:", 1)[1].strip().splitlines()[0].strip().strip("`")
    assert f"--learn-url {served[0].url}" in command and f"--anthropic-base-url {served[1].url}" in command
    assert _run_as_printed(command, served, capsys) == 0
    assert main(["judge", "--mode", "replay", "--run", "runs/r", "--prompt", "v3", "--claims", "claims",
                 "--no-progress"]) == 0


def test_drift_live_rerecords_against_the_endpoint_it_fetched_the_later_pages_from(
        workdir: Path, served: tuple[Served, Served], capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run was recorded against a Learn stand-in over the old pages; --live fetched today's from
    another (another pages folder, another port): the re-record command judges today's pages, with the
    model endpoint the environment gives."""
    _record(served)
    later = Served()
    changed = _pages(workdir / "pages-later", quotas="# Quotas\n\nThe default quota for gpt-4o is 300,000 tokens per minute.\n")
    with start_learn(changed, log=later.log) as handle:
        later.url = handle.url
        capsys.readouterr()
        monkeypatch.setenv("JUDGE_REPLAY_ANTHROPIC_BASE_URL", served[1].url)
        assert main(["drift", "runs/r", "--live", "--learn-url", later.url]) == 1
        out = capsys.readouterr().out
        (command,) = [line.strip() for line in out.splitlines() if line.strip().startswith("judge-replay judge ")]
        assert f"--learn-url {later.url}" in command and f"--anthropic-base-url {served[1].url}" in command
        assert "--pages-from" not in command
        old_pages = len(served[0].requests)
        assert _run_as_printed(command, (later, served[1]), capsys) == 0
        assert len(served[0].requests) == old_pages  # the old pages were not read again
    argv = shlex.split(command)
    assert "300,000" in Run(workdir / argv[argv.index("--run") + 1]).page(QUOTAS_URL).text


def test_add_samples_records_against_the_endpoints_the_environment_gives(
        workdir: Path, served: tuple[Served, Served], capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's `--add-samples` command names no endpoint when none was given: the environment that
    names the stand-ins then applies to it (the run's stored ports would reach nothing)."""
    _record(served)
    command = add_samples_command("runs/r", 1)
    _given_by_environment(monkeypatch, served)
    before = [len(s.requests) for s in served]
    assert main(shlex.split(command)[1:] + ["--no-progress"]) == 0
    assert all(len(s.requests) > n for s, n in zip(served, before))
    assert Run(workdir / "runs" / "r").manifest.sample_count == 2


def test_commands_built_from_a_run_take_the_endpoints_given(workdir: Path, served: tuple[Served, Served]) -> None:
    _record(served)
    m = Run(workdir / "runs" / "r").manifest
    given = Endpoints("http://127.0.0.1:9101/api/mcp", "http://127.0.0.1:9102")
    for command in (rerecord_command(m, ["claims/a.json"], "runs/x", endpoints=given),
                    retry_failed_command(m, "runs/r", endpoints=given)):
        assert "--learn-url http://127.0.0.1:9101/api/mcp --anthropic-base-url http://127.0.0.1:9102" in command
    assert add_samples_command("runs/r", 2, endpoints=given) == (
        "judge-replay judge --mode record --add-samples 2 --run runs/r --learn-url http://127.0.0.1:9101/api/mcp "
        "--anthropic-base-url http://127.0.0.1:9102")
    assert "--learn-url" not in add_samples_command("runs/r", 2)  # the run's own endpoints
    # credentials the user gave are never printed
    secret = Endpoints("http://user:hunter2@127.0.0.1:9101/api/mcp?api_key=hunter3")
    assert "hunter" not in retry_failed_command(m, "runs/r", endpoints=secret)


def test_a_retry_on_another_endpoint_names_the_one_given(workdir: Path, served: tuple[Served, Served],
                                                         capsys: Any) -> None:
    _record(served)
    _fail_file(workdir / "runs" / "r", "docs/b.md")
    capsys.readouterr()
    other = served[0].url + "?tenant=b"  # another endpoint (its query differs), on the stand-in's own port
    assert main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r", "--mode", "record",
                 "--learn-url", other, "--anthropic-base-url", served[1].url, "--retry-failed", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"recorded with {other}:" in err and f"--learn-url http://127.0.0.1:{LEARN_STAND_IN_PORT}/api/mcp;" in err


def test_a_failure_is_stored_with_the_canonical_endpoint_and_printed_with_the_one_given(
        workdir: Path, capsys: Any) -> None:
    """A Learn outage fails a file: results.json keeps the error text replay reproduces (the stored,
    default-port form), the summary and the printed retry command name the port the stand-in is on."""
    with start_learn(workdir / "pages", fail_first=4, fail_status=503) as learn, start_model() as model:
        code = main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r", "--mode", "record",
                     "--learn-url", learn.url, "--anthropic-base-url", model.url, "--concurrency", "1",
                     "--no-progress"])
        out, err = capsys.readouterr()
        assert code == 1, err
        stored = [f.error for f in Run(workdir / "runs" / "r").results.files if f.error]
        assert stored and f"127.0.0.1:{LEARN_STAND_IN_PORT}/api/mcp" in stored[0]
        (failed,) = [line for line in out.splitlines() if line.startswith("  failed: ")]
        assert learn.url in failed and f":{LEARN_STAND_IN_PORT}/" not in failed
        retry = err.split("To record just those again:\n", 1)[1].strip()
        assert f"--learn-url {learn.url}" in retry
        assert main(shlex.split(retry)[1:]) == 0  # as printed: the outage is over
    assert all(r.judge_verdict for f in Run(workdir / "runs" / "r").results.files for r in f.results)
