"""A recording fetches each Learn page once at any concurrency: a fetch another conversation has under
way is waited for and answered from its response; a failed one never blocks nor poisons the others."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from replay.errors import LearnError
from replay.learn.client import LearnClient
from replay.urls import normalise_learn_url
from replay.recording.recorder import HttpRecorder
from replay.analysis.verify import verify_run
from replay.judge.runner import run_judge
from replay.runs.names import cassette_name
from replay.sim import start_model
from locations import REPO

MODELS = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
DEMO = REPO / "demo"


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def fetch_in(rec: HttpRecorder, name: str, learn_url: str, out: dict[str, Any]) -> None:
    """One conversation fetching MODELS; its page text, or the error it got, lands in `out[name]`."""
    try:
        with rec.conversation(name) as seam, httpx.Client(transport=seam.transport(httpx.HTTPTransport())) as http:
            out[name] = LearnClient(learn_url, http, max_retries=0).fetch(MODELS).text
    except (LearnError, OSError) as exc:
        out[name] = exc


def start(rec: HttpRecorder, names: list[str], learn_url: str, out: dict[str, Any]) -> list[threading.Thread]:
    threads = [threading.Thread(target=fetch_in, args=(rec, name, learn_url, out)) for name in names]
    for thread in threads:
        thread.start()
    return threads


def test_a_page_under_way_is_fetched_once_for_eight_conversations(tmp_path: Path, demo_learn: Any) -> None:
    demo_learn.hold_fetches()
    names = [f"docs/{n}.md" for n in range(8)]
    out: dict[str, Any] = {}
    with HttpRecorder("record", tmp_path) as rec:
        threads = start(rec, names, demo_learn.url, out)
        # without sharing, all eight fetches would reach the stand-in and be held there
        wait_for(lambda: demo_learn.held_fetches + rec.waiting_for_pages() == 8, "eight fetches under way")
        demo_learn.release_fetches()
        for thread in threads:
            thread.join()
    assert demo_learn.fetches == [MODELS]
    assert rec.stats.page_cache_hits == 7
    page = out[names[0]]
    assert isinstance(page, str) and "gpt-4.1" in page and all(out[n] == page for n in names)
    one = (tmp_path / cassette_name(names[0])).read_bytes()
    assert all((tmp_path / cassette_name(n)).read_bytes() == one for n in names)  # stored as if fetched live
    demo_learn.stop()
    replayed: dict[str, Any] = {}
    with HttpRecorder("replay", tmp_path) as rec:
        for thread in start(rec, names, demo_learn.url, replayed):
            thread.join()
    assert replayed == out


@pytest.mark.parametrize("outcome", ["error", "drop", 503])
def test_a_failed_fetch_under_way_neither_blocks_nor_poisons_the_waiters(tmp_path: Path, demo_learn: Any,
                                                                        outcome: Any) -> None:
    demo_learn.hold_fetches()
    first, waiters = "docs/first.md", [f"docs/waiter-{n}.md" for n in range(3)]
    out: dict[str, Any] = {}
    with HttpRecorder("record", tmp_path) as rec:
        threads = start(rec, [first], demo_learn.url, out)
        wait_for(lambda: demo_learn.held_fetches == 1, "the first fetch held")
        threads += start(rec, waiters, demo_learn.url, out)
        wait_for(lambda: rec.waiting_for_pages() + demo_learn.held_fetches == 4, "the others waiting for it")
        assert demo_learn.held_fetches == 1  # only the first went out
        demo_learn.release_fetches(outcome)  # it fails; a waiter goes out itself, and is answered
        for thread in threads:
            thread.join()
    assert isinstance(out[first], LearnError)
    pages = [out[n] for n in waiters]
    assert all(isinstance(p, str) and "gpt-4.1" in p for p in pages)
    assert demo_learn.fetches == [MODELS, MODELS]  # the failed one, then one for all the waiters
    assert rec.stats.page_cache_hits == 2
    assert not (tmp_path / cassette_name(first)).exists()  # its conversation ended in an error


def test_a_recording_at_concurrency_8_fetches_each_page_once_and_verifies(
        tmp_path: Path, demo_learn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    claims = tmp_path / "claims"
    claims.mkdir()
    for copy in range(2):  # each demo file twice: conversations that want the same pages at once
        for path in sorted((DEMO / "claims").glob("*.json")):
            batch = json.loads(path.read_text("utf-8"))
            batch["file"] = f"copy-{copy}/{batch['file']}"
            (claims / f"{copy}-{path.name}").write_text(json.dumps(batch), "utf-8")
    with start_model() as model:
        run_judge("v3", ["claims"], "runs/r", "record", model="claude-test", learn_url=demo_learn.url,
                  anthropic_base_url=model.url, concurrency=8, progress=False)
    fetched = [normalise_learn_url(url) for url in demo_learn.fetches]
    assert fetched and len(fetched) == len(set(fetched))
    demo_learn.stop()
    assert verify_run(tmp_path / "runs" / "r").ok


def test_the_page_store_indexes_a_recording_from_memory_as_from_its_cassettes(
        tmp_path: Path, demo_learn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from replay.cassettes.cache import FOLDER_VARIABLE
    from replay.runs.page_store import PageStore
    from replay.runs.folder import Run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path / "parse-cache"))
    (tmp_path / "pyproject.toml").write_text("[tool.judge-replay]\n", "utf-8")
    missing = {"file": "docs/retired.md", "claims": [
        {"id": "r-1", "claim": "Model foo-1 retires in 2030.", "claim_type": "status",
         "evidence_url": "https://learn.microsoft.com/azure/no-such-page"}]}
    (tmp_path / "retired.json").write_text(json.dumps(missing), "utf-8")
    with start_model() as model:
        run_judge("v3", [str(DEMO / "claims"), "retired.json"], "runs/r", "record", model="claude-test", learn_url=demo_learn.url,
                  anthropic_base_url=model.url, concurrency=4, progress=False)
    assert not (tmp_path / "parse-cache").exists()  # no cassette just written was parsed again to index it
    run = Run(tmp_path / "runs" / "r")
    with PageStore(tmp_path / ".judge-replay" / "pages") as from_memory, PageStore(tmp_path / "again") as again:
        assert again.index_run(run)
        urls = from_memory.urls()
        assert len(urls) == 7 and urls == again.urls()  # the demo claims read its 7 pages
        fetched = {str(c.arguments["url"]) for e in run.manifest.claims for c in run.learn_calls(e.file) if "url" in c.arguments}
        assert fetched - set(urls) == {"https://learn.microsoft.com/azure/no-such-page"}
        assert from_memory.no_page_answers("https://learn.microsoft.com/azure/no-such-page")
        for url in fetched:
            assert from_memory.versions(url) == again.versions(url)
            assert from_memory.no_page_answers(url) == again.no_page_answers(url)
