"""A run folder as a git commit holds it: copied out of git into a temporary folder for as long as it is
read, and removed afterwards whatever happens (no git worktree, nothing left behind)."""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from replay.errors import UsageError


def _git(args: list[str], cwd: Path) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"--a-at needs git: {exc}") from exc
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"--a-at: git {args[0]} failed: {said[-1] if said else 'exit ' + str(done.returncode)}")
    return done.stdout


@contextmanager
def run_at_commit(run: str | Path, commit: str) -> Iterator[Path]:
    """The run folder `run` (a path in a git work tree, as it is named now) as `commit` holds it, extracted
    with `git archive` into a temporary folder; the folder is removed when the block ends, however it ends.
    A UsageError when git, the commit or the folder in it is missing."""
    if commit.startswith("-"):
        raise UsageError(f"--a-at {commit}: not a commit")
    path = Path(run).absolute()
    parent = path.parent
    while not parent.is_dir() and parent != parent.parent:  # the folder may exist only in the commit
        parent = parent.parent
    top = Path(_git(["rev-parse", "--show-toplevel"], parent).decode("utf-8").strip())
    try:
        inside = path.resolve().relative_to(top.resolve()).as_posix() if path.exists() else \
            path.relative_to(top).as_posix()
    except ValueError as exc:
        raise UsageError(f"--a-at: {run} is not inside the git work tree {top}") from exc
    data = _git(["archive", "--format=tar", f"{commit}^{{tree}}", "--", inside], top)
    with tempfile.TemporaryDirectory(prefix="judge-replay-at-") as folder:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            archive.extractall(folder, filter="data")
        extracted = Path(folder) / inside
        if not (extracted / "run.json").is_file():
            raise UsageError(f"--a-at {commit}: the commit holds no run folder at {inside}")
        yield extracted
