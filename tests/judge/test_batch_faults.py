"""`judge --batch` against what the real Message Batches API does on a bad day, made on purpose by the batch
stand-in: 429s on every call, batches archived before their results were read, entries errored in ways a
resubmission cannot cure."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from factories import judge_demo
from replay.runs.writer import journal_path
from replay.sim import start_model
from replay.sim.batches import BatchSettings


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return tmp_path


def failed_files(run: Path) -> dict[str, str]:
    results = json.loads((run / "results.json").read_text("utf-8"))
    errors = {f["file"]: f.get("error") or next((r["error"] for r in f["results"] if r.get("error")), None)
              for f in results["files"]}
    return {file: error for file, error in errors.items() if error}


def test_429s_on_every_batch_call_are_waited_out_as_retry_after_asks(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # three 429s in a row on each kind of call: one more than the SDK's own two retries of a status check,
    # so the run's own wait is met on every kind; a second is the shortest retry-after (whole seconds)
    with start_model(batch_settings=BatchSettings(delay=0.2, rate_limited=3, retry_after=1)) as model:
        started = time.monotonic()
        assert judge_demo(demo_learn, model, "batch", "--batch") == 0, capsys.readouterr().err
        elapsed = time.monotonic() - started
        assert model.app.batches.calls("create") > 3
        assert model.app.batches.calls("retrieve") > 3
        assert model.app.batches.calls("results") > 3
    assert elapsed >= 3 * 3  # create, status, results: three waits of a second each, as retry-after asked
    assert failed_files(workdir / "batch") == {}


def test_an_archived_batch_stops_the_run_and_is_paid_again_only_with_consent(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model(batch_settings=BatchSettings(archive_after=0.0)) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") != 0
        err = capsys.readouterr().err
        first = list(model.app.batches.log)
        assert len(first) == 5
        assert "was archived at" in err and "past retention" in err
        assert "5 unanswered request(s)" in err and "estimated at up to $" in err
        assert "--resubmit-archived" in err
        assert journal_path(workdir / "batch").exists()  # kept: nothing was lost

        # a resume without consent stops the same way, submitting nothing
        assert judge_demo(demo_learn, model, "batch", "--batch", "--resume") != 0
        assert "--resubmit-archived" in capsys.readouterr().err
        assert model.app.batches.log == first

        # with consent: the requests are priced, said, submitted again, and the run completes
        model.app.batches.settings = BatchSettings()
        assert judge_demo(demo_learn, model, "batch", "--batch", "--resume", "--resubmit-archived") == 0, \
            capsys.readouterr().err
        assert sorted(s.custom_id for s in model.app.batches.log[5:10]) == sorted(s.custom_id for s in first)
    assert failed_files(workdir / "batch") == {}


@pytest.mark.parametrize(("error_type", "status"), [
    ("invalid_request_error", 400), ("authentication_error", 401), ("billing_error", 402),
    ("permission_error", 403), ("not_found_error", 404)])
def test_an_entry_error_resubmitting_cannot_cure_ends_its_file_at_once_with_its_real_status(
        workdir: Path, demo_learn: Any, capsys: Any, error_type: str, status: int) -> None:
    faults = BatchSettings(errored="evaluation", every_time=True, error_type=error_type)
    with start_model(batch_settings=faults) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 1
        submitted = [s.custom_id for s in model.app.batches.log if "evaluation" in s.custom_id]
    assert len(submitted) == 1  # submitted once: never again
    error = failed_files(workdir / "batch")["docs/evaluation.md"]
    assert f"{error_type} (HTTP {status})" in error
    assert "cannot cure" in error


@pytest.mark.parametrize(("error_type", "status"), [("timeout_error", 504), ("overloaded_error", 529)])
def test_an_entry_error_that_may_pass_is_resubmitted_then_named_with_its_real_status(
        workdir: Path, demo_learn: Any, error_type: str, status: int) -> None:
    faults = BatchSettings(errored="evaluation", every_time=True, error_type=error_type)
    with start_model(batch_settings=faults) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 1
        submitted = [s.custom_id for s in model.app.batches.log if "evaluation" in s.custom_id]
    assert len(submitted) == 3
    assert f"{error_type} (HTTP {status})" in failed_files(workdir / "batch")["docs/evaluation.md"]


def test_a_batch_entry_the_api_refuses_as_invalid_is_not_resubmitted(workdir: Path, demo_learn: Any) -> None:
    # a sampling parameter on a 5.x model: the stand-in errors the entry as the API does (no fault planted)
    from replay.sim.strict import check_message_request
    from replay.sim.api_errors import ApiError

    with pytest.raises(ApiError) as refused:
        check_message_request({"model": "claude-sonnet-5-5", "max_tokens": 5, "temperature": 0,
                               "messages": [{"role": "user", "content": "hi"}]}, batch=True)
    assert refused.value.kind == "invalid_request_error" and refused.value.status == 400


def test_max_tokens_is_asked_kept_and_a_cut_answer_says_which_file_and_what_to_raise(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    from replay.cli.main import main

    with start_model() as model:
        assert judge_demo(demo_learn, model, "small", "--max-tokens", "700") == 1
        err = capsys.readouterr().err
        assert judge_demo(demo_learn, model, "roomy") == 0, capsys.readouterr().err
    errors = failed_files(workdir / "small")
    assert sorted(errors) == ["docs/azure-openai-models.md", "docs/provisioned-throughput.md",
                              "docs/quotas-and-limits.md", "docs/regions-and-lifecycle.md"], err
    for file, error in errors.items():
        assert f"the answer for {file} was cut off at max_tokens (700)" in error
        assert "raise --max-tokens" in error
    assert json.loads((workdir / "small" / "run.json").read_text("utf-8"))["max_tokens"] == 700
    assert json.loads((workdir / "roomy" / "run.json").read_text("utf-8"))["max_tokens"] == 32000
    assert "--max-tokens 700" in err  # the command that records the failed files again keeps it
    # replay asks what the recording asked: both runs replay offline, with no --max-tokens given
    assert main(["cassettes", "verify", "small", "roomy"]) == 0, capsys.readouterr().out
