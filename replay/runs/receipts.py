"""Replay receipts: a replay of unchanged inputs with unchanged code gives the last full replay's results.

A full replay (`judge --mode replay`, `cassettes verify`) that succeeds writes a receipt for its run
folder: the results it produced (`files`, before pricing: one JSON line per claims file, compressed)
under the sha256 of everything it read and of the code that ran (`inputs_sha256`):

- inputs: run.json, results.json, the prompt text, each claims file (where it was found, and its
  bytes), each conversation's cassette (its name and the sha256 of its bytes, from the cassette's stamp
  in the parsed-cassette cache when that can be trusted: `cassettes.cache.Cassette`; or that it is
  missing), and the environment variables the SDK and we read (`ANTHROPIC_*` but the key and token
  values, whose presence only counts; `JUDGE_REPLAY_*`; proxy and TLS settings);
- code: the sha256 of every file of our package as it is on disk (an editable install changes code
  without changing a version), the name and version of every installed distribution (anthropic,
  httpx, vcrpy, pydantic and the rest), and Python's version.

A later replay computes the same hash after the checks a full replay makes first (the prompt and the
claims files unchanged since recording); only when it equals the receipt's is the full replay skipped,
and the results go through the same pricing and printing, so its output is the full replay's byte for
byte (progress lines in claims-file order, as a full replay at concurrency 1 prints them). Any other
case runs the full replay: a changed or missing input, other code, a missing, unreadable or malformed
receipt, `JUDGE_REPLAY_NO_CACHE=1`, a run folder outside the project, or any secret the user gave us
(`secrets.registry`) occurring in an input (the scrubbing that then applies to a request depends on what was
given, which no hash of ours should hold). Receipts live in `replays/` of the user's cache folder
(`cassettes.cache.user_cache_base`: `JUDGE_REPLAY_CACHE_DIR`, else the platform's), never in a project,
so no clone can carry one in; one per run folder (named by its resolved path), written atomically;
deleting them is always safe.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import json
import os
import sys
import zlib
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from replay.cassettes.cache import Cassette, is_off, user_cache_base
from replay.core.prompts import Prompt
from replay.errors import ReplayError
from replay.files.atomic import atomic_write_text
from replay.files.regular import open_regular, read_regular
from replay.runs.folder import MANIFEST, RESULTS, Run
from replay.runs.names import sample_cassette_name
from replay.schema.results import FileResult, HeldFiles
from replay.secrets.registry import contains_secret, known, longest_secret_form
from replay.settings import project_root

FORMAT = 3
"""Bump when what a receipt holds, or what its hash covers, changes."""


def receipts_folder() -> Path:
    """Where the receipts live (see the module docstring)."""
    return user_cache_base() / "replays"

PIECE = 1 << 18
"""Bytes of run.json and results.json read at a time while hashing them."""
_ENV_PREFIXES = ("ANTHROPIC_", "JUDGE_REPLAY_", "SSL_", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
_ENV_PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
_ENV_PRESENCE_ONLY = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


class Receipt:
    """The receipt of one run folder's replay with given inputs (see the module docstring)."""

    def __init__(self, path: Path, inputs_sha256: str) -> None:
        self.path = path
        self.inputs_sha256 = inputs_sha256

    def files(self) -> HeldFiles | None:
        """The results the full replay produced, when the receipt is for these inputs; else None. Each
        file's line is checked to read, and held as `HeldFiles` holds results (its JSON compressed)."""
        try:
            data = json.loads(read_regular(self.path, "receipt"))
            if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("inputs_sha256") != self.inputs_sha256:
                return None
            kept = []
            for line in zlib.decompress(base64.b64decode(data["files"], validate=True)).splitlines():
                FileResult.model_validate_json(line)
                kept.append(zlib.compress(line, 1))
            return HeldFiles.of_held(kept)
        except (OSError, ReplayError, ValueError, KeyError, TypeError, ValidationError, zlib.error):
            return None

    def write(self, files: Iterable[FileResult]) -> None:
        """Keep what a full replay produced: each file's results as a JSON line, compressed one at a time
        (memory holds the results, not a second copy as text). Skipped when a file's results would not
        read back equal, or hold a secret we know; a receipt that cannot be written only costs the next
        replay its shortcut."""
        compressor = zlib.compressobj()
        chunks = []
        for f in files:
            line = f.model_dump_json()
            if FileResult.model_validate_json(line) != f or (known() and contains_secret(line)):
                return
            chunks.append(compressor.compress(line.encode("utf-8") + b"\n"))
        chunks.append(compressor.flush())
        text = json.dumps({"format": FORMAT, "inputs_sha256": self.inputs_sha256,
                           "files": base64.b64encode(b"".join(chunks)).decode("ascii")})
        try:
            atomic_write_text(self.path, text)
        except (OSError, ReplayError):  # e.g. a file where the receipts folder goes
            return


class _OfFile(Protocol):
    """A claims batch, or what stands for one (`judge.held.HeldClaims`): what a receipt needs of it."""

    @property
    def file(self) -> str: ...


def receipt_for(run: Run, prompt: Prompt, batches: Sequence[tuple[Path, _OfFile]], *,
                code: str | None = None) -> Receipt | None:
    """The receipt of replaying `run` with `prompt` and `batches` (None: no receipt applies, see the
    module docstring). `code`: the code's fingerprint (default `code_sha256()`)."""
    if is_off():
        return None
    root = project_root().resolve()
    folder = run.path.resolve()
    if not folder.is_relative_to(root):
        return None
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> bool:
        """Hash one input (read one at a time: memory holds one cassette); False when it holds a secret."""
        if holds_secret(data):
            return False
        for part in (label.encode("utf-8", "surrogatepass"), data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        return True

    def add_file(label: str, path: Path) -> bool:
        """A file, hashed as `add` would its bytes, read in pieces (a large results.json is never held
        whole while a replay's results are), each also searched for a secret when one is known (as
        `holds_secret` searches the whole: decoded alike, each piece with the end of the one before it,
        as long as the longest form less one); False when it holds a secret or changed while read."""
        searching = known()
        overlap = longest_secret_form() - 1
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        tail = ""
        with open_regular(path, "run" if path.name == MANIFEST else "results") as fh:
            size = os.fstat(fh.fileno()).st_size
            framed_label = label.encode("utf-8", "surrogatepass")
            digest.update(len(framed_label).to_bytes(8, "big") + framed_label + size.to_bytes(8, "big"))
            read = 0
            while True:
                chunk = fh.read(PIECE)
                if searching:
                    text = tail + decoder.decode(chunk, final=not chunk)
                    if contains_secret(text):
                        return False
                    tail = text[-overlap:] if overlap > 0 else ""
                if not chunk:
                    break
                digest.update(chunk)
                read += len(chunk)
        return read == size

    def add_cassette(path: Path) -> bool:
        """A cassette by the sha256 of its bytes (stamped: read only when the stamp cannot say, or when a
        secret is known, to look for it); False when it holds a secret."""
        if not path.is_file():
            return add("cassette " + path.name, b"(missing)")
        source = Cassette(path)
        return not (known() and holds_secret(source.raw())) and add("cassette sha256 " + path.name, source.sha256().encode())

    try:
        fixed = [("format", str(FORMAT).encode()), ("code", (code or code_sha256()).encode()),
                 ("environment", _environment()), ("run", str(folder).encode("utf-8", "surrogatepass")),
                 ("prompt", prompt.text.encode("utf-8", "surrogatepass"))]
        if not (all(add(label, data) for label, data in fixed) and all(add_file(name, run.path / name) for name in (MANIFEST, RESULTS))):
            return None
        samples = run.manifest.sample_count
        for path, batch in batches:
            cassettes = [run.path / sample_cassette_name(batch.file, k) for k in range(1, samples + 1)]
            if not (add("claims " + str(path.resolve()), read_regular(path, "claims")) and all(map(add_cassette, cassettes))):
                return None
    except OSError:
        return None
    name = hashlib.sha256(str(folder).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Receipt(receipts_folder() / f"{name}.json", digest.hexdigest())


@cache
def code_sha256() -> str:
    """The fingerprint of the code a replay runs: every file of our package (as first read in this
    process), every installed distribution's name and version, and Python's version."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(_framed(sys.version.encode()) + _framed(sys.implementation.name.encode()))
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(_framed(path.relative_to(package).as_posix().encode()) + _framed(path.read_bytes()))
    digest.update(_framed("\n".join(installed_distributions(sys.path)).encode()))
    return digest.hexdigest()


def installed_distributions(search_path: Iterable[str]) -> list[str]:
    """The metadata folders (`name-version.dist-info`, `.egg-info`) found in `search_path`, sorted: the
    name and version of every installed distribution, read from folder names only (cheap)."""
    found: set[str] = set()
    for entry in search_path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        found.update(n for n in names if n.endswith((".dist-info", ".egg-info")))
    return sorted(found)


def holds_secret(data: bytes) -> bool:
    """Whether a secret the user gave us (`secrets.registry`) occurs in these bytes."""
    return known() and contains_secret(data.decode("utf-8", "replace"))


def _environment() -> bytes:
    shown = []
    for name, value in sorted(os.environ.items()):
        if name.startswith(_ENV_PREFIXES) or name.lower() in _ENV_PROXIES:
            shown.append(f"{name}={'(set)' if name in _ENV_PRESENCE_ONLY else value}")
    return "\n".join(shown).encode("utf-8", "surrogateescape")


def _framed(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data
