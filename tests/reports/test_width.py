"""Every text report fits the width it is laid out at (COLUMNS, else 80 columns when piped) without losing a
digit: the real CLI at 60, 80, 100 and 120 columns and with COLUMNS unset.

Each (command, width) runs once per module, and the tests that check it share its output (`Outputs`). The
piped case with COLUMNS unset runs the CLI as a user runs it, a new process writing to a pipe; the set
widths run `main` in this process, writing to a pipe-like stream (not a terminal, so laid out at COLUMNS
as a pipe is). `test_in_process_output_is_what_the_command_prints` holds the two ways to the same bytes
at the same 80 columns."""

import io
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

Result = tuple[int, str, str]
"""(exit code, stdout, stderr)."""


def in_process(cwd: Path, args: list[str], env: dict[str, str | None]) -> Result:
    """`judge-replay ARGS` run by `main` in this process, in `cwd`, with `env` set (None: unset), its
    standard output and error written to streams that are not a terminal, as a pipe is."""
    from replay.cli.main import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        for name, value in env.items():
            if value is None:
                mp.delenv(name, raising=False)
            else:
                mp.setenv(name, value)
        mp.setattr(sys, "stdout", out)
        mp.setattr(sys, "stderr", err)
        code = main(list(args))
        out.flush()
        err.flush()
    text = lambda stream: stream.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return code, text(out), text(err)


def in_subprocess(cwd: Path, args: list[str], env: dict[str, str | None]) -> Result:
    """`judge-replay ARGS` as a new process in `cwd` with `env` set (None: unset), its output piped."""
    full = {k: v for k, v in os.environ.items() if k not in env}
    full.update({k: v for k, v in env.items() if v is not None})
    done = subprocess.run([CLI, *args], cwd=cwd, env=full, capture_output=True, text=True, encoding="utf-8")
    return done.returncode, done.stdout, done.stderr


def run_all(cwd: Path, args: list[str], columns: str | None, cache: Path | None = None) -> Result:
    """(exit code, stdout, stderr) of the CLI at `columns`: None (COLUMNS unset, output piped) as a new
    process, else in this process. `cache`: the derived-cache folder (default: the test's own)."""
    env: dict[str, str | None] = {"COLUMNS": columns}
    if cache is not None:
        env["JUDGE_REPLAY_CACHE_DIR"] = str(cache)
    return (in_subprocess if columns is None else in_process)(cwd, args, env)


class Outputs:
    """The CLI's outputs in one project folder, each (arguments, width) run once and kept: the derived
    cache is the module's, so only a command's first run parses the cassettes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.kept: dict[tuple[tuple[str, ...], str | None], Result] = {}

    def __call__(self, args: list[str], columns: str | None) -> Result:
        key = (tuple(args), columns)
        if key not in self.kept:
            self.kept[key] = run_all(self.root, args, columns, cache=self.root / ".cache")
        return self.kept[key]

    def json(self, args: list[str]) -> object:
        """The `--json` output of `args` (laid out at no width: the same at every COLUMNS)."""
        code, out, err = self(args + ["--json"], "80")
        assert code in (0, 1), err
        return json.loads(out)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("width")
    for part in ("pyproject.toml", "cassettes", "demo"):
        (shutil.copytree if (REPO / part).is_dir() else shutil.copy)(REPO / part, root / part)
    return Outputs(root)


def run(outputs: Outputs, args: list[str], columns: str | None) -> str:
    code, out, err = outputs(args, columns)
    assert code == 0, err
    return out


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
def test_every_line_fits_and_every_number_is_shown(outputs, command, columns):
    text = run(outputs, COMMANDS[command], columns)
    width = int(columns or 80)
    too_long = [line for line in text.splitlines() if cell_len(line) > width]
    assert not too_long, too_long[:3]
    padded = [line for line in text.splitlines() if line != line.rstrip()]  # a table's title padded to its width
    assert not padded, padded[:3]
    shown = set(re.findall(r"\$?\d+(?:\.\d+)?", text))
    data = outputs.json(COMMANDS[command])
    if command == "bakeoff":  # each version's headline figures and cost
        expected = numbers([{k: v for k, v in {**ver["scores"], "cost_usd": ver["cost_usd"]}.items()
                             if not isinstance(v, (dict, list))} for ver in data["versions"]])
    else:  # the graded run's figures and breakdowns, the baseline's headline
        expected = numbers({k: v for k, v in data.items() if k != "baseline"}) | numbers(
            {k: v for k, v in data["baseline"].items() if not isinstance(v, (dict, list))})
    missing = expected - shown
    assert not missing


DIFF = ["diff", "cassettes/v2-demo", "cassettes/v3-demo-2026-09", "--confirm"]


@pytest.mark.parametrize("columns", ["60", "80", "120", None])
def test_diff_lines_wrap_at_words_and_commands_still_paste(outputs, columns):
    text = run(outputs, DIFF, columns)
    width = int(columns or 80)
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


RETIREMENTS = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/model-retirements"
MORE = {
    "pages history": ["pages", "history", RETIREMENTS],
    "cassettes list": ["cassettes", "list"],
    "drift": ["drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09"],
    "judge replay": ["judge", "--run", "cassettes/v3-demo"],
}


@pytest.mark.parametrize("columns", ["60", "80", "100", "120", None])
@pytest.mark.parametrize("command", sorted(MORE))
def test_more_outputs_fit_and_keep_every_word_and_number(outputs, command, columns):
    """stdout and stderr (progress lines) fit; a one-line error (`judge-replay: ...`, exit 1 or 2) stays one
    line, as every error does, so a log search finds it whole. Every word of the widest layout is still
    there, whole, in the narrow one."""
    code, out, err = outputs(MORE[command], columns)
    width = int(columns or 80)
    lines = out.splitlines() + [line for line in err.splitlines() if not line.startswith("judge-replay: ")]
    too_long = [line for line in lines if cell_len(line) > width]
    assert not too_long, too_long[:3]
    wide_code, wide_out, wide_err = outputs(MORE[command], "1000")  # the layout where nothing wraps
    assert code == wide_code
    words = lambda text: sorted(w.strip(",") for w in text.split() if not set(w) <= set("─━│┃┏┓┗┛┡┩└┘├┤┼╇╋┳┻┴┬\\"))
    if command == "judge replay":  # the summary: the same text, wrapped at words (progress lines come in any order)
        assert words(out) == words(wide_out)
    elif command == "drift":  # every claim at risk named whole (the narrow layout: one block per claim)
        at_risk = outputs.json(MORE[command])["at_risk"]
        assert {f"{a['file']}:{a['id']}" for a in at_risk} <= set(words(out))
    else:  # a table laid out in groups repeats its key column: every cell of the wide one is still there (but
        # a word wider than the whole line, which only breaking can show)
        assert {w for w in words(wide_out) if cell_len(w) <= width} <= set(words(out))


@pytest.mark.parametrize("columns", ["60", "80", None])
def test_a_wrapped_drift_rerecord_command_still_pastes_as_printed(outputs, columns):
    code, out, _ = outputs(MORE["drift"], columns)
    assert code == 1
    commands = out.split("verdicts moved:\n", 1)[1]
    pasted = re.sub(r" \\\n\s+", " ", commands).splitlines()
    assert [line.strip() for line in pasted[:2]] == outputs.json(MORE["drift"])["rerecord_commands"]


@pytest.mark.parametrize("command", sorted({**COMMANDS, **MORE, "diff": DIFF}))
def test_in_process_output_is_what_the_command_prints(outputs, command):
    """The widths run in this process lay out as the CLI run as a process does: at 80 columns set, the same
    standard output, byte for byte, as piped with COLUMNS unset (which is 80 columns), and the same exit."""
    args = {**COMMANDS, **MORE, "diff": DIFF}[command]
    code, out, err = outputs(args, "80")
    piped_code, piped_out, piped_err = outputs(args, None)
    assert (code, out) == (piped_code, piped_out)
    if command == "judge replay":  # progress lines come in any order, each with the counts so far
        done = lambda text: sorted(re.findall(r"^\[\d+/\d+\] (\S+): ", text, re.M))
        assert done(err) == done(piped_err) != []
        errors = lambda text: [line for line in text.splitlines() if line.startswith("judge-replay: ")]
        err, piped_err = errors(err), errors(piped_err)
    assert err == piped_err


@pytest.mark.parametrize("columns", ["60", "80", "120", None])
def test_inits_next_steps_fit_and_paste(tmp_path, columns):
    code, out, _ = run_all(tmp_path, ["init", "my docs"], columns)
    assert code == 0
    assert all(cell_len(line) <= int(columns or 80) for line in out.splitlines())
    steps = re.sub(r" \\\n\s+", " ", out.split("next, each command on its own line:\n", 1)[1]).splitlines()
    commands = [line.strip() for line in steps if not line.strip().startswith("#")]
    assert [c.split("   #")[0].split(" #")[0] for c in commands] == [
        "cd 'my docs'", "judge-replay judge --help", "judge-replay bakeoff --check", "pytest --snapshot-update"]


def test_a_printable_ascii_paragraph_that_fits_wraps_as_word_by_word_wrapping_does():
    import random

    from replay.reports.fit import words_loop, wrap_words

    rng = random.Random(7)
    pieces = ["a", "bb", "word", "", " ", "  ", "x" * 30, "~!", "\t", "é"]
    for _ in range(3000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        width, indent, hang = rng.randint(1, 60), rng.choice([0, 2, 4]), rng.choice([2, 4])
        if not (text.isascii() and text.isprintable()):
            continue
        assert wrap_words(text, width, indent=indent, hang=hang) == words_loop(text, width, indent, hang), (text, width)
