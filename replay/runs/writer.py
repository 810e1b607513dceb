"""A run folder changed only as a whole: record into a staging folder under a lock, then swap it in.

    with RunFolderWriter(Path("cassettes/v3")) as writer:   # takes the lock, or refuses (UsageError)
        ... write everything into writer.staging ...
        writer.commit()                                     # the new run replaces the old one at once

Layout, beside the run (`<parent>/.judge-replay-staging/`, never a run itself: it holds no run.json, so
every reader that looks for runs passes it by):

- `locks/<name>`: the lock, `fcntl.flock` on an open file, so a killed process never leaves it stuck (the
  kernel drops the lock with the process). The holder removes the file when it is done; a taker checks
  that the file it locked is still the one at that path (the usual lock-file protocol).
- `staging/<name>/`: the staging folder the recording writes into. Leftovers of a killed recording are removed
  by the next one.
- `previous/<name>/`: only when the filesystem cannot exchange two folders atomically (Linux's
  `renameat2(RENAME_EXCHANGE)`): the old run moved aside for the moment between the two renames. The
  next access finishes or undoes that swap (`recover`).

A recording that fails or is interrupted before `commit` removes its staging folder and leaves the old
run exactly as it was.

Readers that take a run as a whole (a replay, `cassettes verify`) hold a shared `flock` on the run
folder itself (`reading`; nothing is written, so a read-only project reads as before), and `commit` takes
it exclusively around the swap: a recording waits for them to finish, and a reader never reads half of
the old run and half of the new one.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from replay.cassettes.cassette import CASSETTE_SUFFIX
from replay.core.display import printable
from replay.errors import UsageError
from replay.files.atomic import atomic_write_text
from replay.files.paths import display_path, os_error_about

STAGING_FOLDER = ".judge-replay-staging"
STAGED, LOCKS, PREVIOUS = "staging", "locks", "previous"
"""The staging area's folders, one per kind of thing kept per run (a run folder's name is one path part,
so no run name makes one run's lock, staging folder or old run another's: see the module docstring)."""
RUN_FILES = ("run.json", "results.json", "prompt.md")
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def journal_path(run_dir: str | Path) -> Path:
    """Where a batch run keeps its batch ids (`judge.batches.journal.BatchJournal`) while it is in flight, or while
    it has failed claims files to record again: beside the run, in its staging area."""
    run = Path(run_dir).absolute()
    return run.parent / STAGING_FOLDER / f"{run.name}.batches.json"


class RunFolderWriter:
    """The lock and the staging folder of one recording into `run`; see the module docstring."""

    def __init__(self, run: Path) -> None:
        self.run = Path(os.path.realpath(run))  # a symlinked run folder: its target is replaced
        if self.run.parent == self.run:
            raise UsageError(f"--run {run}: a run folder cannot be the file system root")
        if STAGING_FOLDER in self.run.parts:
            raise UsageError(f"--run {run}: a run folder cannot be inside a {STAGING_FOLDER} folder (where "
                             "recordings are staged); choose another --run folder")
        self.area = self.run.parent / STAGING_FOLDER
        self.staging = self.area / STAGED / self.run.name
        self._lock_path = self.area / LOCKS / self.run.name
        self._lock_fd: int | None = None
        self.committed = False

    def __enter__(self) -> RunFolderWriter:
        _refuse_foreign_files(self.run)
        self._lock()
        try:
            _recover(self.run, self.area)
            if self.staging.exists():
                shutil.rmtree(self.staging)  # left by a killed recording
            self.staging.mkdir()
        except OSError as exc:
            self._unlock()
            raise os_error_about(exc, self.run) from exc  # the folder the user gave, not our staging area
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self.staging.exists():
                shutil.rmtree(self.staging, ignore_errors=True)
        finally:
            self._unlock()

    def commit(self) -> None:
        """Replace the run by the staging folder, as one step where the filesystem allows it, once no one
        reads the old run (`reading`)."""
        with folder_lock(self.run, fcntl.LOCK_EX):
            _swap_in(self.staging, self.run, _previous(self.area, self.run))  # a kill: `_recover` finishes it
        self.committed = True

    # ------------------------------------------------------------------ the lock

    def _lock(self) -> None:
        for _ in range(10):
            try:
                for part in (STAGED, LOCKS):
                    (self.area / part).mkdir(parents=True, exist_ok=True)
                fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:
                continue  # the area was removed by a recording that just finished: make it again
            except OSError as exc:  # a read-only or full folder: the environment, exit 1 (`cli.main`)
                raise os_error_about(exc, self.run) from exc  # the folder the user gave, not our staging area
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise UsageError(f"another recording into {display_path(self.run)} is in progress: wait for it to "
                                     "finish, or record into another --run folder") from None
                raise
            if _same_file(fd, self._lock_path):
                self._lock_fd = fd
                try:  # the holder's pid, for a person who looks (the lock itself is flock's)
                    os.ftruncate(fd, 0)
                    os.write(fd, f"{os.getpid()}\n".encode())
                except OSError as exc:
                    self._unlock()
                    raise os_error_about(exc, self.run) from exc  # the folder the user gave, not our staging area
                return
            os.close(fd)  # the holder removed it after we opened it: take the new one
        raise UsageError(f"cannot take the lock of {display_path(self.run)}: it keeps changing")

    def _unlock(self) -> None:
        if self._lock_fd is None:
            return
        try:
            self._lock_path.unlink(missing_ok=True)
        finally:
            os.close(self._lock_fd)
            self._lock_fd = None
        _tidy(self.area)


def _tidy(area: Path) -> None:
    """Remove the staging area's folders, and the area, when nothing else is in them."""
    for folder in (area / STAGED, area / LOCKS, area / PREVIOUS, area):
        try:
            folder.rmdir()
        except OSError:
            pass


def _previous(area: Path, run: Path) -> Path:
    return area / PREVIOUS / run.name


@contextmanager
def changing(run: Path) -> Iterator[None]:
    """Hold the lock a recording into `run` holds, while files of the run are changed in place (`grade
    --freeze`): refused (UsageError) while a recording is in progress, which would swap its new run in and
    lose the change; and no recording starts meanwhile."""
    writer = RunFolderWriter(run)
    writer._lock()
    try:
        yield
    finally:
        writer._unlock()


def write_folder(folder: Path, files: Mapping[str, str], ours: Callable[[str], bool] = lambda name: True) -> None:
    """Make `folder` hold `files` (name -> text) as one step, as a run folder is replaced: written into a
    hidden folder beside it (`.<name>.writing`, left over only by a kill, and cleared by the next write),
    then swapped in. A kill at any moment leaves the old folder or the new one, whole. What the folder
    holds that is not `ours` (by name: a person's notes) is carried over; of ours, only `files` stay."""
    staging = folder.with_name(f".{folder.name}.writing")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, text in files.items():
        atomic_write_text(staging / name, text)
    for entry in (folder.iterdir() if folder.is_dir() else ()):
        if ours(entry.name) or entry.name in files:
            continue
        if entry.is_symlink():  # a link stays a link, wherever (or to nothing) it points
            os.symlink(os.readlink(entry), staging / entry.name)
        elif entry.is_dir():
            shutil.copytree(entry, staging / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, staging / entry.name)
    previous = folder.with_name(f".{folder.name}.previous")
    shutil.rmtree(previous, ignore_errors=True)
    _swap_in(staging, folder, previous)


def _swap_in(new: Path, target: Path, previous: Path) -> None:
    """Put the folder `new` where `target` is, and remove the old one: one atomic exchange where the file
    system has it, else `target` moved aside to `previous` for the moment between two renames."""
    if not target.exists():
        os.rename(new, target)
    elif _exchange(new, target):
        shutil.rmtree(new)  # now the old folder
    else:
        os.rename(target, previous)
        os.rename(new, target)
        shutil.rmtree(previous)


@contextmanager
def reading(run: str | Path) -> Iterator[None]:
    """Read the run folder `run` as a whole: a recording into it swaps its new run in only after the block
    (see the module docstring). A folder that is not there, or a file system without `flock` on folders,
    is read as before, unlocked."""
    path = Path(os.path.realpath(run))
    for _ in range(10):
        with folder_lock(path, fcntl.LOCK_SH) as fd:
            if fd is None or _same_file(fd, path):
                yield
                return
        # the run was swapped while we waited for the recording: lock the new one
    yield


@contextmanager
def folder_lock(folder: Path, how: int) -> Iterator[int | None]:
    """`flock(how)` on the folder itself, held for the block: its descriptor, or None when the folder
    cannot be opened or locked (not there, or a file system without flock on folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield None
        return
    try:
        try:
            fcntl.flock(fd, how)
        except OSError:
            yield None
            return
        yield fd
    finally:
        os.close(fd)


def recover(run: Path) -> None:
    """Finish or undo a swap a killed recording left half done (only where atomic exchange is missing),
    unless a recording into `run` holds the lock right now."""
    run = Path(os.path.realpath(run))
    area = run.parent / STAGING_FOLDER
    if not _previous(area, run).exists():
        return
    lock_path = area / LOCKS / run.name
    try:
        lock_path.parent.mkdir(exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return
    try:
        _recover(run, area)
    finally:
        lock_path.unlink(missing_ok=True)
        os.close(fd)


def _recover(run: Path, area: Path) -> None:
    previous = _previous(area, run)
    if not previous.exists():
        return
    if not run.exists():
        staging = area / STAGED / run.name
        complete = (staging / "run.json").is_file()  # run.json is written last: the new run is whole
        os.rename(staging if complete else previous, run)
    if previous.exists():
        shutil.rmtree(previous)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _refuse_foreign_files(run: Path) -> None:
    """A folder that holds anything but a run's files, or anything at all without a run.json (so not a
    run we wrote), is not ours to replace."""
    if not run.exists():
        return
    if not run.is_dir():
        raise UsageError(f"--run {display_path(run)} is a file, not a folder")
    held = sorted(p.name for p in run.iterdir())
    if held and "run.json" not in held:
        shown = ", ".join(printable(name) for name in held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
        raise UsageError(f"--run {display_path(run)} is not a run (no run.json) and is not empty (it holds {shown}): "
                         "a recording replaces the whole folder, so record into a new or empty one")
    foreign = sorted(p.name for p in run.iterdir() if p.name not in RUN_FILES and not p.name.endswith(CASSETTE_SUFFIX))
    if foreign:
        raise UsageError(f"--run {display_path(run)} holds files that are not part of a run ({', '.join(foreign[:3])}): "
                         "a recording replaces the whole folder, so record into a new or empty one")
