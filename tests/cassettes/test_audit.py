"""`cassettes audit` reads every file under the paths it is given, every part of each, and says what it read."""

from __future__ import annotations

import base64
import json
import os
import urllib.parse
from pathlib import Path

import pytest

from replay.cli.main import main

KEY = "sk-ant-api03-" + "Jq4tW8zLm2Rx7Vb9Nc3Kd6Hf1Gp5Ys0TuXeAoBiWv"
REQUEST = "- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
RESPONSE = "  response: {status: {code: 200, message: OK}}\n"
PLACES = {
    "yaml-comment.yaml": f"interactions: []\n# the key was {KEY}\nversion: 1\n",
    "mapping-key.yaml": f"interactions: []\n{KEY}: 1\nversion: 1\n",
    "header-name.yaml": f"interactions:\n{REQUEST}    headers:\n      {KEY}: [x]\n{RESPONSE}",
    "json-key-in-body.yaml": f"interactions:\n{REQUEST}    body: '{{\"{KEY}\": 1}}'\n{RESPONSE}",
    "extra-interaction-key.yaml": f"interactions:\n{REQUEST}{RESPONSE}  {KEY}: 1\n",
    "not-a-cassette.json": json.dumps({"a": {KEY: 2}}),
    "prompt.md": f"# Prompt\n\nAnswer with the key {KEY}.\n",
    "unparsable.yaml": f"{{{{{{ {KEY} ::: [\n",
    "unparsable.json": f'{{"a": "{KEY}", ',
    "notes.txt": f"key: {KEY}\n",
    "not-utf8.bin": None,  # the key among bytes that are no UTF-8
}


def audit(capsys: pytest.CaptureFixture[str], *paths: Path) -> tuple[int, str, str]:
    code = main(["cassettes", "audit", *(str(p) for p in paths)])
    out, err = capsys.readouterr()
    return code, out, err


def assert_no_window(text: str) -> None:
    assert not [KEY[i:i + 12] for i in range(len(KEY) - 11) if KEY[i:i + 12] in text]


@pytest.mark.parametrize("name", sorted(PLACES))
def test_a_key_anywhere_in_any_file_is_found(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = PLACES[name]
    if text is None:
        (tmp_path / name).write_bytes(b"\xff\xfe\x00\x80" + KEY.encode() + b"\x80\x81")
    else:
        (tmp_path / name).write_text(text, "utf-8")
    code, out, err = audit(capsys, tmp_path)
    assert code == 1, out + err
    assert f"{tmp_path / name}: " in out and "anthropic key sk-ant…" in out
    assert "1 secret(s) found in 1 of 1 file(s)" in err
    assert_no_window(out + err)


@pytest.mark.parametrize("form", ["plain", "base64", "url", "json", "wrapped base64"])
def test_a_key_in_four_encodings_is_found_in_a_prompt(tmp_path: Path, form: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    encoded = {"plain": KEY, "base64": base64.b64encode(f"u:{KEY}".encode()).decode(),
               "url": urllib.parse.quote(f"k={KEY}&x=1", safe=""), "json": json.dumps(KEY).replace("-", "\\u002d"),
               # wrapped at 76 characters, the key's start on the first line too short to be seen there
               "wrapped base64": "\n" + base64.encodebytes(("x" * 50 + KEY).encode()).decode()}[form]
    (tmp_path / "prompt.md").write_text(f"# Prompt\n\nsee {encoded} here\n", "utf-8")
    code, out, err = audit(capsys, tmp_path)
    assert code == 1 and "anthropic key" in out, out + err


def test_it_says_what_it_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "a.yaml").write_text(f"interactions:\n{REQUEST}{RESPONSE}version: 1\n", "utf-8")
    (tmp_path / "run" / "run.json").write_text('{"run_id": "run"}', "utf-8")
    (tmp_path / "run" / "prompt.md").write_text("# Prompt\n", "utf-8")
    (tmp_path / "run" / ".hidden").mkdir()
    (tmp_path / "run" / ".hidden" / "x.yaml").write_text("a: 1\n", "utf-8")
    os.mkfifo(tmp_path / "run" / "pipe")
    code, out, err = audit(capsys, tmp_path)
    assert code == 0, out + err
    assert out.splitlines()[-1] == ("no secrets found in 3 files: 1 cassette (1 interaction), 1 other JSON or YAML "
                                    "file, 1 read as text")
    assert "skipped: 1 hidden folder (run/.hidden), 1 that is not a regular file (run/pipe)" in err.replace(
        str(tmp_path) + "/", "")


def test_files_with_nothing_to_read_are_not_a_clean_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(f"token = {KEY}\n", "utf-8")
    os.mkfifo(tmp_path / "pipe")
    code, out, err = audit(capsys, tmp_path)
    assert code == 2 and "no secrets found" not in out + err
    assert "nothing the audit could read" in err and "Traceback" not in err
