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
a git worktree of the commit that last wrote the snapshot, diffed against the run now) and accept it;
pytest cuts it after 8 lines, so the plugin's terminal summary repeats every mismatch in full.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from syrupy.assertion import DiffMode, SnapshotAssertion
from syrupy.data import Snapshot, SnapshotCollection, SnapshotCollections
from syrupy.extensions.base import AbstractSyrupyExtension
from syrupy.location import PyTestLocation
from syrupy.types import PropertyFilter, PropertyMatcher, SerializableData, SerializedData, SnapshotIndex

from ._cassette import CASSETTE_SUFFIX
from ._errors import InputError
from ._io import display_path, dump_json, portable_path, printable
from ._mcp import normalise_learn_url
from ._records import ClaimResult, ResultsFile
from ._runfolder import write_folder
from ._runs import Run, cassette_name
from ._text import normalise_ws, short_hash

__all__ = [
    "RunVerdicts",
    "VerdictSnapshotAssertion",
    "VerdictSnapshotExtension",
    "replay_run",
    "snapshot_root",
    "verdict_documents",
]

SERIALIZER_VERSION = 1
"""Bump when the snapshot document changes shape: every snapshot then fails until updated."""
SNAPSHOT_SUFFIX = ".json"
DEFAULT_SNAPSHOT_DIR = "snapshots"
HEADER_KEYS = ("serializer_version", "prompt", "prompt_sha256", "model")
_SECTION = "=== "
"""Starts each file's section in the one string syrupy compares (indented JSON never starts a line so)."""

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
    from ._runner import replay_run as replay  # the runner pulls in both HTTP stacks: load on use

    return _load(path, replay)


def _load(path: str | Path, results_of: Callable[[Run], ResultsFile]) -> RunVerdicts:
    run = Run(path)
    try:
        results = results_of(run)
    except BaseException:
        _failed_runs.add(run.name)
        raise
    return RunVerdicts(run.name, results, run.path)


def snapshot_file_name(claims_file: str) -> str:
    """`docs/a.md` -> `docs_a.md.json`: the claims file's cassette name with `.json`."""
    return cassette_name(claims_file).removesuffix(CASSETTE_SUFFIX) + SNAPSHOT_SUFFIX


def verdict_documents(run_name: str, results: ResultsFile) -> dict[str, dict[str, Any]]:
    """Snapshot file name -> its document, for every claims file of the results."""
    header: dict[str, Any] = {
        "serializer_version": SERIALIZER_VERSION,
        "prompt": results.prompt,
        "prompt_sha256": results.prompt_sha256[:12] if results.prompt_sha256 else None,
        "model": results.model,
    }
    claims_by_file: dict[str, dict[str, ClaimResult]] = {}
    for file_result in results.files:
        claims_by_file.setdefault(file_result.file, {}).update({r.id: r for r in file_result.results})
    documents: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    for file in sorted(claims_by_file):
        name = snapshot_file_name(file)
        if name in owner:
            raise InputError(run_name, f"claims files {owner[name]!r} and {file!r} map to the same snapshot file {name}")
        owner[name] = file
        claims = claims_by_file[file]
        documents[name] = {**header, "file": file, "claims": [_claim_entry(claims[i]) for i in sorted(claims)]}
    return documents


def _claim_entry(result: ClaimResult) -> dict[str, Any]:
    quote = normalise_ws(result.evidence_quote)
    return {
        "id": result.id,
        "verdict": result.judge_verdict,
        "rule": result.rule,
        "evidence_url": normalise_learn_url(result.evidence_url) if result.evidence_url else "",
        "quote_verified": result.quote_verified,
        "quote_hash": short_hash(quote) if quote else None,
    }


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


def pack(files: dict[str, str]) -> str:
    """Several snapshot files as the one string syrupy compares, in file name order."""
    return "".join(f"{_SECTION}{name}\n{files[name]}" for name in sorted(files))


def unpack(data: str) -> dict[str, str]:
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in data.splitlines(keepends=True):
        if line.startswith(_SECTION):
            current = files.setdefault(line[len(_SECTION):].rstrip("\n"), [])
        elif current is not None:
            current.append(line)
    return {name: "".join(lines) for name, lines in files.items()}


class VerdictSnapshotExtension(AbstractSyrupyExtension):
    """syrupy extension for `RunVerdicts`: run R's snapshot is the folder `<snapshot dir>/R/`, one JSON
    file per claims file. Use it through `VerdictSnapshotAssertion` (the `verdict_snapshot` fixture), which
    names each assertion after its run; `exclude`/`include`/`matcher` options are not used."""

    file_extension = "json"
    write_immediately = True

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
        root = Path(self.dirname(test_location=test_location))
        if not root.is_dir():
            return discovered
        for folder in sorted(root.iterdir()):
            if folder.name.startswith(".") or folder.name in _failed_runs or not _snapshot_files(folder):  # "." : `write_folder`'s
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
        return pack({p.name: p.read_text("utf-8") for p in files})

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
        if _keep_all[0]:  # an interrupted session: what it did not assert is not unused
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
        if data.path is not None:
            where = data.path.resolve()
            other = _owners.setdefault(data.name, where)
            if other != where:
                raise InputError(data.path, f"its verdicts would be snapshot in {data.name}/, as those of {other} "
                                 "are in this session: two runs of one folder name share a snapshot; rename one")
        self(name=data.name)  # syrupy restores the index after the assertion
        ok = super()._assert(data)
        result = self.executions.get(self.num_executions - 1)
        if not ok and result is not None and result.exception is None:
            lines = self._explain(self.num_executions - 1, detailed=True)
            _mismatches.append(lines)
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


def _text(data: SerializedData | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8") if isinstance(data, bytes) else data


def _not_run_verdicts(data: object) -> str:
    return (f"verdict_snapshot compares the verdicts of a run, as returned by replay_run(path); "
            f"got {type(data).__name__}")


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
    changed = sorted(k for k in new.claims.keys() & old.claims.keys() if k not in flipped and new.claims[k] != old.claims[k])
    # The summary and the commands come first: pytest cuts an assertion message after 8 lines (640
    # characters) unless run with -vv; the plugin's terminal summary repeats the whole list.
    lines = [f"run {run_name} differs from its snapshot {folder}: {_plural(len(flipped), 'verdict')} flipped, "
             f"{_plural(len(added), 'claim')} added, {len(removed)} removed"
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
    committed against the run as it is now: it checks that commit out into a git worktree beside the
    repository (once: an existing one is reused) and runs `judge-replay diff` on both. None when no
    commit holds the snapshot and the run together."""
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
    worktree = display_path(root.parent / f"{root.name}-snapshot-{commit}")
    q = shlex.quote
    return (f"[ -d {q(worktree)} ] || git -C {q(display_path(root))} worktree add --detach {q(worktree)} {commit}; "
            f"judge-replay diff {q(worktree + '/' + run_in_repo)} {q(display_path(run_dir))}")
