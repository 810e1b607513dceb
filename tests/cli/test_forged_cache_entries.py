"""Derived-cache entries forged by whoever can write the cache folder (every check of their first line
recomputed): a command that reads them plays, or reports, what the cassettes hold, or says in one line
what is wrong; never a traceback."""

from __future__ import annotations

import json
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replay.cassettes.cache import OFF_VARIABLE, entry_path
from replay.cassettes.entry_format import decode, encode
from replay.cli.main import main
from locations import REPO

DEMO = REPO / "cassettes" / "v3-demo"


def forge(run: Path, tag: str, change: Callable[[Any], Any]) -> int:
    """Rewrite the `tag` entry of every cassette of `run` to hold `change(its value)`, its first line's
    length and CRC-32 made to match: how many were forged."""
    forged = 0
    for cassette in sorted(run.glob("*.yaml")):
        entry = entry_path(cassette, tag)
        assert entry is not None and entry.is_file(), "run the command once first: it writes the entries"
        line, _, payload = entry.read_bytes().partition(b"\n")
        forged_payload = encode(change(decode(payload)))
        assert forged_payload is not None
        head = json.loads(line)
        head.update(payload_length=len(forged_payload), payload_crc32=zlib.crc32(forged_payload))
        entry.write_bytes(json.dumps(head).encode() + b"\n" + forged_payload)
        forged += 1
    return forged


def demo_copy(project: Path) -> Path:
    """A copy of the demo run in the project, with the claims files it names."""
    shutil.copytree(REPO / "demo" / "claims", project / "demo" / "claims")
    return Path(shutil.copytree(DEMO, project / "run"))


def replay(run: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["judge", "--mode", "replay", "--run", str(run), "--no-progress", "--out", str(out)])
    return code, capsys.readouterr().err


def _column(rows: list[list[Any]], at: int, value: Any) -> list[list[Any]]:
    return [row[:at] + [value] + row[at + 1:] for row in rows]


INDEX_FORGERIES: dict[str, Callable[[Any], Any]] = {
    "a status of text": lambda rows: _column(rows, 5, "200"),  # was: internal error, '<=' between int and str
    "headers as a list": lambda rows: _column(rows, 7, [1]),    # was: every claim failed, AttributeError
    "a header value of numbers": lambda rows: _column(rows, 7, {"content-type": [1]}),
    "a body of a number": lambda rows: _column(rows, 8, 5),
    "a reason of a number": lambda rows: _column(rows, 6, 7),
    "a kind of its own": lambda rows: _column(rows, 2, ["model"]),
    "a sent form of numbers": lambda rows: _column(rows, 1, [[1, 2, 3, 4]]),
    "not a list": lambda rows: {"rows": rows},
}


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results of replaying the demo run with no cache entry to read (`--no-cache`)."""
    out = tmp_path_factory.mktemp("honest") / "results.json"
    assert main(["--no-cache", "judge", "--mode", "replay", "--run", str(DEMO), "--no-progress", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("forgery", list(INDEX_FORGERIES))
def test_a_forged_replay_index_is_made_again_from_the_cassette(forgery: str, honest: Path, project: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    run = demo_copy(project)
    assert replay(run, project / "first.json", capsys)[0] == 0  # writes the entries, and a receipt:
    shutil.rmtree(project / ".judge-replay" / "cache" / "replays")  # without it, the next replay plays in full
    assert forge(run, "replay-index", INDEX_FORGERIES[forgery]) == 5
    code, err = replay(run, project / "forged.json", capsys)
    assert code == 0, err
    assert (project / "forged.json").read_bytes() == honest.read_bytes()


def test_a_replay_index_of_more_interactions_than_its_cassette_is_one_line_and_removed(
        honest: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rows no request plays were described from the cassette, which has no such interaction: an
    IndexError (exit 70). The index is not the cassette's: one line naming it, and it is made again."""
    run = demo_copy(project)
    assert replay(run, project / "first.json", capsys)[0] == 0  # writes the entries, and a receipt:
    shutil.rmtree(project / ".judge-replay" / "cache" / "replays")  # without it, the next replay plays in full
    assert forge(run, "replay-index", lambda rows: rows + rows) == 5
    stops = 0
    while (done := replay(run, project / "again.json", capsys))[0] != 0:  # each stop removes a forged index
        code, err = done
        assert code == 2 and "Traceback" not in err and "internal error" not in err, err
        assert err.count("\n") == 1 and "replay-index.bin: not the replay index of " in err, err
        stops += 1
        assert stops <= 5
    assert stops >= 1
    assert (project / "again.json").read_bytes() == honest.read_bytes()


def _calls(change: Callable[[list[Any]], list[Any]]) -> Callable[[Any], Any]:
    return lambda value: ([change(call) for call in value[0]], value[1])


CONVERSATION_FORGERIES: dict[str, Callable[[Any], Any]] = {
    "no value": lambda value: None,                       # was: internal error, cannot unpack None
    "a number": lambda value: 5,
    "three parts": lambda value: [1, 2, 3],               # was: internal error, too many values to unpack
    "rows of a number": lambda value: (value[0], 5),      # was: internal error, 'int' object is not iterable
    "arguments of a number": _calls(lambda call: [call[0], 5, *call[2:]]),
    "a tool of a number": _calls(lambda call: [5, *call[1:]]),
    "a text not UTF-8": _calls(lambda call: [*call[:2], b"\xff\xfe", call[3]]),
    "a text of text": _calls(lambda call: [*call[:2], "text", call[3]]),
    "is_error of text": _calls(lambda call: [*call[:3], "x"]),
    "calls of three parts": _calls(lambda call: call[:3]),
}


@pytest.mark.parametrize("forgery", list(CONVERSATION_FORGERIES))
def test_a_forged_conversation_entry_is_made_again_from_the_cassette(forgery: str, project: Path,
                                                                    capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    run = demo_copy(project)
    baseline = str(REPO / "cassettes" / "v2-demo")
    assert main(["--no-cache", "diff", baseline, str(run)]) == 0  # nothing read from the cache, nothing kept
    honest = capsys.readouterr().out
    monkeypatch.delenv(OFF_VARIABLE, raising=False)  # as --no-cache left it
    assert main(["diff", baseline, str(run)]) == 0  # writes the entries
    assert capsys.readouterr().out == honest
    assert forge(run, "conversation", CONVERSATION_FORGERIES[forgery]) == 5
    code = main(["diff", baseline, str(run)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out == honest
