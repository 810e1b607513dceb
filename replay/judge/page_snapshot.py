"""Dated page snapshots: every page a run read fetched again now, recorded as a run of its own."""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import shutil
from datetime import datetime
from pathlib import Path

from replay.core.text import sha256_text
from replay.files.atomic import write_model
from replay.learn.wire import FETCH_TOOL
from replay.runs.folder import MANIFEST, RESULTS, SNAPSHOT_PROMPT, Run
from replay.runs.names import cassette_name
from replay.runs.writer import STAGING_FOLDER, folder_lock
from replay.schema.manifest import ClaimsFileEntry, RunManifest
from replay.schema.results import FileResult, ResultsFile, ToolCall
from replay.secrets.registry import remember_url
from replay.urls import normalise_learn_url

# --------------------------------------------------------------------------- a dated page snapshot


def record_page_snapshot(run: Run, learn_url: str, root: Path, now: datetime) -> Path:
    """Fetch every page `run` read, per claims file, through the recorder into a run-like folder
    `root/pages-<YYYYMMDD-HHMMSS>/` (`-2`, `-3`... when taken; usable as `--against`); its path. The
    snapshot is recorded into a folder of its own in the staging area beside the runs
    (`runs.writer.STAGING_FOLDER`, where no one looks for runs), locked while it is written, and moved among
    the runs once whole: a failure, a Ctrl-C or a kill leaves no half snapshot there, and what a killed
    one left in the staging area is removed by the next."""
    remember_url(learn_url)  # its credentials are secrets: in no file written, nothing printed
    name = f"pages-{now:%Y%m%d-%H%M%S}"
    area = root / STAGING_FOLDER
    _sweep_dead_snapshots(area)
    fresh = _own_folder(area)  # under a name no sweep looks at, until it is locked
    staging = area / f"{name}{_STAGED}{fresh.name.removeprefix(_FRESH)}"
    try:
        with folder_lock(fresh, fcntl.LOCK_EX):  # a sweep passes a snapshot being written by
            os.rename(fresh, staging)  # the lock is the folder's: it goes with it
            _record_fetches(run, learn_url, staging, now.strftime("%Y-%m-%dT%H:%M:%SZ"), name)
            return _move_in(staging, root, name)
    finally:
        for left in (fresh, staging):
            shutil.rmtree(left, ignore_errors=True)  # half a snapshot is no snapshot
        try:
            area.rmdir()  # only when nothing else is in it
        except OSError:
            pass


_STAGED = ".drift-live-"
"""What names a snapshot being written in the staging area (`<name>.drift-live-<random>`)."""
_FRESH = ".fresh-"
"""What names a snapshot's folder from its making to its lock (a sweep never looks at it)."""


def _own_folder(area: Path) -> Path:
    """A new folder `.fresh-<random>` in `area` (made when missing, and again when another process removed
    it meanwhile), of this process alone, with the permissions a folder gets (unlike `tempfile.mkdtemp`'s
    private ones: it becomes the snapshot)."""
    while True:
        folder = area / f"{_FRESH}{secrets.token_hex(4)}"
        try:
            area.mkdir(parents=True, exist_ok=True)
            folder.mkdir()
            return folder
        except (FileExistsError, FileNotFoundError):  # taken, or the area removed by a run that just ended
            continue


def _move_in(staging: Path, root: Path, name: str) -> Path:
    """Rename the finished snapshot to the first free `name`, `name-2`...: its `run_id` says that name."""
    for _ in range(100):
        final = _free_name(root, name)
        manifest = staging / MANIFEST
        recorded = RunManifest.model_validate_json(manifest.read_text("utf-8"))
        if recorded.run_id != final:
            write_model(manifest, recorded.model_copy(update={"run_id": final}))
        try:
            os.rename(staging, root / final)
            return root / final
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):  # another snapshot took the name meanwhile
                raise
    raise OSError(errno.EEXIST, "no free snapshot name", str(root / name))


def _sweep_dead_snapshots(area: Path) -> None:
    """Remove what killed `drift --live` runs left in the staging area: a snapshot folder no process holds
    locked (the kernel drops a lock with its process)."""
    for folder in area.glob(f"*{_STAGED}*"):
        with folder_lock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB) as held:
            if held is not None:  # else being written (or not a folder we can open)
                shutil.rmtree(folder, ignore_errors=True)


def _record_fetches(run: Run, learn_url: str, folder: Path, recorded_at: str, run_id: str) -> None:
    from replay.learn.client import LearnToolError
    from replay.learn.sessions import LearnSessions
    from replay.recording.recorder import HttpRecorder
    from replay.urls import LEARN_STAND_IN_PORT, stored_endpoint

    entries: list[ClaimsFileEntry] = []
    files: list[FileResult] = []
    stand_in = False
    # the sessions end last, as a judge run's: after the recorder let go (never recorded) and the writing
    with LearnSessions(learn_url) as sessions:
        with HttpRecorder("record", folder) as recorder:
            for entry in run.manifest.claims:
                calls = []
                with recorder.conversation(entry.file) as seam:
                    client = sessions.client(seam.transport)
                    for url in _fetched_urls(run, entry.file):
                        try:
                            fetched = client.fetch(url)
                        except LearnToolError as exc:  # recorded as answered: drift calls its claims unchecked
                            calls.append(ToolCall(tool=FETCH_TOOL, arguments={"url": url}, url=url, error=str(exc)))
                            continue
                        sha = None if fetched.missing or fetched.text is None else sha256_text(fetched.text)
                        calls.append(ToolCall(tool=FETCH_TOOL, arguments={"url": url}, url=url, page_sha256=sha))
                stand_in = stand_in or client.stand_in
                entries.append(ClaimsFileEntry(file=entry.file, path=entry.path, sha256=entry.sha256,
                                               cassette=cassette_name(entry.file)))
                files.append(FileResult(file=entry.file, results=[], tool_calls=calls))
        manifest = RunManifest(
            run_id=run_id, prompt=SNAPSHOT_PROMPT, prompt_sha256=sha256_text(SNAPSHOT_PROMPT), model="none",
            mode="record", recorded_at=recorded_at, learn_url=stored_endpoint(learn_url, LEARN_STAND_IN_PORT),
            claims=entries, stand_ins=["learn"] if stand_in else [], stats=recorder.stats,
        )
        write_model(folder / RESULTS, ResultsFile(prompt=SNAPSHOT_PROMPT, prompt_sha256=manifest.prompt_sha256,
                                                  model="none", recorded_at=recorded_at, files=files))
        write_model(folder / MANIFEST, manifest)  # last: a folder with run.json is a complete snapshot


def _fetched_urls(run: Run, claims_file: str) -> list[str]:
    """The URLs a claims file's conversation fetched, in order, each page once."""
    seen: dict[str, str] = {}
    for call in run.learn_calls(claims_file):
        if call.tool == FETCH_TOOL and "url" in call.arguments:
            url = str(call.arguments["url"])
            seen.setdefault(normalise_learn_url(url), url)
    return list(seen.values())


def _free_name(root: Path, name: str) -> str:
    """`name`, or `name-2`, `name-3`... : the first no folder under `root` has."""
    found, n = name, 1
    while (root / found).exists():
        n += 1
        found = f"{name}-{n}"
    return found
