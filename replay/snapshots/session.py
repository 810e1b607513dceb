"""What one pytest session's verdict snapshots found, kept in that session's `config.stash`: an inner
(pytester) session and each pytest-xdist worker hold their own, and none outlives its session."""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class SnapshotSession:
    """The records of one pytest session's verdict snapshot assertions."""

    failed_runs: set[str] = field(default_factory=set)
    """Runs whose replay raised in this session: their snapshots are neither reported unused nor deleted."""
    mismatches: list[list[str]] = field(default_factory=list)
    """Every mismatch explained in this session, in full: the terminal summary lists them, since pytest cuts
    an assertion message after 8 lines."""
    owners: dict[str, Path] = field(default_factory=dict)
    """Snapshot name -> the run folder asserted under it: a second run of the same folder name elsewhere
    would share (and, updated, overwrite) its snapshot."""
    keep_all: bool = False
    """The session was interrupted: no snapshot is deleted as unused (`keep_every_snapshot`)."""
    rootdir: Path | None = None
    """pytest's rootdir: relative run paths of this session's tests are taken from it (`run_path`)."""


SESSION = pytest.StashKey[SnapshotSession]()
"""Where a session's records live in its `config.stash`."""
_ACTIVE_TOKEN = pytest.StashKey[Token[SnapshotSession | None]]()

_active: ContextVar[SnapshotSession | None] = ContextVar("judge_replay_snapshot_session", default=None)
"""The records of the innermost session running, for what its tests call with no pytest object at hand
(`replay_run`): set when a session starts, given back when it ends. A pointer, not a store: the records
live in the session's stash."""

WORKER_OUTPUT = "judge_replay_snapshot_mismatches"
"""The key under which a pytest-xdist worker hands its mismatches to the controller (`config.workeroutput`)."""


def begin_session(config: pytest.Config) -> None:
    """Start this session's records; they are the running session's until `end_session`."""
    records = SnapshotSession(rootdir=config.rootpath)
    config.stash[SESSION] = records
    config.stash[_ACTIVE_TOKEN] = _active.set(records)


def end_session(config: pytest.Config) -> None:
    """The session is over: the session it ran inside (pytester), if any, is the running one again."""
    token = config.stash.get(_ACTIVE_TOKEN, None)
    if token is not None:
        del config.stash[_ACTIVE_TOKEN]
        _active.reset(token)


def session_records(config: pytest.Config) -> SnapshotSession:
    """This session's records (made on first use where the plugin's session start did not run)."""
    return config.stash.setdefault(SESSION, SnapshotSession())


def run_path(path: str | Path) -> Path:
    """Where a run path a test names is: a relative one is taken from the running session's rootdir, so
    `pytest` started from a subfolder finds the same runs (the working folder when the rootdir has no such
    path, or outside any session)."""
    given = Path(path)
    records = _active.get()
    if given.is_absolute() or records is None or records.rootdir is None:
        return given
    from_root = records.rootdir / given
    return from_root if from_root.exists() or not given.exists() else given


def note_failed_run(name: str) -> None:
    """A run's replay raised in the running session (outside any session: nothing to note)."""
    records = _active.get()
    if records is not None:
        records.failed_runs.add(name)


def keep_every_snapshot(config: pytest.Config) -> None:
    """This session was interrupted: delete no snapshot as unused (ours are deleted through
    `VerdictSnapshotExtension.delete_snapshots`), and tell syrupy, as `--snapshot-disable-unused` does, not
    to report them as unused."""
    session_records(config).keep_all = True
    config.option.disable_unused_snapshots = True


def hand_to_controller(config: pytest.Config) -> None:
    """On a pytest-xdist worker: give the controller, which prints the summary, this worker's mismatches."""
    output = getattr(config, "workeroutput", None)
    if output is not None:
        output[WORKER_OUTPUT] = session_records(config).mismatches


def take_from_worker(config: pytest.Config, workeroutput: dict[str, object] | None) -> None:
    """On the pytest-xdist controller: a worker's mismatches, added to the session's."""
    mismatches = (workeroutput or {}).get(WORKER_OUTPUT)
    if isinstance(mismatches, list):
        session_records(config).mismatches.extend([str(line) for line in lines] for lines in mismatches)
