"""What diff, drift and pages read of a run's cassettes: derived once per cassette change, never stale, held once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from replay.cassettes.learn_calls import learn_calls
from replay.cassettes.cassette import load_cassette
from replay.cassettes.cache import Cassette, cached, entry_path
from replay.runs.folder import Run, _conversation_parser
from locations import REPO

CASSETTES = REPO / "cassettes"


@pytest.fixture
def project(cached_project: Path) -> Path:
    """A project holding a copy of the demo run v3-demo; the cache on."""
    shutil.copytree(CASSETTES / "v3-demo", cached_project / "runs" / "v3-demo")
    return cached_project


def _from_yaml(run: Run) -> dict[str, list[tuple[str, str, bool]]]:
    """Every file's Learn calls read straight from its YAML cassette (no cache)."""
    out = {}
    for entry in run.manifest.claims:
        calls = learn_calls(load_cassette(run.path / entry.cassette))
        out[entry.file] = [(c.tool, c.text, c.is_error) for c in calls]
    return out


def _derived(run: Run) -> dict[str, list[tuple[str, str, bool]]]:
    return {e.file: [(c.tool, c.text, c.is_error) for c in run.learn_calls(e.file)] for e in run.manifest.claims}


def test_conversations_come_from_a_cache_entry_that_matches_the_yaml(project: Path) -> None:
    run = Run(project / "runs" / "v3-demo")
    first = _derived(run)
    assert first == _from_yaml(run)
    assert any(calls for calls in first.values())
    entries = [entry_path(run.path / e.cassette, "conversation") for e in run.manifest.claims]
    assert all(e is not None and e.is_file() for e in entries)
    again = Run(project / "runs" / "v3-demo")  # a later command: read from the entries
    assert _derived(again) == first
    assert again.all_claims() == run.all_claims()
    assert [c.id for c in again.all_claims().values()]


def test_a_changed_cassette_is_read_again_not_served_from_its_old_entry(project: Path) -> None:
    run = Run(project / "runs" / "v3-demo")
    before = run.pages
    # the same claims files recorded on later pages: replace every cassette, keep the entries
    for entry in run.manifest.claims:
        shutil.copy(CASSETTES / "v3-demo-2026-09" / entry.cassette, run.path / entry.cassette)
    later = Run(project / "runs" / "v3-demo")
    assert _derived(later) == _from_yaml(later)
    expected = Run(CASSETTES / "v3-demo-2026-09").pages
    assert {url: p.sha256 for url, p in later.pages.items()} == {url: p.sha256 for url, p in expected.items()}
    assert {url: p.sha256 for url, p in later.pages.items()} != {url: p.sha256 for url, p in before.items()}


def test_a_damaged_entry_is_rebuilt_from_the_yaml(project: Path) -> None:
    run = Run(project / "runs" / "v3-demo")
    first = _derived(run)
    for entry in run.manifest.claims:
        path = entry_path(run.path / entry.cassette, "conversation")
        assert path is not None
        path.write_bytes(path.read_bytes()[:-7] + b"garbage")
    assert _derived(Run(project / "runs" / "v3-demo")) == first


@pytest.mark.parametrize("text", [b"\xff\xfe not UTF-8", "a text, not bytes", None])
def test_an_entry_whose_page_texts_are_not_utf8_bytes_is_not_used(project: Path, text: object) -> None:
    """An entry that passes its checks but does not hold what the code writes (page texts as UTF-8 bytes):
    the conversation is read from the YAML, no error."""
    run = Run(project / "runs" / "v3-demo")
    first = _derived(run)
    for entry in run.manifest.claims:
        path = entry_path(run.path / entry.cassette, "conversation")
        assert path is not None
        path.unlink()
        forged = ([["microsoft_docs_fetch", {"url": "https://learn.microsoft.com/x"}, text, False]], None)
        cached(Cassette(run.path / entry.cassette), "conversation", lambda: forged, parser=_conversation_parser())
        assert path.is_file()
    assert _derived(Run(project / "runs" / "v3-demo")) == first


def test_each_page_text_is_held_once_however_many_conversations_fetched_it(project: Path) -> None:
    run = Run(project / "runs" / "v3-demo")
    fetched: dict[str, list[str]] = {}
    for entry in run.manifest.claims:
        for call in run.learn_calls(entry.file):
            if call.tool == "microsoft_docs_fetch" and not call.page_missing:
                fetched.setdefault(call.text, []).append(call.text)
    shared = [texts for texts in fetched.values() if len(texts) > 1]
    assert shared, "the demo run fetches some page in more than one conversation"
    for texts in shared:
        assert all(t is texts[0] for t in texts)
