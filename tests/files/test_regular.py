"""`files.regular`: only regular files are read, each kind within its documented size limit."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from locations import REPO
from replay.errors import InputError
from replay.files.regular import LIMITS, MiB, read_regular, read_regular_text


def test_the_reference_page_gives_every_kind_and_its_limit() -> None:
    page = (REPO / "docs" / "reference" / "input-files.md").read_text("utf-8")
    rows = {line.split("|")[1].strip(): line.split("|")[3].strip() for line in page.splitlines()
            if line.startswith("| ") and not line.startswith("| kind")}
    names = {"claims": "claims file", "gold": "gold set", "results": "results file", "run": "run.json",
             "cassette": "cassette", "prompt": "prompt file", "settings": "settings", "journal": "batch journal",
             "receipt": "replay receipt", "snapshot": "snapshot file", "page": "page file", "cache": "derived-cache file",
             "file": "any other file"}
    assert set(names) == set(LIMITS)
    assert {names[kind]: f"{limit // MiB} MiB" for kind, (_, limit) in LIMITS.items()} == rows


def test_a_socket_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "gold.json"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(InputError, match="gold.json: is a socket, not a regular file"):
            read_regular(path, "gold")


def test_a_file_at_its_limit_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    path = tmp_path / "p.md"
    with open(path, "wb") as fh:
        fh.truncate(LIMITS["prompt"][1])
    assert len(read_regular(path, "prompt")) == LIMITS["prompt"][1]
    os.truncate(path, LIMITS["prompt"][1] + 1)
    with pytest.raises(InputError, match=r"p.md: is 16,777,217 bytes, more than the 16 MiB a prompt file may be: not read"):
        read_regular(path, "prompt")


def test_text_has_the_line_ends_read_text_gives(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b"\xef\xbb\xbf{\r\n}\r")
    assert read_regular_text(path, "claims") == path.read_text("utf-8-sig") == "{\n}\n"
