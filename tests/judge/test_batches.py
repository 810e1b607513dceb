"""`judge --batch` end to end against the stand-ins: verdicts as direct calls, replay with no batch, entries
errored or expired on purpose and retried, and an interrupted run resumed without paying twice."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from collections.abc import Callable
from typing import Any

import pytest

from replay.judge.model_route import ModelRoute
from replay.judge.batches.journal import custom_id
from replay.runs.writer import journal_path
from factories import judge_demo
from replay.cli.main import main
from replay.judge.runner import run_judge
from replay.runs.folder import Run
from replay.sim import start_model
from replay.sim.batches import BatchSettings
from locations import REPO

CLAIMS = REPO / "demo" / "claims"
CLI = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "from replay.cli.main import main; sys.exit(main())"]
"""The CLI in a process of its own, which a SIGINT interrupts as Ctrl-C at a terminal does, even when the tests
run with SIGINT ignored (a background job of a shell: its children would ignore it too, and run on)."""


def batch_record_args(learn: Any, model: Any) -> list[str]:
    """`judge` recording the demo claims into `batch` with --batch, against the given stand-ins."""
    return ["judge", "--prompt", "v3", "--claims", str(CLAIMS), "--run", "batch", "--mode", "record",
            "--learn-url", learn.url, "--anthropic-base-url", model.url, "--no-progress", "--batch"]


def started_until(args: list[str], workdir: Path, ready: Callable[[], bool], what: str) -> subprocess.Popen[bytes]:
    """The CLI started in a process of its own, once `ready()` (checked every 20 ms, for a minute; `what`
    says what was waited for when it never is)."""
    proc = subprocess.Popen([*CLI, *args], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    while not ready() and proc.poll() is None:
        assert time.monotonic() < deadline, f"the batch run never {what}"
        time.sleep(0.02)
    return proc


def verdicts(run: Path) -> dict[tuple[str, str], tuple[Any, ...]]:
    results = json.loads((run / "results.json").read_text("utf-8"))
    return {(f["file"], r["id"]): (r["judge_verdict"], r["rule"], r["evidence_quote"], r["quote_verified"], r["error"])
            for f in results["files"] for r in f["results"]}


def model_bodies(run: Path) -> list[dict[str, Any]]:
    """The request bodies of every model exchange in the run's cassettes."""
    r = Run(run)
    return [json.loads(it.request_body or "null") for e in r.manifest.claims for it in r.interactions(e.file)
            if it.uri.endswith("/v1/messages")]


def logged_sha(params: dict[str, Any]) -> str:
    """As the stand-in's batch log hashes an entry's params."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def test_a_batch_recording_gives_the_direct_verdicts_and_replays_with_no_batch(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model(fetch_per_turn=1, batch_settings=BatchSettings(delay=0.2)) as model:
        assert judge_demo(demo_learn, model, "direct", "--no-cache") == 0, capsys.readouterr().err
        assert judge_demo(demo_learn, model, "batch", "--batch") == 0, capsys.readouterr().err
        log = list(model.app.batches.log)
        direct_calls = len(model.requests)
    assert verdicts(workdir / "batch") == verdicts(workdir / "direct")
    assert len({v[0] for v in verdicts(workdir / "batch").values()}) == 3  # all three verdicts occur

    # every model exchange in the cassettes is a batch entry's params, exactly as submitted
    assert sorted(logged_sha(b) for b in model_bodies(workdir / "batch")) == sorted(s.params_sha256 for s in log)
    assert len(model.requests) == direct_calls  # the batch run sent no direct Messages call
    manifest = json.loads((workdir / "batch" / "run.json").read_text("utf-8"))
    assert manifest["batch_ids"] == list(dict.fromkeys(s.batch_id for s in log))
    assert len(manifest["batch_ids"]) >= 3  # one round per turn: fetch-per-turn 1 makes several turns
    assert manifest["stats"]["model_calls"] == len(log)  # batch create/poll/results traffic is not counted
    assert not journal_path(workdir / "batch").exists()
    breakpoints = [json.dumps(b).count('"cache_control"') for b in model_bodies(workdir / "batch")]
    assert breakpoints and all(1 <= n <= 4 for n in breakpoints)
    # no round measured yet: the first round writes for 5 minutes (cheaper unless most first rounds outlast
    # it); later rounds, measured in well under two minutes, write for 5 minutes too
    first_turns = [b for b in model_bodies(workdir / "batch") if len(b["messages"]) == 1]
    later_turns = [b for b in model_bodies(workdir / "batch") if len(b["messages"]) > 1]
    five_minutes = {"type": "ephemeral"}
    assert first_turns and all(b["tools"][-1]["cache_control"] == five_minutes for b in first_turns)
    assert later_turns and all(b["tools"][-1]["cache_control"] == five_minutes for b in later_turns)

    # offline: the stand-ins are gone, the run replays from its cassettes alone
    capsys.readouterr()
    assert main(["judge", "--mode", "replay", "--run", "batch", "--no-progress", "--out", "replayed.json"]) == 0
    replayed = json.loads((workdir / "replayed.json").read_text("utf-8"))
    recorded = json.loads((workdir / "batch" / "results.json").read_text("utf-8"))
    assert replayed["files"] == recorded["files"]
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


def test_errored_and_expired_entries_are_resubmitted(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    faults = BatchSettings(errored="evaluation", expired="quotas-and-limits")
    with start_model(batch_settings=faults) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 0, capsys.readouterr().err
        log = list(model.app.batches.log)
    submitted = Counter(s.custom_id for s in log)

    def first_turn(file: str) -> str:  # a custom_id ends in its request's digest: the one first turn of the file
        (cid,) = {c for c in submitted if c.startswith(custom_id(file, 1, ""))}
        return cid

    for file in ("docs/evaluation.md", "docs/quotas-and-limits.md"):
        first = first_turn(file)
        assert submitted[first] == 2, f"{first} should be submitted, fail on purpose, and be submitted again"
        assert len({s.params_sha256 for s in log if s.custom_id == first}) == 1  # the same request again
    assert submitted[first_turn("docs/azure-openai-models.md")] == 1
    results = verdicts(workdir / "batch")
    assert all(v[4] is None for v in results.values())
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


def test_an_entry_that_keeps_failing_becomes_that_files_error(workdir: Path, demo_learn: Any) -> None:
    with start_model(batch_settings=BatchSettings(errored="evaluation")) as model:
        route = ModelRoute.batched(workdir / "batch", resume=False, attempts=1, progress=False)
        results = run_judge("v3", [CLAIMS], workdir / "batch", "record", model="claude-sonnet-4-6",
                            learn_url=demo_learn.url, anthropic_base_url=model.url, progress=False, route=route)
    failed = {f.file: f.error for f in results.files if f.error}
    assert list(failed) == ["docs/evaluation.md"]
    assert "errored (1 submission(s))" in str(failed["docs/evaluation.md"])
    assert "api_error" in str(failed["docs/evaluation.md"])


def test_a_new_batch_run_refuses_to_start_over_an_interrupted_one(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    journal = journal_path(workdir / "batch")
    journal.parent.mkdir()
    journal.write_text('{"version": 1, "batches": []}\n', "utf-8")
    with start_model() as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 2
        assert "add --resume" in capsys.readouterr().err
        assert judge_demo(demo_learn, model, "other", "--batch", "--resume") == 2
        assert "nothing to resume" in capsys.readouterr().err
        assert model.app.batches.log == []


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "crash"])
def test_an_interrupted_batch_run_resumes_without_submitting_anything_twice(
        workdir: Path, demo_learn: Any, stop: signal.Signals, capsys: Any) -> None:
    with start_model(fetch_per_turn=1, batch_settings=BatchSettings(delay=0.5)) as model:
        args = batch_record_args(demo_learn, model)
        journal = journal_path(workdir / "batch")
        proc = started_until(args, workdir, lambda: journal.is_file() and bool(model.app.batches.log),
                             "submitted its first batch")
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
        resume = [*args, "--resume"]
        if stop == signal.SIGINT:
            assert proc.returncode == 130 and "Traceback" not in err.decode(), err.decode()
            # Ctrl-C says how to go on without paying again, and the command it prints does exactly that
            said = err.decode().splitlines()
            at = next(i for i, line in enumerate(said) if "without paying for them again (--batch --resume)" in line)
            printed = shlex.split(said[at + 1])
            assert printed[:2] == ["judge-replay", "judge"] and "--batch" in printed and "--resume" in printed
            resume = [*printed[1:], "--no-progress"]
        else:
            assert proc.returncode == -signal.SIGKILL
        first_round = list(model.app.batches.log)
        assert not (workdir / "batch" / "run.json").exists()  # nothing written by the interrupted run
        assert journal.is_file()
        model.app.batches.settings = BatchSettings()  # the resume's batches end at once: nothing left to stop

        assert main(resume) == 0, capsys.readouterr().err
        log = list(model.app.batches.log)

    submitted = Counter((s.custom_id, s.params_sha256) for s in log)
    assert [entry for entry, n in submitted.items() if n > 1] == []
    assert {s.custom_id for s in first_round} <= {s.custom_id for s in log[: len(first_round)]}
    assert len(log) > len(first_round)  # the resumed run went on with later turns
    manifest = json.loads((workdir / "batch" / "run.json").read_text("utf-8"))
    assert manifest["batch_ids"][0] == first_round[0].batch_id  # the interrupted run's batch is the run's first
    assert not journal.exists()
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_a_run_stopped_while_its_batch_was_being_created_finds_that_batch_on_resume(
        workdir: Path, demo_learn: Any, stop: signal.Signals, capsys: Any) -> None:
    # the stand-in creates the batch, then answers the create 3 s later: the run is stopped meanwhile, so
    # it never learns the batch's id. The resume finds it among the workspace's batches (one of as many
    # requests, created just after the create began) and uses its results: nothing is submitted twice.
    # The resume's own creates are answered at once (nothing is stopped during them)
    with start_model(batch_settings=BatchSettings(delay=0.2, create_answer_delay=3.0)) as model:
        args = batch_record_args(demo_learn, model)
        journal = journal_path(workdir / "batch")
        proc = started_until(args, workdir, lambda: bool(model.app.batches.log), "submitted its first batch")
        kept = json.loads(journal.read_text("utf-8"))  # journaled before the create was sent
        assert kept["batches"] == [] and len(kept["submitting"]["requests"]) == len(model.app.batches.log)
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err.decode(), err.decode()
        first = model.app.batches.log[0].batch_id
        if stop == signal.SIGKILL:
            assert json.loads(journal.read_text("utf-8"))["batches"] == []  # its id never reached the journal
        model.app.batches.settings = BatchSettings()
        assert main([*args, "--resume"]) == 0, capsys.readouterr().err
        said = capsys.readouterr().err
        log = list(model.app.batches.log)
        # one batch of someone else's, of another size, created meanwhile, is not taken for it
    if stop == signal.SIGKILL:
        assert f"batch {first} may be the one being submitted when the run stopped: its results answer" in said
    submitted = Counter((s.custom_id, s.params_sha256) for s in log)
    assert [entry for entry, n in submitted.items() if n > 1] == []
    assert json.loads((workdir / "batch" / "run.json").read_text("utf-8"))["batch_ids"][0] == first
    assert not journal.exists()
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


def test_a_resume_of_another_run_is_refused_and_unused_batches_are_not_the_runs(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model(fetch_per_turn=1, batch_settings=BatchSettings()) as model:
        # a run stopped by --max-cost after its first round keeps its journal: what the run is, its round times
        assert judge_demo(demo_learn, model, "batch", "--batch", "--max-cost", "0.26", "--max-tokens", "8192") == 1
        capsys.readouterr()
        journal = journal_path(workdir / "batch")
        kept = json.loads(journal.read_text("utf-8"))
        assert kept["run"]["model"] and len(kept["run"]["claims"]) == len(list(CLAIMS.glob("*.json")))
        assert len(kept["round_seconds"]) == 1
        submitted = len(model.app.batches.log)

        # another prompt, or another claims set: refused before anything is submitted, the journal kept
        assert judge_demo(demo_learn, model, "batch", "--batch", "--resume", "--prompt", "v2", "--max-tokens", "8192") == 2
        assert "another prompt" in capsys.readouterr().err
        one_file = str(next(iter(sorted(CLAIMS.glob("*.json")))))
        assert main(["judge", "--prompt", "v3", "--claims", one_file, "--run", "batch", "--mode", "record",
                     "--learn-url", demo_learn.url, "--anthropic-base-url", model.url, "--no-progress", "--batch",
                     "--resume", "--max-tokens", "8192"]) == 2
        assert "another set of claims files" in capsys.readouterr().err
        assert len(model.app.batches.log) == submitted and journal.is_file()

        # a journaled batch the run never reads is not one of the run's batches
        kept["batches"].append({"id": "msgbatch_never_read", "requests": {"x-t1": "0" * 64}})
        journal.write_text(json.dumps(kept), "utf-8")
        assert judge_demo(demo_learn, model, "batch", "--batch", "--resume", "--max-tokens", "8192") == 0, \
            capsys.readouterr().err
        log = list(model.app.batches.log)
    manifest = Run(workdir / "batch").manifest
    assert manifest.batch_ids == list(dict.fromkeys(s.batch_id for s in log))
    assert "msgbatch_never_read" not in manifest.batch_ids


def test_the_cache_lifetime_of_a_resumed_run_rests_on_the_round_times_it_measured(workdir: Path) -> None:
    assert ModelRoute.batched(workdir / "fresh", resume=False).lifetime() == "5m"  # no round measured yet
    assert ModelRoute(cache=True).lifetime() == "5m"  # direct calls are seconds apart
    journal = journal_path(workdir / "batch")
    journal.parent.mkdir()
    for rounds, lifetime in (([30.0], "5m"), ([700.0], "1h"), ([2000.0], None)):
        journal.write_text(json.dumps({"version": 1, "round_seconds": rounds, "batches": []}), "utf-8")
        assert ModelRoute.batched(workdir / "batch", resume=True).lifetime() == lifetime


def test_a_batch_create_whose_answer_is_lost_is_looked_for_not_sent_again(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # the stand-in makes the first batch, then closes the connection without an answer: the SDK would send
    # the create again (a second batch, paid for twice, its id never seen). The runner looks for the batch
    # among the workspace's batches before sending it again, finds it, and uses it
    with start_model(batch_settings=BatchSettings(lost_create_answers=1)) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 0, capsys.readouterr().err
        log = list(model.app.batches.log)
        batches = model.app.batches.newest_first()
    submitted = Counter((s.custom_id, s.params_sha256) for s in log)
    assert [entry for entry, n in submitted.items() if n > 1] == []
    manifest = json.loads((workdir / "batch" / "run.json").read_text("utf-8"))
    assert sorted(manifest["batch_ids"]) == sorted(b.id for b in batches)  # every batch made is the run's
    assert log[0].batch_id in manifest["batch_ids"]  # the one whose answer was lost
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


def test_an_overloaded_create_and_a_results_download_cut_half_way_are_retried_not_failed(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # the first two creates are answered 529 (no batch made) and the first results download stops half-way:
    # the round waits and tries again (results are kept 29 days), every file gets its verdicts, nothing twice
    faults = BatchSettings(overloaded_creates=2, cut_results=1)
    with start_model(batch_settings=faults) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 0, capsys.readouterr().err
        log = list(model.app.batches.log)
        times = dict(model.app.batches._times)
    assert times["overloaded"] > 2 and times["cut"] > 1  # both faults were met, and got past
    submitted = Counter((s.custom_id, s.params_sha256) for s in log)
    assert [entry for entry, n in submitted.items() if n > 1] == []
    assert all(v[4] is None and v[0] is not None for v in verdicts(workdir / "batch").values())
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


def test_a_journaled_batch_the_api_does_not_know_is_submitted_again_not_waited_for_forever(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # a resume whose journal names a batch the API no longer knows (results older than 29 days, another
    # workspace): every resume failed on its 404 before, and only deleting the journal (paying again for
    # every batch still valid) got out. Now that batch's requests are submitted again, and said so
    with start_model(batch_settings=BatchSettings(delay=30)) as model:
        args = batch_record_args(demo_learn, model)
        journal = journal_path(workdir / "batch")
        proc = started_until(args, workdir, lambda: journal.is_file() and bool(json.loads(journal.read_text("utf-8"))["batches"]),
                             "journaled its first batch")
        proc.kill()
        proc.communicate(timeout=60)
        kept = json.loads(journal.read_text("utf-8"))
        kept["batches"][0]["id"] = "msgbatch_gone"
        journal.write_text(json.dumps(kept), "utf-8")
        model.app.batches.settings = BatchSettings()
        assert main([*args, "--resume"]) == 0
        said = capsys.readouterr().err
    assert "batch msgbatch_gone is not known to the API, or its results are gone" in said
    manifest = json.loads((workdir / "batch" / "run.json").read_text("utf-8"))
    assert "msgbatch_gone" not in manifest["batch_ids"] and manifest["batch_ids"]
    assert all(v[4] is None for v in verdicts(workdir / "batch").values())


def test_a_live_batch_run_without_a_run_folder_cancels_and_names_its_batch_when_stopped(
        workdir: Path, demo_learn: Any) -> None:
    # `--mode live --batch` without --run keeps no journal: a batch still running when it is stopped could
    # never be resumed, and would be billed unused. It is canceled, and named
    served: list[str] = []  # the stand-in's request lines
    with start_model(batch_settings=BatchSettings(delay=60), log=served.append) as model:
        args = [*batch_record_args(demo_learn, model), "--out", "r.json"]
        at = args.index("--run")
        args[at:at + 4] = ["--mode", "live"]  # no --run: no journal
        proc = started_until(args, workdir, lambda: any(f"GET /v1/messages/batches/{b.id} " in line for line in list(served)
                                                        for b in model.app.batches.newest_first()),
                             "polled its first batch (so its id is back)")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        [batch] = model.app.batches.newest_first()
    said = err.decode()
    assert proc.returncode == 130 and "Traceback" not in said, said
    assert f"batch {batch.id} had not ended when the run stopped" in said and "cancellation was asked for" in said
    assert batch.cancel_at is not None


def test_a_batch_run_that_left_a_file_failed_keeps_its_journal_and_the_retry_pays_nothing_twice(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # docs/evaluation.md's conversation outgrows the context window after its tool turns were answered (and
    # paid). The run is written with that file failed, and keeps its journal: the printed --retry-failed
    # command resumes from it, so the turns already answered are not submitted again
    with start_model(cut_off=frozenset({"docs/evaluation.md"}), batch_settings=BatchSettings()) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 1
        err = capsys.readouterr().err
        assert journal_path(workdir / "batch").is_file()
        retry = shlex.split(err.split("To record just those again:\n", 1)[1].splitlines()[0])
        assert retry[:2] == ["judge-replay", "judge"] and "--retry-failed" in retry and "--resume" in retry
        first = list(model.app.batches.log)
        model.app.cut_off = frozenset()
        assert main([*retry[1:], "--no-progress"]) == 0, capsys.readouterr().err
        log = list(model.app.batches.log)
    again = log[len(first):]
    # only the turn whose answer was cut off is asked again (its answer is what the file failed on); the
    # turns before it came from the journal
    evaluation = custom_id("docs/evaluation.md", 0, "").rsplit("-t", 1)[0]
    assert [s.custom_id.rsplit("-", 1)[0] for s in again] == [max(
        (s.custom_id for s in first if s.custom_id.startswith(evaluation)), key=lambda c: int(c.rsplit("-t", 1)[1].split("-")[0])
    ).rsplit("-", 1)[0]]
    submitted = Counter((s.custom_id, s.params_sha256) for s in log)
    assert [entry[0] for entry, n in submitted.items() if n > 1] == [again[0].custom_id]
    assert not journal_path(workdir / "batch").exists()
    assert all(v[4] is None for v in verdicts(workdir / "batch").values())
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


def test_the_bound_on_submissions_holds_across_a_resume(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # docs/evaluation.md's entries fail at every submission. The run is killed after the second submission
    # of its first turn; the resume submits it once more (three in all, the bound), not three times more,
    # and the file's error counts every submission
    with start_model(batch_settings=BatchSettings(delay=0.5, errored="evaluation", every_time=True)) as model:
        evaluation = custom_id("docs/evaluation.md", 1, "")

        def submitted() -> list[str]:
            return [s.custom_id for s in model.app.batches.log if s.custom_id.startswith(evaluation)]

        args = batch_record_args(demo_learn, model)
        proc = started_until(args, workdir, lambda: len(submitted()) >= 2, "submitted an entry twice")
        proc.kill()
        proc.communicate(timeout=60)
        assert len(submitted()) == 2
        model.app.batches.settings = BatchSettings(errored="evaluation", every_time=True)  # the resume's batches end at once
        assert main([*args, "--resume"]) == 1
        err = capsys.readouterr().err
    assert len(submitted()) == 3
    error = json.loads((workdir / "batch" / "results.json").read_text("utf-8"))
    [failed] = [f for f in error["files"] if f["error"]]
    assert failed["file"] == "docs/evaluation.md" and "errored (3 submission(s))" in failed["error"], err


def test_a_retry_of_files_that_failed_after_their_answers_asked_for_tools_pays_for_none_of_their_turns_again(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # Learn fails every fetch of the page docs/evaluation.md cites (another file fetches it too), after
    # the model's answers asked for it: those files fail on Learn, not on an answer, so the --retry-failed
    # --resume command takes every answer they were given from the journal (before, each failed file's
    # last journaled turn was dropped and paid for again, whatever the file failed on)
    with start_model(batch_settings=BatchSettings()) as model:
        demo_learn.fail_next(10_000, 503, about="concepts/observability")
        assert judge_demo(demo_learn, model, "batch", "--batch") == 1
        err = capsys.readouterr().err
        failed = {f["file"]: f["error"] for f in json.loads((workdir / "batch" / "results.json").read_text("utf-8"))["files"]
                  if f["error"]}
        assert "docs/evaluation.md" in failed and len(failed) < 5, err
        assert all("answered tools/call with HTTP 503" in e for e in failed.values()), failed
        retry = shlex.split(err.split("To record just those again:\n", 1)[1].splitlines()[0])
        first = list(model.app.batches.log)
        demo_learn.stop_failing()
        assert main([*retry[1:], "--no-progress"]) == 0, capsys.readouterr().err
        log = list(model.app.batches.log)
    tags = tuple(custom_id(file, 0, "").rsplit("-t", 1)[0] for file in failed)
    asked = {s.custom_id for s in first if s.custom_id.startswith(tags)}
    again = {s.custom_id for s in log[len(first):]}
    assert asked and again and not asked & again, (asked, again)
    assert [entry for entry, n in Counter((s.custom_id, s.params_sha256) for s in log).items() if n > 1] == []
    assert all(v[4] is None for v in verdicts(workdir / "batch").values())
    assert main(["cassettes", "verify", "batch"]) == 0, capsys.readouterr().out


def _submitted_since(model: Any, start: int) -> Counter[str]:
    return Counter(s.custom_id for s in list(model.app.batches.log)[start:])


def test_a_retry_of_a_file_whose_entry_errored_at_every_submission_submits_it_afresh(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # docs/evaluation.md's second turn errors at each of its three submissions: the file fails. The retry
    # read those errored entries from the journal as submissions already made, and stopped at once on the
    # bound ("errored (3 submission(s))"), at every retry. They are dropped when the file fails: the retry
    # submits that turn again, and only that one
    second = custom_id("docs/evaluation.md", 2, "")[:-1]
    with start_model(batch_settings=BatchSettings(errored=second, every_time=True)) as model:
        assert judge_demo(demo_learn, model, "batch", "--batch") == 1
        err = capsys.readouterr().err
        assert _submitted_since(model, 0)[next(c for c in _submitted_since(model, 0) if c.startswith(second))] == 3, err
        retry = shlex.split(err.split("To record just those again:\n", 1)[1].splitlines()[0])
        model.app.batches.settings = BatchSettings()
        start = len(model.app.batches.log)
        assert main([*retry[1:], "--no-progress"]) == 0, capsys.readouterr().err
        again = _submitted_since(model, start)
    evaluation = second.rsplit("-t", 1)[0]
    assert again and all(c.startswith(evaluation) for c in again), again  # the other files were kept
    assert not any(c.startswith(f"{evaluation}-t1-") for c in again), again  # the first turn came from the journal
    assert sum(n for c, n in again.items() if c.startswith(second)) == 1, again
    assert all(v[4] is None for v in verdicts(workdir / "batch").values())


def test_a_retry_of_a_file_that_ran_out_of_turns_asks_its_last_turn_again(
        workdir: Path, demo_learn: Any, tmp_path: Path, capsys: Any) -> None:
    # a conversation that hits the turn limit ends on an answer asking for tools: it failed on that
    # answer (asking again may bring the verdicts), so the retry asks the last turn again; the turns
    # before it come from the journal. Before, the retry took all twelve from the journal and failed
    # the same way, at every retry
    src = json.loads((REPO / "demo" / "claims" / "evaluation.json").read_text("utf-8"))
    claims = [{**src["claims"][0], "id": f"long-{n:02}", "evidence_url": f"https://learn.microsoft.com/azure/page-{n:02}"}
              for n in range(13)]  # one page a turn, 13 pages: more turns than the limit of 12
    (tmp_path / "long.json").write_text(json.dumps({**src, "file": "docs/long.md", "claims": claims}), "utf-8")
    with start_model(fetch_per_turn=1, batch_settings=BatchSettings()) as model:
        args = ["judge", "--prompt", "v3", "--claims", str(tmp_path / "long.json"), "--run", "batch", "--mode", "record",
                "--learn-url", demo_learn.url, "--anthropic-base-url", model.url, "--no-progress", "--batch"]
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "did not give its answer within 12 model turns" in err and "--resume" in err, err
        first = _submitted_since(model, 0)
        assert len(first) == 12 and all(n == 1 for n in first.values())
        last = max(first, key=lambda c: int(c.rsplit("-t", 1)[1].split("-")[0]))
        for _ in range(2):  # the stand-in answers the same way: each retry asks the twelfth turn, and only it
            start = len(model.app.batches.log)
            assert main([*args, "--resume"]) == 1
            assert "did not give its answer within 12 model turns" in capsys.readouterr().err
            assert _submitted_since(model, start) == Counter({last: 1})


def test_a_batch_run_whose_every_file_failed_on_an_answer_asks_that_answer_again_when_resumed(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    # no run is written when every file failed, so nothing dropped the answer a file failed on: each
    # `--batch --resume` it printed took that answer from the journal and failed the same way, forever
    claims = str(REPO / "demo" / "claims" / "evaluation.json")
    with start_model(cut_off=frozenset({"docs/evaluation.md"}), batch_settings=BatchSettings()) as model:
        args = ["judge", "--prompt", "v3", "--claims", claims, "--run", "batch", "--mode", "record",
                "--learn-url", demo_learn.url, "--anthropic-base-url", model.url, "--no-progress", "--batch"]
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "every conversation failed" in err and "outgrew the model's context window" in err, err
        first = _submitted_since(model, 0)
        last = max(first, key=lambda c: int(c.rsplit("-t", 1)[1].split("-")[0]))
        model.app.cut_off = frozenset()
        start = len(model.app.batches.log)
        assert main([*args, "--resume"]) == 0, capsys.readouterr().err
        assert _submitted_since(model, start) == Counter({last: 1})
    assert all(v[4] is None for v in verdicts(workdir / "batch").values())
