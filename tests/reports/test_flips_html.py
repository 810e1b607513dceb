"""The HTML flip report, rendered in real headless Chromium: every flip is in the DOM, page text is escaped."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from replay.cli.main import main
from core.test_flips import MINI, MODELS_URL, V2, V3, change, learn_page, result, run

CHROMIUM = "/usr/bin/chromium"
LOWER = {"id": "models-003", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL}
TRICKY = {"id": "models-<x>", "claim": "The <b>router</b> & friends exist.", "claim_type": "taxonomy",
          "evidence_url": MODELS_URL}


def chromium() -> str:
    if Path(CHROMIUM).is_file() or shutil.which("chromium"):
        return CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")  # type: ignore[return-value]
    if os.environ.get("JUDGE_REPLAY_REQUIRE_CHROMIUM"):
        pytest.fail("JUDGE_REPLAY_REQUIRE_CHROMIUM is set but chromium is not installed")
    pytest.skip("chromium is not installed (set JUDGE_REPLAY_REQUIRE_CHROMIUM to make this a failure)")


QUIET = ("--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
         "--no-default-browser-check", "--disable-default-apps", "--disable-domain-reliability",
         "--disable-client-side-phishing-detection", "--disable-features=OptimizationHints,MediaRouter,Translate",
         "--metrics-recording-only", "--host-resolver-rules=MAP * ~NOTFOUND")
"""Chromium's own traffic off (updates, sync, safe browsing, field trials: it asks Google for them at start)."""


def headless(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on a local page. Tests connect to nothing outside 127.0.0.1: its own traffic is
    off (QUIET), and whatever it would still send goes to a proxy of ours on 127.0.0.1, which answers
    nothing and must see nothing (without QUIET it sees Chromium ask clients2.google.com for the time,
    and CONNECT to www.google.com and accounts.google.com)."""
    with _listening() as (port, seen):
        cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *QUIET,
               f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>",
               f"--user-data-dir={cwd / 'profile'}", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)
    assert seen == [], f"Chromium tried to reach the network: {seen}"
    return done


@contextmanager
def _listening() -> Iterator[tuple[int, list[str]]]:
    """A TCP server on 127.0.0.1 that keeps the first line of every connection and closes it."""
    seen: list[str] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    seen.append(conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1"))
                except OSError:
                    seen.append("(a connection)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], seen
    finally:
        stop.set()
        thread.join()
        server.close()


def test_html_report_renders_in_chromium(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = change(1)
    before, after = learn_page("before", c["file"]), learn_page("after", c["file"])
    claims = [LOWER, MINI, TRICKY]
    a = run(tmp_path / "runs" / "v2-demo", "v2", V2,
            [result("models-003", "grounded", "| `gpt-4.1` (2025-04-14)"),
             result("models-010", "grounded", c["before"].strip()),
             result("models-<x>", "source_silent", "")], {MODELS_URL: before}, claims=claims)
    b = run(tmp_path / "runs" / "v3-demo", "v3", V3,
            [result("models-003", "not_grounded", "| `gpt-4.1` (2025-04-14)", rule="R1"),
             result("models-010", "not_grounded", c["after"].strip()),
             result("models-<x>", "not_grounded", "<script>alert(1)</script> & <b>bold</b>", rule="R2")],
            {MODELS_URL: after}, claims=claims)
    out = tmp_path / "report.html"
    assert main(["diff", str(a.path), str(b.path), "--format", "html", "--out", str(out), "--confirm"]) == 0
    page = out.read_text()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "http" not in page.split("<body>")[0].replace("http-equiv", "")  # no external asset in the head
    assert "<link" not in page and "src=" not in page

    dom = headless("--dump-dom", out.as_uri(), cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for flip_id in ("models-003", "models-010", "models-&lt;x&gt;"):
        assert f'<span class="fid">{flip_id}</span>' in dom.stdout
    assert "<script>alert" not in dom.stdout and "<b>bold</b>" not in dom.stdout
    assert '<td class="ins">' in dom.stdout and "<ins>" in dom.stdout  # the changed row is highlighted

    shot = tmp_path / "report.png"
    done = headless(f"--screenshot={shot}", "--window-size=1280,2000", out.as_uri(), cwd=tmp_path)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("JUDGE_REPLAY_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["JUDGE_REPLAY_KEEP_SCREENSHOT"])


def test_what_differs_between_the_prompts_is_shown_once_not_in_every_flip(tmp_path):
    page = learn_page("after", change(1)["file"])
    q = "| `gpt-4.1` (2025-04-14)"
    a = run(tmp_path / "v2", "v2", V2, [result("models-003", "grounded", q), result("models-010", "grounded", q)],
            {MODELS_URL: page}, claims=[LOWER, MINI])
    b = run(tmp_path / "v3", "v3", V3, [result("models-003", "not_grounded", q, rule="R1"),
                                        result("models-010", "not_grounded", q, rule="R2")],
            {MODELS_URL: page}, claims=[LOWER, MINI])
    out = tmp_path / "report.html"
    assert main(["diff", str(a.path), str(b.path), "--format", "html", "--out", str(out)]) == 0
    html = out.read_text()
    assert html.count("rules added: R1 Lower-bound understatement") == 1
    assert html.count("sections added: v3 CALIBRATION RULES") == 1
    assert "B cites R1 (Lower-bound understatement): defined in only B" in html
    assert "B cites R2 (" in html and html.count('href="#prompt"') == 2


def test_flip_report_html_shows_controls_and_redacts_secrets(tmp_path):
    # every data string goes through printable (controls visible, secrets redacted) and then html.escape
    from replay.secrets import registry as _secrets

    secret = "sk-ant-api03-reportsecret0123456789"
    _secrets.remember(secret)
    page = learn_page("after", change(1)["file"])
    hostile = f"RLO\u202eevil ESC\x1b[31mred key {secret} <i>x</i>"
    a = run(tmp_path / "v2", "v2", V2, [result("models-003", "grounded", "| `gpt-4.1` (2025-04-14)")],
            {MODELS_URL: page}, claims=[LOWER])
    b = run(tmp_path / "v3", "v3", V3, [result("models-003", "not_grounded", hostile, rule="R1")],
            {MODELS_URL: page}, claims=[LOWER])
    out = tmp_path / "report.html"
    assert main(["diff", str(a.path), str(b.path), "--format", "html", "--out", str(out)]) == 0
    html = out.read_text()
    assert "RLO\\u202eevil" in html and "ESC\\x1b[31mred" in html and "&lt;i&gt;x&lt;/i&gt;" in html
    assert "\u202e" not in html and "\x1b" not in html and secret not in html and "<i>x</i>" not in html
