"""`--jobs N`: the commands that read many cassettes give the same output, files and exit code whatever N is.

Two runs of 10 claims files (the demo's five, each also under a second name) are recorded once against
the stand-ins, over the demo's 2026-06 and 2026-09 pages. Each command runs with the parse cache empty
(so `--jobs 2` parses in worker processes) and with `--jobs 1` (one cassette after another, in this
process), and everything it prints and writes is compared byte for byte.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import pytest

from locations import REPO
from replay.cassettes.cache import OFF_VARIABLE
from replay.cli.main import main

DEMO = REPO / "demo"


def _claims(folder: Path) -> Path:
    """The demo's claims files, each also as a copy about another document: 10 files."""
    claims = folder / "claims"
    claims.mkdir(parents=True)
    gold = json.loads((DEMO / "gold-correctness-set.json").read_text("utf-8"))
    items = list(gold["items"])
    for path in sorted((DEMO / "claims").glob("*.json")):
        shutil.copy(path, claims / path.name)
        batch = json.loads(path.read_text("utf-8"))
        copy = batch["file"].replace("docs/", "docs/copy/")
        (claims / f"copy-{path.name}").write_text(json.dumps({**batch, "file": copy}, indent=2) + "\n", "utf-8")
        items += [{**item, "file": copy} for item in gold["items"] if item["file"] == batch["file"]]
    (folder / "gold.json").write_text(json.dumps({"name": "ten files", "items": items}, indent=2) + "\n", "utf-8")
    return claims


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A project with runs/before (2026-06 pages) and runs/after (2026-09 pages), 10 claims files each."""
    from replay.sim import start_learn, start_model

    folder = tmp_path_factory.mktemp("jobs")
    (folder / "pyproject.toml").write_text("[tool.judge-replay]\n", "utf-8")
    claims = _claims(folder)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        mp.setenv("JUDGE_REPLAY_CACHE_DIR", str(folder / "recording-cache"))
        with start_model() as model:
            for name, pages in (("before", "2026-06"), ("after", "2026-09")):
                with start_learn(DEMO / "pages" / pages) as learn:
                    assert main(["judge", "--prompt", "v3", "--claims", str(claims), "--run", f"runs/{name}",
                                 "--mode", "record", "--learn-url", learn.url, "--anthropic-base-url", model.url,
                                 "--no-progress"]) == 0
    shutil.rmtree(folder / "recording-cache", ignore_errors=True)
    return folder


@pytest.fixture
def project(recorded, tmp_path, monkeypatch):
    """A copy of the recorded project as the working folder, the caches on and empty."""
    folder = tmp_path / "project"
    shutil.copytree(recorded, folder)
    monkeypatch.chdir(folder)
    monkeypatch.delenv(OFF_VARIABLE, raising=False)
    return folder


COMMANDS = {
    "replay": ["judge", "--mode", "replay", "--run", "runs/before", "--no-progress", "--out", "out/replayed.json"],
    "verify": ["cassettes", "verify", "runs/before", "runs/after"],
    "grade": ["grade", "runs/before", "--gold", "gold.json", "--json"],
    "diff": ["diff", "runs/before", "runs/after", "--gold", "gold.json", "--format", "json", "--out", "out/flips.json"],
    "drift": ["drift", "runs/before", "--against", "runs/after"],
}


def _outcome(project: Path, args: list[str], capsys, cache: Path) -> tuple[int, str, str, dict[str, bytes]]:
    """Exit code, stdout, stderr and every file of the project (not the caches), the parse cache empty first."""
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(project / ".judge-replay", ignore_errors=True)  # no replay receipt nor verified mark
    shutil.rmtree(project / "out", ignore_errors=True)
    (project / "out").mkdir()
    code = main(args)
    captured = capsys.readouterr()
    files = {str(p.relative_to(project)): p.read_bytes() for p in sorted(project.rglob("*"))
             if p.is_file() and ".judge-replay" not in p.parts}
    return code, captured.out, captured.err, files


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_two_jobs_give_what_one_gives(project, tmp_path, capsys, name):
    cache = tmp_path / ".judge-replay" / "cache"  # the folder the suite's JUDGE_REPLAY_CACHE_DIR names
    serial = _outcome(project, [*COMMANDS[name], "--jobs", "1"], capsys, cache)
    parallel = _outcome(project, [*COMMANDS[name], "--jobs", "2"], capsys, cache)
    assert serial[0] in (0, 1)
    assert parallel == serial


def test_demo_gives_the_same_with_two_jobs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcomes = []
    for jobs in ("1", "2"):
        shutil.rmtree(tmp_path / ".judge-replay", ignore_errors=True)
        code = main(["diff", str(REPO / "cassettes" / "v2-demo"), str(REPO / "cassettes" / "v3-demo"),
                     "--no-siblings", "--jobs", jobs])
        outcomes.append((code, capsys.readouterr()))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 0 and "flip" in outcomes[0][1].out


def _damage(project: Path) -> str:
    """Cut one cassette of runs/before in half (a copy interrupted on the way); its name."""
    path = sorted((project / "runs" / "before").glob("*.yaml"))[3]
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] + b"\n  - [unclosed\n")
    return path.name


@pytest.mark.parametrize("name", ["replay", "grade", "diff", "drift", "verify"])
def test_a_damaged_cassette_is_reported_as_without_workers(project, tmp_path, capsys, name):
    damaged = _damage(project)
    cache = tmp_path / ".judge-replay" / "cache"
    serial = _outcome(project, [*COMMANDS[name], "--jobs", "1"], capsys, cache)
    parallel = _outcome(project, [*COMMANDS[name], "--jobs", "2"], capsys, cache)
    assert parallel == serial
    code, out, err, _ = serial
    assert code in (1, 2) and damaged in out + err and "Traceback" not in out + err


def test_verify_leaves_nothing_in_the_parse_cache_nor_behind(project, tmp_path, capsys, monkeypatch):
    """The workers' parses reach `cassettes verify` through a folder of its own, deleted at its end."""
    cache = tmp_path / ".judge-replay" / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    assert main(["cassettes", "verify", "runs/before", "--jobs", "2"]) == 0
    assert "ok (" in capsys.readouterr().out
    parsed = cache / "cassettes"  # beside it, `replays/` keeps the receipt of the replay verify made
    assert not parsed.exists() or not [p for p in parsed.rglob("*") if p.is_file()]
    assert list(temporary.iterdir()) == []


@pytest.mark.parametrize("value, ok", [("2", True), ("0", False), ('"two"', False)])
def test_jobs_setting(project, capsys, value, ok):
    (project / "pyproject.toml").write_text(f"[tool.judge-replay]\njobs = {value}\n", "utf-8")
    code = main(["grade", "runs/before", "--gold", "gold.json", "--json"])
    err = capsys.readouterr().err
    if ok:
        assert code == 0
    else:
        assert code == 2 and "pyproject.toml" in err and "jobs must be a whole number of at least 1" in err


def test_jobs_flag_below_one_is_a_usage_error(project, capsys):
    assert main(["grade", "runs/before", "--gold", "gold.json", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_ctrl_c_while_workers_parse_leaves_every_entry_whole(project, tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) once the workers have written
    their first entry: the command exits 130, and the cache holds no half-written file, only entries whose
    checks pass (length and CRC-32 of their payload) and stamps that read."""
    cache = tmp_path / ".judge-replay" / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    cli = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "from replay.cli.main import main; sys.exit(main())"]  # Ctrl-C as at a terminal, even from a background job
    proc = subprocess.Popen([*cli, "diff", "runs/before", "runs/after", "--jobs", "2"], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(cache.rglob("*.bin")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files and not [p for p in files if p.name.endswith(".tmp")]
    for path in files:
        data = path.read_bytes()
        if path.suffix == ".stamp":
            assert json.loads(data)["sha256"]
            continue
        line, _, payload = data.partition(b"\n")
        header = json.loads(line)
        assert header["payload_length"] == len(payload) and header["payload_crc32"] == zlib.crc32(payload)
