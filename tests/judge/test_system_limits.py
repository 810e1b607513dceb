"""Runs under the limits a system sets, the CLI in a subprocess with the limit lowered. Open files: a run
of many claims files needs those of a few conversations, not of the whole run (its conversations' Learn
clients share a bounded pool of connections: a system allowing 256 open files, macOS's default, once
stopped a run of a few hundred files, and a batch run has all its conversations waiting at once), and
every Learn session is still ended, after the run, and never recorded. File size: a batch run that
cannot write its journal says so in one line, naming the file, and leaves no run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from replay.sim import start_learn, start_model
from replay.sim.batches import BatchSettings
from locations import REPO

PAGES = REPO / "demo" / "pages" / "2026-06"
CLAIMS = REPO / "demo" / "claims" / "evaluation.json"


def _cli(limit: str, value: int) -> list[str]:
    """The CLI with a resource limit lowered first, in the child (not `preexec_fn`: unsafe with the threads
    the stand-ins run in)."""
    return [sys.executable, "-c", f"import resource, sys; _, hard = resource.getrlimit(resource.{limit}); "
            f"resource.setrlimit(resource.{limit}, ({value}, {value} if {limit!r} == 'RLIMIT_FSIZE' else hard)); "
            "from replay.cli.main import main; sys.exit(main())"]

FILES = 90
OPEN_FILES = 64
"""The subprocess's limit: below FILES, above what the pool of Learn connections and the rest need."""


def _many_claims_files(folder: Path, files: int = FILES) -> Path:
    claims = json.loads(CLAIMS.read_text("utf-8"))
    folder.mkdir()
    for n in range(files):
        (folder / f"doc-{n:03d}.json").write_text(json.dumps({**claims, "file": f"docs/doc-{n:03d}.md"}), "utf-8")
    return folder


def _sessions_ended(learn: Any, within: float = 30.0) -> None:
    """Wait until the stand-in holds no session, or `within` seconds pass (then the assertions say what is
    left). The process's exit is not the moment its last DELETE has landed: the CLI waits 5 s at most for
    a session's ending, so on a loaded machine the stand-in may end one after the process is gone, and a
    count taken at the exit misses it (seen as 91 DELETEs for 92 sessions under load). A session the CLI
    really left open is still open when the wait ends, and fails the assertions."""
    deadline = time.monotonic() + within
    while learn.app.sessions and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("mode", ["record", "live", "record --batch"])
def test_a_run_of_more_files_than_the_process_may_open_ends_every_session_unrecorded(tmp_path: Path, mode: str) -> None:
    claims = _many_claims_files(tmp_path / "claims")
    with start_learn(PAGES, strict_sessions=True) as learn, start_model() as model:
        args = ["judge", "--prompt", "v3", "--claims", str(claims), "--mode", *mode.split(), "--no-progress",
                "--learn-url", learn.url, "--anthropic-base-url", model.url]
        if mode.startswith("record"):
            args += ["--run", "run"]
        done = subprocess.run([*_cli("RLIMIT_NOFILE", OPEN_FILES), *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-open-files"})
        _sessions_ended(learn)
        calls = list(learn.calls)
        still_open = set(learn.app.sessions)

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "failed" not in done.stdout
    opened = calls.count("initialize")
    assert opened > FILES  # one session per conversation (and the check before the run), each its own
    assert calls.count("DELETE") == opened and not still_open  # every session ended: the server holds none
    assert calls[-FILES:].count("DELETE") == FILES  # the conversations' sessions, ended after the run
    if mode.startswith("record"):
        cassettes = sorted((tmp_path / "run").glob("*.yaml"))
        assert len(cassettes) == FILES
        for cassette in cassettes:
            methods = {it["request"]["method"] for it in yaml.safe_load(cassette.read_text("utf-8"))["interactions"]}
            assert methods == {"POST"}, cassette.name  # no DELETE: ending a session is never recorded


def test_a_batch_run_that_cannot_journal_a_batch_submits_nothing_and_says_so(tmp_path: Path) -> None:
    """The requests of a batch are journaled before it is created (`BatchJournal.creating`): a journal that
    cannot be written stops the run before anything is paid, with one line naming the journal."""
    claims = _many_claims_files(tmp_path / "claims", files=20)

    # Python ignores SIGXFSZ: a longer write fails (EFBIG).
    with start_learn(PAGES) as learn, start_model(batch_settings=BatchSettings(delay=0)) as model:
        done = subprocess.run([*_cli("RLIMIT_FSIZE", 3000), "judge", "--prompt", "v3", "--claims", str(claims), "--run", "run",
                               "--mode", "record", "--batch", "--no-progress", "--learn-url", learn.url,
                               "--anthropic-base-url", model.url],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-file-size"})
        batches = list(model.app.batches._batches.values())
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert done.stderr == "judge-replay: .judge-replay-staging/run.batches.json: File too large\n"  # that line alone
    assert batches == [] and not (tmp_path / "run").exists()


@pytest.mark.parametrize("batch_seconds", [60, 0])
def test_a_journal_that_cannot_be_written_later_names_the_batches_it_keeps_and_the_one_it_cannot(
        tmp_path: Path, batch_seconds: int) -> None:
    """What stops the run when the journal fails after it holds a batch, and after a batch was created (a
    full disk between the create and its id's journal entry): the journal and why, the new batch's fate
    (canceled: a real batch takes a while, 60 s; or it had ended already, 0 s: billed), and the batches
    kept for --resume (the real SDK against the stand-in; the failure handed in as the journal's write
    raised it)."""
    import anthropic

    from replay.judge.batches.journal import BatchJournal
    from replay.judge.batches.rounds import BatchRounds
    from replay.files.paths import display_path

    with start_model(batch_settings=BatchSettings(delay=batch_seconds)) as model:
        client = anthropic.Anthropic(api_key="sk-ant-test-journal", base_url=model.url, max_retries=0)
        params = {"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        kept, unkept = (client.messages.batches.create(requests=[{"custom_id": f"c-{n}", "params": params}]).id  # type: ignore[list-item]
                        for n in (1, 2))
        journal = BatchJournal(tmp_path / "run.batches.json")
        journal.add(kept, {"c-1": "digest"})
        rounds = BatchRounds(client, journal, conversations=1, workers=1, progress=False)
        said = str(rounds._journal_failed(OSError(27, "File too large", str(tmp_path / "run.batches.json")), unkept=unkept))
        canceled = model.app.batches.get(unkept)
    assert said.startswith(f"{display_path(tmp_path / 'run.batches.json')}: File too large; batch {unkept} was submitted but could not "
                           "be kept in this journal, ")
    assert said.endswith("; the 1 batch(es) the journal holds are kept for --resume")
    assert canceled is not None and (canceled.cancel_at is not None) == bool(batch_seconds)
    assert ("so its cancellation was asked for" if batch_seconds else "and it had already ended") in said


def test_a_run_stopped_by_its_journal_prints_the_resume_command_and_that_command_pays_nothing_twice(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal fits one round's batch but not the next (a full disk at the second round): the run stops
    with the --resume command printed, as after a Ctrl-C; that command, pasted, finishes the run and
    submits only the round the journal could not keep."""
    import shlex

    from factories import parse_printed_command
    from replay.cli.main import main

    _many_claims_files(tmp_path / "claims", files=20)
    with start_learn(PAGES) as learn, start_model(batch_settings=BatchSettings(delay=0)) as model:
        base = ["judge", "--prompt", "v3", "--claims", "claims", "--run", "run", "--mode", "record", "--batch", "--no-progress",
                "--learn-url", learn.url, "--anthropic-base-url", model.url]
        env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-resume"}
        stopped = subprocess.run([*_cli("RLIMIT_FSIZE", 4500), *base], cwd=tmp_path, capture_output=True, text=True,
                                 timeout=300, env=env)
        before = len(model.app.batches._batches)
        lines = stopped.stderr.splitlines()
        assert stopped.returncode == 1, stopped.stderr
        assert lines[0].startswith("judge: the batches the journal holds are kept; to continue without paying")
        command = lines[1].strip()
        assert parse_printed_command(command)["resume"] is True
        assert lines[2] == ("judge-replay: .judge-replay-staging/run.batches.json: File too large; the 1 batch(es) "
                            "the journal holds are kept for --resume") and len(lines) == 3  # the next one not created
        monkeypatch.chdir(tmp_path)  # the command pasted, with no limit: in this process
        monkeypatch.setenv("ANTHROPIC_API_KEY", env["ANTHROPIC_API_KEY"])
        capsys.readouterr()
        resumed = main(shlex.split(command)[1:])
        after = len(model.app.batches._batches)
    assert resumed == 0, capsys.readouterr().err
    assert (tmp_path / "run" / "run.json").is_file()
    assert before == 1  # the kept batch: the next round's was not created, since its requests could not be journaled
    rounds = json.loads((tmp_path / "run" / "run.json").read_text("utf-8"))["batch_ids"]
    assert after - before == len(rounds) - 1  # resumed: the kept batch answered from, nothing of it paid again
