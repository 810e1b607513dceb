"""The cassette file: vcrpy's YAML format (stock vcrpy loads it), written deterministically and atomically.

Layout (vcrpy `version: 1`):

    interactions:
    - request:  {method, uri, headers: {name: [values]}, body: <text or null>}
      response: {status: {code, message}, headers: {name: [values]}, body: {string: <text>}}
    version: 1

Readability rules: JSON bodies are re-indented (2 spaces, key order kept) and written as YAML block
strings; SSE is kept as text. Header names are lower-cased; keys are sorted. Interactions keep the order
in which the conversation made them.

Every write is scrubbed of secrets (`cassettes.scrub.scrub_interactions`: credential headers by name, known
secrets by value, bodies changed only as parsed structures, page text never). A recording is also
normalised before it is written (`normalise_recording`): headers reduced to allow-lists, session and
request ids renumbered in order of appearance, rate-limit values and `retry-after` fixed, loopback
URIs stored with the stand-ins' default ports, so two recordings of the same exchanges are
byte-identical and a replay can never be told to sleep. The loader (YAML aliases and nesting bounded,
`files.safe_yaml`; `cassettes.yaml_reader` reads the shapes we write, to the same values, faster) also reads stock vcrpy's cassettes (compressed bodies as `!!binary`) and pydantic-ai's variant
(JSON bodies as a `parsed_body` mapping); anything malformed is an InputError naming the file.
`derived` keeps what a caller derives from a cassette's interactions (replay's index and responses) in
an entry of its own of the parsed-cassette cache, so a replay reads one entry per cassette.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from replay.cassettes.cache import Cassette, cached, text_of
from replay.cassettes.interaction import Interaction, T, _Malformed
from replay.cassettes.scrub import (
    scrub_interactions,
)
from replay.cassettes.yaml_reader import read_block_yaml
from replay.cassettes.yaml_writer import WIDTH, block_yaml
from replay.errors import InputError
from replay.files.atomic import atomic_write_text
from replay.files.inputs import reading_error
from replay.files.safe_yaml import Dumper, load_yaml

CASSETTE_SUFFIX = ".yaml"


class _BlockDumper(Dumper):  # type: ignore[misc]
    pass


def _str_representer(dumper: Any, value: str) -> Any:
    # Block style where YAML can round-trip it exactly; quoted otherwise (CR, tabs, trailing spaces).
    if "\n" in value and "\r" not in value and not any(l != l.rstrip() for l in value.split("\n")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_BlockDumper.add_representer(str, _str_representer)


def dumps_cassette(interactions: list[Interaction], *, scrub: bool = True) -> str:
    """The cassette text; secrets are scrubbed (`cassettes.scrub.scrub_interactions`) unless `scrub=False`
    (tests planting secrets only)."""
    return _yaml_text(scrub_interactions(interactions) if scrub else interactions)


def _yaml_text(interactions: list[Interaction]) -> str:
    """The cassette's YAML: `cassettes.yaml_writer.block_yaml` where it writes what `yaml.dump` would (nearly
    always, at a fraction of its cost), else `yaml.dump` itself."""
    data = {"interactions": [i.to_vcr() for i in interactions], "version": 1}
    text = block_yaml(data, _BlockDumper)
    if text is None:
        text = yaml.dump(data, Dumper=_BlockDumper, sort_keys=True, allow_unicode=True, width=WIDTH)
    return text


def save_cassette(path: str | Path, interactions: list[Interaction], *, scrub: bool = True) -> list[Interaction]:
    """Write atomically: a crash mid-write leaves the previous file (or none), never half of one.
    Returns the interactions as written (scrubbed): loading the file gives them back, JSON bodies
    re-indented. `scrub=False`: the interactions are scrubbed already (`normalise_recording`'s), or a
    test plants secrets."""
    written = scrub_interactions(interactions) if scrub else interactions
    atomic_write_text(path, _yaml_text(written))
    return written


_YAML_PARSER = "yaml safe, bounded aliases, v1"


def load_cassette(path: str | Path | Cassette) -> list[Interaction]:
    """Load a vcrpy YAML cassette (ours or stock) into interactions; anything malformed is an
    InputError naming the file and the interaction. Given a `Cassette`, what it has read is reused."""
    source = path if isinstance(path, Cassette) else Cassette(Path(path))
    try:
        data = cached(source, "", lambda: _parsed(text_of(source.raw()), source.path), parser=_YAML_PARSER)
    except (OSError, UnicodeDecodeError) as exc:
        raise reading_error(source.path, exc, "cassette") from exc
    return _interactions(source.path, data)


def _parsed(text: str, path: Path) -> Any:
    """The cassette's document: read by `cassettes.yaml_reader` where it is in the shapes we write (the
    same value, at a fraction of the cost), else by the safe loader."""
    data = read_block_yaml(text)
    return load_yaml(text, path) if data is None else data


def derived(source: Cassette, derive: Callable[[list[Interaction]], T], *, tag: str, code: str) -> T:
    """`derive(interactions)` of a cassette, kept in an entry of its own in the parsed-cassette cache
    (`tag` names it, `code` is the sha256 of the source that derives it: `cassettes.cache.source_sha256`),
    so a valid entry (and the cassette's stamp) is all that is read; the cassette is loaded (as
    `load_cassette`) only to derive it again."""
    try:
        value: T = cached(source, tag, lambda: derive(load_cassette(source)), parser=f"{tag}; code {code}")
    except OSError as exc:
        raise reading_error(source.path, exc, "cassette") from exc
    return value


def _interactions(path: Path, data: Any) -> list[Interaction]:
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise InputError(path, "not a vcrpy cassette: no 'interactions' list")
    out = []
    for index, item in enumerate(data["interactions"]):
        try:
            out.append(Interaction.from_vcr(item))
        except _Malformed as exc:
            raise InputError(path, f"interaction {index}: {exc}") from None
    return out
