"""Entry point of `judge-replay`: the click group, and the one place errors become one line and an exit code."""

from __future__ import annotations

import errno
import importlib
import os
import sys

import click

from replay.cli._output import examples
from replay.errors import DEBUG_VARIABLE, ReplayError, debugging

INTERNAL_ERROR = 70
"""Exit code of a bug in judge-replay (sysexits' EX_SOFTWARE): never 1 or 2, which scripts act on."""

_NO_ARGS_IS_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", click.exceptions.Exit)
"""What click >= 8.2 raises for a group given no command (its help); older clicks exit 0 instead (and
`Exit`, the stand-in here, is never a ClickException)."""

_BAD_PATH_ERRORS = (IsADirectoryError, NotADirectoryError, FileExistsError, FileNotFoundError)
"""System errors that mean a path the user gave is wrong (exit 2); any other (a full disk, a read-only
folder, a permission) is the environment failing (exit 1)."""
_ENVIRONMENT_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EIO})
"""System errors that are the environment failing even where our message says a file cannot be read (an
InputError raised from one): exit 1, as main's printer gives them."""


COMMANDS: dict[str, str] = {
    "bakeoff": "Replay, grade and gate every prompt version; explain the flips.",
    "judge": "Run the judge live, record a run, or replay one offline.",
    "grade": "Score a run against the gold set, with the adoption gate.",
    "diff": "Explain every verdict that differs between two runs.",
    "drift": "List the claims whose evidence page changed since a run.",
    "pages": "Every recorded version of a Learn page, and what changed.",
    "cassettes": "Audit cassettes for secrets, verify runs replay, list runs.",
    "sim": "Run a local stand-in server (test equipment) on 127.0.0.1.",
    "schema": "Print the JSON Schema of a file format or output.",
    "init": "Scaffold a project that judges your own documentation.",
    "export": "Write runs as Inspect AI eval logs, for `inspect view`.",
}
"""Each command (the module `replay.cli.<name>` defines it as `command`) and its line in `--help`."""


class _LazyGroup(click.Group):
    """A command's module is imported only when that command runs or shows its help: `judge-replay
    --help` lists them from `COMMANDS` without importing the SDK, pydantic or pytest."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)  # one added with `cli.add_command`
        command = importlib.import_module(f"{__package__}.{cmd_name}").command
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name] if name in COMMANDS else self.commands[name].get_short_help_str())
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=examples("judge-replay bakeoff                  # grade the bundled demo runs, offline",
                             "judge-replay COMMAND --help           # each command's options and examples"))
@click.version_option(package_name="judge-replay")
@click.option("--no-cache", "no_derived_cache", is_flag=True,
              help="Read every cassette from its YAML and keep nothing derived (as JUDGE_REPLAY_NO_CACHE=1); "
                   "given before the command: judge-replay --no-cache diff A B.")
def cli(no_derived_cache: bool) -> None:
    """Record, replay, grade, snapshot and explain runs of the Learn groundedness judge."""
    from replay.secrets.environment import remember_environment

    remember_environment()  # before any command reads or writes: nothing it caches, writes or prints holds them
    if no_derived_cache:
        import os

        from replay.cassettes.cache import OFF_VARIABLE

        os.environ[OFF_VARIABLE] = "1"


def _say(*lines: str) -> None:
    """Print an error for the user, each of its lines as one line: data in it (file names, reasons from
    files, line breaks included) shown, never obeyed."""
    from replay.core.display import printable

    click.echo("judge-replay: " + "\n".join(printable(line) for line in lines), err=True)


def _first_line(text: str, limit: int = 300) -> str:
    from replay.secrets.excerpts import clean, excerpt

    line = clean(text).strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else excerpt(line, limit - 3, mark="...")


def _click_error(err: click.ClickException) -> str:
    """A click usage error as one line: which command, what is wrong, where help is."""
    ctx = getattr(err, "ctx", None)
    message = _first_line(err.format_message())
    if isinstance(err, click.UsageError) and ctx is not None:
        command = ctx.command_path.partition(" ")[2]
        return f"{command + ': ' if command else ''}{message} (see '{ctx.command_path} --help')"
    return message


def _quiet_stdout() -> None:
    """After a broken pipe (`judge-replay ... | head`), point stdout at /dev/null so that Python's own
    flush at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _escape_what_the_terminal_cannot_show() -> None:
    """Standard output and error show a character their encoding cannot (`PYTHONIOENCODING=ascii`, a
    Latin-1 terminal) as a backslash escape instead of failing on it; their encoding is kept."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: left as it is
                pass


def _environment_problem() -> str | None:
    """Why no command can run here (standard output closed: `judge-replay ... >&-`; the working folder
    deleted), or None."""
    if sys.stdout is None:
        return "standard output is closed: nothing can be printed"
    try:
        os.getcwd()
    except FileNotFoundError:
        return "the current folder no longer exists: cd into a project"
    return None


def _exit_code(err: ReplayError) -> int:
    """`err`'s exit code, except that a file that could not be read or written because the system refused
    (permission, read-only file system, full disk) is the environment failing, 1, however it is said."""
    cause = err.__cause__
    if err.exit_code == 2 and isinstance(cause, OSError) and cause.errno in _ENVIRONMENT_ERRNOS:
        return 1
    return err.exit_code


def main(argv: list[str] | None = None) -> int:
    """Run the CLI. Every failure ends as one line on stderr and an exit code, never a traceback:
    2 bad input or usage, 1 a failed check or the environment failing (disk full, read-only folder,
    no permission, standard output closed, the working folder deleted), 130 interrupted, 70 a bug (its
    traceback with JUDGE_REPLAY_DEBUG=1)."""
    debug = debugging()
    _escape_what_the_terminal_cannot_show()
    problem = _environment_problem()
    if problem is not None:
        _say(problem)
        return 1
    with_nul = next((arg for arg in (sys.argv[1:] if argv is None else argv) if "\x00" in arg), None)
    if with_nul is not None:  # a shell cannot pass one; a program calling main() can
        _say(f"argument {with_nul!r}: holds a NUL character (\\x00), which no argument can hold")
        return 2
    try:
        code = cli.main(args=argv, prog_name="judge-replay", standalone_mode=False)
    except ReplayError as err:
        _say(*err.lines)
        return _exit_code(err)
    except (click.exceptions.Abort, KeyboardInterrupt):
        _say("interrupted")
        return 130
    except click.ClickException as err:
        if isinstance(err, _NO_ARGS_IS_HELP):  # `judge-replay` or a group alone: the help, as click shows it
            err.show()
            return 2
        _say(_click_error(err))
        return err.exit_code if err.exit_code in (0, 1) else 2
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except OSError as err:
        if debug:
            raise
        from replay.files.paths import system_error_text  # not at start-up: `--help` stays light

        _say(system_error_text(err))
        return 2 if isinstance(err, _BAD_PATH_ERRORS) else 1
    except Exception as err:
        if debug:
            raise
        _say(f"internal error: {type(err).__name__}: {_first_line(str(err))} -- a bug in judge-replay; "
             f"rerun with {DEBUG_VARIABLE}=1 to see the traceback, and report it with that output")
        return INTERNAL_ERROR
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
