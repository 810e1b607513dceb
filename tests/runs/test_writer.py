"""A run folder changes only as a whole: a re-record killed at any moment leaves the previous run exactly as
it was, a second recording into a run in flight is refused, and a half-done swap is finished on the next access."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from factories import LocalServer, write_json
from replay.errors import UsageError
from replay.analysis.verify import verify_run
from replay.cli.main import main
from replay.runs.writer import STAGING_FOLDER, RunFolderWriter, reading, recover, write_folder
from replay.sim import start_learn, start_model

CLI = [sys.executable, "-c", "import sys; from replay.cli.main import main; sys.exit(main())"]
MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
PAGE = "# Azure OpenAI models\n\n| Model | Context window |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n| gpt-4o | 128,000 |\n"
CLAIM = {"id": "m-1", "claim": "gpt-4o has a 128,000 token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL}


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    pages = tmp_path_factory.mktemp("pages")
    (pages / "models.md").write_text(f"---\nurl: {MODELS_URL}\n---\n{PAGE}", "utf-8")
    with start_learn(pages) as learn, start_model() as model:
        yield learn.url, model.url


def claims_folder(root: Path, name: str, count: int) -> Path:
    for n in range(count):  # each cites its own page: no fetch is served from another conversation's
        claim = {**CLAIM, "evidence_url": f"{MODELS_URL}-{name}-{n}"} if name == "big" else CLAIM
        write_json(root / name / f"c{n:02}.json", {"file": f"docs/{name}-{n:02}.md", "claims": [claim]})
    return root / name


def judge(root: Path, services: tuple[str, str], claims: Path, concurrency: int = 2) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.Popen(
        [*CLI, "judge", "--prompt", "v3", "--claims", str(claims), "--run", "run", "--mode", "record",
         "--learn-url", services[0], "--anthropic-base-url", services[1], "--model", "claude-test",
         "--concurrency", str(concurrency), "--no-progress"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class GatedLearn:
    """A Learn MCP endpoint that answers the first `open_calls` tool calls and holds every later one until
    `release()`: a recording stopped at a known point, with no timing involved."""

    def __init__(self, open_calls: int) -> None:
        self.open_calls = open_calls
        self.calls = 0
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.server = LocalServer(self.respond, "/api/mcp")
        self.url = self.server.url

    def respond(self, body: Any) -> tuple[int, dict[str, str], bytes]:
        if body is None or "id" not in body:
            return 202, {}, b""
        if body["method"] == "initialize":
            result: dict[str, Any] = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                      "serverInfo": {"name": "gated", "version": "1"}}
        else:
            with self.lock:
                self.calls += 1
                held = self.calls > self.open_calls
            if held:
                self.gate.wait(60)
            result = {"content": [{"type": "text", "text": PAGE}]}
        return 200, {"content-type": "application/json"}, json.dumps(
            {"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()

    def release(self) -> None:
        self.gate.set()

    def stop(self) -> None:
        self.release()
        self.server.stop()


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def wait_for(condition: Callable[[], bool], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert proc.poll() is None, f"the recording ended before the moment to kill it: {proc.communicate()}"
        assert time.monotonic() < deadline, "the moment to kill the recording never came"
        time.sleep(0.01)


def judge_here(root: Path, services: tuple[str, str], claims: Path, capsys: pytest.CaptureFixture[str],
               monkeypatch: pytest.MonkeyPatch, run: str = "run") -> tuple[int, str]:
    """`judge` in this process, for a recording that is no kill's target (it need not start an interpreter):
    exit code and stderr."""
    monkeypatch.chdir(root)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    capsys.readouterr()
    code = main(["judge", "--prompt", "v3", "--claims", claims.name, "--run", run, "--mode", "record",
                 "--learn-url", services[0], "--anthropic-base-url", services[1], "--model", "claude-test",
                 "--no-progress"])
    return code, capsys.readouterr().err


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory: pytest.TempPathFactory, services: tuple[str, str]) -> Path:
    """A complete run of two claims files, recorded once per module (`good_run` gives each test its own copy)."""
    root = tmp_path_factory.mktemp("recorded")
    claims = claims_folder(root, "good", 2)
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        mp.setenv("JUDGE_REPLAY_CACHE_DIR", str(root / ".cache"))  # never the user's cache folder
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        code = main(["judge", "--prompt", "v3", "--claims", str(claims), "--run", str(root / "run"), "--mode",
                     "record", "--learn-url", services[0], "--anthropic-base-url", services[1], "--model",
                     "claude-test", "--concurrency", "2", "--no-progress"])
    assert code == 0, err.getvalue()
    return root / "run"


@pytest.fixture
def good_run(tmp_path: Path, recorded_run: Path) -> Path:
    """A copy of the module's recorded run, at `tmp_path / "run"`, for this test to change."""
    shutil.copytree(recorded_run, tmp_path / "run", symlinks=True)
    return tmp_path / "run"


def staged(root: Path) -> list[Path]:
    folder = root / STAGING_FOLDER / "staging" / "run"
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


@pytest.mark.parametrize("concurrency", [1, 4])
@pytest.mark.parametrize("answered", [0, 3], ids=["in-the-first-conversation", "after-three-cassettes"])
def test_a_killed_rerecord_leaves_the_previous_run_as_it_was(good_run: Path, services: tuple[str, str],
                                                            answered: int, concurrency: int,
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = good_run.parent
    before = snapshot(good_run)
    learn = GatedLearn(answered)
    try:
        proc = judge(root, (learn.url, services[1]), claims_folder(root, "big", 8), concurrency)
        wait_for(lambda: learn.calls > answered and len(staged(root)) >= answered, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        learn.stop()
    assert snapshot(good_run) == before
    assert verify_run(good_run).problems == []
    # the lock died with the process: the next recording takes it, clears the leftovers and completes
    code, err = judge_here(root, services, claims_folder(root, "small", 1), capsys, monkeypatch)
    assert code == 0, err
    assert [c["file"] for c in json.loads((good_run / "run.json").read_text())["claims"]] == ["docs/small-00.md"]
    # only the new run's cassette: none the killed recording had staged ships inside it
    assert sorted(p.name for p in good_run.glob("*.yaml")) == ["docs_small-00.md.yaml"]
    assert not (root / STAGING_FOLDER).exists()  # no leftover beside it
    assert verify_run(good_run).problems == []


def test_a_second_recording_into_a_run_in_flight_is_refused(good_run: Path, services: tuple[str, str],
                                                            capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = good_run.parent
    learn = GatedLearn(1)
    try:
        first = judge(root, (learn.url, services[1]), claims_folder(root, "big", 3), 1)
        wait_for(lambda: learn.calls > 1, first)  # the first recording is in its second conversation
        code, err = judge_here(root, services, claims_folder(root, "small", 1), capsys, monkeypatch)
        assert code == 2
        assert err.strip().splitlines() == [
            "judge-replay: another recording into run is in progress: wait for it to finish, or record into another "
            "--run folder"]
        learn.release()
        _, err = first.communicate(timeout=120)
    finally:
        learn.stop()
    assert first.returncode == 0, err
    assert len(json.loads((good_run / "run.json").read_text())["claims"]) == 3
    assert verify_run(good_run).problems == []


def test_an_interrupted_recording_removes_its_staging_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt), RunFolderWriter(run) as writer:
        (writer.staging / "a.yaml").write_text("x")
        raise KeyboardInterrupt
    assert not run.exists() and not (tmp_path / STAGING_FOLDER).exists()


def test_a_folder_with_other_files_is_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(UsageError, match=r"notes is not a run \(no run.json\) and is not empty \(it holds todo.txt\)"):
        RunFolderWriter(tmp_path / "notes").__enter__()
    assert (tmp_path / "notes" / "todo.txt").read_text() == "mine"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
def test_on_linux_a_run_is_swapped_in_by_one_atomic_exchange_never_moved_aside(tmp_path: Path) -> None:
    # the fallback (old run renamed aside to previous/<run> in the staging area, then the new one renamed in) leaves a moment
    # with no run at all; Linux exchanges the two folders in one step and never touches <run>.previous.
    # A folder sitting at that path (holding a file, so no rename can replace it) shows which way was taken
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("old")
    with RunFolderWriter(run) as writer:
        (writer.staging / "run.json").write_text("new")
        aside = writer.area / "previous" / "run"
        aside.parent.mkdir(parents=True, exist_ok=True)
        aside.mkdir()
        (aside / "kept").write_text("not the old run")
        writer.commit()
    assert (run / "run.json").read_text() == "new"
    assert [p.name for p in aside.iterdir()] == ["kept"]  # the old run never went there

def test_a_folder_that_is_no_run_is_refused_naming_what_it_holds_and_left_untouched(tmp_path: Path) -> None:
    """Issue 26, finding 6: a folder without run.json holding ci.yaml, release.yaml and prompt.md lost
    both YAML files and its prompt.md to a recording."""
    folder = tmp_path / "wf"
    folder.mkdir()
    files = {"ci.yaml": "on: push\n", "release.yaml": "on: tag\n", "prompt.md": "mine\n"}
    for name, text in files.items():
        (folder / name).write_text(text)
    with pytest.raises(UsageError) as caught:
        RunFolderWriter(folder).__enter__()
    assert str(caught.value).count("\n") == 0
    assert "wf is not a run (no run.json) and is not empty (it holds ci.yaml, prompt.md, release.yaml)" in str(caught.value)
    assert {p.name: p.read_text() for p in folder.iterdir()} == files
    assert not (tmp_path / STAGING_FOLDER).exists()


def test_a_run_named_like_another_runs_lock_or_staging_never_collides(tmp_path: Path) -> None:
    """Issue 26, finding 11: a run folder named `X.lock` was the lock file of the run `X` beside it."""
    with RunFolderWriter(tmp_path / "X") as first:
        (first.staging / "run.json").write_text("{}")
        for name in ("X.lock", "X.previous", "X.batches.json"):
            with RunFolderWriter(tmp_path / name) as other:
                (other.staging / "run.json").write_text(name)
                other.commit()
            assert (tmp_path / name / "run.json").read_text() == name
        first.commit()
    assert (tmp_path / "X" / "run.json").read_text() == "{}"
    assert not (tmp_path / STAGING_FOLDER).exists()


def _half_swapped(tmp_path: Path, *, new_complete: bool) -> tuple[Path, dict[str, Any]]:
    """The state a kill leaves between the two renames of the fallback swap: the old run moved aside."""
    area = tmp_path / STAGING_FOLDER
    (area / "previous" / "run").mkdir(parents=True)
    (area / "previous" / "run" / "run.json").write_text("old")
    (area / "staging" / "run").mkdir(parents=True)
    (area / "staging" / "run" / "a.yaml").write_text("new")
    if new_complete:
        (area / "staging" / "run" / "run.json").write_text("new")
    return tmp_path / "run", {}


def test_a_half_done_swap_is_finished_with_the_complete_new_run(tmp_path: Path) -> None:
    run, _ = _half_swapped(tmp_path, new_complete=True)
    recover(run)
    assert (run / "run.json").read_text() == "new" and not (tmp_path / STAGING_FOLDER / "previous" / "run").exists()


def test_a_half_done_swap_of_an_incomplete_run_puts_the_old_one_back(tmp_path: Path) -> None:
    run, _ = _half_swapped(tmp_path, new_complete=False)
    recover(run)
    assert (run / "run.json").read_text() == "old" and not (tmp_path / STAGING_FOLDER / "previous" / "run").exists()


def test_a_read_only_parent_is_one_line_before_any_call(tmp_path: Path, services: tuple[str, str],
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() == 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(ro)], check=True)
    else:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
    try:
        code, err = judge_here(tmp_path, services, claims_folder(tmp_path, "small", 1), capsys, monkeypatch,
                               run="ro/run")
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(ro)], check=True)
    assert code == 1
    assert err.splitlines() == ["judge-replay: ro/run: Read-only file system"
                                if os.geteuid() == 0 else "judge-replay: ro/run: Permission denied"]


def test_leftovers_of_a_killed_recording_are_no_run_to_any_reader(good_run: Path) -> None:
    from replay.runs.folder import find_runs
    from replay.cassettes.audit import audit_report

    leftover = good_run.parent / STAGING_FOLDER / "other"
    leftover.mkdir(parents=True)
    for p in good_run.iterdir():  # a whole run, as a recording killed just before its swap leaves it
        (leftover / p.name).write_bytes(p.read_bytes())
    assert [r.path.name for r in find_runs(good_run.parent)] == ["run"]
    assert audit_report([good_run.parent]).cassettes == len(list(good_run.glob("*.yaml")))


@pytest.mark.parametrize("inside", [".judge-replay-staging", ".judge-replay-staging/r", ".judge-replay-staging/r/deeper"])
def test_a_run_inside_a_staging_folder_is_refused(tmp_path: Path, inside: str) -> None:
    with pytest.raises(UsageError, match="cannot be inside a .judge-replay-staging folder"):
        RunFolderWriter(tmp_path / "runs" / inside)
    assert not (tmp_path / "runs").exists()


def test_a_recording_swaps_its_run_in_only_once_no_one_reads_the_old_one(tmp_path: Path) -> None:
    """A replay or a verify reads a run as a whole (`reading`): a recording that finishes meanwhile waits
    to swap its run in, so the reader never sees half of each; the next reader reads the new run."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("old")
    committed = threading.Event()

    def record() -> None:
        with RunFolderWriter(run) as writer:
            (writer.staging / "run.json").write_text("new")
            writer.commit()
        committed.set()

    with reading(run):
        recorder = threading.Thread(target=record)
        recorder.start()
        assert not committed.wait(1.0)  # the swap waits for the reader
        assert (run / "run.json").read_text() == "old"
    recorder.join(30)
    assert committed.is_set()
    with reading(run):
        assert (run / "run.json").read_text() == "new"


def test_a_folder_written_as_a_whole_is_the_old_one_or_the_new_one(tmp_path: Path) -> None:
    """What a snapshot update uses: a failure halfway through writing the new files leaves the old folder
    whole (the half-written one is hidden, and cleared by the next write)."""
    folder = tmp_path / "snapshots" / "r1"
    write_folder(folder, {"a.json": "1", "b.json": "1"})
    with pytest.raises(ValueError):
        write_folder(folder, {"a.json": "2", "b\x00.json": "2"})  # the second file cannot be written
    assert {p.name: p.read_text() for p in folder.iterdir()} == {"a.json": "1", "b.json": "1"}
    write_folder(folder, {"a.json": "2"})
    assert {p.name: p.read_text() for p in folder.iterdir()} == {"a.json": "2"}
    (folder / "NOTES.md").write_text("mine")  # not ours: carried over, links as links
    (folder / "to-notes").symlink_to("NOTES.md")
    (folder / "to-nothing").symlink_to(tmp_path / "gone")
    (folder / "to-folder").symlink_to(tmp_path)
    write_folder(folder, {"a.json": "3"}, ours=lambda name: name.endswith(".json"))
    assert {p.name: p.read_text() for p in folder.iterdir() if not p.is_symlink()} == {"a.json": "3", "NOTES.md": "mine"}
    assert {p.name: os.readlink(p) for p in folder.iterdir() if p.is_symlink()} == {
        "to-notes": "NOTES.md", "to-nothing": str(tmp_path / "gone"), "to-folder": str(tmp_path)}
    assert [p.name for p in folder.parent.iterdir()] == ["r1"]
