"""Every text report fits the width it is laid out at (COLUMNS, else 80 columns when piped) without losing a
digit: the real CLI, run as a user runs it, at 60, 80, 100 and 120 columns and with COLUMNS unset."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from locations import REPO

CLI = str(Path(sys.executable).parent / "judge-replay")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("width")
    for part in ("pyproject.toml", "cassettes", "demo"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy)(REPO / part, root / part)
    return root


def run(project: Path, args: list[str], columns: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run([CLI, *args], cwd=project, env=env, capture_output=True, text=True, encoding="utf-8")
    assert done.returncode == 0, done.stderr
    return done.stdout


def numbers(value) -> set[str]:
    """The ratios (3 decimals), counts and costs a text report shows of this JSON."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, v in value.items():
            if key in ("precision", "recall", "f1", "accuracy") and isinstance(v, float):
                out.add(f"{v:.3f}")
            elif key in ("tp", "fp", "fn", "tn", "no_verdict", "quote_unverified") and isinstance(v, int):
                out.add(str(v))
            elif key == "cost_usd" and isinstance(v, float):
                out.add(f"${v:.4f}")
            else:
                out |= numbers(v)
    elif isinstance(value, list):
        for v in value:
            out |= numbers(v)
    return out


COMMANDS = {
    "bakeoff": ["bakeoff"],
    "grade": ["grade", "cassettes/v3-demo", "--baseline", "cassettes/v2-demo"],
}


@pytest.mark.parametrize("columns", ["60", "80", "100", "120", None])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_line_fits_and_every_number_is_shown(project, command, columns):
    text = run(project, COMMANDS[command], columns)
    width = int(columns or 80)
    too_long = [line for line in text.splitlines() if cell_len(line) > width]
    assert not too_long, too_long[:3]
    padded = [line for line in text.splitlines() if line != line.rstrip()]  # a table's title padded to its width
    assert not padded, padded[:3]
    shown = set(re.findall(r"\$?\d+(?:\.\d+)?", text))
    data = json.loads(run(project, [*COMMANDS[command], "--json"], columns))
    if command == "bakeoff":  # each version's headline figures and cost
        expected = numbers([{k: v for k, v in {**ver["scores"], "cost_usd": ver["cost_usd"]}.items()
                             if not isinstance(v, (dict, list))} for ver in data["versions"]])
    else:  # the graded run's figures and breakdowns, the baseline's headline
        expected = numbers({k: v for k, v in data.items() if k != "baseline"}) | numbers(
            {k: v for k, v in data["baseline"].items() if not isinstance(v, (dict, list))})
    missing = expected - shown
    assert not missing


@pytest.mark.parametrize("columns", ["60", "80", "120"])
def test_diff_lines_wrap_at_words_and_commands_still_paste(project, columns):
    text = run(project, ["diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--confirm"], columns)
    width = int(columns)
    assert all(cell_len(line) <= width for line in text.splitlines())
    joined = " ".join(line.strip() for line in text.splitlines())
    assert "B cites R1 (Lower-bound understatement)" in joined  # words kept whole across the wraps
    commands = text.split("record the missing controlled runs:\n", 1)[1].split("\n\n", 1)[0]
    pasted = re.sub(r" \\\n\s+", " ", commands)  # what a shell reads of the continuation lines
    assert all(line.strip().startswith("judge-replay judge --prompt") for line in pasted.splitlines())


def test_fit_helpers_wrap_at_words_and_keep_commands_whole():
    from replay.reports.fit import wrap_command, wrap_words

    lines = wrap_words("alpha beta gamma delta epsilon", 12, indent=2, hang=4)
    assert lines == ["  alpha beta", "    gamma", "    delta", "    epsilon"]
    cmd = "judge-replay judge --prompt v2 --claims 'a b.json' --run out --mode record"
    wrapped = wrap_command(cmd, 30)
    assert all(cell_len(line) <= 30 for line in wrapped)
    assert re.sub(r" \\\n\s+", " ", "\n".join(wrapped)) == cmd
