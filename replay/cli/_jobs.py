"""The `--jobs` option of the commands that read many cassettes (judge's replay, cassettes verify, grade, diff, drift)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from replay.cassettes.parallel import using_jobs
from replay.settings import setting

F = TypeVar("F", bound=Callable[..., Any])

HELP = ("Cassettes parsed at once, one process each, where the parse cache does not hold them yet "
        "([tool.judge-replay] jobs, else one per core; 1: one after another in this process). The output "
        "is the same whatever N is.")


def jobs_option(command: F) -> F:
    """Add `--jobs N` to a command (put it just above the function): the command runs inside
    `cassettes.parallel.using_jobs` with the flag's value, else the `jobs` setting, else one per core."""

    @functools.wraps(command)
    def with_jobs(*args: Any, jobs: int | None = None, **kwargs: Any) -> Any:
        with using_jobs(setting("jobs", jobs, None)):
            return command(*args, **kwargs)

    return cast(F, click.option("--jobs", type=click.IntRange(min=1), default=None, metavar="N", help=HELP)(with_jobs))
