"""No input gives a traceback, only one line naming the file; the terminal shows data, never controls."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from factories import closed_port_url, write_json, write_run
from replay.cli.main import INTERNAL_ERROR, main
from replay.settings import SETTINGS, setting
from replay.files.json_text import MAX_JSON_DEPTH
from replay.files.paths import os_error_about
from replay.sim import start_learn, start_model
from locations import REPO

URL = "https://learn.microsoft.com/en-us/azure/models"
PAGE = "# Models\n\n| model | context |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n"
CLAIMS = {"file": "docs/a.md", "claims": [{"id": "a-1", "claim": "GPT-4.1 offers 1M tokens.", "claim_type": "version",
                                           "evidence_url": URL}]}
RESULTS = [{"file": "docs/a.md", "results": [{"id": "a-1", "judge_verdict": "grounded", "evidence_url": URL,
                                              "evidence_quote": "| gpt-4.1 | 1,047,576 |", "reason": "stated"}]}]
GOLD = {"name": "g", "items": [{"file": "docs/a.md", "id": "a-1", "label": "correct"}]}
CASSETTE = "docs_a.md.yaml"

DEEP = "[" * (MAX_JSON_DEPTH * 50) + "]" * (MAX_JSON_DEPTH * 50)
"""Nested far past the recursion limit: json.loads alone raises RecursionError on it."""
SLIGHTLY_TOO_DEEP = json.dumps({"file": "docs/a.md", "claims": [json.loads("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH)]})
"""Parses, but nests more than we read."""
ALIAS_BOMB = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]
    + ["interactions: *i", "version: 1", ""]
)
"""The 'billion laughs': a few hundred bytes that expand to 9**9 strings when walked."""
RECURSIVE_ALIAS = "interactions: &x\n- request: *x\n  response: *x\nversion: 1\n"
EMPTY_RESPONSE = (
    "interactions:\n- request:\n    body: '{}'\n    headers: {}\n    method: POST\n"
    f"    uri: {URL}\n  response: []\nversion: 1\n"
)
BINARY = bytes(range(256)) * 4
DEMO_PAGES = REPO / "demo" / "pages" / "2026-06"


def put(path: str, content: str | bytes) -> Callable[[Path], None]:
    """A setup step: write `content` at `path` (relative to the project), replacing what is there."""

    def setup(root: Path) -> None:
        target = root / path
        if target.is_dir():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, "utf-8")

    return setup


def folder(path: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / path).mkdir(parents=True, exist_ok=True)

    return setup


def remove(path: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / path).unlink()

    return setup


def settings(toml: str) -> Callable[[Path], None]:
    return put("pyproject.toml", "[project]\nname = 'x'\n\n" + toml)


def manifest_with(**changes: object) -> Callable[[Path], None]:
    """Change the first claims entry of a run's run.json (given the project: runs/a's)."""

    def setup(root: Path) -> None:
        path = root / "run.json" if (root / "run.json").is_file() else root / "runs" / "a" / "run.json"
        data = json.loads(path.read_text("utf-8"))
        data["claims"][0].update(changes)
        path.write_text(json.dumps(data), "utf-8")

    return setup


def manifest_top(**changes: object) -> Callable[[Path], None]:
    """Change top-level fields of runs/a's run.json."""

    def setup(root: Path) -> None:
        path = root / "runs" / "a" / "run.json"
        data = json.loads(path.read_text("utf-8"))
        data.update(changes)
        path.write_text(json.dumps(data), "utf-8")

    return setup


@dataclass
class Case:
    id: str
    argv: list[str]
    names: str
    """What the one line on stderr must name (the file, or the setting)."""
    setup: list[Callable[[Path], None]] = field(default_factory=list)
    codes: tuple[int, ...] = (2,)
    lines: int = 1
    """`cassettes list` reads many runs: one line per unreadable run, then one summing up."""


GRADE = ["grade", "runs/a", "--gold", "gold.json"]
JUDGE = ["judge", "--prompt", "v3", "--mode", "record", "--run", "runs/new", "--no-progress"]
CASES = [
    # claims files (judge validates every claims file before any call)
    Case("judge claims nested deeper than the stack", [*JUDGE, "--claims", "bad.json"], "bad.json", [put("bad.json", DEEP)]),
    Case("judge claims nested too deep", [*JUDGE, "--claims", "bad.json"], "bad.json", [put("bad.json", SLIGHTLY_TOO_DEEP)]),
    Case("judge claims of the wrong type", [*JUDGE, "--claims", "bad.json"], "bad.json",
         [put("bad.json", '{"file": "docs/a.md", "claims": "many"}')]),
    Case("judge claims not UTF-8", [*JUDGE, "--claims", "bad.json"], "bad.json", [put("bad.json", b'{"file": "\xff\xfe"}')]),
    Case("judge claims empty", [*JUDGE, "--claims", "bad.json"], "bad.json", [put("bad.json", "")]),
    Case("judge claims a huge number", [*JUDGE, "--claims", "bad.json"], "bad.json",
         [put("bad.json", '{"file": "docs/a.md", "claims": [], "n": 1e999}')]),
    Case("judge claims an integer of 5000 digits", [*JUDGE, "--claims", "bad.json"], "bad.json",
         [put("bad.json", '{"file": "docs/a.md", "claims": [], "n": ' + "9" * 5000 + "}")]),
    Case("judge claims NaN", [*JUDGE, "--claims", "bad.json"], "bad.json",
         [put("bad.json", '{"file": "docs/a.md", "claims": [], "n": NaN}')]),
    Case("judge claims a folder with no claims", [*JUDGE, "--claims", "empty"], "empty", [folder("empty")]),
    Case("judge prompt file not UTF-8", [*JUDGE[:1], "--prompt", "p.md", *JUDGE[3:], "--claims", "claims"], "p.md",
         [put("p.md", BINARY)]),
    Case("judge replay of a run.json that is garbage", ["judge", "--mode", "replay", "--run", "runs/a", "--no-progress"],
         "run.json", [put("runs/a/run.json", "garbage")]),
    # settings
    Case("judge concurrency not a number", [*JUDGE, "--claims", "claims"], "pyproject.toml",
         [settings('[tool.judge-replay]\nconcurrency = "many"\n')]),
    Case("judge concurrency zero", [*JUDGE, "--claims", "claims"], "pyproject.toml",
         [settings("[tool.judge-replay]\nconcurrency = 0\n")]),
    Case("bakeoff pyproject not TOML", ["bakeoff"], "pyproject.toml", [settings("[tool.judge-replay\ngold = 1\n")]),
    Case("bakeoff pyproject not UTF-8", ["bakeoff"], "pyproject.toml", [put("pyproject.toml", b"[tool.x]\na = '\xff'\n")]),
    Case("bakeoff gold setting a number", ["bakeoff"], "pyproject.toml", [settings("[tool.judge-replay]\ngold = 3\n")]),
    Case("bakeoff misspelt setting", ["bakeoff"], "pyproject.toml", [settings('[tool.judge-replay]\nbasline = "runs/a"\n')]),
    Case("bakeoff tool not a table", ["bakeoff"], "pyproject.toml", [put("pyproject.toml", 'tool = "x"\n')]),
    Case("bakeoff a price that is not a table", ["bakeoff"], "pyproject.toml",
         [settings("[tool.judge-replay.prices]\nclaude-test = 3\n")]),
    Case("grade gold from settings missing", ["grade", "runs/a"], "nope.json",
         [settings('[tool.judge-replay]\ngold = "nope.json"\n')]),
    # gold and results
    Case("grade gold nested deeper than the stack", GRADE, "gold.json", [put("gold.json", DEEP)]),
    Case("grade gold of the wrong type", GRADE, "gold.json", [put("gold.json", '{"items": {"a": 1}}')]),
    Case("grade gold a folder", GRADE, "gold.json", [remove("gold.json"), folder("gold.json")]),
    Case("grade gold empty", GRADE, "gold.json", [put("gold.json", "\n")]),
    Case("cassettes audit a device", ["cassettes", "audit", "/dev/null"], "/dev/null: not a file or a folder", []),
    Case("drift --live --cassettes a file", ["drift", "runs/a", "--live", "--cassettes", "gold.json", "--learn-url",
                                              "http://127.0.0.1:9/api/mcp"], "gold.json: is not a folder", []),
    Case("grade gold with a key twice", GRADE, "gold.json",
         [put("gold.json", '{"name": "g", "items": [{"file": "docs/a.md", "id": "a-1", "label": "correct", "label": "wrong"}]}')]),
    Case("grade results with a key twice in a claim", GRADE, "runs/a/results.json",
         [put("runs/a/results.json", json.dumps({"files": RESULTS})[:-5] + ', "judge_verdict": "not_grounded"}]}]}')]),
    Case("judge claims with a key twice", [*JUDGE, "--claims", "bad.json"], "bad.json",
         [put("bad.json", '{"file": "docs/a.md", "claims": [{"id": "a-1", "claim": "x", "claim_type": "version", '
                          '"claim": "y"}]}')]),
    Case("grade results nested deeper than the stack", GRADE, "results.json", [put("runs/a/results.json", DEEP)]),
    Case("grade results NaN", GRADE, "results.json", [put("runs/a/results.json", "NaN")]),
    Case("grade results a number", GRADE, "results.json", [put("runs/a/results.json", "42")]),
    Case("grade results with files of the wrong type", GRADE, "results.json",
         [put("runs/a/results.json", '{"files": {"docs/a.md": 1}}')]),
    Case("grade claims nested too deep", [*GRADE, "--claims", "bad.json"], "bad.json", [put("bad.json", DEEP)]),
    Case("grade --out a folder", [*GRADE, "--json", "--out", "reports"], "reports", [folder("reports")]),
    Case("grade --out inside a file", [*GRADE, "--json", "--out", "gold.json/report.json"], "gold.json: is a file"),
    Case("bakeoff baseline run.json garbage", ["bakeoff", "--gold", "gold.json", "--baseline", "runs/a",
                                               "--candidate", "runs/b", "--no-replay"], "run.json",
         [put("runs/a/run.json", "{")]),
    Case("bakeoff --out-dir a file", ["bakeoff", "--gold", "gold.json", "--baseline", "runs/a", "--candidate", "runs/b",
                                      "--no-replay", "--out-dir", "gold.json"], "gold.json: is a file, not a folder"),
    # run folders
    Case("diff run without run.json", ["diff", "runs/a", "runs/b"], "runs/a", [remove("runs/a/run.json")]),
    Case("diff run.json nested too deep", ["diff", "runs/a", "runs/b"], "run.json", [put("runs/a/run.json", DEEP)]),
    Case("diff run.json cassette outside the run", ["diff", "runs/a", "runs/b"], "run.json",
         [put("outside.yaml", "interactions: []\nversion: 1\n"), manifest_with(cassette="../../outside.yaml")]),
    Case("diff prompt.md not UTF-8", ["diff", "runs/a", "runs/b"], "prompt.md", [put("runs/a/prompt.md", BINARY)]),
    Case("diff --out a folder", ["diff", "runs/a", "runs/b", "--out", "reports"], "reports", [folder("reports")]),
    Case("diff cassette with response: []", ["diff", "runs/a", "runs/b"], CASSETTE,
         [put(f"runs/a/{CASSETTE}", EMPTY_RESPONSE)]),
    Case("drift results of the wrong type", ["drift", "runs/a", "--against", "runs/b"], "results.json",
         [put("runs/a/results.json", '{"files": [{"file": 1}]}')]),
    Case("drift cassette with response: []", ["drift", "runs/a", "--against", "runs/b"], CASSETTE,
         [put(f"runs/b/{CASSETTE}", EMPTY_RESPONSE)]),
    Case("drift cassette with a recursive alias", ["drift", "runs/a", "--against", "runs/b"], CASSETTE,
         [put(f"runs/b/{CASSETTE}", RECURSIVE_ALIAS)]),
    Case("pages history over a run.json that is garbage", ["pages", "history", URL, "--cassettes", "runs",
                                                           "--store", "store"], "run.json",
         [put("runs/a/run.json", "[]")]),
    Case("pages history over a binary cassette", ["pages", "history", URL, "--cassettes", "runs", "--store", "store"],
         CASSETTE, [put(f"runs/a/{CASSETTE}", BINARY)]),
    Case("pages history with a file for a page store", ["pages", "history", URL, "--cassettes", "runs",
                                                         "--store", "gold.json"], "gold.json"),
    Case("pages history with a page store that is garbage", ["pages", "history", URL, "--cassettes", "runs",
                                                             "--store", "store"], "store",
         [put("store/index.json", "garbage"), put("store/cache.db", BINARY)]),
    # cassettes
    # the audit reads a file that does not parse as text (a secret in it is still found): one line says so
    Case("cassettes audit a binary cassette", ["cassettes", "audit", "runs/a"], CASSETTE,
         [put(f"runs/a/{CASSETTE}", BINARY)], codes=(0,)),
    Case("cassettes audit a recursive alias", ["cassettes", "audit", "runs/a"], CASSETTE,
         [put(f"runs/a/{CASSETTE}", RECURSIVE_ALIAS)], codes=(0,)),
    Case("cassettes audit a JSON cassette nested too deep", ["cassettes", "audit", "deep.json"], "deep.json",
         [put("deep.json", DEEP)], codes=(0,)),
    Case("cassettes audit a results.json with a number of 100,000 digits", ["cassettes", "audit", "runs/a"],
         "results.json", [put("runs/a/results.json", '{"files": [], "n": ' + "9" * 100_000 + "}")], codes=(0,)),
    Case("cassettes verify a cassette name of 5000 characters", ["cassettes", "verify", "runs/a"], "run.json",
         [manifest_with(cassette="a" * 5000 + ".yaml")]),
    Case("judge replay a cassette name of 5000 characters", ["judge", "--mode", "replay", "--run", "runs/a", "--no-progress"],
         "run.json", [manifest_with(cassette="a" * 5000 + ".yaml")]),
    Case("judge replay a run.json of an unknown version", ["judge", "--mode", "replay", "--run", "runs/a", "--no-progress"],
         "run.json", [manifest_top(version=99)]),
    Case("grade a cassette name of 5000 characters", GRADE, "run.json", [manifest_with(cassette="a" * 5000 + ".yaml")]),
    Case("drift a cassette name of 5000 characters", ["drift", "runs/a", "--against", "runs/b"], "run.json",
         [manifest_with(cassette="a" * 5000 + ".yaml")]),
    Case("cassettes verify a run.json of an unknown version", ["cassettes", "verify", "runs/a"], "reads version 1",
         [manifest_top(version=99)]),
    Case("grade a run.json recorded 'yesterday'", GRADE, "ISO 8601", [manifest_top(recorded_at="yesterday")]),
    Case("cassettes verify a run.json recorded on month 13", ["cassettes", "verify", "runs/a"], "run.json",
         [manifest_top(recorded_at="2026-13-01T00:00:00Z")]),
    Case("cassettes verify a run.json that is garbage", ["cassettes", "verify", "runs/a"], "run.json",
         [put("runs/a/run.json", "\ufeff{]")], codes=(1, 2)),
    Case("cassettes verify a cassette with response: []", ["cassettes", "verify", "runs/a"], CASSETTE,
         [put(f"runs/a/{CASSETTE}", EMPTY_RESPONSE)], codes=(1, 2)),
    Case("cassettes list a run.json that is garbage", ["cassettes", "list", "runs"], "run.json",
         [put("runs/a/run.json", '{"run_id": []}')], lines=2),
    Case("cassettes list a run.json nested too deep", ["cassettes", "list", "runs"], "run.json",
         [put("runs/b/run.json", DEEP)], lines=2),
    # schema
    Case("schema of an unknown format", ["schema", "claim"], "'claim'"),
    # a NUL in a path setting (a shell cannot pass one in a flag; a pyproject.toml can hold one)
    Case("bakeoff baseline setting with a NUL", ["bakeoff"], "baseline",
         [settings('[tool.judge-replay]\nbaseline = "runs/a\\u0000b"\n')]),
    Case("grade gold setting with a NUL", ["grade", "runs/a"], "gold",
         [settings('[tool.judge-replay]\ngold = "gold\\u0000.json"\n')]),
    Case("bakeoff candidates setting with a NUL", ["bakeoff"], "candidates",
         [settings('[tool.judge-replay]\ncandidates = ["runs/b", "runs/\\u0000"]\n')]),
    Case("drift --live cassettes setting with a NUL", ["drift", "runs/a", "--live"], "cassettes",
         [settings('[tool.judge-replay]\ncassettes = "out\\u0000"\n')]),
    Case("pages history page-store setting with a NUL", ["pages", "history", URL, "--cassettes", "runs"], "page-store",
         [settings('[tool.judge-replay]\npage-store = "store\\u0000"\n')]),
    # endpoints that are no http(s) URL, in settings and in run.json
    Case("judge learn-url setting with no closing bracket", [*JUDGE, "--claims", "claims"], "learn-url",
         [settings('[tool.judge-replay]\nlearn-url = "http://[::1"\n')]),
    Case("drift --live learn-url setting with a NUL", ["drift", "runs/a", "--live"], "learn-url",
         [settings('[tool.judge-replay]\nlearn-url = "http://a\\u0000b/api/mcp"\n')]),
    Case("judge anthropic-base-url setting with a bad port", [*JUDGE, "--claims", "claims"], "anthropic-base-url",
         [settings('[tool.judge-replay]\nanthropic-base-url = "http://127.0.0.1:99999"\n')]),
    Case("cassettes verify a run.json whose learn_url is 'x'", ["cassettes", "verify", "runs/a"], "run.json",
         [manifest_top(learn_url="x")]),
    Case("judge replay a run.json whose learn_url is empty", ["judge", "--mode", "replay", "--run", "runs/a",
                                                              "--no-progress"], "run.json", [manifest_top(learn_url="")]),
    Case("grade a run.json whose anthropic_base_url holds a NUL", GRADE, "run.json",
         [manifest_top(anthropic_base_url="http://127.0.0.1:8932\x00")]),
    Case("cassettes verify a run.json whose learn_url has no closing bracket", ["cassettes", "verify", "runs/a"],
         "run.json", [manifest_top(learn_url="http://[::1/api/mcp")]),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder: a pyproject.toml with no settings, two small runs, a gold set and a claims folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "x" * 40)
    monkeypatch.delenv("JUDGE_REPLAY_DEBUG", raising=False)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    for name in ("a", "b"):
        write_run(tmp_path / "runs" / name, prompt="v3", results=RESULTS, pages={"docs/a.md": {URL: PAGE}})
    write_json(tmp_path / "gold.json", GOLD)
    claims = write_json(tmp_path / "claims" / f"{CASSETTE}.json", CLAIMS)  # where write_run's manifests say it is
    for name in ("a", "b"):
        manifest_with(sha256=hashlib.sha256(claims.read_bytes()).hexdigest())(tmp_path / "runs" / name)
    return tmp_path


def assert_one_line(code: int, err: str, names: str, codes: tuple[int, ...] = (2,), count: int = 1) -> None:
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err
    assert len(lines) == count, err
    assert code != INTERNAL_ERROR, err
    assert code in codes, f"exit {code}: {err}"
    assert names in lines[0], err
    assert lines[0].startswith("judge-replay: ")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_input_is_one_line(case: Case, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    learn, model = closed_port_url(), closed_port_url().removesuffix("/api/mcp")
    for step in case.setup:
        step(project)
    argv = [*case.argv, "--learn-url", learn, "--anthropic-base-url", model] if case.argv[0] == "judge" else case.argv
    code = main(argv)
    assert_one_line(code, capsys.readouterr().err, case.names, case.codes, case.lines)


def test_the_table_covers_every_command() -> None:
    assert len(CASES) >= 30
    commands = {c.argv[0] if c.argv[0] not in ("cassettes", "pages") else " ".join(c.argv[:2]) for c in CASES}
    assert {"judge", "grade", "bakeoff", "diff", "drift", "pages history", "cassettes audit", "cassettes verify",
            "cassettes list", "schema"} <= commands


@pytest.mark.parametrize("argv", [["cassettes", "audit", "runs/a"], ["cassettes", "verify", "runs/a"],
                                  ["cassettes", "list", "runs"]], ids=["audit", "verify", "list"])
def test_an_alias_bomb_is_refused_at_once(argv: list[str], project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "runs" / "a" / CASSETTE).write_text(ALIAS_BOMB, "utf-8")
    import anthropic  # noqa: F401  (verify replays through the SDK: time the bomb, not the SDK's first import)

    # refused before it is walked: measured in the CPU time of this process, which a loaded machine does not
    # stretch as it does wall time (walking the bomb's 9**9 strings takes minutes of CPU)
    started = time.process_time()
    code = main(argv)
    spent = time.process_time() - started
    err = capsys.readouterr().err
    assert spent < 1.0, f"{spent:.1f} s of CPU"
    if argv[1] == "list":  # list reads only run.json: the cassette is counted, not parsed
        assert code == 0 and err == ""
    elif argv[1] == "audit":  # refused as YAML, read as text: said in one line
        assert_one_line(code, err, CASSETTE, (0,))
    else:
        assert_one_line(code, err, CASSETTE, (1, 2))


def test_an_alias_to_a_long_string_is_bounded_by_the_text_it_adds(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty aliases of a 1 MB string: few values, but 20 MB of text for every reader to walk."""
    (project / "runs" / "a" / CASSETTE).write_text(
        'long: &s "' + "x" * 1_000_000 + '"\ninteractions: []\ncopies: [' + ", ".join(["*s"] * 20) + "]\n", "utf-8")
    assert_one_line(main(["cassettes", "audit", "runs/a"]), capsys.readouterr().err, CASSETTE, (0,))  # read as text
    (project / "runs" / "a" / CASSETTE).write_text(
        'long: &s "' + "x" * 1_000_000 + '"\ninteractions: []\ncopies: [*s, *s]\n', "utf-8")
    assert main(["cassettes", "audit", "runs/a"]) == 0, capsys.readouterr().err


def test_cassettes_list_counts_what_it_can_of_a_binary_cassette(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`list` only counts interactions (`verify` checks cassettes): a binary cassette is a row, not a crash."""
    (project / "runs" / "a" / CASSETTE).write_bytes(BINARY)
    assert main(["cassettes", "list", "runs"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and [line.split()[0] for line in out.splitlines()] == ["run", "a", "b"]


def test_a_gold_set_with_a_bom_is_read(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A BOM (as Windows editors write) is not a malformed file."""
    gold = (project / "gold.json").read_text("utf-8")
    (project / "gold.json").write_text("\ufeff" + gold, "utf-8")
    assert main([*GRADE, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tp"] == 0


def test_the_error_line_shows_data_not_controls(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """File names and reasons come from the user's data: an escape sequence in them is shown, not obeyed."""
    name = "evil\x1b]0;pwned\x07\x1b[2J.json"
    (project / name).write_text('{"items": 1}', "utf-8")
    assert main(["grade", "runs/a", "--gold", name]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J.json" in err


# --------------------------------------------------------------------------- the environment failing


def _mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode(errors='replace').strip()})")


@pytest.fixture
def full_disk(project: Path) -> Iterator[Path]:
    """A folder on a 64 KiB file system with no space left."""
    disk = project / "full"
    _mount_tmpfs(disk, "size=64k")
    try:
        fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"x" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def read_only_folder(project: Path) -> Iterator[Path]:
    """A folder nothing can be written in: a read-only mount when we are root, else a mode-0500 folder."""
    folder_ = project / "read-only"
    if os.geteuid() != 0:
        folder_.mkdir()
        folder_.chmod(0o500)
        yield folder_
        folder_.chmod(0o700)
        return
    _mount_tmpfs(folder_, "ro,size=16k")
    try:
        yield folder_
    finally:
        subprocess.run(["umount", "-l", str(folder_)], check=False)


@pytest.mark.parametrize("argv", [[*GRADE, "--json", "--out", "{}/report.json"],
                                  ["diff", "runs/a", "runs/b", "--out", "{}/diff.txt"],
                                  ["bakeoff", "--gold", "gold.json", "--baseline", "runs/a", "--candidate", "runs/b",
                                   "--no-replay", "--out-dir", "{}/bakeoff"]],
                         ids=["grade", "diff", "bakeoff"])
def test_a_full_disk_is_one_line_naming_the_file(argv: list[str], full_disk: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code = main([a.format("full") for a in argv])
    err = capsys.readouterr().err
    assert_one_line(code, err, "full/", (1,))
    assert "No space left on device" in err
    assert not [p.name for p in full_disk.rglob("*.tmp")]  # no temporary file left behind


def test_a_page_store_on_a_full_disk_is_the_system_failing_exit_1(full_disk: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """sqlite says "database or disk is full" as an error of its own, not an OSError: still exit 1."""
    code = main(["pages", "history", URL, "--cassettes", "runs", "--store", "full/store"])
    err = capsys.readouterr().err
    assert_one_line(code, err, "full/store", (1,))
    assert "full" in err.split("full/store", 1)[1]


def test_a_read_only_folder_is_one_line_naming_the_file(read_only_folder: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*GRADE, "--markdown", "--out", "read-only/report.md"])
    assert_one_line(code, capsys.readouterr().err, "read-only/report.md", (1,))


def test_a_judge_recording_into_a_read_only_folder_is_one_line(read_only_folder: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    learn = start_learn(DEMO_PAGES, log=None)
    model = start_model(log=None)
    try:
        code = main(["judge", "--prompt", "v3", "--claims", "claims", "--mode", "record", "--run", "read-only/run",
                     "--no-progress", "--learn-url", learn.url, "--anthropic-base-url", model.url])
    finally:
        learn.stop()
        model.stop()
    assert_one_line(code, capsys.readouterr().err, "read-only", (1, 2))


# --------------------------------------------------------------------------- through a real terminal's eyes

CLI = [sys.executable, "-m", "replay.cli.main"]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "JUDGE_REPLAY_DEBUG"}
    return subprocess.run([*CLI, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=30)


def test_no_traceback_reaches_the_terminal(project: Path) -> None:
    (project / "gold.json").write_text(DEEP, "utf-8")
    (project / "runs" / "b" / "results.json").write_text("NaN", "utf-8")
    for args, names in [(GRADE, "gold.json"), (["grade", "runs/b", "--gold", "claims/docs_a.md.yaml.json"], "results.json"),
                        (["schema", "nope"], "'nope'")]:
        done = _run(args, project)
        assert_one_line(done.returncode, done.stderr, names)
        assert done.stdout == ""


def test_names_that_are_not_utf8_are_shown_on_a_strict_terminal(project: Path) -> None:
    """A run folder or claims file whose name is not UTF-8 (its bytes arrive as lone surrogates) is shown
    escaped, even where the terminal's encoding is strict UTF-8 and could not print it at all."""
    os.rename(project / "runs" / "b", os.fsencode(project / "runs") + b"/b\xff")
    (project / "claims" / f"{CASSETTE}.json").unlink()
    (project / "claims").joinpath(os.fsdecode(b"\xfe.json")).write_text("{", "utf-8")
    strict = {k: v for k, v in os.environ.items() if k != "JUDGE_REPLAY_DEBUG"} | {"PYTHONIOENCODING": "utf-8"}
    listed = subprocess.run([*CLI, "cassettes", "list", "runs"], cwd=project, env=strict, capture_output=True,
                            text=True, timeout=30)
    assert listed.returncode == 0 and "b\\udcff " in listed.stdout, listed.stdout + listed.stderr
    judged = subprocess.run([*CLI, "judge", "--claims", "claims", "--prompt", "v3", "--mode", "record", "--run", "r"],
                            cwd=project, env=strict, capture_output=True, text=True, timeout=30)
    assert_one_line(judged.returncode, judged.stderr, "claims/\\udcfe.json")


def test_a_reader_that_stops_early_is_no_error(project: Path) -> None:
    """`judge-replay ... | head`: when the reader goes away, the command stops quietly."""
    with subprocess.Popen([*CLI, "schema", "results"], cwd=project, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # long before the interpreter has started and printed anything
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 1 and err == ""


def test_a_bug_is_one_line_unless_debugging(project: Path) -> None:
    """An unexpected exception (a command planted to raise one) is one line saying it is a bug and how to
    see more; JUDGE_REPLAY_DEBUG=1 shows the traceback."""
    code = ("import sys, click; from replay.cli import main as m\n"
            "@m.cli.command('boom')\n"
            "def boom():\n    raise RuntimeError('something broke\\nsecond line')\n"
            "sys.exit(m.main(sys.argv[1:]))\n")
    plain = subprocess.run([sys.executable, "-c", code, "boom"], cwd=project, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "JUDGE_REPLAY_DEBUG"}, timeout=60)
    assert plain.returncode == INTERNAL_ERROR
    assert plain.stderr.strip().splitlines() == [
        "judge-replay: internal error: RuntimeError: something broke -- a bug in judge-replay; "
        "rerun with JUDGE_REPLAY_DEBUG=1 to see the traceback, and report it with that output"]
    debug = subprocess.run([sys.executable, "-c", code, "boom"], cwd=project, capture_output=True, text=True,
                           env=os.environ | {"JUDGE_REPLAY_DEBUG": "1"}, timeout=60)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "RuntimeError: something broke" in debug.stderr


def test_sim_learn_with_a_bad_pages_folder_is_one_line(project: Path) -> None:
    (project / "pages").mkdir()
    (project / "pages" / "bad.md").write_bytes(BINARY)
    for pages, names in [("nowhere", "nowhere"), ("gold.json", "gold.json"), ("pages", "bad.md")]:
        done = _run(["sim", "learn", "--pages", pages, "--port", "0"], project)
        assert_one_line(done.returncode, done.stderr, names)


# --------------------------------------------------------------------------- the terminal shows data, never controls

HOSTILE_FILE = "docs/\x1b[2Ja.md"
HOSTILE_ID = "a-1\x1b[31m"
HOSTILE_CLAIM = "GPT-4.1 \x1b]8;;http://evil.example\x07offers\x1b]8;;\x07 a 1,047,576\x9b token context window."
OLD_LINE = "| gpt-4.1\x1b[8m | 1,047,576 |"
HOSTILE_PAGE = "# Models\x1b]0;owned\x07\n\n| model | context |\n|---|---|\n{line}\n| gpt-4o\u202e | 128,000 |\n"
LEAKY_CASSETTE = (
    "interactions:\n- request:\n    body: ''\n    headers:\n      x-api-key:\n      - sk-ant-api03-" + "hV3kQ9zT7wLmP2xR8nB4cY6dF1gJ5sA0eK" + "\n"
    "    method: POST\n    uri: https://api.anthropic.com/v1/messages\n  response:\n    body: {string: ''}\n"
    "    headers: {}\n    status: {code: 200, message: OK}\nversion: 1\n"
)
CONTROLS = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def _hostile_run(folder: Path, verdict: str, line: str) -> None:
    result = {"id": HOSTILE_ID, "judge_verdict": verdict, "evidence_url": URL, "evidence_quote": OLD_LINE,
              "reason": "the page\x1b[1A states it\x07", "quote_verified": True}
    silent = {"id": "a-2\u202e", "judge_verdict": "source_silent", "reason": "nothing\x1b[K"}
    write_run(folder, prompt="v3", model="claude-\x1b[5mtest", results=[{"file": HOSTILE_FILE, "results": [result, silent]}],
              pages={HOSTILE_FILE: {URL: HOSTILE_PAGE.format(line=line)}})


@pytest.fixture
def hostile_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two runs of one claims file whose name, ids, claim text, reasons and page lines carry escape
    sequences, BEL, C1 and bidi controls; the verdict flips and the quoted page line changes between them."""
    monkeypatch.chdir(tmp_path)
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "JUDGE_REPLAY_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    _hostile_run(tmp_path / "runs" / "a", "grounded", OLD_LINE)
    _hostile_run(tmp_path / "runs" / "b", "not_grounded", "| gpt-4.1\x1b[8m | 2,000,000 |")
    shutil.copytree(tmp_path / "runs" / "b", tmp_path / "runs" / "c\x1b[7m")  # a run name, shown by list and pages
    (tmp_path / "leaks").mkdir()
    (tmp_path / "leaks" / "leak\x1b[7m.yaml").write_text(LEAKY_CASSETTE, "utf-8")
    write_json(tmp_path / "gold.json", {"items": [{"file": HOSTILE_FILE, "id": HOSTILE_ID, "label": "outdated",
                                                   "note": "changed\x1b[3m"},
                                                  {"file": HOSTILE_FILE, "id": "a-2\u202e", "label": "unsourced"}]})
    claims = {"file": HOSTILE_FILE, "claims": [
        {"id": HOSTILE_ID, "claim": HOSTILE_CLAIM, "claim_type": "version", "evidence_url": URL},
        {"id": "a-2\u202e", "claim": "Pricing\x1b[?25l is $1.", "claim_type": "sku"}]}
    entry = json.loads((tmp_path / "runs" / "a" / "run.json").read_text("utf-8"))["claims"][0]
    write_json(tmp_path / entry["path"], claims)
    return tmp_path


GRADE_B = ["grade", "runs/b", "--gold", "gold.json"]
BAKEOFF = ["bakeoff", "--gold", "gold.json", "--baseline", "runs/a", "--candidate", "runs/b", "--no-replay",
           "--out-dir", "out"]
TEXT_OUTPUTS = {
    "grade": GRADE_B, "grade markdown": [*GRADE_B, "--markdown"], "grade gate": [*GRADE_B, "--baseline", "runs/a"],
    "grade gate markdown": [*GRADE_B, "--baseline", "runs/a", "--markdown"],
    "bakeoff": BAKEOFF, "bakeoff markdown": [*BAKEOFF, "--markdown"],
    "diff": ["diff", "runs/a", "runs/b", "--gold", "gold.json"],
    "diff markdown": ["diff", "runs/a", "runs/b", "--gold", "gold.json", "--format", "markdown"],
    "drift": ["drift", "runs/a", "--against", "runs/b"],
    "pages history": ["pages", "history", URL, "--cassettes", "runs", "--store", "store"],
    "pages diff": ["pages", "diff", URL, "--cassettes", "runs", "--store", "store"],
    "cassettes list": ["cassettes", "list", "runs"],
    "cassettes audit": ["cassettes", "audit", "leaks"],
    "an error naming a claim": ["grade", "runs/b", "--gold", "dup.json"],
}


@pytest.mark.parametrize("argv", TEXT_OUTPUTS.values(), ids=TEXT_OUTPUTS.keys())
def test_text_outputs_show_controls_as_visible_escapes(argv: list[str], hostile_project: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    gold = json.loads((hostile_project / "gold.json").read_text("utf-8"))
    write_json(hostile_project / "dup.json", {"items": [gold["items"][0]] * 2})
    code = main(argv)
    out, err = capsys.readouterr()
    assert code in (0, 1, 2) and "Traceback" not in err
    assert re.search(CONTROLS, out + err) is None, [m for m in re.findall(f".{{0,20}}{CONTROLS}.{{0,20}}", out + err)]
    assert "\\x1b" in out + err, out + err  # the planted data was shown (escaped), so the check means something


def test_judge_and_verify_show_controls_as_visible_escapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A real recording (the real SDK and HTTP, against the stand-ins) of a claims file whose name, ids and
    texts carry controls: the judge's progress and summary, its replay and `cassettes verify` print none."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "x" * 40)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    write_json(tmp_path / "claims" / "a.json", {"file": HOSTILE_FILE, "claims": [
        {"id": HOSTILE_ID, "claim": HOSTILE_CLAIM, "claim_type": "version",
         "evidence_url": "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"}]})
    learn, model = start_learn(DEMO_PAGES, log=None), start_model(log=None)
    try:
        recorded = main(["judge", "--prompt", "v3", "--claims", "claims", "--mode", "record", "--run", "runs/r",
                         "--learn-url", learn.url, "--anthropic-base-url", model.url])
    finally:
        learn.stop()
        model.stop()
    replayed = main(["judge", "--mode", "replay", "--run", "runs/r", "--no-progress"])
    verified = main(["cassettes", "verify", "runs/r"])
    out, err = capsys.readouterr()
    assert (recorded, replayed, verified) == (0, 0, 0), out + err
    assert re.search(CONTROLS, out + err) is None, [m for m in re.findall(f".{{0,20}}{CONTROLS}.{{0,20}}", out + err)]
    assert "\\x1b" in out + err, out + err


def test_a_system_error_about_no_file_is_given_the_file() -> None:
    """`os.write` on a full disk names no file; `os_error_about` names the one being written."""
    error = os_error_about(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), "runs/r/.lock")
    assert (type(error), error.errno, error.filename) == (OSError, errno.ENOSPC, "runs/r/.lock")
    denied = os_error_about(PermissionError(errno.EACCES, "Permission denied", "/tmp/.x.tmp"), "x")
    assert (type(denied), denied.filename, denied.strerror) == (PermissionError, "x", "Permission denied")


def test_a_judge_recording_onto_a_full_disk_is_one_line(full_disk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    learn, model = start_learn(DEMO_PAGES, log=None), start_model(log=None)
    try:
        code = main(["judge", "--prompt", "v3", "--claims", "claims", "--mode", "record", "--run", "full/run",
                     "--no-progress", "--learn-url", learn.url, "--anthropic-base-url", model.url])
    finally:
        learn.stop()
        model.stop()
    assert_one_line(code, capsys.readouterr().err, "full/", (1,))


def test_a_setting_our_code_reads_must_be_declared(project: Path) -> None:
    """Else a user's value for it would be refused as unknown: the mistake shows in our tests, not theirs."""
    assert setting("learn_url", None, "default") == "default"  # dashes or underscores alike
    with pytest.raises(LookupError, match="not declared"):
        setting("retries", None)
    assert "retries" not in SETTINGS


@pytest.mark.parametrize("command", [["cassettes", "verify", "RUN"], ["judge", "--mode", "replay", "--run", "RUN"]])
def test_a_cassette_uri_that_is_no_url_is_read_as_itself_not_a_crash(tmp_path, capsys, command):
    """A hand-edited `uri:` that does not parse as a URL (`http://[...`) stands for itself (`urls.split_url`)."""
    run = tmp_path / "v3-demo"
    shutil.copytree(REPO / "cassettes" / "v3-demo", run)
    cassette = sorted(run.glob("*.yaml"))[0]
    cassette.write_text(cassette.read_text("utf-8").replace("uri: http://127.0.0.1:8931/api/mcp",
                                                            "uri: http://[127.0.0.1:8931/api/mcp", 1), "utf-8")
    code = main([str(run) if arg == "RUN" else arg for arg in command])
    _, err = capsys.readouterr()
    assert code in (0, 1) and "internal error" not in err


@pytest.mark.parametrize("argv", [["diff", "runs/a", "runs/b"], [*GRADE_B, "--json"], BAKEOFF[:-2]],
                         ids=["diff", "grade", "bakeoff"])
def test_out_dash_is_standard_output_as_without_out(argv: list[str], project: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) in (0, 1)
    expected = capsys.readouterr().out
    assert main([*argv, "--out", "-"]) in (0, 1)
    assert capsys.readouterr().out == expected != ""
    assert not (project / "-").exists()


def test_judge_out_dash_is_refused_since_standard_output_shows_the_summary(project: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["judge", "--prompt", "v3", "--claims", "claims", "--mode", "live", "--out", "-",
                 "--learn-url", closed_port_url(), "--anthropic-base-url", closed_port_url().removesuffix("/api/mcp")])
    assert_one_line(code, capsys.readouterr().err, "--out", (2,))
    assert not (project / "-").exists()


@pytest.mark.parametrize("value", ["9" * 5000, "2020-13-45"], ids=["an int of 5,000 digits", "a date with month 13"])
@pytest.mark.parametrize("argv", [["cassettes", "audit"], ["cassettes", "verify"]])
def test_a_yaml_value_python_cannot_make_is_one_line(value: str, argv: list[str], project: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26 review: a plain YAML scalar the safe loader makes with int() or date() (a status code of
    5,000 digits, a date of month 13) raised that ValueError out of the loader: an internal error."""
    cassette = project / "runs" / "a" / CASSETTE
    text = cassette.read_text("utf-8")
    assert "code: 200" in text
    cassette.write_text(text.replace("code: 200", f"code: {value}", 1), "utf-8")
    code = main([*argv, str(project / "runs" / "a")])
    assert_one_line(code, capsys.readouterr().err, CASSETTE, (0, 2) if argv[1] == "audit" else (2,))  # audit: read as text


@pytest.mark.parametrize("value", ['"' + "9" * 5000 + '"', '"²"'], ids=["text of 5,000 digits", "a superscript two"])
def test_a_status_code_int_cannot_read_is_one_line(value: str, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26 review: a status code that str.isdigit() takes for digits and int() cannot read was an
    internal error of every command that loads the cassette."""
    cassette = project / "runs" / "a" / CASSETTE
    cassette.write_text(cassette.read_text("utf-8").replace("code: 200", f"code: {value}", 1), "utf-8")
    code = main(["cassettes", "verify", str(project / "runs" / "a")])
    assert_one_line(code, capsys.readouterr().err, CASSETTE)
