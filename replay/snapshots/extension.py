"""Verdict snapshots: a syrupy extension storing a run's verdicts as one small JSON file per claims file.

    def test_demo(verdict_snapshot):
        assert replay_run("cassettes/v3-demo") == verdict_snapshot

replays the run offline from its cassettes and compares its verdicts with `snapshots/v3-demo/`, one file
per claims file named after its cassette (`docs/a.md` -> `docs_a.md.json`), so that a change shows in
`git diff` as a few lines of the file it is about. The snapshot folder is named after the RUN, not the
test, so parametrized tests map to stable files. `pytest --snapshot-update` rewrites it without calling
any service (runs replay from their cassettes).

A snapshot file holds a header (serializer version, prompt name, the first 12 hex digits of the prompt's
sha256, model), the claims file's name and, per claim sorted by id: verdict, rule, evidence URL (normalised
as Learn URLs are), whether the quote was found in the fetched page, and a 12-digit hash of the quote
(whitespace normalised; null for an empty quote). Left out on purpose:
- timings, tokens, request ids, turns, tool calls and `recorded_at`: they change on every recording;
- the reasons' wording: free text that changes between model versions without the verdict changing
  (a change of evidence still shows through the quote hash);
- error messages: a claim without a verdict shows as `"verdict": null`.
The document is built from an allow-list rather than by masking fields (syrupy's `paths`/`path_type`), so
a field added to the records later never leaks into snapshots.

How this maps onto syrupy: one assertion is one syrupy snapshot, named after the run and stored at the
FOLDER `<snapshot dir>/<run>/`; the extension reads, writes and deletes the folder's files as one unit and
discovers one snapshot per folder. Since a snapshot's name is its run's name, `pytest -k <run>` leaves
the other runs' folders alone (syrupy only counts a snapshot unused when `-k` would have selected it).
A run whose replay raised in this session keeps its snapshot: it is not reported unused nor deleted.

A mismatch's message starts with a summary and the commands that explain it (`snapshotted_diff_command`:
`diff --a-at` the commit that last wrote the snapshot, against the run now) and accept it;
pytest cuts it after 8 lines, so the plugin's terminal summary repeats every mismatch in full.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from syrupy.assertion import DiffMode, SnapshotAssertion
from syrupy.data import Snapshot, SnapshotCollection, SnapshotCollections
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.location import PyTestLocation
from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData, SnapshotIndex

from replay.errors import InputError
from replay.files.json_text import dump_json
from replay.files.regular import read_regular_text
from replay.runs.writer import write_folder
from replay.snapshots.format import SNAPSHOT_SUFFIX, pack, unpack, verdict_documents
from replay.snapshots.mismatch import _summary_length, explain_mismatch
from replay.snapshots.session import SnapshotSession, session_records
from replay.snapshots.spread import within_spread
from replay.snapshots.verdicts import RunVerdicts, replay_run

__all__ = [
    "RunVerdicts",
    "VerdictSnapshotAssertion",
    "VerdictSnapshotExtension",
    "replay_run",
    "snapshot_root",
    "verdict_documents",
]
DEFAULT_SNAPSHOT_DIR = "snapshots"


# --------------------------------------------------------------------------- syrupy storage


def snapshot_root(config: pytest.Config) -> Path:
    """`--replay-snapshot-dir` (relative to the rootdir), else `<rootdir>/snapshots`."""
    option = config.getoption("replay_snapshot_dir", default=None)
    root = Path(option) if option else Path(DEFAULT_SNAPSHOT_DIR)
    return root if root.is_absolute() else config.rootpath / root


def _snapshot_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == SNAPSHOT_SUFFIX and p.is_file())


class VerdictSnapshotExtension(AbstractSyrupyExtension):
    """syrupy extension for `RunVerdicts`: run R's snapshot is the folder `<snapshot dir>/R/`, one JSON
    file per claims file. Use it through `VerdictSnapshotAssertion` (the `verdict_snapshot` fixture), which
    names each assertion after its run; `exclude`/`include`/`matcher` options are not used."""

    file_extension = "json"
    write_immediately = True
    _session: SnapshotSession | None = None
    """The records of the session this extension discovered snapshots for: syrupy deletes unused snapshots
    through the extension that discovered them. (A pytest-xdist controller deletes through extensions it makes
    itself, which hold none; in an interrupted session `--snapshot-disable-unused` stops it deleting anything.)"""

    def serialize(
        self,
        data: SerializableData,
        *,
        exclude: PropertyFilter | None = None,
        include: PropertyFilter | None = None,
        matcher: PropertyMatcher | None = None,
    ) -> SerializedData:
        if not isinstance(data, RunVerdicts):
            raise TypeError(_not_run_verdicts(data))
        return pack({name: dump_json(doc) for name, doc in data.documents().items()})

    def matches(self, *, serialized_data: SerializableData, snapshot_data: SerializableData) -> bool:
        """Equal; or, for a run judged several times per claim, changed only inside its claims' recorded
        spread (the same majority verdicts, no stable claim become unstable): then shown as a warning, not
        failed."""
        if serialized_data == snapshot_data:
            return True
        if not isinstance(serialized_data, str) or not isinstance(snapshot_data, str):
            return False
        lines = within_spread(serialized_data, snapshot_data)
        if lines is None:
            return False
        warnings.warn(SampleSpreadWarning(
            "verdicts moved within their samples' recorded spread (not failed; --snapshot-update records the new "
            "counts):\n" + "\n".join(lines)), stacklevel=2)
        return True

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(snapshot_root(test_location.item.config))

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return cls.dirname(test_location=test_location)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        if not isinstance(index, str):
            raise TypeError("VerdictSnapshotExtension names snapshots after runs: use the verdict_snapshot "
                            "fixture (or VerdictSnapshotAssertion.from_snapshot(snapshot))")
        return index

    @classmethod
    def get_location(cls, *, test_location: PyTestLocation, index: SnapshotIndex) -> str:
        name = cls.get_snapshot_name(test_location=test_location, index=index)
        return str(Path(cls.dirname(test_location=test_location)) / name)

    @classmethod
    def matches_test_location(cls, *, test_location: PyTestLocation, snapshot_location: str) -> bool:
        # Runs, not test files, own verdict snapshots: selecting tests by path or node id never makes
        # another run's snapshot unused.
        return False

    def discover_snapshots(
        self, *, test_location: PyTestLocation, ignore_extensions: list[str] | None = None
    ) -> SnapshotCollections:
        discovered = SnapshotCollections()
        self._session = session = session_records(test_location.item.config)
        root = Path(self.dirname(test_location=test_location))
        if not root.is_dir():
            return discovered
        for folder in sorted(root.iterdir()):
            if folder.name.startswith(".") or folder.name in session.failed_runs or not _snapshot_files(folder):  # "." : `write_folder`'s
                continue
            discovered.add(self.read_snapshot_collection(snapshot_location=str(folder)))
        return discovered

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        collection = SnapshotCollection(location=snapshot_location)
        collection.add(Snapshot(name=Path(snapshot_location).name))
        return collection

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> SerializedData | None:
        files = _snapshot_files(Path(snapshot_location))
        if not files:
            return None
        return pack({p.name: read_regular_text(p, "snapshot", "utf-8") for p in files})

    @classmethod
    def write_snapshot(
        cls,
        *,
        snapshot_location: str,
        snapshots: list[tuple[SerializedData, PyTestLocation, SnapshotIndex]],
        name_order: dict[str, int] | None = None,
    ) -> None:
        # syrupy's version also warns when a snapshot's name does not contain its test's name: ours are
        # named after runs on purpose.
        collection = SnapshotCollection(location=snapshot_location)
        for data, _, index in snapshots:
            collection.add(Snapshot(name=str(index), data=data))
        cls.write_snapshot_collection(snapshot_collection=collection, name_order=name_order)

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        folder = Path(snapshot_collection.location)
        for snapshot in snapshot_collection:
            data = snapshot.data
            # the run's snapshot replaced as a whole (a claims file no longer in the run goes with it): an
            # update stopped at any moment leaves the old snapshot or the new one, never half of each
            write_folder(folder, unpack(data.decode("utf-8") if isinstance(data, bytes) else str(data)),
                         ours=lambda name: name.endswith(SNAPSHOT_SUFFIX))

    def delete_snapshots(self, *, snapshot_location: str, snapshot_names: set[str]) -> None:
        if self._session is not None and self._session.keep_all:  # interrupted: what it did not assert is not unused
            return
        folder = Path(snapshot_location)
        for path in _snapshot_files(folder):
            path.unlink()
        try:
            folder.rmdir()
        except OSError:  # something else lives there: leave it
            pass


class VerdictSnapshotAssertion(SnapshotAssertion):
    """syrupy's assertion, named after the run it is compared with, explaining a mismatch claim by claim."""

    _run: RunVerdicts | None = None

    @classmethod
    def from_snapshot(cls, snapshot: SnapshotAssertion) -> VerdictSnapshotAssertion:
        """The verdict assertion of the test that `snapshot` (syrupy's fixture) belongs to."""
        return cls(
            session=snapshot.session,
            extension_class=VerdictSnapshotExtension,
            test_location=snapshot.test_location,
            update_snapshots=snapshot.update_snapshots,
            update_new_snapshots_only=snapshot.update_new_snapshots_only,
        )

    _explained: dict[int, list[str]]

    def _assert(self, data: SerializableData) -> bool:
        if not isinstance(data, RunVerdicts):
            raise TypeError(_not_run_verdicts(data))
        self._run = data
        session = session_records(self.session.pytest_session.config)
        if data.path is not None:
            where = data.path.resolve()
            other = session.owners.setdefault(data.name, where)
            if other != where:
                raise InputError(data.path, f"its verdicts would be snapshot in {data.name}/, as those of {other} "
                                 "are in this session: two runs of one folder name share a snapshot; rename one")
        self(name=data.name)  # syrupy restores the index after the assertion
        ok = super()._assert(data)
        result = self.executions.get(self.num_executions - 1)
        if not ok and result is not None and result.exception is None:
            lines = self._explain(self.num_executions - 1, detailed=True)
            session.mismatches.append(lines)
        return ok

    def _explain(self, execution: int, *, detailed: bool) -> list[str]:
        """The mismatch of one execution, explained once (it may call git) and kept."""
        if not hasattr(self, "_explained"):
            self._explained = {}
        if execution not in self._explained:
            result = self.executions[execution]
            self._explained[execution] = explain_mismatch(
                _text(result.asserted_data),
                None if result.recalled_data is None else _text(result.recalled_data),
                run_path=self._run.path if self._run else None,
                snapshot_folder=Path(result.snapshot_location),
            )
        lines = self._explained[execution]
        return lines if detailed else lines[:_summary_length(lines)]

    def __repr__(self) -> str:
        return f"<verdict snapshot of run {self._run.name}>" if self._run else "<verdict snapshot>"

    def get_assert_diff(self, *, diff_mode: DiffMode = DiffMode.DETAILED) -> list[str]:
        result = self.executions.get(self.num_executions - 1)
        if result is None or result.exception is not None or result.success:
            return super().get_assert_diff(diff_mode=diff_mode)
        return self._explain(self.num_executions - 1, detailed=diff_mode == DiffMode.DETAILED)


class SampleSpreadWarning(UserWarning):
    """A run with samples whose verdict counts moved without changing a majority verdict or unsettling a stable
    claim: shown, not failed."""


def _text(data: SerializedData | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8") if isinstance(data, bytes) else data


def _not_run_verdicts(data: object) -> str:
    return (f"verdict_snapshot compares the verdicts of a run, as returned by replay_run(path); "
            f"got {type(data).__name__}")
