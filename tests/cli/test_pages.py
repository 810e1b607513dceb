"""`judge-replay pages history|diff`: versions of a page from the runs under the cassettes folder."""

import json
import os

import pytest

from factories import damage_page_store, write_run
from replay.cli.main import main
from replay.core.text import sha256_text
from locations import REPO

URL = "https://learn.microsoft.com/azure/ai/quotas"
V1 = "# Quotas\n\nIntro.\n\n| Limit | Value |\n|---|---|\n| Max deployments | 5 |\n| Max files | 50 |\n"
V2 = V1.replace("| Max deployments | 5 |", "| Max deployments | 10 |")
V3 = V2.replace("Intro.", "Intro, edited.")


@pytest.fixture
def cassettes(tmp_path):
    root = tmp_path / "cassettes"
    for name, text, at in (("r1", V1, "2026-01-01T00:00:00Z"), ("r2", V1, "2026-02-01T00:00:00Z"),
                           ("r3", V2, "2026-03-01T00:00:00Z"), ("r4", V3, "2026-04-01T00:00:00Z")):
        write_run(root / name, results=[{"file": "docs/q.md", "results": []}],
                  pages={"docs/q.md": {URL: text}}, recorded_at=at)
    return root


def pages(capsys, tmp_path, cassettes, *argv):
    code = main(["pages", *argv, "--store", str(tmp_path / "store"), "--cassettes", str(cassettes)])
    out, err = capsys.readouterr()
    return code, out, err


def test_history_lists_every_version(tmp_path, cassettes, capsys):
    code, out, _ = pages(capsys, tmp_path, cassettes, "history", "https://learn.microsoft.com/en-us/azure/ai/quotas/", "--json")
    assert code == 0
    versions = json.loads(out)["versions"]
    assert [v["hash"] for v in versions] == [sha256_text(t)[:12] for t in (V1, V2, V3)]
    assert versions[0] | {"sha256": None} == {"sha256": None, "hash": sha256_text(V1)[:12], "first_seen": "2026-01-01T00:00:00Z",
                                              "last_seen": "2026-02-01T00:00:00Z", "runs": ["r1", "r2"], "size": len(V1),
                                              "stand_in_runs": []}
    code, out, _ = pages(capsys, tmp_path, cassettes, "history", URL)
    assert code == 0 and sha256_text(V2)[:12] in out and "r1, r2" in out and "2026-02-01T00:00:00Z" in out


def test_diff_defaults_to_the_two_latest_versions(tmp_path, cassettes, capsys):
    code, out, _ = pages(capsys, tmp_path, cassettes, "diff", URL)
    assert code == 0
    assert "-Intro.\n+Intro, edited." in out and "-| Max deployments" not in out
    assert f"@ {sha256_text(V2)[:12]}" in out and f"@ {sha256_text(V3)[:12]}" in out


def test_diff_between_chosen_hash_prefixes(tmp_path, cassettes, capsys):
    code, out, _ = pages(capsys, tmp_path, cassettes, "diff", URL, "--from", sha256_text(V1)[:7], "--to", sha256_text(V2)[:7])
    assert code == 0
    assert "-| Max deployments | 5 |\n+| Max deployments | 10 |" in out and "+Intro" not in out
    code, out, _ = pages(capsys, tmp_path, cassettes, "diff", URL, "--to", sha256_text(V2)[:7])
    assert code == 0 and "+| Max deployments | 10 |" in out and "edited" not in out


def test_unknown_url_or_hash_exit_2_listing_what_is_known(tmp_path, cassettes, capsys):
    code, _, err = pages(capsys, tmp_path, cassettes, "history", "https://learn.microsoft.com/azure/nope")
    assert code == 2 and "no recorded version of https://learn.microsoft.com/azure/nope" in err and URL in err
    code, _, err = pages(capsys, tmp_path, cassettes, "diff", URL, "--from", "deadbeef")
    assert code == 2 and "deadbeef" in err and sha256_text(V1)[:12] in err and "Traceback" not in err
    code, _, err = pages(capsys, tmp_path, tmp_path / "no-such-folder", "history", URL)
    assert code == 2 and "no such cassettes folder" in err
    code, _, err = pages(capsys, tmp_path, cassettes / "r1", "history", URL)  # a run folder, not the folder of runs
    assert code == 2 and "is a run folder: --cassettes takes the folder that holds run folders" in err


def test_a_url_that_does_not_parse_is_an_unknown_page_not_a_crash(tmp_path, cassettes, capsys):
    code, out, err = pages(capsys, tmp_path, cassettes, "history", "https://[learn.microsoft.com/azure/ai/quotas")
    assert code == 2 and out == "" and err.startswith("judge-replay: no recorded version of https://[learn") and "error" not in err


def test_a_page_with_one_version_has_nothing_to_diff(tmp_path, capsys):
    root = tmp_path / "c"
    write_run(root / "only", results=[{"file": "docs/q.md", "results": []}], pages={"docs/q.md": {URL: V1}})
    code, out, _ = pages(capsys, tmp_path, root, "diff", URL)
    assert code == 0 and "no version recorded before" in out


def test_fresh_store_is_filled_from_the_cassettes_and_follows_new_runs(tmp_path, cassettes, capsys):
    assert not (tmp_path / "store").exists()
    pages(capsys, tmp_path, cassettes, "history", URL)
    write_run(cassettes / "r5", results=[{"file": "docs/q.md", "results": []}],
              pages={"docs/q.md": {URL: V1}}, recorded_at="2026-05-01T00:00:00Z")
    code, out, _ = pages(capsys, tmp_path, cassettes, "history", URL, "--json")
    first = json.loads(out)["versions"][0]
    assert code == 0 and first["runs"] == ["r1", "r2", "r5"] and first["last_seen"] == "2026-05-01T00:00:00Z"


def test_stand_in_pages_are_marked_and_controls_in_page_lines_are_shown_as_text(tmp_path, capsys):
    root = tmp_path / "c"
    planted = V1.replace("Intro.", "Intro \x1b]0;owned\x07\x1b[2J.")
    for name, text, at in (("r1", V1, "2026-01-01T00:00:00Z"), ("r2", planted, "2026-02-01T00:00:00Z")):
        write_run(root / name, results=[{"file": "docs/q.md", "results": []}], pages={"docs/q.md": {URL: text}},
                  recorded_at=at)
    manifest = json.loads((root / "r2" / "run.json").read_text())
    (root / "r2" / "run.json").write_text(json.dumps({**manifest, "stand_ins": ["learn"]}))
    code, out, _ = pages(capsys, tmp_path, root, "diff", URL)
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert "+Intro \\x1b]0;owned\\x07\\x1b[2J." in out
    assert out.startswith("pages came from the local Learn stand-in (test equipment), not learn.microsoft.com: r2\n")
    code, out, _ = pages(capsys, tmp_path, root, "history", URL, "--json")
    data = json.loads(out)
    assert data["notes"] == ["pages came from the local Learn stand-in (test equipment), not learn.microsoft.com: r2"]
    assert [v["stand_in_runs"] for v in data["versions"]] == [[], ["r2"]]
    code, out, _ = pages(capsys, tmp_path, root, "history", URL)
    assert code == 0 and out.startswith("pages came from the local Learn stand-in")


def test_a_run_folder_of_the_same_name_elsewhere_and_a_re_record_keep_every_version(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for root, text, at in (("a", V1, "2026-01-01T00:00:00Z"), ("b", V2, "2026-02-01T00:00:00Z")):
        write_run(tmp_path / root / "v3", results=[{"file": "docs/q.md", "results": []}],
                  pages={"docs/q.md": {URL: text}}, recorded_at=at)
        pages(capsys, tmp_path, tmp_path / root, "history", URL)
    write_run(tmp_path / "b" / "v3", results=[{"file": "docs/q.md", "results": []}],  # re-recorded in place
              pages={"docs/q.md": {URL: V3}}, recorded_at="2026-03-01T00:00:00Z")
    code, out, _ = pages(capsys, tmp_path, tmp_path / "b", "history", URL, "--json")
    assert code == 0
    assert [(v["hash"], v["runs"]) for v in json.loads(out)["versions"]] == [
        (sha256_text(V1)[:12], ["a/v3"]), (sha256_text(V2)[:12], ["b/v3"]), (sha256_text(V3)[:12], ["b/v3"])]


@pytest.mark.parametrize("argv", [["diff"], ["drift"], ["pages"], ["pages", "history"], ["pages", "diff"]])
def test_help_ends_with_an_example_that_parses(argv, capsys):
    from factories import parse_printed_command

    assert main([*argv, "--help"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip()]
    examples = [line.split("#")[0].strip() for line in lines[lines.index(next(l for l in lines if l.startswith("Example"))):]
                if line.startswith("judge-replay ")]
    assert examples and lines[-1].startswith(f"judge-replay {argv[0]}")
    for example in examples:  # each is a command line the real CLI accepts
        assert parse_printed_command(example)


def test_history_of_a_refused_url_shows_no_version_and_says_the_server_refused_it(tmp_path, capsys):
    from replay.learn.wire import NOT_LEARN_REFUSAL

    refused, gone = "https://azure.microsoft.com/en-us/pricing/x/", "https://learn.microsoft.com/azure/ai/gone"
    root = tmp_path / "c"
    write_run(root / "r1", results=[{"file": "docs/q.md", "results": []}], recorded_at="2026-01-01T00:00:00Z",
              pages={"docs/q.md": {URL: V1, refused: NOT_LEARN_REFUSAL, gone: V1}})
    write_run(root / "r2", results=[{"file": "docs/q.md", "results": []}], recorded_at="2026-02-01T00:00:00Z",
              pages={"docs/q.md": {URL: V1, refused: NOT_LEARN_REFUSAL, gone: None}})
    code, out, _ = pages(capsys, tmp_path, root, "history", refused)
    flat = " ".join(out.split())
    assert code == 0 and "(missing)" not in out and "recorded version(s)" not in out
    assert "no recorded version" in flat and "the server refused this URL as outside Microsoft Learn" in flat
    assert "r1, r2 (2026-01-01T00:00:00Z to 2026-02-01T00:00:00Z)" in flat
    code, out, _ = pages(capsys, tmp_path, root, "history", refused, "--json")
    data = json.loads(out)
    assert code == 0 and data["versions"] == [] and [a["reason"] for a in data["no_page"]] == ["refused"]
    # a page Learn could not retrieve later: its one version, then the later answer, never a "(missing)" version
    code, out, _ = pages(capsys, tmp_path, root, "history", gone, "--json")
    data = json.loads(out)
    assert [v["runs"] for v in data["versions"]] == [["r1"]]
    assert [(a["reason"], a["runs"]) for a in data["no_page"]] == [("not-found", ["r2"])]
    code, out, _ = pages(capsys, tmp_path, root, "diff", refused)
    assert code == 0 and "nothing to compare" in out


def _holds_open(pid, path):
    """Whether process `pid` has `path` open (Linux: its /proc/<pid>/fd links)."""
    import os

    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:  # it ended, or a descriptor closed while we looked: look again
        return False
    return str(path) in links


def _record_twice(tmp_path, between, monkeypatch, capsys, interrupt_once_written=False):
    """Record the demo's quotas claims into a project (its store under .judge-replay/pages) as
    cassettes/a, then again as cassettes/b within `between(store)`: that second recording's warnings
    about the store. The recordings run in this process; with `interrupt_once_written`, the second runs
    in a process of its own, and is Ctrl-C'd (SIGINT) once its run folder is written and it has the store
    open (waiting for its lock)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from replay.sim import start_learn, start_model

    repo = REPO
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'docs'\n", "utf-8")
    claims = tmp_path / "claims"
    claims.mkdir()
    (claims / "q.json").write_bytes((repo / "demo" / "claims" / "quotas-and-limits.json").read_bytes())
    # SIGINT as Ctrl-C at a terminal, even when the tests run with it ignored (a background job of a shell)
    cli = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "from replay.cli.main import main; sys.exit(main())"]
    key = "sk-ant-test-damaged-store"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    store = tmp_path / ".judge-replay" / "pages"
    with start_learn(repo / "demo" / "pages" / "2026-06") as learn, start_model() as model:
        def args(run):
            return ["judge", "--prompt", "v3", "--claims", "claims", "--mode", "record", "--run", run,
                    "--no-progress", "--learn-url", learn.url, "--anthropic-base-url", model.url]

        capsys.readouterr()
        code = main(args("cassettes/a"))
        assert code == 0, capsys.readouterr().err
        capsys.readouterr()
        with between(store):
            if interrupt_once_written:
                second = subprocess.Popen([*cli, *args("cassettes/b")], cwd=tmp_path, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, env={**os.environ, "ANTHROPIC_API_KEY": key})
                deadline = time.monotonic() + 60
                while not ((tmp_path / "cassettes" / "b" / "run.json").is_file() and _holds_open(second.pid, store / "cache.db")):
                    assert second.poll() is None and time.monotonic() < deadline, "the recording never waited for the store"
                    time.sleep(0.01)
                second.send_signal(signal.SIGINT)  # now in the store's wait: diskcache retries a locked store for 60 s
                _, stderr = second.communicate(timeout=120)
                code = second.returncode
            else:
                code = main(args("cassettes/b"))
                stderr = capsys.readouterr().err  # (and its summary on stdout, read with it)
    assert code == 0, stderr
    assert (tmp_path / "cassettes" / "b" / "run.json").is_file()
    assert "internal error" not in stderr and "Traceback" not in stderr and "interrupted\n" not in stderr
    return [line for line in stderr.splitlines() if "page store not updated" in line]


@pytest.mark.parametrize("damaged", ["pages", "values"])
def test_a_damaged_store_is_one_line_naming_it_and_a_recording_still_lands(tmp_path, capsys, monkeypatch, damaged):
    """The store is derived from the cassettes: a recording whose run is written warns that the store was
    not updated (exit 0); `pages history` says the store is damaged (exit 2). Never an internal error."""
    import contextlib

    @contextlib.contextmanager
    def damage(store):
        damage_page_store(store, damaged)
        yield

    warning = _record_twice(tmp_path, damage, monkeypatch, capsys)
    assert len(warning) == 1 and "(.judge-replay/pages: not a page store, or a damaged one" in warning[0]

    monkeypatch.chdir(tmp_path)
    code = main(["pages", "history", "https://learn.microsoft.com/azure/ai/quotas"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and ".judge-replay/pages" in err and "damaged" in err


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="sees the recording wait for the store in /proc")
def test_ctrl_c_while_a_recording_waits_for_a_locked_store_keeps_the_run_and_says_the_store_was_not_updated(
        tmp_path, capsys, monkeypatch):
    """Another process holds the store locked: the recording, its run written, waits for it (diskcache
    retries for 60 s); a Ctrl-C then skips the store (exit 0, a warning), and the next use fills it."""
    import contextlib
    import sqlite3

    @contextlib.contextmanager
    def locked(store):
        con = sqlite3.connect(store / "cache.db", isolation_level=None, timeout=0)
        con.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            con.execute("ROLLBACK")
            con.close()

    assert _record_twice(tmp_path, locked, monkeypatch, capsys, interrupt_once_written=True) == [
        "judge-replay: warning: page store not updated (interrupted)"]

    monkeypatch.chdir(tmp_path)
    code = main(["pages", "history", "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert {tuple(v["runs"]) for v in json.loads(out)["versions"]} == {("a", "b")}
