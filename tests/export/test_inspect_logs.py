"""`judge-replay export inspect`: the bundled demo runs written as Inspect AI eval logs, read back with Inspect's own reader."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from locations import REPO
from replay.cli.main import main

GOLD = REPO / "demo" / "gold-correctness-set.json"
RUNS = ("v2-demo", "v3-demo")


def test_without_the_extra_it_says_how_to_install_it(tmp_path: Path) -> None:
    """Inspect AI made unimportable in a fresh process: one line naming the extra, exit 2, nothing written."""
    code = ("import sys; sys.modules['inspect_ai'] = None; from replay.cli.main import main; "
            f"sys.exit(main(['export', 'inspect', {str(REPO / 'cassettes' / 'v2-demo')!r}, '--out', {str(tmp_path)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "judge-replay: export inspect needs Inspect AI, an optional extra: pip install 'judge-replay[inspect]'"]
    assert list(tmp_path.iterdir()) == []


inspect_log = pytest.importorskip("inspect_ai.log", reason="the inspect extra is not installed")


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("logs")
    code = main(["export", "inspect", *(str(REPO / "cassettes" / r) for r in RUNS), "--gold", str(GOLD),
                 "--out", str(out)])
    assert code == 0
    return {run: inspect_log.read_eval_log(str(out / f"{run}.eval")) for run in RUNS}


def _grade(run: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["grade", str(REPO / "cassettes" / run), "--gold", str(GOLD), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("run", RUNS)
def test_one_sample_per_claim_with_its_conversation(run: str, logs: dict[str, object]) -> None:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool

    from replay.runs.folder import Run

    log = logs[run]
    recorded = Run(REPO / "cassettes" / run)
    claims = recorded.all_claims()
    assert log.status == "success" and log.eval.model == recorded.manifest.model
    assert sorted(s.id for s in log.samples) == sorted(f"{f}#{i}" for f, i in claims)
    for sample in log.samples:
        file, _, claim_id = sample.id.partition("#")
        assert sample.input == claims[(file, claim_id)].claim
        calls = [c for m in sample.messages if isinstance(m, ChatMessageAssistant) for c in m.tool_calls or []]
        assert calls and {c.function for c in calls} <= {"microsoft_docs_search", "microsoft_docs_fetch"}
        replies = {m.tool_call_id for m in sample.messages if isinstance(m, ChatMessageTool)}
        assert {c.id for c in calls} == replies  # every call answered
        answer = sample.messages[-1]
        assert isinstance(answer, ChatMessageAssistant) and f'"{claim_id}"' in answer.text
        verdict = json.loads(sample.output.completion)
        assert verdict["id"] == claim_id and verdict == sample.metadata["verdict"]
        assert f'"{verdict["judge_verdict"]}"' in answer.text
        fetched = {c.arguments["url"] for c in calls if c.function == "microsoft_docs_fetch"}
        assert sample.metadata["pages_read"] and {p["url"] for p in sample.metadata["pages_read"]} <= fetched
        assert {e.event for e in sample.events} >= {"model", "tool"}


@pytest.mark.parametrize("run", RUNS)
def test_scores_match_the_grade(run: str, logs: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    graded = _grade(run, capsys)
    log = logs[run]
    wrong = {f"{e['file']}#{e['id']}" for e in graded["errors"]}
    assert {s.id for s in log.samples if s.scores["gold"].value == "I"} == wrong
    assert sum(s.scores["gold"].value == "C" for s in log.samples) == graded["graded"] - len(wrong)
    (score,) = log.results.scores
    for name in ("precision", "recall", "f1", "accuracy"):
        assert score.metrics[name].value == pytest.approx(graded[name])
    assert {k: score.metadata[k] for k in ("tp", "fp", "fn", "tn")} == {k: graded[k] for k in ("tp", "fp", "fn", "tn")}


def test_without_a_gold_set_no_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml: no gold setting
    assert main(["export", "inspect", str(REPO / "cassettes" / "v2-demo")]) == 0
    log = inspect_log.read_eval_log(str(tmp_path / "logs" / "v2-demo.eval"))
    assert log.results.scores == [] and all(s.scores is None for s in log.samples)
    assert [p.name for p in (tmp_path / "logs").iterdir()] == ["v2-demo.eval"]  # no partial file left


def test_a_folder_that_is_no_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "inspect", str(tmp_path), "--out", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a run folder" in err[0]
    assert not (tmp_path / "logs").exists()


def test_a_claim_without_a_verdict_is_a_failed_sample(tmp_path: Path) -> None:
    """A run whose results give one claim no verdict (its conversation failed): that sample carries the
    error and scores I; the others are as recorded."""
    run = tmp_path / "v2-failed"
    shutil.copytree(REPO / "cassettes" / "v2-demo", run)
    results = json.loads((run / "results.json").read_text("utf-8"))
    first = results["files"][0]
    first["results"][0].update(judge_verdict=None, error="the Anthropic API failed: overloaded")
    (run / "results.json").write_text(json.dumps(results), "utf-8")
    assert main(["export", "inspect", str(run), "--gold", str(GOLD), "--out", str(tmp_path / "logs")]) == 0
    log = inspect_log.read_eval_log(str(tmp_path / "logs" / "v2-failed.eval"))
    failed = [s for s in log.samples if s.error is not None]
    assert [s.id for s in failed] == [f"{first['file']}#{first['results'][0]['id']}"]
    assert failed[0].error.message == "the Anthropic API failed: overloaded"
    assert failed[0].scores["gold"].value == "I" and failed[0].scores["gold"].answer == "no verdict"
