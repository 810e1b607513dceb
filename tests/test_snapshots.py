"""Every recorded run under cassettes/ replays offline to the verdicts in its snapshot, snapshots/<run>/."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay import replay_run
from replay._runs import find_runs
from replay.snapshot import VerdictSnapshotAssertion

CASSETTES = Path(__file__).resolve().parents[1] / "cassettes"


def _runs() -> list[object]:
    runs = find_runs(CASSETTES)
    if not runs:  # one failing test, never an empty (silently passing) parametrization
        return [pytest.param(None, id="no-recorded-runs")]
    return [pytest.param(run.path, id=run.name) for run in runs]


@pytest.mark.parametrize("run", _runs())
def test_replayed_verdicts_match_snapshot(run: Path | None, verdict_snapshot: VerdictSnapshotAssertion) -> None:
    if run is None:
        pytest.fail(f"no recorded runs under cassettes/ ({CASSETTES}): record the bundled demo runs, then "
                    "write their snapshots with `pytest tests/test_snapshots.py --snapshot-update`")
    assert replay_run(run) == verdict_snapshot
