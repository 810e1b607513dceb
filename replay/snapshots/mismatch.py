"""A snapshot mismatch explained: which verdicts moved, and the command that says why."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay.core.display import printable
from replay.files.paths import display_path, portable_path
from replay.snapshots.format import HEADER_KEYS, unpack
from replay.snapshots.spread import VERDICTS_KEY, became_unstable

# --------------------------------------------------------------------------- explaining a mismatch


@dataclass
class _Side:
    """One side of a comparison, parsed back from the compared string."""

    header: dict[str, Any] = field(default_factory=dict)
    claims: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)
    files: int = 0


def _parse(data: str) -> _Side:
    side = _Side()
    for name, text in sorted(unpack(data).items()):
        side.files += 1
        try:
            doc = json.loads(text)
            if not side.header:
                side.header = {k: doc.get(k) for k in HEADER_KEYS}
            for claim in doc["claims"]:
                side.claims[(str(doc["file"]), str(claim["id"]))] = claim
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            side.unreadable.append(f"{name} ({type(exc).__name__}: {exc})")
    return side


def _rule(claim: dict[str, Any], was: dict[str, Any] | None = None) -> str:
    rule = claim.get("rule") or ""
    old = (was or {}).get("rule") or ""
    if rule and old and old != rule:
        return f"  (rule {rule}, was {old})"
    return f"  (rule {rule})" if rule else ""


def _verdict(claim: dict[str, Any]) -> str:
    return str(claim.get("verdict") or "no verdict")


def _counts(claim: dict[str, Any]) -> str:
    """A claim's verdict counts over its samples: `grounded 2, not_grounded 1` (a claim judged once: its verdict)."""
    counts = claim.get(VERDICTS_KEY)
    if not isinstance(counts, dict):
        return f"{_verdict(claim)} 1"
    return ", ".join(f"{k} {n}" for k, n in counts.items() if n) or "none"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _summary_length(lines: list[str]) -> int:
    """How many of `explain_mismatch`'s lines are the summary and commands (the rest list claims)."""
    return next((i for i, line in enumerate(lines) if line.startswith("  ")), len(lines))


def explain_mismatch(
    received: str,
    snapshot: str | None,
    *,
    snapshot_folder: Path,
    run_path: Path | None = None,
) -> list[str]:
    """The assertion message: a summary and the commands that explain and accept the change, then every
    claim whose verdict flipped, claims added and removed, and other claim changes (indented)."""
    new = _parse(received)
    folder = f"{portable_path(snapshot_folder)}/"
    run_name = snapshot_folder.name
    if snapshot is None:
        return [printable(f"no snapshot of run {run_name} yet: `pytest --snapshot-update` writes {folder} "
                          f"({_plural(new.files, 'file')})")]
    old = _parse(snapshot)
    flipped = sorted(k for k in new.claims.keys() & old.claims.keys() if new.claims[k].get("verdict") != old.claims[k].get("verdict"))
    added = sorted(new.claims.keys() - old.claims.keys())
    removed = sorted(old.claims.keys() - new.claims.keys())
    unsettled = sorted(k for k in new.claims.keys() & old.claims.keys()
                       if k not in flipped and became_unstable(old.claims[k], new.claims[k]))
    changed = sorted(k for k in new.claims.keys() & old.claims.keys()
                     if k not in flipped and k not in unsettled and new.claims[k] != old.claims[k])
    # The summary and the commands come first: pytest cuts an assertion message after 8 lines (640
    # characters) unless run with -vv; the plugin's terminal summary repeats the whole list.
    lines = [f"run {run_name} differs from its snapshot {folder}: {_plural(len(flipped), 'verdict')} flipped, "
             f"{_plural(len(added), 'claim')} added, {len(removed)} removed"
             + (f", {len(unsettled)} stable became unstable" if unsettled else "")
             + (f", {len(changed)} changed otherwise" if changed else "")]
    if flipped or added or removed:
        explain = "explain the flips" if flipped else "compare the runs"
        command = snapshotted_diff_command(run_path, snapshot_folder) if run_path else None
        if command:
            lines.append(f"{explain}: {command}")
        else:
            lines.append(f"{explain}: no git commit holds {folder} with its run, so there is no earlier run to "
                         "diff against: commit runs with their snapshots")
    lines.append(f"accept: pytest --snapshot-update, then review `git diff {shlex.quote(str(folder))}`")
    summary = len(lines)
    old_version, new_version = old.header.get("serializer_version"), new.header.get("serializer_version")
    if old.header and old_version != new_version:
        lines.append(f"  the snapshot was written by serializer version {old_version}, this is version "
                     f"{new_version}: re-run with --snapshot-update")
    header_changes = [f"{k} {old.header.get(k)} → {new.header.get(k)}" for k in HEADER_KEYS[1:]
                      if old.header and new.header and old.header.get(k) != new.header.get(k)]
    if header_changes:
        lines.append("  header: " + ", ".join(header_changes))
    for file, cid in flipped:
        was, now = old.claims[(file, cid)], new.claims[(file, cid)]
        lines.append(f"  {file}:{cid}  {_verdict(was)} → {_verdict(now)}{_rule(now, was)}")
    for file, cid in unsettled:
        was, now = old.claims[(file, cid)], new.claims[(file, cid)]
        lines.append(f"  {file}:{cid}  stable {_verdict(was)} became unstable: verdicts {_counts(was)} → {_counts(now)}")
    for file, cid in added:
        lines.append(f"  {file}:{cid}  added: {_verdict(new.claims[(file, cid)])}{_rule(new.claims[(file, cid)])}")
    for file, cid in removed:
        lines.append(f"  {file}:{cid}  removed (was {_verdict(old.claims[(file, cid)])}){_rule(old.claims[(file, cid)])}")
    for file, cid in changed:
        was, now = old.claims[(file, cid)], new.claims[(file, cid)]
        what = [f"{k} {was.get(k)} → {now.get(k)}" if k in ("rule", "quote_verified") else k
                for k in sorted(was.keys() | now.keys()) if was.get(k) != now.get(k)]
        lines.append(f"  {file}:{cid}  same verdict ({_verdict(now)}), changed: {', '.join(what)}")
    lines.extend(f"  {folder}{entry}: not a readable verdict snapshot" for entry in old.unreadable)
    if len(lines) == summary and not old.unreadable:
        lines.append("  the claims are the same: the snapshot files differ only in their formatting")
    return [printable(line) for line in lines]


def _git(*args: str, cwd: Path) -> str | None:
    """git's output, or None when git is missing or says no."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _committed_together(root: Path, commit: str, run_in_repo: str, snapshot_in_repo: str) -> bool:
    """Whether `commit` holds the run its snapshot was written from: the run's results.json there gives
    each claim the verdict the snapshot there holds (a snapshot committed without its new run does not)."""
    results = _git("show", f"{commit}:{run_in_repo}/results.json", cwd=root)
    names = _git("ls-tree", "--name-only", f"{commit}:{snapshot_in_repo}", cwd=root)
    if results is None or not names:
        return False
    try:
        recorded = {(str(f["file"]), str(r["id"])): r.get("judge_verdict")
                    for f in json.loads(results)["files"] for r in f["results"]}
        for name in names.splitlines():
            if not name.endswith(".json"):
                continue
            shot = json.loads(_git("show", f"{commit}:{snapshot_in_repo}/{name}", cwd=root) or "null")
            if any(recorded.get((str(shot["file"]), str(c["id"])), "missing") != c.get("verdict") for c in shot["claims"]):
                return False
    except (ValueError, KeyError, TypeError):  # not files of ours as they should be: no command
        return False
    return True


def snapshotted_diff_command(run_path: Path, snapshot_folder: Path) -> str | None:
    """The command that, pasted where pytest runs, diffs the run as it was when its snapshot was last
    committed against the run as it is now: `judge-replay diff --a-at COMMIT RUN RUN` (the old run is
    copied out of git into a temporary folder and removed afterwards: nothing is left behind). None when
    no commit holds the snapshot and the run together."""
    run_dir = run_path.resolve()
    top = _git("rev-parse", "--show-toplevel", cwd=run_dir)
    if not top:
        return None
    root = Path(top)
    try:
        run_in_repo = run_dir.relative_to(root).as_posix()
        snapshot_in_repo = snapshot_folder.resolve().relative_to(root).as_posix()
    except ValueError:
        return None
    if _git("status", "--porcelain", "--", snapshot_in_repo, cwd=root) != "":
        return None  # the snapshot as it is now (an update not committed) is in no commit
    commit = _git("log", "-1", "--format=%h", "--", snapshot_in_repo, cwd=root)
    if not commit or not _committed_together(root, commit, run_in_repo, snapshot_in_repo):
        return None
    run = shlex.quote(display_path(run_dir))
    return f"judge-replay diff --a-at {commit} {run} {run}"
