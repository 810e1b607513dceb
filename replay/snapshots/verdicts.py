"""A run's verdicts, replayed from its cassettes, as a snapshot compares them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from replay.runs.folder import Run
from replay.schema.results import ResultsFile
from replay.snapshots.format import verdict_documents
from replay.snapshots.session import note_failed_run, run_path

# --------------------------------------------------------------------------- the value compared


@dataclass(frozen=True, eq=False)
class RunVerdicts:
    """A run's verdicts as a snapshot sees them. Equal when their snapshot documents are equal."""

    name: str
    """The run's name (its folder name): names the snapshot folder."""
    results: ResultsFile
    path: Path | None = field(default=None)
    """The run folder, for messages; not compared."""

    __hash__: ClassVar[None]  # type: ignore[assignment]

    @classmethod
    def recorded(cls, path: str | Path) -> RunVerdicts:
        """The verdicts recorded in a run folder's `results.json`, without replaying its cassettes."""
        return _load(path, lambda run: run.results)

    def documents(self) -> dict[str, dict[str, Any]]:
        return verdict_documents(self.name, self.results)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RunVerdicts):
            return self.documents() == other.documents()
        return NotImplemented  # a SnapshotAssertion on the right then compares


def replay_run(path: str | Path) -> RunVerdicts:
    """Replay a run folder offline from its cassettes (nothing leaves the machine) and return its
    verdicts; a request missing from a cassette raises `CassetteMiss`."""
    from replay.judge.replaying import replay_run as replay  # the runner pulls in both HTTP stacks: load on use

    return _load(path, replay)


def _load(path: str | Path, results_of: Callable[[Run], ResultsFile]) -> RunVerdicts:
    run = Run(run_path(path))
    try:
        results = results_of(run)
    except BaseException:
        note_failed_run(run.name)
        raise
    return RunVerdicts(run.name, results, run.path)
