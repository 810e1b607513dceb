"""What a CI job relies on: `--check` (and `check = true`) turns the gate's refusal into exit 1, and
GITHUB_STEP_SUMMARY receives the markdown report, appended."""

import shutil

import pytest

from locations import REPO
from replay.cli.main import main


@pytest.fixture
def demo(tmp_path, monkeypatch):
    for part in ("pyproject.toml", "cassettes", "demo"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy)(REPO / part, tmp_path / part)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def test_check_fails_on_a_refused_candidate_and_passes_an_adopted_one(demo, capsys):
    refused = ["grade", "cassettes/v1-demo", "--baseline", "cassettes/v2-demo"]
    assert main(refused) == 0  # without --check the decision is reported, the exit is 0
    assert "gate: DO NOT ADOPT" in capsys.readouterr().out
    assert main([*refused, "--check"]) == 1
    captured = capsys.readouterr()
    assert "gate: DO NOT ADOPT" in captured.out and "grade --check" in captured.err
    assert main(["grade", "cassettes/v3-demo", "--baseline", "cassettes/v2-demo", "--check"]) == 0
    # the bake-off gates v3 (adopted) and v1 (refused): one refusal fails the job
    assert main(["bakeoff", "--no-replay", "--check"]) == 1
    assert "cassettes/v1-demo" in capsys.readouterr().err
    assert main(["bakeoff", "--no-replay", "--candidate", "cassettes/v3-demo", "--check"]) == 0


def test_the_check_setting_and_its_override(demo, capsys):
    text = (demo / "pyproject.toml").read_text("utf-8")
    (demo / "pyproject.toml").write_text(text.replace("[tool.judge-replay]", "[tool.judge-replay]\ncheck = true", 1))
    assert main(["grade", "cassettes/v1-demo", "--baseline", "cassettes/v2-demo"]) == 1
    assert main(["grade", "cassettes/v1-demo", "--baseline", "cassettes/v2-demo", "--no-check"]) == 0
    (demo / "pyproject.toml").write_text(text.replace("[tool.judge-replay]", "[tool.judge-replay]\ncheck = 1", 1))
    assert main(["grade", "cassettes/v1-demo", "--baseline", "cassettes/v2-demo"]) == 2
    assert "check must be true or false" in capsys.readouterr().err


def test_the_job_summary_is_appended(demo, capsys, monkeypatch):
    summary = demo / "summary.md"
    summary.write_text("earlier step\n", "utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["grade", "cassettes/v3-demo", "--baseline", "cassettes/v2-demo", "--json"]) == 0
    assert main(["bakeoff", "--no-replay"]) == 0
    assert main(["diff", "cassettes/v2-demo", "cassettes/v3-demo"]) == 0
    text = summary.read_text("utf-8")
    assert text.startswith("earlier step\n")
    assert text.index("## Grade:") < text.index("## Judge prompt bake-off") < text.rindex("cassettes/v3-demo")
    assert "| prompt |" in text
    capsys.readouterr()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(demo / "no-such-folder" / "summary.md"))
    assert main(["grade", "cassettes/v3-demo"]) == 2
    err = capsys.readouterr().err
    assert "GITHUB_STEP_SUMMARY" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
