"""A run's Learn sessions: each conversation opens its own, and every one is ended once the run is over,
however it ends (complete, or interrupted with Ctrl-C), never recorded nor counted; against a server
that ends no session (the real one answers 405), one attempt says so for all. The CLI runs in this
process (`main` returns once the run is over: its sessions must be ended by then), in a subprocess where it
is interrupted; the Learn stand-in requires sessions (strict), as a stateful server would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from replay.cassettes.cassette import load_cassette
from replay.cli.main import main
from replay.sim import start_learn, start_model
from locations import REPO

PAGES = REPO / "demo" / "pages" / "2026-06"
CLAIMS = REPO / "demo" / "claims" / "quotas-and-limits.json"
CLI = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "from replay.cli.main import main; sys.exit(main())"]
"""The CLI in a process of its own, which a SIGINT interrupts as Ctrl-C at a terminal does, even when the tests
run with SIGINT ignored (a background job of a shell: its children would ignore it too, and run on)."""
KEY = "sk-ant-test-learn-sessions"
ENV = {**os.environ, "ANTHROPIC_API_KEY": KEY}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """Run `judge-replay` in this process, in `tmp_path`, with the key: (exit code, stderr)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)

    def run(argv: list[str]) -> tuple[int, str]:
        capsys.readouterr()
        code = main(argv)
        return code, capsys.readouterr().err
    return run


def _claims(folder: Path, files: int) -> Path:
    source = json.loads(CLAIMS.read_text("utf-8"))
    folder.mkdir()
    for n in range(files):
        (folder / f"c{n:02}.json").write_text(json.dumps({**source, "file": f"docs/copy-{n:02}.md"}), "utf-8")
    return folder


def _judge(claims: Path, learn_url: str, model_url: str, *more: str) -> list[str]:
    return ["judge", "--prompt", "v3", "--claims", str(claims), "--learn-url", learn_url,
            "--anthropic-base-url", model_url, "--no-progress", *more]


def test_a_recording_ends_every_session_after_the_run_and_counts_none(tmp_path: Path, here: Callable[..., tuple[int, str]]) -> None:
    claims = _claims(tmp_path / "claims", 12)
    with start_learn(PAGES, strict_sessions=True) as learn, start_model() as model:
        code, err = here(_judge(claims, learn.url, model.url, "--mode", "record", "--run", "run"))
        calls, still_open = list(learn.calls), set(learn.app.sessions)
    assert code == 0, err
    assert calls.count("initialize") == 13 and calls.count("DELETE") == 13 and not still_open
    assert calls[-12:] == ["DELETE"] * 12  # the conversations' sessions, ended once the run was written
    recorded = [it for cassette in sorted((tmp_path / "run").glob("*.yaml")) for it in load_cassette(cassette)]
    assert {it.method for it in recorded} == {"POST"}
    stats = json.loads((tmp_path / "run" / "run.json").read_text("utf-8"))["stats"]
    assert stats["interactions"] == len(recorded)  # no ending counted either


def test_ctrl_c_in_the_middle_of_a_recording_still_ends_every_session(tmp_path: Path) -> None:
    claims = _claims(tmp_path / "claims", 40)  # enough conversations that the run is still going when interrupted
    with start_learn(PAGES, strict_sessions=True) as learn, start_model() as model:
        proc = subprocess.Popen([*CLI, *_judge(claims, learn.url, model.url, "--mode", "record", "--run", "run", "--concurrency", "2")],
                                cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while learn.calls.count("initialize") < 6 and time.monotonic() < deadline:  # 5 conversations started
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        calls, still_open = list(learn.calls), set(learn.app.sessions)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert not (tmp_path / "run").exists()
    opened = calls.count("initialize")
    assert 1 < opened < 41  # interrupted while conversations were running
    assert calls.count("DELETE") == opened and not still_open  # the interrupted conversations' too


def test_against_a_server_that_ends_no_session_one_attempt_says_so_for_all(tmp_path: Path, here: Callable[..., tuple[int, str]]) -> None:
    claims = _claims(tmp_path / "claims", 12)
    with start_learn(PAGES) as learn, start_model() as model:  # like the real server: sessions issued, DELETE 405
        code, err = here(_judge(claims, learn.url, model.url, "--mode", "live"))
        deletes = [r for r in learn.requests if r.http_method == "DELETE"]
    assert code == 0, err
    assert len(deletes) == 2  # the check before the run, and the first of the conversations' (then no more)


def test_no_conversation_sends_a_cookie_though_the_server_sets_one(tmp_path: Path, here: Callable[..., tuple[int, str]]) -> None:
    """The real endpoint's CDN sets a cookie (so does the stand-in); the clients of a run share their
    connections but keep no cookie, so no conversation sends one, another's least of all."""
    claims = _claims(tmp_path / "claims", 3)
    with start_learn(PAGES) as learn, start_model() as model:
        code, err = here(_judge(claims, learn.url, model.url, "--mode", "live", "--concurrency", "1"))
        cookies = [r.cookie for r in learn.requests]
    assert code == 0, err
    assert len(cookies) > 6 and set(cookies) == {None}
