"""End to end, as a user drives it: the CLI in subprocesses, stand-ins started from the CLI, replay with no
network at all (`unshare -rn`: a network namespace of our own, no root needed), a Ctrl-C in the middle of
a recording, and a canary key."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from replay._cassette import load_cassette, save_cassette

REPO = Path(__file__).resolve().parents[1]
PAGES = REPO / "demo" / "pages" / "2026-06"
CLAIMS = REPO / "demo" / "claims"
CANARY = "sk-ant-api03-CANARY" + "x7Q2" * 20 + "AA"
CLI = [sys.executable, "-c", "import sys; from replay._cli.main import main; sys.exit(main())"]


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, prefix: list[str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*(prefix or []), *CLI, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def stand_ins() -> Iterator[tuple[str, str]]:
    """Both stand-ins, started the way a user starts them: `judge-replay sim ...`, URL on stdout's first line."""
    procs, urls = [], []
    try:
        for args in (["sim", "learn", "--pages", str(PAGES), "--quiet"], ["sim", "model", "--quiet"]):
            proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append(proc)
            assert proc.stdout is not None
            urls.append(proc.stdout.readline().strip())
        assert urls[0].startswith("http://127.0.0.1:") and urls[0].endswith("/api/mcp")
        assert urls[1].startswith("http://127.0.0.1:")
        yield urls[0], urls[1]
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=10)


def record(tmp: Path, run: str, urls: tuple[str, str], claims: Path = CLAIMS) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": CANARY}
    return cli("judge", "--prompt", "v3", "--claims", str(claims), "--run", run, "--mode", "record",
               "--learn-url", urls[0], "--anthropic-base-url", urls[1], "--no-progress", cwd=tmp, env=env)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, stand_ins: tuple[str, str]) -> Path:
    tmp = tmp_path_factory.mktemp("acceptance")
    done = record(tmp, "first/run", stand_ins)
    assert done.returncode == 0, done.stderr
    return tmp


def test_record_writes_a_run_folder_that_holds_no_secret(recorded: Path) -> None:
    run = recorded / "first" / "run"
    names = sorted(p.name for p in run.iterdir())
    assert {"run.json", "results.json", "prompt.md"} <= set(names)
    assert len([n for n in names if n.endswith(".yaml")]) == len(list(CLAIMS.glob("*.json")))
    for path in run.iterdir():
        assert CANARY not in path.read_text("utf-8"), f"the canary key leaked into {path.name}"
        assert CANARY[:30] not in path.read_text("utf-8")
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["stand_ins"] == ["learn", "model"] and manifest["stats"]["model_calls"] > 0
    audit = cli("cassettes", "audit", str(run), cwd=recorded)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_two_recordings_give_byte_identical_cassettes(recorded: Path, stand_ins: tuple[str, str]) -> None:
    again = record(recorded, "second/run", stand_ins)
    assert again.returncode == 0, again.stderr
    first, second = recorded / "first" / "run", recorded / "second" / "run"
    for cassette in sorted(first.glob("*.yaml")):
        assert cassette.read_bytes() == (second / cassette.name).read_bytes(), cassette.name
    assert (first / "results.json").read_text() == (second / "results.json").read_text().replace(
        *_time_of(second, first))
    a, b = (json.loads((d / "run.json").read_text()) for d in (first, second))
    a.pop("recorded_at"), b.pop("recorded_at")
    assert a == b  # the manifests differ only in their time


def _time_of(a: Path, b: Path) -> tuple[str, str]:
    return tuple(json.loads((d / "run.json").read_text())["recorded_at"] for d in (a, b))  # type: ignore[return-value]


def test_replay_with_no_network_at_all_reproduces_the_results(recorded: Path) -> None:
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, text=True)
    assert probe.returncode == 0, f"this test needs `unshare -rn` (util-linux, user namespaces): {probe.stderr}"
    out = recorded / "replayed.json"
    done = cli("judge", "--mode", "replay", "--run", "first/run", "--out", str(out), "--no-progress",
               cwd=recorded, env={k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"},
               prefix=["unshare", "-rn"])
    assert done.returncode == 0, done.stderr
    replayed = json.loads(out.read_text())["files"]
    assert replayed == json.loads((recorded / "first" / "run" / "results.json").read_text())["files"]


def test_a_deleted_interaction_stops_the_replay_with_a_useful_message(recorded: Path) -> None:
    run = recorded / "damaged"
    shutil.copytree(recorded / "first" / "run", run)
    cassette = run / "docs_quotas-and-limits.md.yaml"
    interactions = load_cassette(cassette)
    last_model_turn = max(i for i, it in enumerate(interactions) if it.uri.endswith("/v1/messages"))
    del interactions[last_model_turn]
    save_cassette(cassette, interactions)
    done = cli("judge", "--mode", "replay", "--run", "damaged", "--no-progress", cwd=recorded,
               prefix=["unshare", "-rn"])
    assert done.returncode == 1, done.stderr
    message = done.stderr
    assert "cassette miss while replaying docs/quotas-and-limits.md" in message
    assert "model turn" in message and "closest recorded" in message
    assert "judge-replay judge" in message and "--mode record" in message
    assert "Traceback" not in message


@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_ctrl_c_during_a_recording_leaves_every_saved_cassette_whole(tmp_path: Path, stand_ins: tuple[str, str],
                                                                     concurrency: str) -> None:
    claims = tmp_path / "claims"
    claims.mkdir()
    source = json.loads((CLAIMS / "quotas-and-limits.json").read_text())
    for n in range(40):  # enough conversations that the run is still going when it is interrupted
        (claims / f"c{n:02}.json").write_text(json.dumps({**source, "file": f"docs/copy-{n:02}.md"}))
    env = {**os.environ, "ANTHROPIC_API_KEY": CANARY}
    proc = subprocess.Popen([*CLI, "judge", "--prompt", "v3", "--claims", str(claims), "--run", "run",
                             "--mode", "record", "--learn-url", stand_ins[0], "--anthropic-base-url",
                             stand_ins[1], "--concurrency", concurrency, "--no-progress"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run = tmp_path / "run"
    deadline = time.monotonic() + 60
    while not list(run.glob("*.yaml")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    saved = sorted(run.glob("*.yaml"))
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert 1 <= len(saved) < 40
    assert not (run / "run.json").exists() and not (run / "results.json").exists()
    assert not [p for p in run.iterdir() if p.name.endswith(".tmp")]
    for cassette in saved:  # every cassette written is complete: it loads, and its last turn ends the conversation
        interactions = load_cassette(cassette)
        last = json.loads(interactions[-1].response_body)
        assert last["stop_reason"] == "end_turn", cassette.name
        assert yaml.safe_load(cassette.read_text())["version"] == 1
