"""The parsed-cassette cache: entries are used when valid, rebuilt when not, and the YAML stays the truth."""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path

import pytest

from replay.secrets import registry as _secrets
from replay.cassettes.interaction import Interaction
from replay.cassettes.cassette import load_cassette, save_cassette
from replay.cassettes.entry_format import decode, encode
from replay.cassettes.cache import cache_folder, OFF_VARIABLE, entry_path
from replay.errors import InputError


def _interaction(text: str) -> Interaction:
    return Interaction(method="POST", uri="http://127.0.0.1:8932/v1/messages",
                       request_body=json.dumps({"messages": [{"role": "user", "content": text}]}),
                       status=200, response_body=json.dumps({"content": [{"type": "text", "text": text}]}),
                       request_headers={"content-type": ["application/json"]},
                       response_headers={"content-type": ["application/json"]}, reason="OK")


def _cassette(project: Path, text: str = "first") -> Path:
    path = project / "runs" / "r" / "docs_a.md.yaml"
    save_cassette(path, [_interaction(text)])
    return path


def _entry(project: Path, cassette: Path) -> Path:
    entry = entry_path(cassette)
    assert entry is not None and entry.parent == cache_folder()
    return entry


def _source_sha256(entry: Path) -> str:
    return str(json.loads(entry.read_bytes().partition(b"\n")[0])["source_sha256"])


def _rewrite_payload(entry: Path, change: object) -> None:
    """Give the entry another payload with a correct checksum (as if the cache had stored `change`)."""
    line = json.loads(entry.read_bytes().partition(b"\n")[0])
    payload = encode(change)
    assert payload is not None
    line["payload_length"], line["payload_crc32"] = len(payload), zlib.crc32(payload)
    entry.write_bytes(json.dumps(line).encode() + b"\n" + payload)


def test_first_load_stores_an_entry_that_later_loads_read(project: Path) -> None:
    cassette = _cassette(project)
    first = load_cassette(cassette)
    entry = _entry(project, cassette)
    assert entry.is_file()
    assert load_cassette(cassette) == first
    # The second load really reads the entry: an entry saying something else is believed...
    doc = decode(entry.read_bytes().partition(b"\n")[2])
    doc["interactions"][0]["response"]["status"]["code"] = 201
    _rewrite_payload(entry, doc)
    assert load_cassette(cassette)[0].status == 201
    # ...but only for these exact cassette bytes: an edited cassette is parsed from its YAML, and its
    # entry replaced (one entry per cassette file, however often it is re-recorded).
    cassette.write_text(cassette.read_text("utf-8").replace("first", "second"), "utf-8")
    assert json.loads(load_cassette(cassette)[0].response_body)["content"][0]["text"] == "second"
    assert load_cassette(cassette)[0].status == 200
    assert _source_sha256(entry) == hashlib.sha256(cassette.read_bytes()).hexdigest()
    assert [p.name for p in cache_folder().iterdir() if p.suffix != ".stamp"] == [entry.name]


@pytest.mark.parametrize("damage", ["flip a payload byte", "truncate", "garbage header", "empty", "other parser"])
def test_a_damaged_or_outdated_entry_is_ignored_and_rebuilt(project: Path, damage: str) -> None:
    cassette = _cassette(project)
    expected = load_cassette(cassette)
    entry = _entry(project, cassette)
    good = entry.read_bytes()
    if damage == "flip a payload byte":
        entry.write_bytes(good[:-5] + bytes([good[-5] ^ 0x55]) + good[-4:])
    elif damage == "truncate":
        entry.write_bytes(good[: len(good) // 2])
    elif damage == "garbage header":
        entry.write_bytes(b"\x00\xffnot json\n" + good.partition(b"\n")[2])
    elif damage == "empty":
        entry.write_bytes(b"")
    else:
        line = json.loads(good.partition(b"\n")[0])
        line["parser"] = "some other parser"
        entry.write_bytes(json.dumps(line).encode() + b"\n" + good.partition(b"\n")[2])
    assert load_cassette(cassette) == expected
    assert entry.read_bytes() == good


def test_an_unwritable_cache_folder_means_no_cache_not_an_error(project: Path) -> None:
    (project / ".judge-replay").write_text("a file where the cache folder would be", "utf-8")
    cassette = _cassette(project)
    assert load_cassette(cassette)[0].status == 200
    assert load_cassette(cassette)[0].status == 200
    assert (project / ".judge-replay").is_file()


def test_a_cassette_outside_the_project_is_cached_too_and_leaves_nothing_beside_it(
        project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    cassette = elsewhere / "docs_a.md.yaml"
    save_cassette(cassette, [_interaction("first")])
    assert load_cassette(cassette) == load_cassette(_cassette(project)) != []
    assert entry_path(cassette) is not None and entry_path(cassette) != entry_path(_cassette(project))
    assert [p.name for p in elsewhere.iterdir()] == ["docs_a.md.yaml"]
    assert sorted(p.suffix for p in cache_folder().iterdir() if p.suffix != ".stamp") == [".bin", ".bin"]


def test_turned_off_writes_nothing(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OFF_VARIABLE, "1")
    cassette = _cassette(project)
    assert load_cassette(cassette)[0].status == 200
    assert not cache_folder().exists()


def test_a_cassette_holding_a_known_secret_is_never_copied_into_the_cache(project: Path) -> None:
    cassette = project / "docs_a.md.yaml"
    save_cassette(cassette, [_interaction("key sk-ant-api03-cachetest-0123456789")], scrub=False)
    _secrets.remember("sk-ant-api03-cachetest-0123456789")
    try:
        assert "cachetest" in load_cassette(cassette)[0].response_body
        assert not cache_folder().exists()
    finally:
        _secrets.forget_all()


def test_a_broken_cassette_is_still_an_input_error_and_caches_nothing(project: Path) -> None:
    cassette = project / "broken.yaml"
    cassette.write_text("interactions: [\n", "utf-8")
    with pytest.raises(InputError, match="broken.yaml"):
        load_cassette(cassette)
    with pytest.raises(InputError, match="no such cassette"):
        load_cassette(project / "missing.yaml")
    assert not cache_folder().exists()


def test_line_endings_are_read_as_before(project: Path) -> None:
    cassette = _cassette(project)
    expected = load_cassette(cassette)
    crlf = project / "crlf.yaml"
    crlf.write_bytes(cassette.read_bytes().replace(b"\n", b"\r\n"))
    assert load_cassette(crlf) == expected
    assert load_cassette(crlf) == expected  # and from its entry
    assert _entry(project, crlf).is_file()


_LOAD = """
import sys
from pathlib import Path
from replay.cassettes.cache import Cassette, entry_is_current
from replay.cassettes.cassette import _YAML_PARSER, load_cassette
print(entry_is_current(Cassette(Path(sys.argv[1])), "", _YAML_PARSER), len(load_cassette(sys.argv[1])))
"""


@pytest.mark.parametrize("which", ["entry", "stamp"])
@pytest.mark.parametrize("what", ["a named pipe", "a link to /dev/zero"])
def test_a_cache_file_that_is_not_a_regular_file_is_not_read(which: str, what: str, project: Path) -> None:
    """Issue 26 review: whoever can write the cache folder made every command that read the cassette
    wait forever (a named pipe where an entry or a stamp is) or read until memory ran out (a link to
    /dev/zero). Such a file is passed over as a missing one: the cassette is read."""
    import os
    import resource
    import subprocess
    import sys

    cassette = _cassette(project)
    load_cassette(cassette)
    entry = _entry(project, cassette)
    target = entry if which == "entry" else entry.with_suffix(".stamp")  # a stamp is read wherever one is
    target.unlink(missing_ok=True)
    if what == "a named pipe":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")

    def little_memory() -> None:  # /dev/zero read to the end fails here, not on the machine
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([sys.executable, "-c", _LOAD, str(cassette)], capture_output=True, text=True,
                          timeout=60, preexec_fn=little_memory)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(which == "stamp"), "1"]  # an entry that is no file is not current


@pytest.mark.parametrize("which", ["entry", "stamp"])
def test_a_cache_file_nested_too_deep_to_parse_is_ignored(which: str, project: Path) -> None:
    """Issue 26 review: a first line of 3,000 '[' (an entry's, or a stamp) was a RecursionError, an
    internal error of every command that read the cassette."""
    from replay.cassettes.cache import Cassette, entry_is_current
    from replay.cassettes.cassette import _YAML_PARSER

    cassette = _cassette(project)
    expected = load_cassette(cassette)
    entry = _entry(project, cassette)
    (entry if which == "entry" else entry.with_suffix(".stamp")).write_bytes(b"[" * 3000 + b"\n")
    assert entry_is_current(Cassette(cassette), "", _YAML_PARSER) is (which == "stamp")
    assert load_cassette(cassette) == expected
