"""Excerpts of data are cut from text cleaned whole: no window of a secret, given or key-shaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.cassettes.matching import differences
from replay.errors import InputError
from replay.files.json_text import parse_json
from replay.files.safe_yaml import load_yaml
from replay.secrets import registry as _secrets
from replay.secrets.excerpts import clean, excerpt

CANARY = "sk-ant-api03-" + "Jq4tW8zLm2Rx7Vb9Nc3Kd6Hf1Gp5Ys0TuXeAoBiWv"
PLAIN = "Zq" + "".join(chr(ord("a") + (i * 7) % 26) + str(i % 10) for i in range(19))
"""40 characters of no key shape: only its registration keeps it out."""
SHAPES = {
    "anthropic": CANARY,
    "github": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "aws": "AKIA" + "Q7ZK2M4N6P8R1T3V",
    "google": "AIza" + "Sy" + "B1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R",
    "slack": "xoxb-" + "1234567890-0987654321-Zq8vN3kR7tY2wP5m",
    "stripe": "sk_live_" + "Zq8vN3kR7tY2wP5mX9bC4dF6",
}


def windows(secret: str, n: int = 12) -> list[str]:
    return [secret[i:i + n] for i in range(len(secret) - n + 1)]


def shown(text: str, secret: str) -> list[str]:
    return [w for w in windows(secret) if w in text]


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_a_key_shape_is_masked_in_every_window(kind: str) -> None:
    key = SHAPES[kind]
    text = "x" * 30 + f" the key {key} is quoted " + "y" * 30
    assert clean(text) == "x" * 30 + " the key REDACTED is quoted " + "y" * 30
    for start in range(0, len(text), 3):
        for length in (10, 20, 40):
            assert not shown(excerpt(text, length, start=start), key)


def test_a_given_secret_of_no_shape_is_removed_before_the_cut() -> None:
    _secrets.remember(PLAIN)
    text = "a" * 50 + PLAIN + "b" * 50
    for start in range(0, 90, 7):
        assert not shown(excerpt(text, 45, start=start), PLAIN)
    assert excerpt(text, 60, start=40) == "…" + "a" * 10 + "REDACTED" + "b" * 42 + "…"


def test_placeholders_and_plain_text_are_kept() -> None:
    assert clean("sk-ant-REDACTED and sk-ant-api03-xxxxxxxxxxxx") == "sk-ant-REDACTED and sk-ant-api03-xxxxxxxxxxxx"
    assert excerpt("short", 10) == "short" and excerpt("abcdefgh", 3, start=2, mark="...") == "...cde..."


def test_a_miss_around_a_given_key_shows_it_removed() -> None:
    _secrets.remember(PLAIN)
    recorded = {"messages": [{"content": "A" * 500 + " the sample key REDACTED here " + "B" * 500}]}
    edited = {"messages": [{"content": "A" * 500 + " the simple key " + PLAIN + " here " + "B" * 500}]}
    (line,) = differences(edited, recorded)
    assert "simple key REDACTED here" in line and not shown(line, PLAIN)
    (line,) = differences({"k": "v " + PLAIN}, {"k": "w"})  # a short value, shown whole
    assert "REDACTED" in line and not shown(line, PLAIN)


def test_a_miss_on_a_key_shape_nobody_gave_masks_it() -> None:
    recorded = {"messages": [{"content": "A" * 500 + " the sample key sk-ant-REDACTED here " + "B" * 500}]}
    edited = {"messages": [{"content": "A" * 500 + " the simple key " + CANARY + " here " + "B" * 500}]}
    (line,) = differences(edited, recorded)
    assert not shown(line, CANARY)


def test_parse_errors_quote_no_window(tmp_path: Path) -> None:
    _secrets.remember(PLAIN)
    key = "k" * 30 + PLAIN + CANARY
    with pytest.raises(InputError) as caught:
        parse_json('{"%s": 1, "%s": 2}' % (key, key), tmp_path / "x.json")
    assert "given twice" in str(caught.value)
    assert not shown(str(caught.value), PLAIN) and not shown(str(caught.value), CANARY)
    with pytest.raises(InputError) as caught:
        load_yaml("a: [" + "z" * 150 + PLAIN + CANARY + "\n- ]]\n", tmp_path / "x.yaml")
    assert not shown(str(caught.value), PLAIN) and not shown(str(caught.value), CANARY)
