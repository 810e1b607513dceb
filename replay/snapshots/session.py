"""What a pytest session's snapshot assertions found, for its terminal summary."""

from __future__ import annotations

from pathlib import Path

import pytest

_failed_runs: set[str] = set()
"""Runs whose replay raised in this pytest session (reset by the plugin at session start)."""
_mismatches: list[list[str]] = []
"""Every mismatch explained in this pytest session, in full: the plugin's terminal summary lists them,
since pytest cuts an assertion message after 8 lines (reset by the plugin at session start)."""
_owners: dict[str, Path] = {}
"""Snapshot name -> the run folder asserted under it in this pytest session: a second run of the same
folder name elsewhere would share (and, updated, overwrite) its snapshot."""


def session_mismatches() -> list[list[str]]:
    """The full explanation of every verdict snapshot that failed in this pytest session."""
    return list(_mismatches)


_keep_all = [False]
"""Set when this pytest session was interrupted: no snapshot is deleted as unused (`keep_every_snapshot`)."""


def keep_every_snapshot(config: pytest.Config) -> None:
    """This session was interrupted: delete no snapshot as unused (ours are deleted through
    `VerdictSnapshotExtension.delete_snapshots`), and tell syrupy, as `--snapshot-disable-unused` does, not
    to report them as unused."""
    _keep_all[0] = True
    config.option.disable_unused_snapshots = True


_outer_sessions: list[tuple[set[str], list[list[str]], dict[str, Path]]] = []


def begin_session() -> None:
    """Start a pytest session's records afresh, keeping those of a session it runs inside (pytester)."""
    _outer_sessions.append((set(_failed_runs), list(_mismatches), dict(_owners)))
    _keep_all[0] = False
    _failed_runs.clear()
    _mismatches.clear()
    _owners.clear()


def end_session() -> None:
    """Give the records of the enclosing session, if any, back."""
    if _outer_sessions:
        failed, mismatches, owners = _outer_sessions.pop()
        _failed_runs.clear()
        _failed_runs.update(failed)
        _mismatches[:] = mismatches
        _owners.clear()
        _owners.update(owners)
