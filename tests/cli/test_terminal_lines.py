"""Data stays data on the terminal: a run folder whose name holds a line break and an escape sequence is
shown escaped on every line that names it (`written:`, `cassettes list` rows, `verify ... ok`, the
stand-in notes, table cells, error messages), so no output gains a line the program never wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import write_json
from replay.cli.main import main

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
NAME = "evil\nFAKE LINE\x1b[31m\tx"
EVIL = f"runs/{NAME}"
SHOWN = "evil\\nFAKE LINE\\x1b[31m\\tx"
"""How the name must show: one line, every control visible."""


@pytest.fixture
def workdir(workdir: Path) -> Path:
    (workdir / "pages").mkdir()
    (workdir / "pages" / "models.md").write_text(
        f"---\nurl: {MODELS_URL}\n---\n# Models\n\n| Model | Context window |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n", "utf-8")
    write_json(workdir / "claims" / "a.json", {"file": "docs/a.md", "claims": [
        {"id": "a-1", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL}]})
    write_json(workdir / "gold.json", {"name": "g", "items": [{"file": "docs/a.md", "id": "a-1", "label": "outdated"}]})
    return workdir


def assert_data_stays_data(text: str) -> None:
    assert "\x1b" not in text, text
    assert not any(line.startswith("FAKE LINE") or line.lstrip().startswith("FAKE LINE") for line in text.splitlines()), text
    assert SHOWN in text.replace("\n", ""), text  # named (a wrapped table may break the escaped name between lines)


def test_a_run_folder_named_with_controls_is_shown_escaped_everywhere(workdir: Path, stand_ins: tuple[Any, Any],
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    learn, model = stand_ins
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "x" * 40)
    endpoints = ["--learn-url", learn.url, "--anthropic-base-url", model.url]
    for run in (EVIL, "runs/plain"):
        assert main(["judge", "--prompt", "v3", "--claims", "claims", "--run", run, "--mode", "record", "--no-progress",
                     *endpoints]) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert "written: " in out
    assert_data_stays_data(out.split("judge record")[1])  # the first run's summary: its written: line
    commands = [
        ["cassettes", "list", "runs"],
        ["cassettes", "verify", EVIL],
        ["grade", EVIL, "--gold", "gold.json"],  # the stand-in notes name the run; the table's title too
        ["bakeoff", "--gold", "gold.json", "--baseline", "runs/plain", "--candidate", EVIL, "--no-replay"],
        ["diff", EVIL, "runs/plain"],
        ["drift", EVIL, "--against", "runs/plain"],
    ]
    for argv in commands:
        code = main(argv)
        out, err = capsys.readouterr()
        assert code in (0, 1), (argv, err)
        assert_data_stays_data(out + err)
    # an error naming the run: recording over a frozen run is refused, in one line
    assert main(["grade", EVIL, "--gold", "gold.json", "--freeze"]) == 0
    capsys.readouterr()
    assert main(["judge", "--prompt", "v3", "--claims", "claims", "--run", EVIL, "--mode", "record", "--no-progress",
                 *endpoints]) == 2
    err = capsys.readouterr().err
    assert "is frozen" in err and len(err.strip().splitlines()) == 1, err
    assert_data_stays_data(err)

