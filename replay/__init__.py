"""judge-replay: record, replay, grade, snapshot and explain runs of the Learn groundedness judge."""

from .snapshot import RunVerdicts, VerdictSnapshotExtension, replay_run

__all__ = ["RunVerdicts", "VerdictSnapshotExtension", "replay_run"]
