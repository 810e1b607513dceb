"""The judge prompts: the bundled versions (v1, v2, v3, the `.md` files here) or a prompt file, loaded."""

from __future__ import annotations


import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from replay.errors import InputError
from replay.files.regular import read_regular_text
from replay.schema.claims import ClaimsBatch
from replay.core.text import sha256_text
from replay.core.prompts import Prompt


BUNDLED = ("v1", "v2", "v3")


def load_prompt(name_or_path: str) -> Prompt:
    """A bundled prompt by name (`v1`, `v2`, `v3`) or a prompt file by path."""
    if name_or_path in BUNDLED:
        text = resources.files("replay.prompts").joinpath(f"{name_or_path}.md").read_text("utf-8")
        return Prompt(name_or_path, text)
    path = Path(name_or_path)
    if path.exists() and not path.is_file():
        raise InputError(name_or_path, "is not a file (a folder, or a pipe such as <(...)): give a prompt file")
    if not path.is_file():
        raise InputError(
            name_or_path, f"no such prompt: give a bundled name ({', '.join(BUNDLED)}) or a prompt file"
        )
    try:
        text = read_regular_text(path, "prompt", "utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read the prompt file ({exc})") from exc
    if "{{batch}}" not in text:
        raise InputError(path, "the prompt has no {{batch}} placeholder where the claims go")
    return Prompt(str(path), text)
