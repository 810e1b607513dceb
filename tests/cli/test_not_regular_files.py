"""Only regular files are read: a named pipe, a device or a file past its kind's size limit given as an
input (or planted in a run folder, a sibling folder, the settings) is one line naming it, exit 2, at once.

Each command runs in a process of its own with a timeout and a memory limit: a command that waits on a pipe
or reads `/dev/zero` fails the test instead of blocking it or filling the machine's memory. The processes
are forked from a server (`CommandServer`) that has imported the libraries a command imports (the model
SDK alone takes seconds), so that each command starts at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.test_hostile_inputs import CASSETTE, CLAIMS, GOLD, PAGE, RESULTS, URL
from factories import closed_port_url, write_json, write_run
from replay.files.regular import LIMITS

TIMEOUT = 30
"""Seconds a command may take here (each takes about one): past it, it is waiting on something."""
MEMORY = 3 << 30
"""The address space a command may use: reading /dev/zero fails fast instead of filling the machine."""

_SERVER = r"""
import atexit, json, os, resource, signal, sys, threading
for name in ("anthropic", "httpx", "pydantic", "rich", "click", "yaml", "vcr"):
    __import__(name)  # the libraries, not our package: each command imports that itself, as a new process does
requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(devnull, 1)
replies.write(json.dumps({"threads": threading.active_count()}) + "\n")
for line in requests:
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            requests.close()
            replies.close()
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
                opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(opened, fd)
                os.close(opened)
            os.close(devnull)
            resource.setrlimit(resource.RLIMIT_AS, (request["memory"], request["memory"]))
            signal.alarm(request["timeout"])  # past it the command is killed (SIGALRM), blocked or not
            from replay.cli.main import main
            try:
                code = main(request["argv"])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    replies.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
"""


@dataclass
class Done:
    """What a command run by `CommandServer` left: its exit code, stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


class CommandServer:
    """A Python process that has imported the libraries a command imports and forks a process per command:
    the command's own working folder, environment, standard output and error (files, standard input
    /dev/null), address space limited to MEMORY, killed after TIMEOUT seconds."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, encoding="utf-8", bufsize=1)
        ready = json.loads(self._reply(120) or "{}")
        assert ready.get("threads") == 1, f"the command server did not start, or runs threads: {ready}"

    def _reply(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            pytest.fail(f"the command server answered nothing in {timeout} s")
        return self.proc.stdout.readline()

    def run(self, argv: list[str], cwd: Path) -> Done:
        assert self.proc.stdin is not None
        out, err = self.scratch / "stdout", self.scratch / "stderr"
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "env": dict(os.environ), "stdout": str(out),
                                          "stderr": str(err), "memory": MEMORY, "timeout": TIMEOUT}) + "\n")
        self.proc.stdin.flush()
        line = self._reply(TIMEOUT + 60)
        assert line, "the command server died"
        status = json.loads(line)["status"]
        if status == -signal.SIGALRM:
            pytest.fail(f"judge-replay {' '.join(argv)} still running after {TIMEOUT} s: it waits on something")
        return Done(status, out.read_text("utf-8"), err.read_text("utf-8"))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CommandServer]:
    commands = CommandServer(tmp_path_factory.mktemp("command-server"))
    yield commands
    commands.close()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two small runs (runs/a, runs/b), a gold set and a claims folder, as the working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "x" * 40)
    monkeypatch.delenv("JUDGE_REPLAY_DEBUG", raising=False)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    claims = write_json(tmp_path / "claims" / f"{CASSETTE}.json", CLAIMS)
    for name in ("a", "b"):
        run = write_run(tmp_path / "runs" / name, prompt="v3", results=RESULTS, pages={"docs/a.md": {URL: PAGE}})
        manifest = json.loads((run / "run.json").read_text("utf-8"))
        manifest["claims"][0]["sha256"] = hashlib.sha256(claims.read_bytes()).hexdigest()
        (run / "run.json").write_text(json.dumps(manifest), "utf-8")
    write_json(tmp_path / "gold.json", GOLD)
    return tmp_path


def fifo(path: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / path).unlink(missing_ok=True)
        os.mkfifo(root / path)

    return setup


def link(path: str, to: str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        (root / path).unlink(missing_ok=True)
        (root / path).symlink_to(to)

    return setup


def sparse(path: str, size: int) -> Callable[[Path], None]:
    """A file of `size` bytes that takes no room on disk (its size is all a limit looks at first)."""

    def setup(root: Path) -> None:
        with open(root / path, "r+b" if (root / path).exists() else "wb") as fh:
            fh.truncate(size)

    return setup


GRADE = ["grade", "runs/a", "--gold", "gold.json"]
JUDGE = ["judge", "--prompt", "v3", "--mode", "record", "--run", "runs/new", "--no-progress"]
PAST = {kind: limit + 1 for kind, (_, limit) in LIMITS.items()}
CASES = [
    ("gold a named pipe", GRADE, "gold.json", "named pipe", [fifo("gold.json")]),
    ("gold /dev/zero", ["grade", "runs/a", "--gold", "/dev/zero"], "/dev/zero", "character device", []),
    ("gold a link to /dev/zero", GRADE, "gold.json", "character device", [link("gold.json", "/dev/zero")]),
    ("gold past its limit", GRADE, "gold.json", "MiB a gold set may be", [sparse("gold.json", PAST["gold"])]),
    ("claims a named pipe", [*JUDGE, "--claims", "p.json"], "p.json", "named pipe", [fifo("p.json")]),
    ("claims /dev/zero", [*JUDGE, "--claims", "/dev/zero"], "/dev/zero", "character device", []),
    ("claims past its limit", [*JUDGE, "--claims", "claims"], CASSETTE, "MiB a claims file may be",
     [sparse(f"claims/{CASSETTE}.json", PAST["claims"])]),
    ("a named pipe in the claims folder", [*JUDGE, "--claims", "claims"], "z.json", "named pipe",
     [fifo("claims/z.json")]),
    ("grade --claims a named pipe", [*GRADE, "--claims", "p.json"], "p.json", "named pipe", [fifo("p.json")]),
    ("results.json a named pipe", GRADE, "results.json", "named pipe", [fifo("runs/a/results.json")]),
    ("results.json a link to /dev/zero", GRADE, "results.json", "character device",
     [link("runs/a/results.json", "/dev/zero")]),
    ("results file /dev/zero", ["grade", "/dev/zero", "--gold", "gold.json"], "/dev/zero", "character device", []),
    ("results.json past its limit", GRADE, "results.json", "MiB a results file may be",
     [sparse("runs/a/results.json", PAST["results"])]),
    ("run.json a link to /dev/zero", ["diff", "runs/a", "runs/b"], "run.json", "character device",
     [link("runs/a/run.json", "/dev/zero")]),
    ("cassette a named pipe", ["diff", "runs/a", "runs/b"], CASSETTE, "named pipe", [fifo(f"runs/a/{CASSETTE}")]),
    ("cassette a link to /dev/zero", ["drift", "runs/a", "--against", "runs/b"], CASSETTE, "character device",
     [link(f"runs/b/{CASSETTE}", "/dev/zero")]),
    ("cassette past its limit", ["cassettes", "verify", "runs/a"], CASSETTE, "MiB a cassette may be",
     [sparse(f"runs/a/{CASSETTE}", PAST["cassette"])]),
    ("cassette a named pipe, replayed", ["judge", "--mode", "replay", "--run", "runs/a", "--no-progress"], CASSETTE,
     "named pipe", [fifo(f"runs/a/{CASSETTE}")]),
    ("cassette a named pipe, verified", ["cassettes", "verify", "runs/a"], CASSETTE, "named pipe",
     [fifo(f"runs/a/{CASSETTE}")]),
    ("prompt.md a named pipe", ["diff", "runs/a", "runs/b"], "prompt.md", "named pipe", [fifo("runs/a/prompt.md")]),
    ("prompt file a named pipe", ["judge", "--prompt", "p.md", *JUDGE[3:], "--claims", "claims"], "p.md",
     "pipe", [fifo("p.md")]),
    ("prompt file past its limit", ["judge", "--prompt", "p.md", *JUDGE[3:], "--claims", "claims"], "p.md",
     "MiB a prompt file may be", [sparse("p.md", PAST["prompt"])]),
    ("pyproject.toml a named pipe", GRADE, "pyproject.toml", "named pipe", [fifo("pyproject.toml")]),
    ("pyproject.toml a link to /dev/zero", GRADE, "pyproject.toml", "character device",
     [link("pyproject.toml", "/dev/zero")]),
    ("gold named by the settings a named pipe", ["grade", "runs/a"], "g.json", "named pipe",
     [fifo("g.json"), lambda root: (root / "pyproject.toml").write_text('[tool.judge-replay]\ngold = "g.json"\n')]),
]


@pytest.mark.parametrize(("argv", "names", "says", "setup"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_file_that_is_not_regular_or_too_large_is_one_line(argv: list[str], names: str, says: str,
                                                            setup: list[Callable[[Path], None]], project: Path,
                                                            server: CommandServer) -> None:
    for step in setup:
        step(project)
    learn, model = closed_port_url(), closed_port_url().removesuffix("/api/mcp")
    argv = [*argv, "--learn-url", learn, "--anthropic-base-url", model] if argv[0] == "judge" else argv
    done = server.run(argv, project)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("judge-replay: "), done.stderr
    assert names in lines[0] and says in lines[0], done.stderr


def test_cassettes_list_counts_a_pipe_as_no_interaction(project: Path, server: CommandServer) -> None:
    """`list` counts, `verify` checks: a named pipe for a cassette is a row with nothing in it, at once."""
    os.unlink(project / "runs" / "a" / CASSETTE)
    os.mkfifo(project / "runs" / "a" / CASSETTE)
    done = server.run(["cassettes", "list", "runs"], project)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["run", "a", "b"]


@pytest.mark.parametrize("plant", [link("runs/c/results.json", "/dev/zero"), fifo("runs/c/results.json"),
                                   fifo(f"runs/c/{CASSETTE}"), link("runs/c/run.json", "/dev/zero"),
                                   sparse("runs/c/results.json", PAST["results"])],
                         ids=["results.json to /dev/zero", "results.json a pipe", "cassette a pipe",
                              "run.json to /dev/zero", "results.json past its limit"])
def test_diff_skips_a_sibling_it_cannot_read_and_says_so(plant: Callable[[Path], None], project: Path,
                                                         server: CommandServer) -> None:
    """A third folder beside the two runs, with a device, a pipe or an oversized file in it: `diff` of the
    two runs is made without it, and its note names it."""
    write_run(project / "runs" / "c", prompt="v3", results=RESULTS, pages={"docs/a.md": {URL: PAGE}})
    plant(project)
    done = server.run(["diff", "runs/a", "runs/b", "--format", "json"], project)
    assert done.returncode == 0, done.stderr
    notes = [n for n in json.loads(done.stdout)["notes"] if n.startswith("skipped")]
    assert len(notes) == 1 and os.path.join("runs", "c") in notes[0], notes
