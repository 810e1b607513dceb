"""Independent cassettes parsed on every core: the parsed-cassette cache warmed before a command's serial work.

    with using_jobs(4):                                   # the command's --jobs (default: the cores)
        warm(paths, conversation_entry)                   # one process per core parses the cold ones
        ...                                               # the serial work, as before: it reads entries

What a command derives from a cassette (its parsed YAML, replay's request index, a conversation's
Learn calls and claims) is kept in the parsed-cassette cache (`cassettes.cache`), and the first command
after a change pays the parse, one cassette after another. `warm` gives that parse to a pool of worker
processes, one per job: each computes a cassette's entry exactly as the serial code would (the same
function, through `cached`), writes it atomically, and hands back nothing. The serial work that
follows is unchanged and finds every entry warm, so its output is the same whatever `--jobs` is, in
the same order. A worker that fails on a cassette (unreadable, malformed) leaves its entry unwritten
and says nothing: the serial work meets the same cassette and reports it as it always has (one line,
the same exit code).

The command line sets the jobs (`using_jobs`, from `--jobs` or the `jobs` setting; one per core by
default); called as a library, outside such a block, nothing is started.

Only what the parent finds cold goes to the pool (an entry's first line checked against the
cassette's stamp: `entry_is_current`), and only when there are at least `MIN_COLD` such cassettes and
more than one job: a warm cache costs a look at each entry's first line, and no process is started.

Workers are started fresh (`spawn`), not forked: they inherit no thread, lock, socket or stand-in of
the command's process, only its environment, its working folder and the secrets it was given (no
entry is written for a cassette that holds one). They ignore Ctrl-C; the command's process, on
Ctrl-C, cancels what has not started, waits for the few cassettes being parsed (each entry is written
whole, under a temporary name, or not at all) and stops.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from replay.cassettes.cache import Cassette, entry_is_current, private_folder, share_private_folder
from replay.secrets.registry import remember, remembered

MIN_COLD = 8
"""Fewer cold cassettes than this are parsed by the serial work itself (starting workers costs more)."""

_jobs: list[int] = [1]
"""The jobs set by `using_jobs` (1 outside it: see `using_jobs`)."""


def default_jobs() -> int:
    """One job per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def jobs() -> int:
    """How many processes parse cassettes at once: `using_jobs`'s, else 1 (no worker)."""
    return _jobs[0]


@contextmanager
def using_jobs(count: int | None) -> Iterator[None]:
    """Within this block, `warm` uses `count` processes (None: one per core; 1: no worker at all). The
    command line opens one around each command (`--jobs`); outside it, the library starts no process:
    a worker imports the main module of the program that started it, and a script calling us without an
    `if __name__ == "__main__":` guard would run again in each worker."""
    before = _jobs[0]
    _jobs[0] = count or default_jobs()
    try:
        yield
    finally:
        _jobs[0] = before


Task = Callable[[Path], object]
"""What makes one cassette's entries: a function of its path defined at a module's top level (a worker
imports it by name), computing through `cached`, so that it writes the entries the serial work reads."""


def warm(paths: Iterable[Path], task: Task, *, tag: str, parser: Callable[[], str]) -> int:
    """Run `task` on every cassette of `paths` whose `tag` entry (made by `parser()`'s code) is not
    current, on `jobs()` worker processes; returns how many went to the workers (0: the serial work
    parses them, if any). Errors are left to the serial work (see the module docstring)."""
    count = jobs()
    if count < 2:
        return 0
    cold = [p for p in dict.fromkeys(paths) if _is_cold(p, tag, parser)]
    if len(cold) < MIN_COLD:
        return 0
    _run(task, cold, min(count, len(cold)))
    return len(cold)


def _is_cold(path: Path, tag: str, parser: Callable[[], str]) -> bool:
    """Whether the cassette's entry is missing or not for its bytes as they are now (the entry is looked
    for first: a cold cassette is not hashed here)."""
    source = Cassette(path)
    if source.entries is None:  # no cache: nothing a worker could keep for the serial work
        return False
    try:
        return not entry_is_current(source, tag, parser())
    except OSError:  # missing or unreadable: the serial work says so
        return False


def _run(task: Task, paths: Sequence[Path], workers: int) -> None:
    try:
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(remembered(), private_folder()))
    except Exception:  # no process can be made here: the serial work parses them all
        return
    try:
        # a few cassettes a task (fewer messages), in order; every result is waited for
        chunk = max(1, min(16, len(paths) // (workers * 4)))
        for _ in pool.map(_quietly, [task] * len(paths), paths, chunksize=chunk):
            pass
    except Exception:  # no worker could start, or one died: the serial work parses what is left
        pool.shutdown(wait=True, cancel_futures=True)
        return
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)  # Ctrl-C: the cassettes being parsed end whole
        raise
    pool.shutdown(wait=True)


def _start_worker(secrets: tuple[str, ...], folder: str | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command's process decides what Ctrl-C stops
    share_private_folder(folder)
    for value in secrets:
        remember(value)


def _quietly(task: Task, path: Path) -> None:
    """`task(path)`, any error left for the serial work to meet and report."""
    try:
        task(path)
    except Exception:
        pass
