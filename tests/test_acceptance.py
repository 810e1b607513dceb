"""End to end, as a user drives it: the CLI in subprocesses, stand-ins started from the CLI, replay with no
network at all (`unshare -rn`: a network namespace of our own, no root needed), a Ctrl-C in the middle of
a recording, and a canary key."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from replay.cassettes.cassette import load_cassette, save_cassette

REPO = Path(__file__).resolve().parents[1]
PAGES = REPO / "demo" / "pages" / "2026-06"
CLAIMS = REPO / "demo" / "claims"
CANARY = "sk-ant-api03-CANARY" + "x7Q2" * 20 + "AA"
CLI = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "from replay.cli.main import main; sys.exit(main())"]
"""The CLI in a process of its own, which a SIGINT interrupts as Ctrl-C at a terminal does, even when the tests
run with SIGINT ignored (a background job of a shell: its children would ignore it too, and run on)."""


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, prefix: list[str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*(prefix or []), *CLI, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def stand_ins() -> Iterator[tuple[str, str]]:
    """Both stand-ins, started the way a user starts them: `judge-replay sim ...`, URL on stdout's first line."""
    procs, urls = [], []
    try:
        for args in (["sim", "learn", "--pages", str(PAGES), "--port", "0"], ["sim", "model", "--port", "0"]):
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
    # --no-cache: with prompt caching, a second recording reads the cache the first wrote (its usage differs)
    return cli("judge", "--prompt", "v3", "--claims", str(claims), "--run", run, "--mode", "record", "--no-cache",
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
def test_ctrl_c_during_a_recording_writes_no_run(tmp_path: Path, stand_ins: tuple[str, str], concurrency: str) -> None:
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
    staging = tmp_path / ".judge-replay-staging" / "staging" / "run"
    deadline = time.monotonic() + 60
    while not list(staging.glob("*.yaml")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    # a recording is one transaction: interrupted, it leaves no run and nothing beside where it would be
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claims"]


def test_a_recording_with_the_model_endpoint_down_stops_before_anything_is_written(tmp_path: Path,
                                                                                  stand_ins: tuple[str, str]) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}"
    done = record(tmp_path, "run", (stand_ins[0], down))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [f"judge-replay: cannot reach the Anthropic API at {down}: "
                                                + done.stderr.split(f"{down}: ", 1)[1].strip()]
    assert list(tmp_path.iterdir()) == []


def _encodings(secret: str) -> list[str]:
    from urllib.parse import quote, quote_plus

    return [secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1],
            base64.b64encode(secret.encode()).decode().rstrip("=")[:-2], secret[:24]]


def test_a_canary_given_three_ways_is_in_no_file_and_nothing_printed(tmp_path: Path, stand_ins: tuple[str, str]) -> None:
    """The canary as the API key (a 40-character key echoed by a 401), as a URL password of the model
    endpoint, and as `?key=` of a Learn URL that answers 500: it reaches no file and no output."""
    from factories import LocalServer

    canary = "Zq4" + "tR8mW2" * 6 + "x"  # a plain 40-character key, not shaped like an Anthropic key
    assert len(canary) == 40

    def reject(body: object) -> tuple[int, dict[str, str], bytes]:
        message = f"invalid x-api-key {canary} (key {canary})"
        return 401, {"content-type": "application/json"}, json.dumps(
            {"type": "error", "error": {"type": "authentication_error", "message": message}}).encode()

    def learn_500(body: Any) -> tuple[int, dict[str, str], bytes]:
        """Learn that works, except that every call about observability answers 500 echoing the key."""
        if body is None or "id" not in body:
            return 202, {}, b""
        if "observability" in json.dumps(body):
            return 500, {"content-type": "text/plain", "retry-after": "0"}, f"internal error for /api/mcp?key={canary}".encode()
        result = ({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "t", "version": "1"}}
                  if body["method"] == "initialize" else {"content": [{"type": "text", "text": "# Quotas\n\nNone."}]})
        return 200, {"content-type": "application/json"}, json.dumps(
            {"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()

    model, learn = LocalServer(reject), LocalServer(learn_500, "/api/mcp")
    outputs: list[str] = []
    try:
        host = model.url.split("//", 1)[1]
        runs = [
            ("key", {"ANTHROPIC_API_KEY": canary}, stand_ins[0], model.url),
            ("password", {"ANTHROPIC_API_KEY": "sk-ant-other-key-000000000000"}, stand_ins[0],
             f"http://user:{canary}@{host}"),
            ("learn-key", {"ANTHROPIC_API_KEY": "sk-ant-other-key-000000000000"}, f"{learn.url}?key={canary}",
             stand_ins[1]),
        ]
        for name, env, learn_url, model_url in runs:
            done = cli("judge", "--prompt", "v3", "--claims", str(CLAIMS / "evaluation.json"),
                       str(CLAIMS / "quotas-and-limits.json"), "--run", f"runs/{name}", "--mode", "record",
                       "--learn-url", learn_url, "--anthropic-base-url", model_url, "--no-progress",
                       cwd=tmp_path, env={**os.environ, **env})
            assert done.returncode == (1 if name == "learn-key" else 2), done.stderr
            assert "Traceback" not in done.stderr
            outputs += [done.stdout, done.stderr]
    finally:
        model.stop()
        learn.stop()
    # the Learn failure mid-run: the run is kept, the failed file named with its (redacted) reason
    results = json.loads((tmp_path / "runs" / "learn-key" / "results.json").read_text())
    failed = {f["file"]: f["error"] for f in results["files"] if f["error"]}
    assert list(failed) == ["docs/evaluation.md"] and "HTTP 500" in failed["docs/evaluation.md"]
    assert "key=REDACTED" in failed["docs/evaluation.md"]
    assert "--retry-failed" in outputs[-1]
    verify = cli("cassettes", "verify", "runs/learn-key", cwd=tmp_path, prefix=["unshare", "-rn"])
    assert verify.returncode == 0, verify.stdout + verify.stderr  # the failure replays, word for word
    outputs += [verify.stdout, verify.stderr]
    for pages in (tmp_path / ".judge-replay").rglob("*"):
        assert pages.is_dir() or canary not in pages.read_bytes().decode("utf-8", "replace")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    texts = outputs + [p.read_bytes().decode("utf-8", "replace") for p in files]
    for form in _encodings(canary):
        assert not [t for t in texts if form in t], f"the canary leaked as {form!r}"


SAS_URL = ("https://myaccount.blob.core.windows.net/container/file.txt?sv=2024-11-04&ss=b&srt=o&sp=r"
           "&se=2026-12-31T00:00:00Z&sig=XyZ0123456789abcdefghijklmnopqrstuvwxyzABC%3D")
SAMPLE_JWT = ("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
              "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
STORAGE_URL = "https://learn.microsoft.com/azure/storage/common/storage-sas-overview"
PRICING_URL = "https://azure.microsoft.com/pricing/details/cognitive-services/openai-service/"


def test_a_first_real_style_recording_replays_exactly(tmp_path: Path) -> None:
    """Issue 12's acceptance: a page quoting an example SAS URL and a sample bearer token, a claim citing
    an azure.microsoft.com page (refused by Learn), and a first fetch answered 503: exit 0, a verdict for
    every claim, the page stored byte for byte, no page version for the refused URL, and the run verifies
    with no network at all."""
    from replay.learn.client import LearnClient
    from replay.runs.folder import Run
    from replay.sim import start_learn, start_model

    pages = tmp_path / "pages"
    pages.mkdir()
    body = (f"# Grant limited access with shared access signatures\n\nA SAS token is a string such as\n\n"
            f"```\n{SAS_URL}\n```\n\nA request can also carry `Authorization: Bearer {SAMPLE_JWT}`.\n\n"
            "| Setting | Value |\n|---|---|\n| Maximum SAS lifetime | 7 days |\n")
    (pages / "sas.md").write_text(f"---\nurl: {STORAGE_URL}\ntitle: SAS overview\n---\n{body}", "utf-8")
    (tmp_path / "claims").mkdir()
    (tmp_path / "claims" / "sas.json").write_text(json.dumps({"file": "docs/sas.md", "claims": [
        {"id": "s-1", "claim": "The maximum SAS lifetime is 7 days.", "claim_type": "status",
         "evidence_url": STORAGE_URL},
        {"id": "s-2", "claim": "Hourly PTU pricing for gpt-4o is $1.", "claim_type": "sku",
         "evidence_url": PRICING_URL}]}))
    with start_learn(pages, port=0) as served:  # what Learn serves for the page, read with our client
        with LearnClient(served.url) as client:
            served_text = client.fetch(STORAGE_URL).text
    with start_learn(pages, port=0, fail_first=1, fail_status=503) as learn, start_model(port=0) as model:
        done = cli("judge", "--prompt", "v3", "--claims", "claims", "--run", "run", "--mode", "record",
                   "--learn-url", learn.url, "--anthropic-base-url", model.url, "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = Run(tmp_path / "run")
    assert all(r.judge_verdict for f in run.results.files for r in f.results)
    assert run.manifest.stats.learn_retries == 1
    page = run.page(STORAGE_URL)
    assert page is not None and page.text == served_text and SAS_URL in page.text and SAMPLE_JWT in page.text
    refused = run.page(PRICING_URL)
    assert refused is None or refused.sha256 is None
    verify = cli("cassettes", "verify", "run", cwd=tmp_path, prefix=["unshare", "-rn"])
    assert verify.returncode == 0, verify.stdout + verify.stderr
