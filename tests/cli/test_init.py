"""`judge-replay init`: the scaffold is a working project (record against the stand-ins, replay, grade,
snapshot), and init never overwrites anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from replay.cli.main import main
from replay.sim import start_model
from locations import REPO

SCAFFOLD = ["claims/example.json", "gold-correctness-set.json", "tests/test_judge_snapshots.py",
            ".github/workflows/judge.yml", "pyproject.toml"]


def test_init_then_record_replay_grade_and_snapshot_all_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             demo_learn: Any, capsys: Any) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["init", str(tmp_path / "mydocs")]) == 0
    project = tmp_path / "mydocs"
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()) == sorted(SCAFFOLD)
    monkeypatch.chdir(project)
    capsys.readouterr()

    with start_model() as model:
        for name, prompt in (("baseline", "v2"), ("candidate", "v3")):
            assert main(["judge", "--prompt", prompt, "--claims", "claims", "--run", f"runs/{name}", "--mode", "record",
                         "--learn-url", demo_learn.url, "--anthropic-base-url", model.url, "--no-progress"]) == 0
        requests = len(model.requests)
    assert requests > 0
    assert main(["judge", "--run", "runs/candidate", "--no-progress"]) == 0  # no mode: replays
    assert main(["cassettes", "verify", "runs/baseline", "runs/candidate"]) == 0
    capsys.readouterr()

    assert main(["grade", "runs/candidate", "--gold", "gold-correctness-set.json", "--json"]) == 0
    graded = json.loads(capsys.readouterr().out)
    assert graded["tp"] + graded["fp"] + graded["fn"] + graded["tn"] + graded["no_verdict"] == 3
    assert main(["bakeoff", "--json"]) == 0  # the settings init wrote name the gold set and both runs
    bakeoff = capsys.readouterr().out
    assert "baseline" in bakeoff and "candidate" in bakeoff

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                  "tests/test_judge_snapshots.py"]
    update = subprocess.run([*pytest_cmd, "--snapshot-update"], cwd=project, env=env, capture_output=True, text=True,
                            timeout=300)
    assert update.returncode == 0, update.stdout + update.stderr
    assert (project / "snapshots" / "candidate" / "docs_example.md.json").is_file()
    again = subprocess.run(pytest_cmd[:-1], cwd=project / "tests", env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "2 passed" in again.stdout, again.stdout + again.stderr


def test_the_workflow_replays_and_gates(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path)]) == 0
    workflow = yaml.safe_load((tmp_path / ".github" / "workflows" / "judge.yml").read_text("utf-8"))
    runs = [step.get("run", "") for step in workflow["jobs"]["judge"]["steps"]]
    assert "judge-replay cassettes verify runs/*" in runs and "judge-replay bakeoff --check" in runs
    assert any(r.startswith("pytest") for r in runs)


def test_init_never_overwrites(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n\n[tool.judge-replay]\nmodel = "m"\n', "utf-8")
    before = (tmp_path / "pyproject.toml").read_bytes()
    assert main(["init", str(tmp_path)]) == 2
    assert "already has [tool.judge-replay]" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["pyproject.toml"] and (tmp_path / "pyproject.toml").read_bytes() == before

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n', "utf-8")
    assert main(["init", str(tmp_path)]) == 0  # a pyproject.toml without the table gets it added, kept otherwise
    text = (tmp_path / "pyproject.toml").read_text("utf-8")
    assert text.startswith('[project]\nname = "mine"\n') and '\n[tool.judge-replay]\ngold = "gold-correctness-set.json"' in text

    (tmp_path / "claims" / "example.json").write_text("{}", "utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n', "utf-8")
    assert main(["init", str(tmp_path)]) == 2
    assert "init never overwrites a file, and these exist" in capsys.readouterr().err
    assert (tmp_path / "claims" / "example.json").read_text("utf-8") == "{}"
    assert (tmp_path / "pyproject.toml").read_text("utf-8") == '[project]\nname = "mine"\n'
