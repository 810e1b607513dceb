"""A claims file's cassette name: unique, stable and safe on every filesystem."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

from replay.cassettes.cassette import CASSETTE_SUFFIX
from replay.errors import InputError
from replay.schema.manifest import RunManifest
from replay.secrets.excerpts import excerpt

_PLAIN = re.compile(r"[a-z0-9][a-z0-9.-]*(?:/[a-z0-9][a-z0-9.-]*)*")
"""A `file` whose cassette name is just its `/` written `_`: lower-case ASCII letters, digits, `.`, `-`
and `/` (no `_`, so the name can be read back; lower case, so no two collide on a case-insensitive
filesystem)."""
_WINDOWS_RESERVED = re.compile(r"(?i)^(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(?:\.|$)")
MAX_NAME_BYTES = 120
"""Longest cassette name before `.yaml` (UTF-8 bytes; filesystems allow 255)."""
MAX_FILE_NAME_BYTES = 255
"""Longest file name filesystems allow (UTF-8 bytes)."""


def in_folder(folder: Path, name: str) -> Path:
    """`folder / name`, or the file of the folder whose name is `name` spelt in another Unicode form: a
    run folder copied through a file system that stores names decomposed (macOS's) holds
    `docs_modèles.md~….yaml` in NFD, which is another name on Linux."""
    path = folder / name
    if name.isascii() or path.exists():
        return path
    wanted = unicodedata.normalize("NFC", name)
    try:
        return next((entry for entry in folder.iterdir() if unicodedata.normalize("NFC", entry.name) == wanted), path)
    except OSError:
        return path


def cassette_name(claims_file: str) -> str:
    """The cassette file name for a claims batch's `file`: unique and stable for every `file` value,
    and safe on every filesystem (no `/`, `\\`, `:`, control characters or reserved names; capped).

    A plain `file` (see _PLAIN) is spelt out: `docs/a.md` -> `docs_a.md.yaml`. Any other keeps its
    letters and digits (Unicode included) and gets a short hash of the exact `file` value, after a
    `~` no plain name has: `docs/概要.md` -> `docs_概要.md~fcc6406dc5.yaml`, `docs_a.md` -> `docs_a.md~….yaml`."""
    slug = claims_file.replace("/", "_")
    if (_PLAIN.fullmatch(claims_file) and len(slug.encode("utf-8")) <= MAX_NAME_BYTES
            and not _WINDOWS_RESERVED.match(slug)):
        return slug + CASSETTE_SUFFIX
    readable = "".join(c if unicodedata.category(c)[0] in "LMN" or c in ".-" else "_" for c in unicodedata.normalize("NFC", claims_file))
    readable = re.sub(r"_+", "_", readable).strip("._-")
    while len(readable.encode("utf-8")) > MAX_NAME_BYTES:
        readable = readable[:-1]
    if _WINDOWS_RESERVED.match(readable):
        readable = "_" + readable
    digest = hashlib.sha256(claims_file.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{readable or 'claims'}~{digest}{CASSETTE_SUFFIX}"


def sample_cassette_name(claims_file: str, sample: int) -> str:
    """The cassette of sample `sample` (1, 2, ...) of a claims file: sample 1's is `cassette_name`'s (so a
    run of one sample, or one grown by more samples, renames nothing), sample k's is that name with
    `.sample-<k>` before `.yaml`: `docs_a.md.yaml`, `docs_a.md.sample-2.yaml`."""
    name = cassette_name(claims_file)
    if sample == 1:
        return name
    return f"{name[: -len(CASSETTE_SUFFIX)]}.sample-{sample}{CASSETTE_SUFFIX}"


def conversation_label(claims_file: str, sample: int) -> str:
    """How messages name one conversation: its claims file, and with samples the sample (`docs/a.md (sample 2)`)."""
    return claims_file if sample == 1 else f"{claims_file} (sample {sample})"


def _check_cassette_names(manifest: RunManifest, path: Path) -> None:
    """Every cassette a manifest names is a plain file name inside its run folder."""
    for entry in manifest.claims:
        for name in entry.cassettes:
            if (not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
                    or Path(name).is_absolute() or ":" in name):
                raise InputError(path, f"claims entry {entry.file!r}: cassette {name!r} is not a file name inside the "
                                       "run folder")
            if len(name.encode("utf-8", "surrogatepass")) > MAX_FILE_NAME_BYTES:
                raise InputError(path, f"claims entry {excerpt(entry.file, 60, mark='')!r}: cassette name {excerpt(name, 40, mark='')!r}… is longer "
                                       f"than a file name may be ({MAX_FILE_NAME_BYTES} bytes)")
