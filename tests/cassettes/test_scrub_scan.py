"""The scrubber's one cheap scan (`Redactor.may_occur` over `cassettes.scrub.scan_text`) never misses what the
full pass (every string of the parsed body) removes: it decides only when a body is parsed at all."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest

from replay.cassettes.bodies import map_strings
from replay.cassettes.interaction import Interaction
from replay.cassettes.scrub import scan_text, scrub_interaction
from replay.secrets.registry import Redactor
from replay.sim.learn import dotnet_json

SECRETS = [
    "sk-ant-api03-Zx81fQ7f2Q7f2Q7f2Q7f2abc",
    'pa"ss\\word/+x==9',  # the characters JSON escapes, or may (`\/`), and base64's
    "clé-secrète-ü-1234",  # non-ASCII: \u escapes in .NET's and ensure_ascii JSON
    "key😀-123456-astral",  # beyond the BMP: a surrogate pair when \u-escaped
    "line1\nline2\tpw-77",  # control characters with short escapes
    "ctl\x01\x1fsecret-9",  # and without (always \u00XX)
    "<tag>&'+`-secret-8",  # what .NET escapes as \u00XX though JSON does not need it
]


def embeddings(secret: str) -> dict[str, str]:
    """The secret inside a string, in every encoding the redactor removes."""
    raw = secret.encode("utf-8")
    out = {
        "plain": f"before {secret} after",
        "url-quoted": f"https://h/x?q={quote(secret, safe='')}&z=1",
        "url-quoted-plus": f"q={quote_plus(secret, safe='')}",
        "json-escaped": "text " + json.dumps(secret)[1:-1] + " more",
        "json-escaped-raw-unicode": "text " + json.dumps(secret, ensure_ascii=False)[1:-1],
        "base64-alone": base64.b64encode(raw).decode(),
    }
    for offset in range(3):  # inside a longer base64 text, at each alignment (a Basic header)
        encoded = base64.b64encode(b"u" * offset + raw + b"tail").decode()
        out[f"base64-at-{offset}"] = f"Basic {encoded}"
        out[f"base64url-at-{offset}"] = encoded.replace("+", "-").replace("/", "_")
    return out


def _u_escaped(value: object, every: bool = True, rng: random.Random = random.Random(7)) -> str:
    """JSON with every character (or, `every=False`, a random half of them) of every string written as
    \\uXXXX (UTF-16: surrogate pairs; hex in either case)."""
    def char(c: str) -> str:
        if not every and rng.random() < 0.5 and c not in '"\\' and c >= " ":
            return c
        data = c.encode("utf-16-be")
        units = [f"\\u{int.from_bytes(data[i:i + 2], 'big'):04x}" for i in range(0, len(data), 2)]
        return "".join(u.upper().replace("\\U", "\\u") if rng.random() < 0.5 else u for u in units)

    def string(text: str) -> str:
        return '"' + "".join(map(char, text)) + '"'

    if isinstance(value, str):
        return string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{string(k)}:{_u_escaped(v, every, rng)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_u_escaped(v, every, rng) for v in value) + "]"
    return json.dumps(value)


JSON_WRITERS: dict[str, Callable[[object], str]] = {
    "ascii": json.dumps,
    "unicode": lambda v: json.dumps(v, ensure_ascii=False),
    "indented": lambda v: json.dumps(v, ensure_ascii=False, indent=2),
    "dotnet": dotnet_json,
    "slashes-escaped": lambda v: json.dumps(v).replace("/", "\\/"),
    "all-u-escaped": _u_escaped,
    "half-u-escaped": lambda v: _u_escaped(v, every=False),
}


def bodies(text: str) -> dict[str, tuple[str, str | None]]:
    """(body, content type) of every shape a stored body takes, holding `text` as a string."""
    out: dict[str, tuple[str, str | None]] = {"plain text": (text, "text/plain")}
    for name, write in JSON_WRITERS.items():
        value = {"result": {"content": [{"type": "text", "text": text}]}, "jsonrpc": "2.0", "id": 3}
        out[f"json {name}"] = (write(value), "application/json")
        out[f"json key {name}"] = (write({"headers": {text: ["v"]}}), "application/json")
        if name != "indented":  # an SSE event's data is one line
            out[f"sse {name}"] = (f"event: message\r\ndata: {write(value)}\r\n\r\n", "text/event-stream")
            out[f"sse unlabelled {name}"] = (f"data: {write([1, text])}\n\n", None)
    out["sse text line"] = (f"event: message\ndata: not json {text}\n\n", "text/event-stream")
    return out


@pytest.mark.parametrize("secret", SECRETS)
def test_the_scan_finds_every_form_the_full_pass_removes_in_every_body_shape(secret: str) -> None:
    redactor = Redactor([secret])
    removed_somewhere = 0
    for how, text in embeddings(secret).items():
        for shape, (body, content_type) in bodies(text).items():
            removed = map_strings(body, content_type, redactor.redact)
            if removed == map_strings(body, content_type, str):  # only a secret split across SSE lines: no pass removes it
                assert "\n" in secret and shape.startswith("sse text"), f"{how} in {shape}"
                continue
            removed_somewhere += 1
            assert redactor.may_occur(scan_text(body)), f"{how} in {shape}: the scan missed it"
            it = Interaction("POST", "https://h/x", body, 200, body,
                             {"content-type": [content_type or ""]}, {"content-type": [content_type or ""]})
            scrubbed = scrub_interaction(it, redactor)
            assert (scrubbed.request_body, scrubbed.response_body) == (removed, removed)
    assert removed_somewhere >= len(embeddings(secret)) * (len(bodies("x")) - 1)


def test_a_body_without_the_secret_is_not_parsed_by_the_scrubber() -> None:
    redactor = Redactor(SECRETS)
    for shape, (body, content_type) in bodies("an ordinary page about tokens, org charts and keys").items():
        assert not redactor.may_occur(scan_text(body)), shape


def test_the_scan_agrees_with_the_full_pass_on_random_bodies() -> None:
    rng = random.Random(13)
    alphabet = 'ab"\\/\n\t\x00\x01é😀+=<&u0041'
    for _ in range(3000):
        secret = "".join(rng.choice(alphabet) for _ in range(rng.randint(6, 9)))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.5:
            at = rng.randint(0, len(text))
            text = text[:at] + secret + text[at:]
        write = rng.choice(list(JSON_WRITERS.values()))
        for body, content_type in ((write({"k": [text]}), "application/json"), (f"data: {write(text)}\n\n", None), (text, None)):
            redactor = Redactor([secret])
            if map_strings(body, content_type, redactor.redact) != map_strings(body, content_type, str):
                assert redactor.may_occur(scan_text(body)), (secret, body)
