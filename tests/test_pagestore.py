"""The page store: content-addressed page versions per URL, indexed from run folders' cassettes."""

import json
from pathlib import Path

import pytest

from factories import write_run
from replay._errors import UsageError
from replay._pagestore import PageStore, cassettes_root, store_folder
from replay._runs import Run
from replay._text import sha256_text

URL = "https://learn.microsoft.com/azure/p"
V1, V2 = "# P\n\n| a | 1 |\n", "# P\n\n| a | 2 |\n"


def run_reading(folder, text, recorded_at, url=URL):
    return Run(write_run(folder, results=[{"file": "docs/a.md", "results": []}],
                         pages={"docs/a.md": {url: text}}, recorded_at=recorded_at))


def test_versions_first_and_last_seen_and_runs(tmp_path):
    runs = [run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z"),
            run_reading(tmp_path / "r2", V1, "2026-02-01T00:00:00Z", url="https://learn.microsoft.com/en-us/azure/p/"),
            run_reading(tmp_path / "r3", V2, "2026-03-01T00:00:00Z")]
    with PageStore(tmp_path / "store") as store:
        assert store.index_runs(runs) == 3
        assert store.index_runs(runs) == 0  # same run.json: skipped
        v1, v2 = store.versions("HTTPS://learn.microsoft.com/azure/p#x")
    assert (v1.sha256, v1.first_seen, v1.last_seen, v1.runs) == (sha256_text(V1), "2026-01-01T00:00:00Z",
                                                                 "2026-02-01T00:00:00Z", ("r1", "r2"))
    assert (v2.sha256, v2.runs, v2.size, v2.short) == (sha256_text(V2), ("r3",), len(V2.encode()), sha256_text(V2)[:12])


def test_store_persists_and_text_is_content_addressed(tmp_path):
    with PageStore(tmp_path / "store") as store:
        sha = store.add(URL, V1, "2026-01-01T00:00:00Z", "manual")
        store.add(URL + "/", V1, "2026-01-02T00:00:00Z", "other")
    with PageStore(tmp_path / "store") as store:
        [version] = store.versions(URL)
        assert store.text(sha) == V1 and version.runs == ("manual", "other") and store.urls() == [URL]


def test_reindexing_a_re_recorded_run_forgets_what_it_read_before(tmp_path):
    with PageStore(tmp_path / "store") as store:
        store.index_run(run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z"))
        store.index_run(run_reading(tmp_path / "r1", V2, "2026-01-05T00:00:00Z"))  # re-recorded in place
        [version] = store.versions(URL)
    assert version.sha256 == sha256_text(V2) and version.runs == ("r1",)


def test_missing_page_is_a_version_without_text(tmp_path):
    with PageStore(tmp_path / "store") as store:
        store.index_run(run_reading(tmp_path / "r1", None, "2026-01-01T00:00:00Z"))
        [version] = store.versions(URL)
    assert version.sha256 is None and version.size is None and version.short == "(missing)"


def test_hash_prefixes_resolve_or_name_what_is_known(tmp_path):
    with PageStore(tmp_path / "store") as store:
        store.add(URL, V1, "2026-01-01T00:00:00Z", "r1")
        store.add(URL, V2, "2026-02-01T00:00:00Z", "r2")
        assert store.version(URL, sha256_text(V2)[:6].upper()).sha256 == sha256_text(V2)
        with pytest.raises(UsageError, match=f"known: {sha256_text(V1)[:12]}, {sha256_text(V2)[:12]}"):
            store.version(URL, "zz")
        with pytest.raises(UsageError, match="matches 2 versions"):
            store.version(URL, "")


def test_store_and_cassettes_folders_follow_flag_then_setting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.judge-replay]\npage-store = "cache/pages"\n')
    assert store_folder() == tmp_path / "cache" / "pages"
    assert store_folder("elsewhere") == Path("elsewhere")  # the flag wins, relative to the working folder
    assert cassettes_root() == tmp_path / "cassettes"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert store_folder() == tmp_path / ".judge-replay" / "pages"


def test_index_reads_the_manifest_bytes_not_the_folder_name(tmp_path):
    run = run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z")
    manifest = json.loads((run.path / "run.json").read_text())
    with PageStore(tmp_path / "store") as store:
        assert store.index_run(run)
        (run.path / "run.json").write_text(json.dumps({**manifest, "model": "other"}))
        assert store.index_run(Run(run.path))  # changed run.json: indexed again


def test_a_deleted_run_is_forgotten(tmp_path):
    import shutil

    keep = run_reading(tmp_path / "runs" / "keep", V1, "2026-01-01T00:00:00Z")
    gone = run_reading(tmp_path / "runs" / "gone", V2, "2026-02-01T00:00:00Z")
    with PageStore(tmp_path / "store") as store:
        store.index_runs([keep, gone])
        assert [v.runs for v in store.versions(URL)] == [("keep",), ("gone",)]
        shutil.rmtree(gone.path)
        assert store.prune_missing_runs() == 1
        assert [v.runs for v in store.versions(URL)] == [("keep",)]
        assert store.prune_missing_runs() == 0
