"""A run of many claims files needs the open files of a few conversations, not of the whole run: each
conversation's Learn connections are closed as it ends (a system allowing 256 open files, macOS's default,
once stopped a run of a few hundred files), and every Learn session is still ended, after the run, and
never recorded. The CLI runs in a subprocess whose open-files limit is below the number of files."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replay._sim import start_learn, start_model

REPO = Path(__file__).resolve().parents[1]
PAGES = REPO / "demo" / "pages" / "2026-06"
CLAIMS = REPO / "demo" / "claims" / "evaluation.json"
CLI = [sys.executable, "-c", "import sys; from replay._cli.main import main; sys.exit(main())"]
FILES = 90
OPEN_FILES = 64
"""The subprocess's limit: below FILES, above what 8 conversations at a time need."""


def _many_claims_files(folder: Path) -> Path:
    claims = json.loads(CLAIMS.read_text("utf-8"))
    folder.mkdir()
    for n in range(FILES):
        (folder / f"doc-{n:03d}.json").write_text(json.dumps({**claims, "file": f"docs/doc-{n:03d}.md"}), "utf-8")
    return folder


def _limited() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, hard))


@pytest.mark.parametrize("mode", ["record", "live"])
def test_a_run_of_more_files_than_the_process_may_open_ends_every_session_unrecorded(tmp_path: Path, mode: str) -> None:
    claims = _many_claims_files(tmp_path / "claims")
    with start_learn(PAGES, strict_sessions=True) as learn, start_model() as model:
        args = ["judge", "--prompt", "v3", "--claims", str(claims), "--mode", mode, "--no-progress",
                "--learn-url", learn.url, "--anthropic-base-url", model.url]
        if mode == "record":
            args += ["--run", "run"]
        done = subprocess.run([*CLI, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              preexec_fn=_limited, env={**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-open-files"})
        calls = list(learn.calls)
        still_open = set(learn.app.sessions)

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "failed" not in done.stdout
    opened = calls.count("initialize")
    assert opened > FILES  # one session per conversation (and the check before the run), each its own
    assert calls.count("DELETE") == opened and not still_open  # every session ended: the server holds none
    assert calls[-FILES:].count("DELETE") == FILES  # the conversations' sessions, ended after the run
    if mode == "record":
        cassettes = sorted((tmp_path / "run").glob("*.yaml"))
        assert len(cassettes) == FILES
        for cassette in cassettes:
            methods = {it["request"]["method"] for it in yaml.safe_load(cassette.read_text("utf-8"))["interactions"]}
            assert methods == {"POST"}, cassette.name  # no DELETE: ending a session is never recorded
