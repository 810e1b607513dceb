"""Benchmark equipment: claims about the real-size Learn pages, stand-ins, recorded runs, timed processes.

Shared by `bench_replay.py` and `bench_scale.py`. A benchmark workspace is a folder under
`.judge-replay/bench/` (ignored by git) laid out like a user's project:

    pyproject.toml        [tool.judge-replay] cassettes = "runs", page-store, gold
    claims/kb-NNNN.json   N claims files of 10 claims each, about the pages of tests/data/learn-pages
    gold.json             a label for every claim (how the claim was made: copied, altered, searched)
    runs/before/          recorded against the Learn stand-in serving learn-pages/before
    runs/after/           the same claims recorded against learn-pages/after (what diff and drift compare)

Every run is recorded through the real CLI (`judge-replay judge --mode record`) against the stand-ins
(`judge-replay sim learn|model`, separate processes on 127.0.0.1), so its cassettes have exactly the
shape our recorder writes.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "tests" / "data" / "learn-pages"
BENCH = ROOT / ".judge-replay" / "bench"
CLI = Path(sys.executable).parent / "judge-replay"
CLAIMS_PER_FILE = 10
GENERATOR = 2
"""Bump when the claims generator changes: cached workspaces of another version are rebuilt."""

_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_NUMBER = re.compile(r"\d[\d,.]*")
_MARKUP = re.compile(r"[|*`#<>\[\]]|<br>")


@dataclass(frozen=True)
class Page:
    url: str
    file: str
    lines: tuple[str, ...]
    """Lines worth a claim: prose or table rows with a number in them, markup stripped."""


def load_pages(snapshot: str = "before") -> list[Page]:
    pages = []
    for path in sorted((PAGES / snapshot).glob("*.md")):
        text = path.read_text("utf-8")
        front = _FRONT.match(text)
        assert front, path
        url = re.search(r'^url: "?([^"\n]+)"?$', front.group(1), re.M)
        assert url, path
        lines = []
        for raw in text[front.end():].splitlines():
            line = " ".join(_MARKUP.sub(" ", raw.replace("<br>", " ")).split())
            if 40 <= len(line) <= 240 and _NUMBER.search(line) and not line.startswith(("-", ":", "!")):
                lines.append(line)
        pages.append(Page(url.group(1).strip(), path.name, tuple(lines)))
    return pages


def _claim_text(line: str, words: int = 16) -> str:
    return " ".join(line.split()[:words]).rstrip(",;:") + "."


def _altered(text: str, rng: random.Random) -> str:
    """The claim with one of its numbers changed (a claim the page does not support)."""
    numbers = list(_NUMBER.finditer(text))
    m = rng.choice(numbers)
    digits = m.group().rstrip(".,")
    new = str(int(re.sub(r"\D", "", digits) or "0") * 3 + 7)
    return text[: m.start()] + new + text[m.start() + len(digits):]


def make_claims(folder: Path, files: int) -> None:
    """`files` claims files of 10 claims under folder/claims, and folder/gold.json (deterministic)."""
    pages = load_pages("before")
    changes = json.loads((PAGES / "changes.json").read_text("utf-8"))
    changed_lines = {}
    for change in changes:
        line = " ".join(_MARKUP.sub(" ", str(change.get("before") or "").replace("<br>", " ")).split())
        if _NUMBER.search(line) and len(line) >= 30:
            changed_lines.setdefault(change["file"], []).append(line)
    rng = random.Random(13)
    (folder / "claims").mkdir(parents=True, exist_ok=True)
    gold = []
    for k in range(files):
        main, other = pages[k % len(pages)], pages[(k + 2) % len(pages)]
        name = f"docs/kb/article-{k:04d}.md"
        drawn: list[tuple[str, str | None, str]] = []  # (text, evidence_url, gold label)
        changed = changed_lines.get(main.file, [])
        for _ in range(2):  # facts that differ between the before and after pages
            line = rng.choice(changed) if changed else rng.choice(main.lines)
            drawn.append((_claim_text(line), main.url, "correct"))
        for _ in range(3):
            drawn.append((_claim_text(rng.choice(main.lines)), main.url, "correct"))
        numbered = [t for t in map(_claim_text, main.lines) if _NUMBER.search(t)]
        for _ in range(2):
            drawn.append((_altered(rng.choice(numbered), rng), main.url, "wrong"))
        for _ in range(2):
            drawn.append((_claim_text(rng.choice(other.lines)), other.url, "correct"))
        drawn.append((_claim_text(rng.choice(other.lines), 10), None, "correct"))  # the judge searches
        claims = []
        for j, (text, url, label) in enumerate(drawn):
            claim = {"id": f"kb{k:04d}-{j + 1:02d}", "claim": text, "claim_type": "version"}
            if url:
                claim["evidence_url"] = url
            claims.append(claim)
            gold.append({"file": name, "id": claim["id"], "label": label})
        batch = {"file": name, "claims": claims}
        (folder / "claims" / f"kb-{k:04d}.json").write_text(json.dumps(batch, indent=2) + "\n", "utf-8")
    (folder / "gold.json").write_text(json.dumps({"name": "bench", "items": gold}, indent=2) + "\n", "utf-8")


# --------------------------------------------------------------------------- processes


@dataclass(frozen=True)
class Measure:
    """One whole process: wall seconds, CPU seconds (user+sys), peak RSS in MB, exit code, stdout."""

    wall: float
    cpu: float
    rss_mb: float
    returncode: int
    stdout: str

    def as_json(self) -> dict[str, float]:
        return {"wall_s": round(self.wall, 3), "cpu_s": round(self.cpu, 3), "peak_rss_mb": round(self.rss_mb, 1)}


def timed(args: list[str], cwd: Path, *, check: bool = True, ok_codes: tuple[int, ...] = (0,)) -> Measure:
    """Run a process to its end and measure it alone (os.wait4 gives that child's own rusage)."""
    out_path = cwd / ".bench-stdout"
    with open(out_path, "w+b") as out, open(cwd / ".bench-stderr", "w+b") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        errors = err.read().decode("utf-8", "replace")
    stdout = out_path.read_text("utf-8", "replace")
    if check and proc.returncode not in ok_codes:
        raise SystemExit(f"{' '.join(args)} (in {cwd}) exited {proc.returncode}:\n{errors[-3000:]}{stdout[-2000:]}")
    return Measure(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, stdout)


def compiled() -> None:
    """Our package's modules compiled to bytecode before anything is timed (what an install leaves), so
    that no timed command pays for compiling them (`_env` lets each command keep what it compiles)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "replay")], check=True, env=_env(),
                   stdout=subprocess.DEVNULL)


def _env() -> dict[str, str]:
    """The environment each timed command runs in: ours, with a key set, no colour, and Python's bytecode
    cache allowed (an installed package runs from its compiled modules; a PYTHONDONTWRITEBYTECODE=1 in the
    environment would make every command compile every module it imports, about 0.1 s each time)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-real-key")
    env["NO_COLOR"] = "1"
    return env


@dataclass(frozen=True)
class StandIns:
    before: str
    after: str
    model: str


@contextmanager
def stand_ins() -> Iterator[StandIns]:
    """The Learn stand-in over each page snapshot, and the model stand-in, as separate processes."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> str:
        proc = subprocess.Popen([str(CLI), "sim", *args, "--port", "0", "--quiet"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise SystemExit(f"the stand-in `sim {' '.join(args)}` did not start")
        return url

    try:
        yield StandIns(start("learn", "--pages", str(PAGES / "before")),
                       start("learn", "--pages", str(PAGES / "after")),
                       start("model"))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


def workspace(files: int, root: Path = BENCH) -> Path:
    """The benchmark project for `files` claims files under `root` (claims and gold made if missing or
    outdated)."""
    folder = root / f"kb-{files}"
    stamp = folder / "bench.json"
    want = {"generator": GENERATOR, "files": files}
    if not stamp.is_file() or json.loads(stamp.read_text("utf-8")) != want:
        if folder.exists():
            import shutil

            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        make_claims(folder, files)
        (folder / "pyproject.toml").write_text(
            '[tool.judge-replay]\ncassettes = "runs"\npage-store = ".judge-replay/pages"\ngold = "gold.json"\n',
            "utf-8")
        stamp.write_text(json.dumps(want) + "\n", "utf-8")
    return folder


def judge(ws: Path, mode: str, run: str | None, learn_url: str, model_url: str) -> Measure:
    """`judge-replay judge --prompt v3` over the workspace's claims (record/live against the stand-ins)."""
    args = [str(CLI), "judge", "--prompt", "v3", "--claims", "claims", "--mode", mode, "--no-progress",
            "--learn-url", learn_url, "--anthropic-base-url", model_url]
    if run:
        args += ["--run", run, "--force"]
    return timed(args, ws)


def recorded_run(files: int, snapshot: str = "before", root: Path = BENCH) -> Path:
    """A run of `files` claims files recorded against the `snapshot` pages, recorded once and kept."""
    ws = workspace(files, root)
    run = ws / "runs" / snapshot
    if not (run / "results.json").is_file():
        with stand_ins() as urls:
            judge(ws, "record", f"runs/{snapshot}", getattr(urls, snapshot), urls.model)
    return run
