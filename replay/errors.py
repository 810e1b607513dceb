"""The errors judge-replay raises, each with a message written for the person who reads it.

    ReplayError                 base; carries the CLI exit code
    ├── InputError (2)          a file or argument is malformed: names the file and what is wrong
    ├── UsageError (2)          the command cannot run as asked (missing key, unreachable URL, frozen run)
    ├── LearnError (2)          the Learn MCP endpoint failed in a way the judge cannot work around
    │   └── LearnUnreachable (1)    it could not be reached, or kept failing transiently (`learn.client`)
    ├── CassetteMiss (1)        replay met a request that is not in the cassette
    ├── CheckFailed (1)         a check the command exists to make failed (audit finding, verify mismatch)
    ├── RecordingFailed (1)     a run gave nothing to keep, or a service was down before it started
    └── SystemFailed (1)        the system failed where it cannot be an OSError (a batch journal that
                                cannot be written, inside the SDK's transport; a full page store)

`cli.main.main` is the one place these become a line on stderr and an exit code. It also turns a
system error into one line naming the file (a full disk or a read-only folder: 1; a path that is a folder
or missing: 2) and any other exception into one line saying it is a bug (exit 70; JUDGE_REPLAY_DEBUG=1
shows the traceback). Raise these for everything a user can cause; never let a traceback be the message.
"""

from __future__ import annotations

import os
from pathlib import Path

DEBUG_VARIABLE = "JUDGE_REPLAY_DEBUG"
"""Set to 1 to see the traceback of an unexpected error (or of a system error) instead of its one line."""


def debugging() -> bool:
    """Whether the user asked for tracebacks (`JUDGE_REPLAY_DEBUG=1`)."""
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def one_line(name: str) -> str:
    """A file name as a one-line message shows it: a line break in the name written `\\n`."""
    return name.replace("\n", "\\n").replace("\r", "\\r")


class ReplayError(Exception):
    """Base of every error of ours; `main()` prints its `lines` (each one line, data in it escaped) and
    exits with `exit_code`. A message of several lines is given as several arguments, never with line
    breaks in one: a line break inside a line is data (a file name) and is shown escaped."""

    exit_code = 2

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class InputError(ReplayError):
    """A malformed input file: the message names the file and says what is wrong."""

    exit_code = 2

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{one_line(self.path)}: {reason}")


class UsageError(ReplayError):
    """The command cannot run as asked."""

    exit_code = 2


class LearnError(ReplayError):
    """The Learn MCP endpoint failed (unreachable, protocol error)."""

    exit_code = 2


class CassetteMiss(ReplayError):
    """A request during replay that the cassette does not hold."""

    exit_code = 1

    def __init__(
        self,
        *,
        claims_file: str,
        request: str,
        closest: str | None,
        rerecord: str,
        detail: str = "",
    ) -> None:
        self.claims_file = claims_file
        self.request = request
        self.closest = closest
        self.rerecord = rerecord
        lines = [
            f"cassette miss while replaying {claims_file}",
            f"  request:  {request}",
            f"  closest recorded: {closest or '(none: the cassette holds no request of this kind)'}",
        ]
        if detail:
            lines.append(f"  differs in: {detail}")
        lines.append(f"  to re-record: {rerecord}")
        super().__init__(*lines)


class CheckFailed(ReplayError):
    """A check the command exists to make failed; the findings were already printed."""

    exit_code = 1


class RecordingFailed(ReplayError):
    """A live run or recording that gave nothing to keep (every conversation failed), or a service that
    is down before it starts: an environment failure, exit 1."""

    exit_code = 1


class SystemFailed(ReplayError):
    """A system error (a full disk...) that cannot be raised as the OSError it is: where the SDK would
    wrap an OSError as a connection error (in a conversation waiting for its batch round,
    `judge.batches.rounds`), or where sqlite reports it (the page store). Said as `main()` says an OSError, the
    file first, exit 1."""

    exit_code = 1
