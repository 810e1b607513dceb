"""pytest plugin (entry point `pytest11`): the `verdict_snapshot` fixture and the `--replay-*` options."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from .snapshot import VerdictSnapshotAssertion


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("judge-replay", "judge-replay verdict snapshots")
    group.addoption(
        "--replay-snapshot-dir",
        dest="replay_snapshot_dir",
        default=None,
        metavar="DIR",
        help="Folder holding verdict snapshots, one subfolder per run (default: <rootdir>/snapshots; "
        "a relative path is taken from the rootdir).",
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    from . import snapshot

    snapshot._failed_runs.clear()


@pytest.fixture
def verdict_snapshot(snapshot: SnapshotAssertion) -> VerdictSnapshotAssertion:
    """syrupy's `snapshot`, storing a run's verdicts under `snapshots/<run>/`:
    `assert replay_run("cassettes/v3-demo") == verdict_snapshot`."""
    from .snapshot import VerdictSnapshotAssertion

    return VerdictSnapshotAssertion.from_snapshot(snapshot)
