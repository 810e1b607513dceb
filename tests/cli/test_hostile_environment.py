"""A hostile environment (a terminal that cannot show UTF-8, stdout closed, the working folder deleted, no
permission) or endpoint flags that are no URL: one line and exit 1 (environment) or 2 (input), never 70."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from replay.cli.main import INTERNAL_ERROR, main
from cli.test_hostile_inputs import CASSETTE, assert_one_line, project  # noqa: F401  (a fixture)
from locations import REPO

EMOJI_RUN = "cassettes/v3-\N{GRINNING FACE}"
CLI = [sys.executable, "-m", "replay.cli.main"]


def _environment(**extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("JUDGE_REPLAY_DEBUG", "PYTHONIOENCODING")} | extra


@pytest.fixture(scope="module")
def demo_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled demo (its settings, runs and gold set) in a folder of its own, plus a copy of the v3 run
    under a name a Latin-1 or ASCII terminal cannot show. Made once for the module: the commands run in it
    only read it (and the derived cache, `DEMO_CACHE`)."""
    tmp_path = tmp_path_factory.mktemp("demo")
    shutil.copytree(REPO / "cassettes", tmp_path / "cassettes")
    shutil.copytree(REPO / "demo", tmp_path / "demo")
    shutil.copytree(REPO / "cassettes" / "v3-demo", tmp_path / EMOJI_RUN)
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.judge-replay]\ngold = 'demo/gold-correctness-set.json'\n"
        "baseline = 'cassettes/v2-demo'\ncandidates = ['cassettes/v3-demo', 'cassettes/v1-demo']\n", "utf-8")
    return tmp_path


DEMO_CACHE = ".derived-cache"
"""The derived-cache folder of the commands run in `demo_project` (JUDGE_REPLAY_CACHE_DIR): the module's, so
only the first command to read a run parses its cassettes."""

OUTPUTS = {
    "bakeoff": ["bakeoff", "--no-replay"],
    "grade": ["grade", EMOJI_RUN],
    "diff": ["diff", "cassettes/v2-demo", EMOJI_RUN],
    "diff markdown": ["diff", "cassettes/v2-demo", EMOJI_RUN, "--format", "markdown"],
    "drift": ["drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09"],
    "cassettes list": ["cassettes", "list"],
}


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("argv", OUTPUTS.values(), ids=OUTPUTS.keys())
def test_a_terminal_that_cannot_show_utf8_gets_escapes(argv: list[str], encoding: str, demo_project: Path) -> None:
    """What the terminal's encoding cannot show is printed as a backslash escape, never a crash."""
    env = _environment(PYTHONIOENCODING=encoding, JUDGE_REPLAY_CACHE_DIR=str(demo_project / DEMO_CACHE))
    done = subprocess.run([*CLI, *argv], cwd=demo_project, env=env, capture_output=True, timeout=120)
    err = done.stderr.decode("utf-8", errors="replace")
    assert done.returncode in (0, 1) and done.returncode != INTERNAL_ERROR, err
    assert "internal error" not in err and "Traceback" not in err, err
    out = done.stdout.decode("utf-8", errors="replace")  # click's echo writes UTF-8 where the encoding is ASCII
    assert out.strip(), err
    if EMOJI_RUN in argv:  # the run's name is shown, escaped or (click's echo) as UTF-8
        assert "\\U0001f600" in out or "\N{GRINNING FACE}" in out, out


@pytest.mark.parametrize("argv", [OUTPUTS["grade"], OUTPUTS["bakeoff"], OUTPUTS["diff"], ["cassettes", "list"]],
                         ids=["grade", "bakeoff", "diff", "cassettes list"])
def test_a_closed_standard_output_is_one_line_and_exit_1(argv: list[str], demo_project: Path) -> None:
    """`judge-replay grade ... >&-`: nothing can be printed, which is said on stderr (exit 1)."""
    done = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *CLI, *argv], cwd=demo_project, env=_environment(),
                          capture_output=True, text=True, timeout=120)
    assert done.stderr == "judge-replay: standard output is closed: nothing can be printed\n"
    assert done.returncode == 1


def test_a_deleted_working_folder_is_one_line_and_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    for argv in (["cassettes", "list"], ["grade", "runs/a", "--gold", "gold.json"], ["bakeoff"]):
        code = main(argv)
        assert_one_line(code, capsys.readouterr().err, "the current folder no longer exists", (1,))


def test_a_claims_file_the_system_cannot_read_is_exit_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A read that fails with EIO (as /proc/self/mem does at offset 0) is the system failing, not a malformed
    file: exit 1, naming the file."""
    (project / "claims" / "z.json").symlink_to("/proc/self/mem")
    code = main(["judge", "--prompt", "v3", "--claims", "claims", "--mode", "record", "--run", "runs/new",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert_one_line(code, err, "claims/z.json", (1,))
    assert "Input/output error" in err
    code = main(["grade", "runs/a", "--gold", "claims/z.json"])
    assert_one_line(code, capsys.readouterr().err, "claims/z.json", (1,))


def test_a_claims_file_without_read_permission_is_exit_1(project: Path) -> None:
    """`chmod 000` on a claims file: permission denied is the environment (exit 1), naming the file. As root,
    the command runs without the capabilities that bypass file permissions."""
    (project / "claims" / f"{CASSETTE}.json").chmod(0)
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root, and no setpriv to drop the permission-bypassing capabilities")
        prefix = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    for argv in (["judge", "--prompt", "v3", "--claims", "claims", "--mode", "record", "--run", "runs/new"],
                 ["judge", "--prompt", "v3", "--claims", f"claims/{CASSETTE}.json", "--mode", "live", "--out", "r.json"],
                 ["grade", "runs/a", "--gold", f"claims/{CASSETTE}.json"]):  # a path option: not click's usage error
        done = subprocess.run([*prefix, *CLI, *argv], cwd=project, env=_environment(), capture_output=True,
                              text=True, timeout=120)
        assert_one_line(done.returncode, done.stderr, f"claims/{CASSETTE}.json", (1,))
        assert "Permission denied" in done.stderr


JUDGE_RECORD = ["judge", "--prompt", "v3", "--claims", "claims", "--mode", "record", "--run", "runs/new", "--no-progress"]
BAD_ENDPOINTS = {
    "no closing bracket": "http://[::1",
    "a port that is no number": "http://127.0.0.1:port/api/mcp",
    "a port past 65535": "http://127.0.0.1:99999",
    "no scheme": "x",
    "empty": "",
    "another scheme": "ftp://127.0.0.1/api/mcp",
    "no host": "http:///api/mcp",
    "a control character": "http://127.0.0.1\x07:8931/api/mcp",
    "a space": "http://127.0.0.1 :8931",
}


@pytest.mark.parametrize("url", BAD_ENDPOINTS.values(), ids=BAD_ENDPOINTS.keys())
@pytest.mark.parametrize("argv", [[*JUDGE_RECORD, "--learn-url", "URL"], [*JUDGE_RECORD, "--anthropic-base-url", "URL"],
                                  ["drift", "runs/a", "--live", "--learn-url", "URL"]],
                         ids=["judge --learn-url", "judge --anthropic-base-url", "drift --live --learn-url"])
def test_an_endpoint_flag_that_is_no_url_is_bad_input(argv: list[str], url: str, project: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before anything is called, naming the flag (exit 2), never 'cannot reach' a URL we made up."""
    code = main([url if arg == "URL" else arg for arg in argv])
    err = capsys.readouterr().err
    assert_one_line(code, err, argv[-2], (2,))
    assert "not an http(s) URL" in err and "cannot reach" not in err


@pytest.mark.parametrize("amount", ["inf", "nan", "-1", "0", "1e400"])
def test_max_cost_must_be_a_finite_positive_amount(amount: str, project: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`--max-cost inf` would be kept in run.json as `Infinity`, which is not JSON."""
    code = main([*JUDGE_RECORD, "--max-cost", amount])
    assert_one_line(code, capsys.readouterr().err, "--max-cost", (2,))
    assert not (project / "runs" / "new").exists()


@pytest.mark.parametrize("argv", [["grade", "runs/a", "--gold", "gold.json", "--out", "a\x00b"],
                                  ["grade", "runs/a", "--gold", "gold\x00.json"], ["cassettes", "list", "runs\x00"]],
                         ids=["--out", "--gold", "an argument"])
def test_an_argument_with_a_nul_is_bad_input(argv: list[str], project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A shell cannot pass a NUL, but a program calling `main()` can: one line (exit 2), not 'embedded null byte'."""
    assert_one_line(main(argv), capsys.readouterr().err, "holds a NUL character", (2,))
