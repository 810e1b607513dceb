"""The page store: content-addressed page versions per URL, indexed from run folders' cassettes."""

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from factories import damage_page_store, fetch_interaction, write_run
from replay.cassettes.cassette import load_cassette, save_cassette
from replay.errors import UsageError
from replay.runs.page_store import PageStore, cassettes_root, open_indexed_store, store_folder
from replay.learn.wire import NOT_LEARN_REFUSAL
from replay.urls import normalise_learn_url
from replay.runs.folder import MANIFEST, Run
from replay.runs.names import cassette_name
from replay.core.text import sha256_text

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


def test_a_re_recorded_run_keeps_the_versions_it_read_before(tmp_path):
    with PageStore(tmp_path / "store") as store:
        store.index_run(run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z"))
        store.index_run(run_reading(tmp_path / "r1", V2, "2026-01-05T00:00:00Z"))  # re-recorded in place
        old, new = store.versions(URL)
    assert (old.sha256, old.runs, old.last_seen) == (sha256_text(V1), ("r1",), "2026-01-01T00:00:00Z")
    assert (new.sha256, new.runs, new.first_seen) == (sha256_text(V2), ("r1",), "2026-01-05T00:00:00Z")


def test_two_runs_with_one_folder_name_in_two_places_are_two_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    here = run_reading(tmp_path / "cassettes" / "v3", V1, "2026-01-01T00:00:00Z")
    there = run_reading(tmp_path / "elsewhere" / "v3", V2, "2026-02-01T00:00:00Z")
    with PageStore(tmp_path / "store") as store:
        assert store.index_runs([here, there]) == 2
        assert store.index_runs([here, there]) == 0
        first, second = store.versions(URL)
    assert (first.sha256, first.runs) == (sha256_text(V1), ("cassettes/v3",))
    assert (second.sha256, second.runs) == (sha256_text(V2), ("elsewhere/v3",))


REFUSED = "https://azure.microsoft.com/en-us/pricing/details/cognitive-services/openai-service/"
GONE = "https://learn.microsoft.com/azure/gone"
DOWN = "https://learn.microsoft.com/azure/down"


def run_with_no_page_answers(folder, recorded_at="2026-01-01T00:00:00Z"):
    """A run whose judge read URL, fetched a URL outside Learn (refused), a page Learn could not retrieve,
    and a page whose fetch failed with an HTTP 500 (an outage)."""
    folder = write_run(folder, results=[{"file": "docs/a.md", "results": []}], recorded_at=recorded_at,
                       pages={"docs/a.md": {URL: V1, REFUSED: NOT_LEARN_REFUSAL, GONE: None}})
    cassette = folder / cassette_name("docs/a.md")
    outage = fetch_interaction(DOWN, "unused", rpc_id=9)
    outage = dataclasses.replace(outage, status=500, reason="Internal Server Error", response_body="upstream error",
                                 response_headers={"content-type": ["text/plain"]})
    save_cassette(cassette, [*load_cassette(cassette), outage])
    return Run(folder)


def test_a_fetch_that_got_no_page_is_never_a_version_and_says_why(tmp_path):
    with PageStore(tmp_path / "store") as store:
        store.index_run(run_with_no_page_answers(tmp_path / "r1"))
        assert [v.sha256 for v in store.versions(URL)] == [sha256_text(V1)]
        assert store.urls() == [URL]  # the store holds a version of this page only
        for url, reason in ((REFUSED, "refused"), (GONE, "not-found"), (DOWN, "failed")):
            assert store.versions(url) == [], url
            [answer] = store.no_page_answers(url)
            assert (answer.reason, answer.runs, answer.first_seen) == (reason, ("r1",), "2026-01-01T00:00:00Z")
        assert store.no_page_answers(URL) == []
        with pytest.raises(UsageError, match="known: none"):
            store.version(REFUSED, "0")


def test_a_store_of_an_older_layout_is_read_again_and_its_no_page_entries_are_not_versions(tmp_path):
    run = run_with_no_page_answers(tmp_path / "r1")
    with PageStore(tmp_path / "store") as store:
        store._cache.set(f"url:{normalise_learn_url(REFUSED)}",  # written before: "-" as a version
                         {"url": REFUSED, "seen": {"-": {f"{run.path.resolve()}#2026-01-01T00:00:00Z": "2026-01-01T00:00:00Z"}}})
        store._cache.set(f"run:{run.path.resolve()}",
                         {"manifest_sha256": hashlib.sha256((run.path / "run.json").read_bytes()).hexdigest()})
        assert store.versions(REFUSED) == [] and REFUSED not in store.urls()
        assert store.index_run(run)  # an older layout: read again
        assert [a.reason for a in store.no_page_answers(REFUSED)] == ["refused"]


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


def test_a_deleted_run_keeps_its_versions(tmp_path):
    import shutil

    keep = run_reading(tmp_path / "runs" / "keep", V1, "2026-01-01T00:00:00Z")
    gone = run_reading(tmp_path / "runs" / "gone", V2, "2026-02-01T00:00:00Z")
    with PageStore(tmp_path / "store") as store:
        store.index_runs([keep, gone])
        shutil.rmtree(gone.path)
    with open_indexed_store(tmp_path / "store", tmp_path / "runs") as store:
        assert [(v.sha256, v.runs) for v in store.versions(URL)] == [(sha256_text(V1), ("keep",)),
                                                                       (sha256_text(V2), ("gone",))]
        assert store.text(sha256_text(V2)) == V2


def test_stand_in_runs_are_named_per_version(tmp_path):
    run = run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z")
    manifest = json.loads((run.path / "run.json").read_text())
    (run.path / "run.json").write_text(json.dumps({**manifest, "stand_ins": ["learn", "model"]}))
    real = run_reading(tmp_path / "r2", V1, "2026-01-02T00:00:00Z")
    with PageStore(tmp_path / "store") as store:
        store.index_runs([Run(run.path), real])
        [version] = store.versions(URL)
    assert version.runs == ("r1", "r2") and version.stand_in_runs == ("r1",)


def test_a_store_written_before_runs_were_keyed_by_place_still_reads(tmp_path):
    run = run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z")
    with PageStore(tmp_path / "store") as store:
        store.add(URL, V1, "2026-01-01T00:00:00Z", "r1")  # the old layout: a run by its folder name
        store.add(URL, V2, "2025-12-01T00:00:00Z", "r0")
        store.index_run(run)
        old, new = store.versions(URL)
    assert (old.sha256, old.runs) == (sha256_text(V2), ("r0",))
    assert (new.sha256, new.runs) == (sha256_text(V1), ("r1",))


def test_a_file_or_a_garbage_folder_for_a_store_is_bad_input_naming_it(tmp_path):
    from replay.errors import InputError

    (tmp_path / "file").write_text("{}")
    with pytest.raises(InputError, match="is a file, not a page store folder"):
        PageStore(tmp_path / "file")
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "cache.db").write_bytes(b"\x00\xff" * 64)
    with pytest.raises(InputError, match="garbage: not a page store"):
        PageStore(tmp_path / "garbage")


@pytest.mark.parametrize("damaged", ["pages", "values"])
def test_a_store_damaged_after_it_was_written_is_bad_input_naming_it_not_a_database_error(tmp_path, damaged):
    from replay.errors import InputError

    runs = [run_reading(tmp_path / f"r{n}", V1 if n % 2 else V2, f"2026-01-0{n + 1}T00:00:00Z",
                        url=f"{URL}/{n % 4}") for n in range(8)]  # the later runs read the same pages
    with PageStore(tmp_path / "store") as store:
        store.index_runs(runs[:4])
    damage_page_store(tmp_path / "store", damaged)
    with PageStore(tmp_path / "store") as store:  # it opens: the damage shows when its pages are used
        with pytest.raises(InputError, match="store: not a page store, or a damaged one"):
            store.index_runs(runs[4:])
        with pytest.raises(InputError, match="store: not a page store, or a damaged one"):
            store.versions(f"{URL}/0")


def test_a_run_that_cannot_be_read_is_named_not_the_store(tmp_path):
    """Reading a run's own files fails naming them: the store is not blamed for it."""
    run = run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z")
    (run.path / MANIFEST).unlink()
    (run.path / MANIFEST).mkdir()
    with PageStore(tmp_path / "store") as store:
        with pytest.raises(IsADirectoryError) as caught:
            store.index_run(run)
    assert caught.value.filename == str(run.path / MANIFEST)


class _Touch:
    """A pickle that, unpickled, creates the file it names: proof that code ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _plant(store, key, mode, value, filename=None, raw=1):
    """Put a row into the store's database as a hostile store carried in a repository would hold it."""
    import sqlite3

    con = sqlite3.connect(store / "cache.db")
    with con:
        con.execute("DELETE FROM Cache WHERE key = ?", (key,))
        con.execute("INSERT INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode,"
                    " filename, value) VALUES (?, ?, 0, NULL, 0, 0, NULL, 0, ?, ?, ?)", (key, raw, mode, filename, value))
    con.close()


@pytest.mark.parametrize("where", ["url", "recording"])
def test_a_pickled_value_in_a_store_is_never_unpickled_and_is_a_damaged_store(tmp_path, where):
    """Issue 26, finding 1: a store planted in a repository with a `__reduce__` value ran code on `pages
    history` and on an ordinary record."""
    import pickle

    from replay.errors import InputError

    run = run_reading(tmp_path / "r1", V1, "2026-01-01T00:00:00Z")
    with PageStore(tmp_path / "store") as store:
        store.index_run(run)
    marker = tmp_path / "code-ran"
    key = f"url:{normalise_learn_url(URL)}" if where == "url" else f"recording:{run.path.resolve()}#2026-01-01T00:00:00Z"
    _plant(tmp_path / "store", key, 4, pickle.dumps(_Touch(marker)))  # diskcache's MODE_PICKLE
    with PageStore(tmp_path / "store") as store:
        with pytest.raises(InputError, match="store: not a page store, or a damaged one"):
            store.versions(URL)
    assert not marker.exists()


def test_a_pickled_key_or_a_value_file_anywhere_is_a_damaged_store_never_read(tmp_path):
    import pickle

    from replay.errors import InputError

    with PageStore(tmp_path / "store") as store:
        store.add(URL, V1, "2026-01-01T00:00:00Z", "r1")
    marker = tmp_path / "code-ran"
    _plant(tmp_path / "store", pickle.dumps(_Touch(marker)), 1, b"J{}", raw=0)
    with PageStore(tmp_path / "store") as store:
        with pytest.raises(InputError, match="store: not a page store, or a damaged one"):
            store.urls()
    assert not marker.exists()
    _plant(tmp_path / "store", pickle.dumps(_Touch(marker)), 1, b"J{}", raw=1)  # a blob key: no longer pickled
    _plant(tmp_path / "store", f"text:{sha256_text(V1)}", 2, None, filename="/dev/zero")  # MODE_BINARY, any path
    with PageStore(tmp_path / "store") as store:
        with pytest.raises(InputError, match="store: not a page store, or a damaged one"):
            store.versions(URL)
    assert not marker.exists()


def test_a_version_read_by_no_run_is_a_damaged_store_not_a_crash(tmp_path):
    """A shape the store never writes (a version with no run that read it) is damage, said as such."""
    import diskcache

    from replay.errors import InputError

    with PageStore(tmp_path / "store") as store:
        store.add(URL, V1, "2026-01-01T00:00:00Z", "r1")
    with diskcache.Cache(str(tmp_path / "store")) as cache:
        cache.set(f"url:{normalise_learn_url(URL)}", {"url": URL, "seen": {sha256_text(V1): {}}})
    with PageStore(tmp_path / "store") as store:
        with pytest.raises(InputError, match="a damaged one"):
            store.versions(URL)


def test_a_large_page_with_carriage_returns_reads_back_as_recorded(tmp_path):
    """A text of 32 KB or more lives in a file of diskcache's; kept as bytes, its \\r\\n stay (diskcache reads
    a text file back with universal newlines: the page would come back altered, and then refused as damaged)."""
    page = "| row | value |\r\n" * 3000 + "a lone \r return\n"
    with PageStore(tmp_path / "store") as store:
        sha = store.add(URL, page, "2026-01-01T00:00:00Z", "r1")
    with PageStore(tmp_path / "store") as store:
        assert store.text(sha) == page
        [version] = store.versions(URL)
    assert version.sha256 == sha and version.size == len(page.encode("utf-8"))
