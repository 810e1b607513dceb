"""`judge-replay judge` through the CLI entry point: exit codes, messages, the results a run writes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from factories import closed_port_url, write_json
from replay.cli.main import main
from replay.schema.manifest import LEARN_MCP_URL
from replay.sim import start_learn, start_model
from locations import REPO

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
QUOTAS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"


@pytest.fixture
def workdir(workdir: Path) -> Path:
    """The shared `workdir` (cwd, no credential), with pages and claims files."""
    tmp_path = workdir
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "models.md").write_text(
        f"---\nurl: {MODELS_URL}\n---\n# Models\n\n| Model | Context window |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n", "utf-8")
    (tmp_path / "pages" / "quotas.md").write_text(
        f"---\nurl: {QUOTAS_URL}\n---\n# Quotas\n\nThe default quota for gpt-4o is 450,000 tokens per minute.\n", "utf-8")
    claims = [
        ("a.json", "docs/a.md", {"id": "a-1", "claim": "GPT-4.1 offers a 200k+ token context window.",
                                 "claim_type": "version", "evidence_url": MODELS_URL}),
        ("b.json", "docs/b.md", {"id": "b-1", "claim": "The default quota for gpt-4o is 300,000 tokens per minute.",
                                 "claim_type": "tpm", "evidence_url": QUOTAS_URL}),
        ("c.json", "docs/c.md", {"id": "c-1", "claim": "The default quota for gpt-4o is 450,000 tokens per minute.",
                                 "claim_type": "tpm"}),
    ]
    for name, file, claim in claims:
        write_json(tmp_path / "claims" / name, {"file": file, "claims": [claim]})
    return tmp_path



def test_live_run_over_a_claims_folder(workdir: Path, stand_ins: tuple[Any, Any], capsys: Any) -> None:
    learn, model = stand_ins
    code = main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/live", "--mode", "live",
                 "--learn-url", learn.url, "--anthropic-base-url", model.url, "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    results = json.loads((workdir / "runs" / "live" / "results.json").read_text())
    got = {(f["file"], r["id"]): (r["judge_verdict"], r["rule"], r["quote_verified"])
           for f in results["files"] for r in f["results"]}
    assert got == {
        ("docs/a.md", "a-1"): ("not_grounded", "R1", True),  # 1,047,576 > 2 x 200k under v3's R1
        ("docs/b.md", "b-1"): ("not_grounded", "", True),    # the page states 450,000
        ("docs/c.md", "c-1"): ("grounded", "", True),        # found by search, then fetched
    }
    assert results["prompt"] == "v3" and results["model"] == "claude-sonnet-5-5"
    assert "3 files, 3 claims: 1 grounded, 2 not_grounded, 0 source_silent" in out
    assert "quotes not found in the fetched page: 0" in out and "runs/live" in out
    assert json.loads((workdir / "runs" / "live" / "run.json").read_text())["stand_ins"] == ["learn", "model"]
    assert "stand-ins (test equipment, not the real services): learn, model" in out


def test_record_then_replay_with_out(workdir: Path, stand_ins: tuple[Any, Any], capsys: Any) -> None:
    learn, model = stand_ins
    assert main(["judge", "--prompt", "v1", "--claims", "claims/a.json", "claims/b.json", "--run", "runs/r",
                 "--mode", "record", "--learn-url", learn.url, "--anthropic-base-url", model.url,
                 "--model", "claude-test", "--no-progress"]) == 0
    recorded = json.loads((workdir / "runs" / "r" / "results.json").read_text())
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (workdir / "runs" / "r").iterdir())
    capsys.readouterr()
    assert main(["judge", "--mode", "replay", "--run", "runs/r", "--out", "replayed.json", "--no-progress"]) == 0
    assert "judge replay: prompt v1, model claude-test" in capsys.readouterr().out
    assert json.loads((workdir / "replayed.json").read_text())["files"] == recorded["files"]
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (workdir / "runs" / "r").iterdir()) == before


def test_malformed_claims_file_names_the_path(workdir: Path, capsys: Any) -> None:
    (workdir / "claims" / "b.json").write_text('{"file": "docs/b.md", "claims": [')
    code = main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r", "--mode", "record",
                 "--learn-url", closed_port_url()])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and str(Path("claims") / "b.json") in err and "not valid JSON" in err
    assert "Traceback" not in err


def test_no_api_key_exits_2(workdir: Path, capsys: Any) -> None:
    code = main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r", "--mode", "record"])
    err = capsys.readouterr().err
    assert code == 2 and "ANTHROPIC_API_KEY is not set" in err and "--mode replay" in err


def test_unreachable_learn_url_exits_1(workdir: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service down is the environment failing (exit 1, as for the model endpoint), not bad input (2)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    url = closed_port_url()
    code = main(["judge", "--prompt", "v3", "--claims", "claims", "--mode", "live", "--learn-url", url])
    err = capsys.readouterr().err
    assert code == 1 and f"cannot reach the Learn MCP endpoint at {url}" in err and "Traceback" not in err


def test_replay_of_a_missing_run_exits_2(workdir: Path, capsys: Any) -> None:
    assert main(["judge", "--mode", "replay", "--run", "runs/none"]) == 2
    assert "runs/none: no such run folder" in capsys.readouterr().err


def test_live_needs_prompt_and_claims(workdir: Path, capsys: Any) -> None:
    assert main(["judge", "--claims", "claims", "--mode", "live"]) == 2
    assert "needs --prompt P and --claims PATH" in capsys.readouterr().err


@pytest.mark.parametrize("argv, why", [
    (["--prompt", "v3", "--claims", "claims"], "and no --run folder to replay"),
    (["--prompt", "v3", "--claims", "claims", "--run", "runs/new"], "--run runs/new is not a recorded run folder"),
    (["--run", "recorded", "--batch"], "--batch is for a recording"),
    (["--run", "recorded", "--retry-failed", "--max-cost", "1"], "--retry-failed, --max-cost are for a recording"),
])
def test_without_a_mode_nothing_is_billed_and_the_modes_are_listed(
        workdir: Path, stand_ins: tuple[Any, Any], capsys: Any, monkeypatch: pytest.MonkeyPatch,
        argv: list[str], why: str) -> None:
    """No mode, no billed call: the stand-ins (as the default endpoints) see no request at all."""
    learn, model = stand_ins
    monkeypatch.setenv("JUDGE_REPLAY_LEARN_URL", learn.url)
    monkeypatch.setenv("JUDGE_REPLAY_ANTHROPIC_BASE_URL", model.url)
    write_json(workdir / "recorded" / "run.json", {"version": 1})  # looks like a run: a recording flag still refuses
    assert main(["judge", *argv, "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"no --mode given ({why})" in err and "Traceback" not in err
    assert "--mode live (billed" in err and "--mode record (billed" in err and "--mode replay (offline" in err
    assert not learn.calls and not model.requests and not (workdir / "runs").exists()


def test_without_a_mode_a_recorded_run_replays(workdir: Path, stand_ins: tuple[Any, Any], capsys: Any) -> None:
    learn, model = stand_ins
    endpoints = ["--learn-url", learn.url, "--anthropic-base-url", model.url]
    assert main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r", "--mode", "record",
                 *endpoints, "--no-progress"]) == 0
    capsys.readouterr()
    calls, requests = len(learn.calls), len(model.requests)
    assert main(["judge", "--run", "runs/r", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("judge replay: prompt v3") and "written: nothing" in out
    assert (len(learn.calls), len(model.requests)) == (calls, requests)  # offline


@pytest.mark.parametrize("where", ["environment", "pyproject"])
def test_mode_from_the_environment_or_the_settings(workdir: Path, stand_ins: tuple[Any, Any], capsys: Any,
                                                   monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    learn, model = stand_ins
    if where == "environment":
        monkeypatch.setenv("JUDGE_REPLAY_MODE", "record")
        monkeypatch.setenv("JUDGE_REPLAY_LEARN_URL", learn.url)
        monkeypatch.setenv("JUDGE_REPLAY_ANTHROPIC_BASE_URL", model.url)
    else:
        (workdir / "pyproject.toml").write_text(f'[tool.judge-replay]\nmode = "record"\nlearn-url = "{learn.url}"\n'
                                                f'anthropic-base-url = "{model.url}"\n', "utf-8")
    assert main(["judge", "--prompt", "v3", "--claims", "claims/a.json", "--run", "runs/r", "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith("judge record:") and (workdir / "runs" / "r" / "run.json").is_file()
    assert model.requests  # the stand-in answered: the endpoints came from there too


@pytest.mark.parametrize("where, value, message", [
    ("environment", "billed", "JUDGE_REPLAY_MODE must be one of live, record, replay, not 'billed'"),
    ("pyproject", "billed", "pyproject.toml: [tool.judge-replay] mode must be one of live, record, replay"),
])
def test_a_bad_mode_setting_is_a_usage_error(workdir: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch,
                                              where: str, value: str, message: str) -> None:
    if where == "environment":
        monkeypatch.setenv("JUDGE_REPLAY_MODE", value)
    else:
        (workdir / "pyproject.toml").write_text(f'[tool.judge-replay]\nmode = "{value}"\n', "utf-8")
    assert main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r"]) == 2
    assert message in capsys.readouterr().err


def test_default_learn_url_is_the_public_endpoint() -> None:
    from replay.cli.judge import command

    assert LEARN_MCP_URL in (next(p for p in command.params if p.name == "learn_url").help or "")


def test_live_without_a_run_says_what_it_costs_keeps_and_rests_on(workdir: Path, stand_ins: tuple[Any, Any],
                                                                  capsys: Any) -> None:
    learn, model = stand_ins
    code = main(["judge", "--prompt", "v3", "--claims", "claims/a.json", "--mode", "live", "--learn-url", learn.url,
                 "--anthropic-base-url", model.url, "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "calls the Anthropic API (billed) and keeps nothing" in err
    assert "stand-ins (test equipment, not the real services): learn, model" in out
    assert "written: nothing" in out


def test_help_names_the_key_the_stand_ins_and_an_example_per_mode(capsys: Any) -> None:
    assert main(["judge", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "ANTHROPIC_API_KEY" in text and "judge-replay sim learn" in text and "judge-replay sim model" in text
    assert "billed" in text and "keeps nothing unless" in text
    for mode in ("live", "record", "replay"):
        assert f"--mode {mode}" in text.split("Examples:")[1]
    assert "--retry-failed" in text


def test_a_checkout_that_turned_line_ends_into_crlf_still_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: Any) -> None:
    """Git for Windows checks text out with CRLF by default: the claims are the same, so the run replays;
    a claims file whose content changed is still refused."""
    import shutil

    root = REPO
    shutil.copytree(root / "cassettes" / "v3-demo", tmp_path / "cassettes" / "v3-demo")
    shutil.copytree(root / "demo" / "claims", tmp_path / "demo" / "claims")
    claims = tmp_path / "demo" / "claims" / "evaluation.json"
    claims.write_bytes(claims.read_bytes().replace(b"\n", b"\r\n"))
    monkeypatch.chdir(tmp_path)
    assert main(["judge", "--mode", "replay", "--run", "cassettes/v3-demo", "--no-progress"]) == 0
    capsys.readouterr()
    claims.write_bytes(claims.read_bytes().replace(b"compute their score", b"compute a score"))
    assert main(["judge", "--mode", "replay", "--run", "cassettes/v3-demo", "--no-progress"]) == 2
    assert "changed since run" in capsys.readouterr().err
