"""The pytest record mode, used from a throwaway project (pytester) against the stand-ins: a marked test
replays its run offline, `--record-mode once` records a missing run, `rewrite` records it again."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from locations import REPO
from replay.sim import start_learn, start_model

pytest_plugins = ["pytester"]

TEST_FILE = """
import pytest

@pytest.mark.judge_run(prompt="v3", claims=["claims/evaluation.json"], run="runs/evaluation")
def test_evaluation(judge_run, verdict_snapshot):
    assert judge_run == verdict_snapshot
"""



@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID", "JUDGE_REPLAY_RECORD_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (pytester.path / "claims").mkdir()
    shutil.copy(REPO / "demo" / "claims" / "evaluation.json", pytester.path / "claims" / "evaluation.json")
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_evaluation=TEST_FILE)
    return pytester


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    with start_learn(REPO / "demo" / "pages" / "2026-06") as learn, start_model() as model:
        monkeypatch.setenv("JUDGE_REPLAY_LEARN_URL", learn.url)
        monkeypatch.setenv("JUDGE_REPLAY_ANTHROPIC_BASE_URL", model.url)
        yield learn, model


def test_replay_by_default_record_once_and_rewrite(project: pytest.Pytester, stand_ins: tuple[Any, Any],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    learn, model = stand_ins
    missing = project.runpytest()
    missing.assert_outcomes(errors=1)  # in the fixture: the test could not be set up
    missing.stdout.fnmatch_lines(["*run runs/evaluation is not recorded: `pytest --record-mode once` records it*"])
    assert not model.requests and not learn.calls and not (project.path / "runs").exists()

    project.runpytest("--record-mode", "once", "--snapshot-update").assert_outcomes(passed=1)
    recorded = len(model.requests)
    assert recorded > 0 and (project.path / "runs" / "evaluation" / "run.json").is_file()
    assert (project.path / "snapshots" / "evaluation").is_dir()

    project.runpytest().assert_outcomes(passed=1)  # replay: nothing leaves the machine
    project.runpytest("--record-mode", "once").assert_outcomes(passed=1)  # recorded already: replayed
    assert len(model.requests) == recorded

    monkeypatch.setenv("JUDGE_REPLAY_RECORD_MODE", "rewrite")  # the environment gives the mode too
    project.runpytest().assert_outcomes(passed=1)
    assert len(model.requests) == 2 * recorded

    monkeypatch.delenv("JUDGE_REPLAY_RECORD_MODE")
    (project.path / "tests" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(project.path / "tests" / "deeper")  # run paths are taken from the rootdir
    project.runpytest(str(project.path / "test_evaluation.py")).assert_outcomes(passed=1)
    assert len(model.requests) == 2 * recorded


def test_a_marker_without_its_arguments_says_what_it_needs(project: pytest.Pytester) -> None:
    project.makepyfile(test_evaluation="""
import pytest

@pytest.mark.judge_run(prompt="v3")
def test_evaluation(judge_run):
    pass
""")
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*judge_run needs prompt=*claims=*run=*"])
