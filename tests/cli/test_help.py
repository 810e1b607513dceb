"""Help for the whole workflow: every command's `--help` ends with an example a user can paste."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import click
import pytest

import replay.cli
from replay.cli.main import COMMANDS, cli, main
from locations import REPO


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path under `group`, the group itself first, found by walking the real CLI."""
    found = [path]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


COMMAND_PATHS = _commands(cli)


def test_the_walk_finds_every_command() -> None:
    top = {path[0] for path in COMMAND_PATHS if path}
    assert top == {"bakeoff", "cassettes", "diff", "drift", "export", "grade", "init", "judge", "pages", "schema", "sim"}
    assert {("cassettes", "audit"), ("cassettes", "verify"), ("cassettes", "list"), ("sim", "learn"),
            ("sim", "model"), ("pages", "history"), ("pages", "diff"), ("export", "inspect")} <= set(COMMAND_PATHS)


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=[" ".join(p) or "judge-replay" for p in COMMAND_PATHS])
def test_help_ends_with_an_example(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    assert lines[-1].startswith("judge-replay "), out
    example = lines[-1].split("#")[0].split()
    assert example[1 : 1 + len(path)] == list(path) or not path, f"the example is not of this command: {lines[-1]}"


def test_the_command_table_lists_every_command_module() -> None:
    """`judge-replay --help` lists COMMANDS without importing them; each must be the module's command."""
    modules = {m.name for m in pkgutil.iter_modules(replay.cli.__path__) if not m.name.startswith("_")} - {"main"}
    assert set(COMMANDS) == modules
    for name in COMMANDS:
        command = cli.get_command(click.Context(cli), name)
        assert command is not None and command.name == name


def test_top_level_help_imports_nothing_heavy() -> None:
    """The SDK, pydantic, rich, pytest and syrupy load only when a command that needs them runs."""
    heavy = {"anthropic", "httpx", "pydantic", "rich", "pytest", "syrupy", "vcr", "yaml"}
    code = ("import sys; from replay.cli.main import main; code = main(['--help']); "
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({sorted(heavy)!r})), code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1] == "[] 0", done.stdout + done.stderr


def test_no_commands_help_imports_the_sdk_or_pytest() -> None:
    """`judge-replay COMMAND --help` (every command and subcommand) loads neither the anthropic SDK nor
    pytest/syrupy/vcrpy: one process shows every help in turn and says what each one loaded."""
    code = """
import contextlib, io, sys
import click
from replay.cli.main import COMMANDS, cli, main
heavy = {"anthropic", "pytest", "syrupy", "vcr", "_pytest"}
paths = []
for name in sorted(COMMANDS):
    command = cli.get_command(click.Context(cli), name)
    paths.append([name])
    if isinstance(command, click.Group):
        paths += [[name, sub] for sub in command.list_commands(click.Context(command))]
for path in paths:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main([*path, "--help"])
    print(" ".join(path), code, sorted({m.split(".")[0] for m in sys.modules} & heavy))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    assert len(lines) > len(COMMANDS), done.stdout + done.stderr  # the groups' subcommands are there too
    assert all(line.endswith(" 0 []") for line in lines), done.stdout + done.stderr


@pytest.mark.parametrize("path", [[], ["cassettes"], ["pages"], ["sim"]], ids=["judge-replay", "cassettes", "pages", "sim"])
def test_a_group_alone_shows_its_help(path: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Not a one-line usage error: a user typing `judge-replay` wants the list of commands."""
    assert main(path) in (0, 2)
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert shown.startswith(f"Usage: {' '.join(['judge-replay', *path])} [OPTIONS] COMMAND") and "Commands:" in shown


def test_judge_helps_replay_example_runs_as_printed_in_this_repository(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The replay example names a run this repository has (a bundled demo run), and replays it offline."""
    from pathlib import Path

    assert main(["judge", "--help"]) == 0
    examples = [line.strip().split("#")[0].split() for line in capsys.readouterr().out.splitlines()]
    [replay] = [words for words in examples if words[:2] == ["judge-replay", "judge"] and "replay" in words]
    monkeypatch.chdir(REPO)
    assert main([*replay[1:], "--no-progress"]) == 0, replay
    assert "judge replay: prompt v3" in capsys.readouterr().out
