"""The cassette writer's own YAML emitter (`cassettes.yaml_writer.block_yaml`) writes byte for byte what
`yaml.dump` writes (with the cassette writer's settings), on every cassette we have and on fuzzed
strings, or declines (None) and leaves the text to `yaml.dump`."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from replay.cassettes.cassette import _BlockDumper, _yaml_text, load_cassette
from replay.cassettes.yaml_writer import WIDTH, block_yaml
from locations import REPO

ROOT = REPO
OUR_CASSETTES = sorted((ROOT / "cassettes").rglob("*.yaml"))
OTHER_CASSETTES = sorted((ROOT / "tests" / "data" / "real-cassettes").rglob("*.yaml"))


def dumped(data: dict[str, Any]) -> str:
    """What the cassette writer wrote before it had its own emitter."""
    text: str = yaml.dump(data, Dumper=_BlockDumper, sort_keys=True, allow_unicode=True, width=WIDTH)
    return text


def cassette_data(path: Path) -> dict[str, Any]:
    return {"interactions": [it.to_vcr() for it in load_cassette(path)], "version": 1}


def with_body(value: Any, *, header: Any = "application/json", key: str = "content-type") -> dict[str, Any]:
    """A one-interaction cassette with `value` as its response body (and a header to vary)."""
    return {"interactions": [{
        "request": {"method": "POST", "uri": "http://127.0.0.1:8932/v1/messages", "body": None,
                    "headers": {key: [header]}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": value}},
    }], "version": 1}


def assert_same_or_declined(data: dict[str, Any]) -> bool:
    """block_yaml's text is yaml.dump's, or None; True when it wrote the text."""
    text = block_yaml(data, _BlockDumper)
    if text is not None:
        assert text == dumped(data)
    return text is not None


def test_our_cassettes_are_written_by_block_yaml_as_yaml_dump_writes_them() -> None:
    assert len(OUR_CASSETTES) >= 20
    for path in OUR_CASSETTES:
        data = cassette_data(path)
        text = block_yaml(data, _BlockDumper)
        assert text is not None, f"{path}: left to yaml.dump"
        assert text == dumped(data), path
        assert _yaml_text(load_cassette(path)) == path.read_text("utf-8"), f"{path}: not written as it is stored"


def test_other_projects_cassettes_are_written_as_yaml_dump_writes_them() -> None:
    assert OTHER_CASSETTES
    written = [assert_same_or_declined(cassette_data(path)) for path in OTHER_CASSETTES]
    assert any(written)  # most of them, though a model answer with an emoji is left to yaml.dump


@pytest.mark.parametrize("value", [
    "", " ", "a", "true", "True", "no", "on", "null", "~", "1", "1.0", "0x1F", "1e3", "2026-10-21",
    "2026-10-21T10:00:00Z", "- x", "-", "--- x", "...", ": x", "a: b", "a #b", "#x", "x#", "?", "? x", "[a]",
    "{a}", "*a", "&a", "!a", "|", ">", "'", '"', "%x", "@x", "`x", "a,b", " lead", "trail ", "tab\there",
    "cr\rhere", "nel\x85here", "nbsp\xa0", "\u2028", "ls\u2028x", "ps\u2029x", "bom\ufeff", "\ufffe", "😀",
    "é", "\x00", "\x1b[31m", "\x7f", "\x9f", "a\nb", "a\n", "a\n\n", "\n", "\na", " a\nb", "a \nb", "a\n b",
    "a\t\nb", "a\xa0\nb", "a\xa0\n b", "a\n\nb", "a\r\nb", "{\n  \"a\": 1\n}", "line\u2028\nline", "x\n😀",
    "a\x85\nb", "trailing\n ", "a" * 300, "a " * 2000, "b\n" * 50 + "c",
])
def test_edge_strings_as_a_body_a_header_and_a_key(value: str) -> None:
    assert_same_or_declined(with_body(value))
    assert_same_or_declined(with_body("x", header=value))
    if "\n" not in value:
        assert_same_or_declined(with_body("x", key=value or "k"))


@pytest.mark.parametrize("value", [None, True, False, 0, -7, 10**30, {}, [], ["a", None], {"b": {}}])
def test_other_values(value: Any) -> None:
    assert_same_or_declined(with_body(value))


def test_the_common_shapes_are_written_not_declined() -> None:
    for value in ["{\n  \"a\": \"b\"\n}", "event: message\r\ndata: {\"x\":\"\\u2014\"}\r\n\r\n", "ok", "", "a\n b\n"]:
        assert assert_same_or_declined(with_body(value)), repr(value)


def test_a_line_too_long_for_the_width_is_left_to_yaml_dump() -> None:
    long_line = "event: message\r\n" + "word " * (WIDTH // 4)
    assert block_yaml(with_body(long_line), _BlockDumper) is None


def test_a_lone_surrogate_is_left_to_yaml_dump() -> None:
    assert block_yaml(with_body("a\n\udc80"), _BlockDumper) is None


ALPHABET = ["a", "b", "z", "0", "9", " ", "  ", "\n", "\n\n", "\r", "\r\n", "\t", "-", ":", "#", "'", '"', "\\", "|",
            ">", "{", "}", "[", "]", ",", "?", "*", "&", "!", "%", "@", "`", "~", "é", "—", "\xa0", "\x85", "\u2028",
            "\u2029", "\ufeff", "\x00", "\x07", "\x1b", "\x7f", "\x9f", "😀", "\ue000", "\uffff", "true", "null", "1.5",
            "---", "...", "\\u2014", "\\n", "x" * 40]


@pytest.mark.parametrize("seed", range(6))
def test_fuzzed_strings(seed: int) -> None:
    rng = random.Random(seed)
    written = 0
    for _ in range(400):
        value = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 30)))
        written += assert_same_or_declined(with_body(value))
        if "\n" not in value and value:
            assert_same_or_declined(with_body("x", header=value, key=value[:60]))
    assert written > 200  # the writer declines only the rare shapes


def random_tree(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["str", "str", "int", "none", "bool"] + (["dict", "list"] if depth < 4 else []))
    if kind == "str":
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
    if kind == "int":
        return rng.choice([0, 7, -3, 10**20])
    if kind == "none":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "list":
        return [random_tree(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "b", "c-d", "true", "1", "", "x y", "é"]): random_tree(rng, depth + 1) for _ in range(rng.randint(0, 3))}


@pytest.mark.parametrize("seed", range(4))
def test_random_trees_at_every_depth(seed: int) -> None:
    """Mappings, sequences and scalars nested in any way: the root level, sequences of mappings, and
    literal blocks at every indentation."""
    rng = random.Random(1000 + seed)
    written = 0
    for _ in range(300):
        tree = {"root": random_tree(rng), "text": random_tree(rng), "z": "line one\nline two"}
        written += assert_same_or_declined(tree)
    assert written > 100
