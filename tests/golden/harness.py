"""Runs the golden cases (`cases.py`) and compares their output with `expected/`.

Used by `scripts/golden.py` (check, `--update`, `--repeat`, `--compare-modes`) and
`test_golden_outputs.py`. Every case runs `judge-replay` through the console script the package installs
(what a user runs), in a sandbox of its own (see `cases.py`), with a fixed environment. Each command is
a new process: by default a child forked from a fork server that has already imported the CLI's entry
point and its heavy dependencies (`_Zygote`: importing anthropic alone costs 1.3-1.6 s per `judge`,
`bakeoff` or `verify` run, which halves the suite's time), or, with GOLDEN_SUBPROCESS=1 /
`scripts/golden.py --subprocess`, a plain `subprocess.run` of the console script. Both give the same bytes
for every case (checked with `scripts/golden.py --compare-modes`); the stand-ins are always plain
subprocesses. The environment of every command:

- nothing of the caller's environment but PATH: no ANTHROPIC_*, JUDGE_REPLAY_*, SOURCE_DATE_EPOCH,
  proxy or colour settings leak in; HOME and TMPDIR are folders of the sandbox;
- COLUMNS=80, LINES=50, TERM=dumb, NO_COLOR=1 (the output is a pipe, never a terminal: reports are laid
  out 80 columns wide, as they are in a CI log, and progress lines as plain lines), TZ=UTC, LC_ALL/LANG=C.UTF-8,
  PYTHONIOENCODING=utf-8;
- PYTHONDONTWRITEBYTECODE=1, so no run writes .pyc files into the repository's package;
- PYTHONHASHSEED is left unset (random): an output that depended on hash order would be a bug the
  repeated runs (`scripts/golden.py --repeat N`) should find, not hide.

What is compared, per case (each a file under `expected/<case>/`): `stdout`, `stderr`, `exit_code`,
`written` (the files and folders the case added, changed or removed in its sandbox, caches under
`proj/.judge-replay/` excepted), `files/<path>` for the files the case names, and `sim-learn.*` /
`sim-model.*` (stdout, stderr, exit code) of the stand-ins a case starts. Only the normalisations
listed in `cases.py` are applied; everything else must match byte for byte.
"""

from __future__ import annotations

import concurrent.futures
import difflib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXPECTED = HERE / "expected"
PROJECT_PARTS = ("pyproject.toml", "cassettes", "demo")
"""What a sandbox's project copy holds: all the demo commands read (the package itself is imported from the
repository, as installed)."""
CACHE_FOLDER = Path("proj") / ".judge-replay"
"""The project's parse cache, page store and replay receipts: rebuilt from the cassettes, derived from the
code's own hash, not output (left out of `written`)."""
HARNESS_FOLDER = ".harness"
VERSIONED = ("python", "anthropic", "httpx", "httpx2", "vcrpy")


def _load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


cases = _load("judge_replay_golden_cases", HERE / "cases.py")
Case = cases.Case


# --------------------------------------------------------------------------- the CLI under test


@cache
def cli() -> tuple[str, ...]:
    """The `judge-replay` console script of this interpreter's environment, checked to be the entry point
    pyproject.toml declares (a restructure that moves the entry point must reinstall: `pip install -e .`)
    and to import the package from this repository (an editable install), not some other copy."""
    script = Path(sys.executable).parent / "judge-replay"
    if not script.exists():
        found = shutil.which("judge-replay")
        if found is None:
            raise RuntimeError("no judge-replay console script: install the package (pip install -e .)")
        script = Path(found)
    declared = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]["judge-replay"]
    text = script.read_text("utf-8", "replace")
    shebang = text.splitlines()[0].removeprefix("#!").strip() if text.startswith("#!") else sys.executable
    m = re.search(r"^from (\S+) import (\S+)", text, re.M)
    if m and f"{m[1]}:{m[2]}" != declared:
        raise RuntimeError(f"{script} runs {m[1]}:{m[2]} but pyproject.toml declares {declared}: "
                           "reinstall the package (pip install -e .)")
    module = declared.split(":")[0]
    where = subprocess.run([shebang, "-c", f"import {module} as m; print(m.__file__)"], capture_output=True,
                           text=True, cwd=tempfile.gettempdir(), env={"PATH": os.environ.get("PATH", "")})
    if where.returncode != 0 or not Path(where.stdout.strip()).resolve().is_relative_to(REPO):
        raise RuntimeError(f"{script} does not run the code of {REPO} ({module} from {where.stdout.strip() or where.stderr})")
    return (str(script),)


ENVIRONMENT_DISTRIBUTIONS = ("anthropic", "httpx", "httpx2", "vcrpy", "click", "rich", "pydantic", "pydantic-core",
                             "PyYAML", "diskcache")
"""What the outputs can depend on besides our code: click lays out --help, rich the tables, pydantic
writes the schemas, the SDK and vcrpy carry the recordings. `expected/ENVIRONMENT.json` says which
versions wrote the expected outputs; a difference is named in every failure (it does not fail a case)."""


@cache
def installed_versions() -> dict[str, str]:
    """Python's version and each distribution's, as the CLI's interpreter sees them (run.json's `versions`
    and ENVIRONMENT.json)."""
    names = sorted(set(VERSIONED[1:]) | set(ENVIRONMENT_DISTRIBUTIONS))
    code = ("import json, platform, importlib.metadata as m\n"
            "v = {'python': platform.python_version()}\n"
            f"for n in {names!r}:\n"
            "    try: v[n] = m.version(n)\n"
            "    except m.PackageNotFoundError: v[n] = None\n"
            "print(json.dumps(v))")
    out = subprocess.run([_python(), "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": os.environ.get("PATH", "")})
    return dict(json.loads(out.stdout))


ENVIRONMENT_FILE = EXPECTED / "ENVIRONMENT.json"


def environment_json() -> bytes:
    versions = installed_versions()
    shown = {"python": versions["python"], **{n: versions[n] for n in ENVIRONMENT_DISTRIBUTIONS}}
    return (json.dumps(shown, indent=2) + "\n").encode()


def environment_note() -> str:
    """'' when this environment is the one that wrote the expected outputs, else what differs."""
    try:
        then = json.loads(ENVIRONMENT_FILE.read_bytes())
    except (OSError, ValueError):
        return ""
    now = json.loads(environment_json())
    changed = [f"{k} {then.get(k)} -> {now.get(k)}" for k in sorted(now.keys() | then.keys()) if then.get(k) != now.get(k)]
    return ("note: the expected outputs were written with other versions (" + ", ".join(changed)
            + "): a difference in --help, a table or a schema may come from them, not from the code") if changed else ""


# --------------------------------------------------------------------------- a fork server (optional)

PRELOAD = ("anthropic", "httpx", "pydantic", "rich", "click", "yaml", "diskcache", "vcr")
"""Third-party modules a forking runner imports once (anthropic alone takes 1.3-1.6 s to import, in every
`judge`, `bakeoff` and `cassettes verify`); the package's own modules are imported by each run."""

_ZYGOTE = r"""
import atexit, importlib, json, os, signal, sys, threading, time
script, target, preload = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[0] = os.path.dirname(script)  # as when the console script runs, not '' (the working folder)
module_name, func_name = target.split(":")
for name in preload:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
importlib.import_module(module_name)
requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
replies = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0); os.dup2(devnull, 1)
replies.write(json.dumps({"ready": threading.active_count()}) + "\n")

def exit_code(value):
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1

for line in requests:
    req = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            requests.close(); replies.close()
            os.chdir(req["cwd"])
            os.environ.clear(); os.environ.update(req["env"])
            time.tzset()
            for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                    (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                opened = os.open(path, flags, 0o644); os.dup2(opened, fd); os.close(opened)
            os.close(devnull)
            signal.alarm(req["timeout"])  # as subprocess.run(timeout=...): the run is killed (SIGALRM)
            sys.argv = [script, *req["argv"]]
            try:
                code = exit_code(getattr(importlib.import_module(module_name), func_name)())
            except SystemExit as exc:
                code = exit_code(exc.code)
            except BaseException:
                sys.excepthook(*sys.exc_info())
                code = 1
            try:
                threading._shutdown()  # what interpreter exit does first: wait for non-daemon threads
            except Exception:
                pass
            atexit._run_exitfuncs()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    replies.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
"""


class _Zygote:
    """A Python process that has imported the CLI's entry point and PRELOAD, and forks a child per run:
    the child sets the working folder, the environment and stdin/stdout/stderr (files, never a
    terminal) as a new process would have them, and runs the console script's `sys.exit(main())`."""

    def __init__(self, log: Path) -> None:
        script = Path(cli()[0])
        declared = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]["judge-replay"]
        self._log = open(log, "ab")
        env = {"PATH": os.environ.get("PATH", ""), "TZ": "UTC", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
               "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1", "TERM": "dumb"}
        self.proc = subprocess.Popen([_python(), "-c", _ZYGOTE, str(script), declared, json.dumps(PRELOAD)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     cwd=tempfile.gettempdir(), env=env, text=True, bufsize=1)
        assert self.proc.stdout is not None
        ready = json.loads(self.proc.stdout.readline() or "{}")
        if ready.get("ready") != 1:
            self.close()
            raise RuntimeError(f"the fork server did not start (or runs threads: {ready}); see {log}")

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], stdout: Path, stderr: Path,
            timeout: float) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "env": env, "stdout": str(stdout),
                                          "stderr": str(stderr), "timeout": int(timeout) + 1}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the fork server died")
        return int(json.loads(line)["rc"])

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._log.close()


def _python() -> str:
    text = Path(cli()[0]).read_text("utf-8", "replace")
    return text.splitlines()[0].removeprefix("#!").strip() if text.startswith("#!") else sys.executable


# --------------------------------------------------------------------------- running a case


@dataclass
class Outcome:
    case: Any
    streams: dict[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None
    """A failure of the harness or of a setup step (not an output difference)."""


@dataclass
class _Context:
    sandbox: Path
    zygote: Any = None
    ports: dict[str, int] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    days: set[str] = field(default_factory=set)

    def fill(self, text: str) -> str:
        text = text.replace("{TMP}", str(self.sandbox / "tmp"))
        for key, url in self.urls.items():
            text = text.replace("{" + key + "}", url)
        return text


def _base_env(ctx: _Context, case: Any) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(ctx.sandbox / "home"),
        "TMPDIR": str(ctx.sandbox / "tmpdir"),
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "COLUMNS": "80",
        "LINES": "50",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env["JUDGE_REPLAY_CACHE_DIR"] = str(ctx.sandbox / CACHE_FOLDER / "cache")  # the derived caches: kept, not compared
    if case.cwd == "repo":
        env["JUDGE_REPLAY_NO_CACHE"] = "1"  # the repository's own .judge-replay/ is left alone
    return env


def _cwd(ctx: _Context, case: Any) -> Path:
    return REPO if case.cwd == "repo" else ctx.sandbox / "proj"


def _make_sandbox(root: Path, name: str) -> Path:
    sandbox = root / name
    sandbox.mkdir(parents=True)
    for part in ("tmp", "home", "tmpdir", HARNESS_FOLDER):
        (sandbox / part).mkdir()
    proj = sandbox / "proj"
    proj.mkdir()
    for part in PROJECT_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, proj / part, symlinks=True)
        else:
            shutil.copy2(src, proj / part)
    return sandbox


def _inventory(sandbox: Path) -> dict[str, str]:
    """Every file (sha256) and folder ("dir") of the sandbox but the caches and the harness's own."""
    found: dict[str, str] = {}
    skip = {sandbox / CACHE_FOLDER, sandbox / HARNESS_FOLDER}
    for folder, dirs, files in os.walk(sandbox):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if here / d not in skip)
        for d in dirs:
            found[str((here / d).relative_to(sandbox)) + "/"] = "dir"
        for f in files:
            path = here / f
            found[str(path.relative_to(sandbox))] = ("link:" + os.readlink(path) if path.is_symlink()
                                                    else hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def _written(before: dict[str, str], after: dict[str, str]) -> bytes:
    lines = []
    for path in sorted(before.keys() | after.keys()):
        if path not in before:
            lines.append(f"+ {path}")
        elif path not in after:
            lines.append(f"- {path}")
        elif before[path] != after[path]:
            lines.append(f"~ {path}")
    return "".join(line + "\n" for line in lines).encode()


def _repo_state() -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file of the repository but .git, the tools' caches (__pycache__, pytest's, mypy's:
    the typing test may write mypy's while a case runs) and the expected outputs."""
    state = {}
    for folder, dirs, files in os.walk(REPO):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__", ".pytest_cache", ".mypy_cache")
                   and here / d != EXPECTED]
        for f in files:
            st = (here / f).lstat()
            state[str((here / f).relative_to(REPO))] = (st.st_size, st.st_mtime_ns)
    return state


class _StandIn:
    def __init__(self, name: str, argv: list[str], ctx: _Context, cwd: Path, env: dict[str, str]) -> None:
        self.name = name
        self.out = ctx.sandbox / HARNESS_FOLDER / f"{name}.stdout"
        self.err = ctx.sandbox / HARNESS_FOLDER / f"{name}.stderr"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen([*cli(), *argv], cwd=cwd, env=env, stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL)

    def url(self, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.out.read_bytes()
            if b"\n" in text:
                return text.split(b"\n", 1)[0].decode().strip()
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"stand-in {self.name} printed no URL: {self.err.read_text('utf-8', 'replace')}")

    def stop(self) -> dict[str, bytes]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise RuntimeError(f"stand-in {self.name} did not stop on SIGTERM")
        return {f"{self.name}.stdout": self.out.read_bytes(), f"{self.name}.stderr": self.err.read_bytes(),
                f"{self.name}.exit_code": f"{rc}\n".encode()}


def _today() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d")


def _run_cli(argv: Iterable[str], ctx: _Context, case: Any, extra_env: Iterable[tuple[str, str]],
             timeout: float) -> subprocess.CompletedProcess[bytes]:
    env = _base_env(ctx, case)
    env.update({k: ctx.fill(v) for k, v in extra_env})
    args = [ctx.fill(a) for a in argv]
    ctx.days.add(_today())
    try:
        if ctx.zygote is None:
            return subprocess.run([*cli(), *args], cwd=_cwd(ctx, case), env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=timeout)
        out, err = ctx.sandbox / HARNESS_FOLDER / "cli.stdout", ctx.sandbox / HARNESS_FOLDER / "cli.stderr"
        rc = ctx.zygote.run(args, _cwd(ctx, case), env, out, err, timeout)
        if rc == -signal.SIGALRM:
            raise subprocess.TimeoutExpired(args, timeout)
        return subprocess.CompletedProcess(args, rc, out.read_bytes(), err.read_bytes())
    finally:
        ctx.days.add(_today())


def _setup(step: Any, ctx: _Context, case: Any) -> None:
    sb = ctx.sandbox
    if isinstance(step, cases.Copy):
        src, dst = sb / step.src, sb / step.dst
        if src.is_dir():
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copy2(src, dst)
    elif isinstance(step, cases.Write):
        (sb / step.path).parent.mkdir(parents=True, exist_ok=True)
        (sb / step.path).write_bytes(step.text.encode("utf-8"))
    elif isinstance(step, cases.Append):
        with open(sb / step.path, "ab") as f:
            f.write(step.text.encode("utf-8"))
    elif isinstance(step, cases.Replace):
        text = (sb / step.path).read_text("utf-8")
        if text.count(step.old) != 1:
            raise RuntimeError(f"setup: {step.path} holds {step.old!r} {text.count(step.old)} times, not once")
        (sb / step.path).write_bytes(text.replace(step.old, step.new).encode("utf-8"))
    elif isinstance(step, cases.DeleteLines):
        lines = (sb / step.path).read_bytes().split(b"\n")
        del lines[step.first - 1:step.last]
        (sb / step.path).write_bytes(b"\n".join(lines))
    elif isinstance(step, cases.Cli):
        done = _run_cli(step.argv, ctx, case, (*case.env, *step.env), case.timeout)
        if step.rc != -1 and done.returncode != step.rc:
            raise RuntimeError(f"setup `judge-replay {' '.join(step.argv)}` exited {done.returncode}, not {step.rc}:\n"
                               + done.stderr.decode("utf-8", "replace")[-2000:])
    else:
        raise TypeError(f"unknown setup step {step!r}")


def run_case(case: Any, root: Path, *, keep: bool = False, zygote: _Zygote | None = None) -> Outcome:
    """Run one case in a new sandbox under `root`; its streams normalised. With `zygote`, each
    `judge-replay` run of the case is a child forked from it, else a new process."""
    started = time.monotonic()
    outcome = Outcome(case)
    sandbox = _make_sandbox(root, case.name)
    ctx = _Context(sandbox, zygote)
    stand_ins: list[_StandIn] = []
    repo_before = _repo_state() if case.cwd == "repo" else None
    try:
        before = _inventory(sandbox)
        if case.stand_ins is not None:
            env = _base_env(ctx, case)
            proj = sandbox / "proj"
            stand_ins.append(_StandIn("sim-learn", ["sim", "learn", "--pages", case.stand_ins.pages, "--port", "0"],
                                      ctx, proj, env))
            stand_ins.append(_StandIn("sim-model", ["sim", "model", "--port", "0", *case.stand_ins.model_args],
                                      ctx, proj, env))
            for key, s in zip(("LEARN_URL", "MODEL_URL"), stand_ins):
                ctx.urls[key] = s.url()
                m = re.match(r"https?://127\.0\.0\.1:(\d+)", ctx.urls[key])
                if not m:
                    raise RuntimeError(f"{s.name} printed {ctx.urls[key]!r}, not a loopback URL")
                ctx.ports[key] = int(m[1])
        for step in case.setup:
            _setup(step, ctx, case)
        done = _run_cli(case.argv, ctx, case, case.env, case.timeout)
        streams = {"stdout": done.stdout, "stderr": done.stderr, "exit_code": f"{done.returncode}\n".encode()}
        for s in stand_ins:
            streams.update(s.stop())
        stand_ins = []
        for path in case.files:
            p = sandbox / path
            streams[f"files/{path}"] = p.read_bytes() if p.is_file() else b"<missing>\n"
        streams["written"] = _written(before, _inventory(sandbox))
        if repo_before is not None and _repo_state() != repo_before:
            changed = sorted(set(_repo_state().items()) ^ set(repo_before.items()))
            raise RuntimeError(f"the case changed files of the repository: {changed[:10]}")
        outcome.streams = {name: normalise(data, case, ctx) for name, data in streams.items()}
    except subprocess.TimeoutExpired as exc:
        outcome.error = f"timed out after {exc.timeout} s: judge-replay {' '.join(case.argv)}"
    except Exception as exc:  # a harness or setup failure: reported as such
        outcome.error = f"{type(exc).__name__}: {exc}"
    finally:
        for s in stand_ins:
            try:
                s.stop()
            except Exception:
                pass
        if not keep:
            shutil.rmtree(sandbox, ignore_errors=True)
    outcome.seconds = time.monotonic() - started
    return outcome


# --------------------------------------------------------------------------- normalising


_RECORDED_AT = re.compile(rb'("recorded_at":\s*")\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ(")')
_VERSIONS = re.compile(rb'"versions":\s*\{[^{}]*\}')


def normalise(data: bytes, case: Any, ctx: _Context) -> bytes:
    """Only what varies from run to run, each for its reason (cases.py's docstring)."""
    # the sandbox is a new temporary folder each time (its real path too, where TMPDIR is a symlink)
    forms = {str(ctx.sandbox), str(ctx.sandbox.resolve())}
    for form in sorted(forms, key=len, reverse=True):
        data = data.replace(form.encode(), b"<SANDBOX>")
    # stand-ins listen on a port the OS picks (--port 0)
    for key, port in ctx.ports.items():
        data = re.sub(rb"127\.0\.0\.1:%d(?!\d)" % port, b"127.0.0.1:<" + key.removesuffix("_URL").encode() + b"_PORT>",
                      data)
    if "today" in case.normalise:  # drift / diff --confirm suggest a run named <run>-<YYYYMMDD of today>
        for day in sorted(ctx.days):
            data = data.replace(day.encode(), b"<TODAY>")
    if "recorded_at" in case.normalise:  # a recording without SOURCE_DATE_EPOCH stamps the wall clock
        data = _RECORDED_AT.sub(rb"\1<RECORDED_AT>\2", data)
    if "versions" in case.normalise:  # the environment's distributions, not the code under test
        data = _VERSIONS.sub(lambda m: _installed(m[0]), data)
    return data


def _installed(block: bytes) -> bytes:
    for name, version in installed_versions().items():
        if name in VERSIONED and version is not None:
            block = block.replace(b'"%s": "%s"' % (name.encode(), version.encode()),
                                  b'"%s": "<installed>"' % name.encode())
    return block


# --------------------------------------------------------------------------- expected outputs


def expected_streams(name: str) -> dict[str, bytes] | None:
    folder = EXPECTED / name
    if not folder.is_dir():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def differences(outcome: Outcome, expected: dict[str, bytes] | None = None) -> list[str]:
    """Unified diffs of every stream that differs from the expected one (empty: all byte-identical)."""
    case = outcome.case
    if outcome.error is not None:
        return [f"{case.name}: {outcome.error}"]
    if expected is None:
        expected = expected_streams(case.expected_name)
    if expected is None:
        return [f"{case.name}: no expected output in {EXPECTED / case.expected_name} (run scripts/golden.py --update)"]
    out = []
    for stream in sorted(expected.keys() | outcome.streams.keys()):
        want, got = expected.get(stream), outcome.streams.get(stream)
        if want == got:
            continue
        if want is None or got is None:
            out.append(f"{case.name}: stream {stream} is {'new' if want is None else 'missing'}")
            continue
        a = want.decode("utf-8", "backslashreplace").splitlines(keepends=True)
        b = got.decode("utf-8", "backslashreplace").splitlines(keepends=True)
        diff = "".join(difflib.unified_diff(a, b, f"expected/{case.expected_name}/{stream}",
                                            f"actual/{case.name}/{stream}", n=2))
        if not diff or a == b:  # same lines, other bytes (a line end, an invalid byte): say so
            diff = f"{stream}: the bytes differ: expected {want[:200]!r}... got {got[:200]!r}...\n"
        out.append(diff if diff.endswith("\n") else diff + "\n")
    return out


def write_expected(outcome: Outcome) -> None:
    folder = EXPECTED / outcome.case.name
    if folder.exists():
        shutil.rmtree(folder)
    for stream, data in outcome.streams.items():
        path = folder / stream
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def orphans(all_cases: Iterable[Any]) -> list[str]:
    """Expected folders no case writes."""
    names = {c.name for c in all_cases if c.expect is None}
    return sorted(p.name for p in EXPECTED.iterdir() if p.is_dir() and p.name not in names) if EXPECTED.is_dir() else []


class CaseRunner:
    """Cases run one at a time, as they are asked for, in sandboxes under `root`, through one fork server
    kept between them (or as new processes, when `fork` is off: the rule of `run_cases`). For a test
    session: each pytest-xdist worker runs only the cases of the tests it was given."""

    def __init__(self, root: Path, *, fork: bool | None = None) -> None:
        if fork is None:
            fork = os.environ.get("GOLDEN_SUBPROCESS", "") in ("", "0") and hasattr(os, "fork")
        self.root = root
        self._fork = fork
        self._zygote: _Zygote | None = None

    def run(self, case: Any) -> Outcome:
        if self._fork and self._zygote is None:
            cli()  # fail once, clearly, when the console script is wrong
            self._zygote = _Zygote(self.root / "fork-server.log")
        return run_case(case, self.root, zygote=self._zygote)

    def close(self) -> None:
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None


def default_workers() -> int:
    return max(2, min(4, (os.cpu_count() or 2) + 1))


def run_cases(selected: list[Any], *, workers: int | None = None, keep: bool = False,
              root: Path | None = None, fork: bool | None = None) -> list[Outcome]:
    """Run the cases, several at once (each in its own sandbox: they share nothing), slowest first.

    `fork` (default: on, unless GOLDEN_SUBPROCESS=1): each worker runs its `judge-replay` commands as
    children forked from a fork server (`_Zygote`) instead of new processes, to save the imports; the
    outputs are the same bytes (`scripts/golden.py --compare-modes` checks it), and GOLDEN_SUBPROCESS=1 /
    `scripts/golden.py --subprocess` runs every command as a new process."""
    cli()  # fail once, clearly, before any case when the console script is wrong
    if fork is None:
        fork = os.environ.get("GOLDEN_SUBPROCESS", "") in ("", "0") and hasattr(os, "fork")
    made = root is None
    root = Path(tempfile.mkdtemp(prefix="judge-replay-golden-")) if root is None else root
    root.mkdir(parents=True, exist_ok=True)
    order = sorted(selected, key=lambda c: (c.stand_ins is None, not c.setup, c.name))
    zygotes: dict[int, _Zygote] = {}
    lock = threading.Lock()

    def one(case: Any) -> Outcome:
        zygote = None
        if fork:
            key = threading.get_ident()
            with lock:
                zygote = zygotes.get(key)
            if zygote is None:
                zygote = _Zygote(root / f"fork-server-{len(zygotes)}-{key}.log")
                with lock:
                    zygotes[key] = zygote
        return run_case(case, root, keep=keep, zygote=zygote)

    try:
        with concurrent.futures.ThreadPoolExecutor(workers or default_workers()) as pool:
            done = dict(zip((c.name for c in order), pool.map(one, order)))
    finally:
        for zygote in zygotes.values():
            zygote.close()
        if made and not keep:
            shutil.rmtree(root, ignore_errors=True)
    return [done[c.name] for c in selected]
