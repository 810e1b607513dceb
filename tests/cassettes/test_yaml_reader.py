"""The cassette reader for our own YAML (`cassettes.yaml_reader.read_block_yaml`) returns what libyaml's safe
loader returns, value for value and type for type, or None (the caller then uses the safe loader): on every
cassette we have, on the cassettes a recording writes, on fuzzed values written by `block_yaml`, and on
hostile and mutated text, where it must never return a different value."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from factories import judge_demo
from locations import REPO
from replay.cassettes.cassette import _BlockDumper, load_cassette
from replay.cassettes.yaml_reader import read_block_yaml
from replay.cassettes.yaml_writer import block_yaml
from replay.sim import start_model

_spec = importlib.util.spec_from_file_location("yaml_writer_tests", Path(__file__).with_name("test_yaml_writer.py"))
assert _spec is not None and _spec.loader is not None
writer_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(writer_tests)

OUR_CASSETTES = sorted((REPO / "cassettes").rglob("*.yaml"))
ALL_YAML = sorted({*OUR_CASSETTES, *(REPO / "tests" / "data").rglob("*.yaml"),
                   *(REPO / "tests" / "golden" / "expected").rglob("*.yaml")})
_ERROR = object()


def safe_loaded(text: str) -> Any:
    """What libyaml's safe loader returns, or _ERROR where it refuses the text."""
    try:
        return yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return _ERROR


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (`1 == True` would hide a wrong type)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def read_as_safe_loader(text: str) -> bool:
    """The reader returns the safe loader's value, or None; True when it read the text."""
    got = read_block_yaml(text)
    if got is None:
        return False
    expected = safe_loaded(text)
    assert expected is not _ERROR, f"read text the safe loader refuses: {text[:300]!r}"
    assert same(got, expected), f"read differently: {text[:300]!r}"
    return True


def test_every_cassette_of_the_repository_is_read_as_the_safe_loader_reads_it() -> None:
    assert len(OUR_CASSETTES) >= 20 and len(ALL_YAML) > len(OUR_CASSETTES)
    for path in ALL_YAML:
        read_as_safe_loader(path.read_text("utf-8"))
    for path in OUR_CASSETTES:
        assert read_block_yaml(path.read_text("utf-8")) is not None, f"{path}: left to the safe loader"


def test_the_cassettes_a_recording_writes_are_read(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model() as model:
        assert judge_demo(demo_learn, model, "rec") == 0, capsys.readouterr().err
    written = sorted((workdir / "rec").rglob("*.yaml"))
    assert written
    for path in written:
        assert read_as_safe_loader(path.read_text("utf-8")), f"{path}: left to the safe loader"
        assert load_cassette(path)


def written(data: dict[str, Any]) -> str | None:
    return block_yaml(data, _BlockDumper)


@pytest.mark.parametrize("seed", range(4))
def test_fuzzed_values_written_by_block_yaml_are_read_back(seed: int) -> None:
    rng = random.Random(seed)
    read = 0
    for _ in range(300):
        value = "".join(rng.choice(writer_tests.ALPHABET) for _ in range(rng.randint(0, 30)))
        for data in (writer_tests.with_body(value), writer_tests.with_body("x", header=value, key=value[:60] or "k")):
            text = written(data)
            if text is not None:
                read += read_as_safe_loader(text)
    assert read > 300  # nearly every shape the writer writes is read, not left to the safe loader


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_trees_written_by_block_yaml_are_read_back(seed: int) -> None:
    rng = random.Random(2000 + seed)
    read = 0
    for _ in range(300):
        text = written({"root": writer_tests.random_tree(rng), "text": writer_tests.random_tree(rng), "z": "a\nb"})
        if text is not None:
            read += read_as_safe_loader(text)
    assert read > 50


HOSTILE = [
    "a: &x 1\nb: *x\n", "a: !!python/object:os.system 1\n", "a: !!binary aGk=\n", "a: {b: 1}\n", "a: [1]\n",
    "? a\n: 1\n", "a: >-\n  x\n", "a: |+\n  x\n\n", "a: 1 # c\n", "# c\na: 1\n", "a: 1\n# c\n", "a:\tb\n",
    "\ufeffa: 1\n", "a: 1\na: 2\n", "a:\n  b: 1\n  b: 2\n", "a: 1.5\n", "a: 2026-10-21\n", "a: yes\n", "a: ~\n",
    "a: 0x1F\n", "a: 012\n", "a: 1_000\n", "a: .inf\n", "<<: {b: 1}\n", "a:\n  <<: {b: 1}\n", "true: 1\n",
    "null: 1\n", "a: =\n", "---\na: 1\n", "a: 1\n...\n", "%YAML 1.1\n---\na: 1\n", "a: b\n  c\n", "a: b: c\n",
    "a:\n- x\n  y\n", "a:\n  - x\n", "a:\n   b: 1\n", "a: |-\n    x\n   y\n", "a: |2-\n   x\n  y\n", "a: |-\n  x\n\n",
    "a: |1-\n  x\n", "a: |-2\n  x\n", "a: |-\n x\n", "a: |\n\n  x\n", "a: \"x\\\n  y\"\n", "a: \"\\ud800\"\n",
    "a: \"\\/\"\n", "a: \"\\q\"\n", "a: \"\\x4\"\n", "a: \"\\u00e9\\U0001F600\\x41\\_\\N\\L\\P\\e\\0\"\n", "a: 'it''s'\n",
    "a: 'x\n  y'\n", "a: \"x\" y\n", "a: 'x' # c\n", "a: x\r\nb: y\r\n", "a: x\x85b\n", "a: \x7f\n", "a: x\u2028y\n",
    "a:\n", "a:\nb: 1\n", "a: 1", "a: \n", " a: 1\n", "a: 1\n\nb: 2\n", "a:  1\n", "- a\n", "a: -\n", "a: - b\n",
    "a: -1\n", "a: -0\n", "a: +1\n", "a: 1e3\n", "a: \"\"\n", "a: ''\n", "a: \"\\t\"\n", "a: @x\n", "a: `x\n",
    "a: %x\n", "a: x #y\n", "a: x#y\n", "a: http://x/y?z=1&w=2#f\n", "a: [b\n", "a: b]\n", "a: {}\n", "a: []\n",
    "a: { }\n", "a:\n- - x\n", "a:\n- b: 1\n  b: 2\n", "a:\n- b: 1\n c: 2\n", "a:\n- b: |-\n    x\n    y\n  c: 1\n",
    "a:\n- |-\n  x\n", "a:\n-  x\n", "a:\n-\n  x\n", "a: |2\n\n    x\n", "a: |-\n  x\n  \tz\n", "a:" + " x" * 600 + "\n",
    "k" * 200 + ": 1\n", "a: 1\n" * 2, "a: \"\\x00\"\n", "a: \"\\uFEFF\"\n", "a: \"\\U00110000\"\n", "a: 'a' 'b'\n",
    "a: \"\\\"\"\n", "a: \"\\\\\"\n", "a: |-\n  ---\n  ...\n  # x\n  &a *a\n", "a: |-\n  x\n---\n", "a: |-\n  x\n...\n",
    "Yes: 1\n", "on: 1\n", "a: On\n", "a: NULL\n", "a: True\n", "a: FALSE\n", "a: 0\n", "a: 00\n", "a: 1:20\n",
    "a: 190:20:30\n", "a: 0b101\n", "a: 0o7\n", "a: 1.0.0\n", "a: 127.0.0.1:8080\n", "a: b:c\n", "a: b :c\n",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_read_as_the_safe_loader_reads_it_or_left_to_it(text: str) -> None:
    read_as_safe_loader(text)


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n", "a: !!binary aGk=\n", "a: {b: 1}\n", "? a\n: 1\n", "a: >-\n  x\n", "a: 1 # c\n",
    "a: 1\na: 2\n", "a: 1.5\n", "a: yes\n", "<<: {b: 1}\n", "---\na: 1\n", "a: b\n  c\n", "a: b: c\n", "a:\n",
    "a: x\r\nb: y\r\n", "\ufeffa: 1\n", "a:\tb\n", "a: |-\n  x\n\n",
])
def test_what_libyaml_treats_specially_is_left_to_it(text: str) -> None:
    assert read_block_yaml(text) is None


def test_the_shapes_the_writer_writes_are_read() -> None:
    text = ("a:\n- b: |-\n    {\n      \"x\": 1\n    }\n  c: |2\n\n     lead\n  d: \"q\\r\\n\\u2014\\U0001F600\"\n"
            "  e: 'true'\n  f: -7\n  g: null\n  h: {}\n  i: []\n  j:\n  - x\n  - 1\nversion: 1\n")
    assert read_as_safe_loader(text)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_cassettes_are_read_as_the_safe_loader_reads_them_or_left_to_it(seed: int) -> None:
    """Characters, indentation and lines changed at random in a real cassette: never a different value."""
    rng = random.Random(3000 + seed)
    sources = [p.read_text("utf-8") for p in OUR_CASSETTES[:3]]
    pieces = ["\n", " ", "  ", "- ", ": ", "#", "&a ", "*a", "!!str ", "|", "|-", "|2", ">", "'", '"', "\\", "{", "}",
              "[", "]", "?", "\t", "---", "...", "null", "true", "1", "1.5", "~", "<<", "\\u00e9", "\\x", "\r"]
    for _ in range(150):
        lines = rng.choice(sources).split("\n")[:60]
        for _ in range(rng.randint(1, 3)):
            n = rng.randrange(len(lines))
            kind = rng.randrange(4)
            if kind == 0:
                at = rng.randint(0, len(lines[n]))
                lines[n] = lines[n][:at] + rng.choice(pieces) + lines[n][at:]
            elif kind == 1:
                lines[n] = lines[n][rng.randint(0, 3):]
            elif kind == 2:
                lines.insert(n, lines[rng.randrange(len(lines))])
            else:
                del lines[n]
        text = "\n".join(lines)
        read_as_safe_loader(text if text.endswith("\n") else text + "\n")


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_quoted_lines_are_read_as_the_safe_loader_reads_them_or_left_to_it(seed: int) -> None:
    """Runs of backslashes, quotes and escape letters between quotes: escapes pair from the left."""
    rng = random.Random(4000 + seed)
    pieces = ["\\", "\\\\", '"', "'", "''", "n", "r", "t", "x", "u", "U", "0", "4", "1", "e", "N", "_", "/", " ", "a", "é"]
    read = 0
    for _ in range(2000):
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        read += read_as_safe_loader(f'a: "{body}"\nb: 1\n')
        read_as_safe_loader(f"a: '{body}'\n")
        read_as_safe_loader(f"a:\n- \"{body}\"\n- '{body}'\n")
    assert read > 200
