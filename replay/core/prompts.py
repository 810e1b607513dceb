"""Judge prompts: the bundled versions (v1, v2, v3) or a prompt file, rendered for one claims batch."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from replay.core.text import sha256_text
from replay.schema.claims import ClaimsBatch

_BATCH_FENCE = re.compile(r"## Batch to judge[^\n]*\n+```json\n(.*?)\n```", re.S)
CALIBRATION_HEADING = re.compile(r"\*\*(R\d) — ([^.*]+)")
"""A calibration rule heading as v3 writes it: `**R1 — Lower-bound understatement ...`."""


@dataclass(frozen=True)
class Prompt:
    """A prompt template: its name (bundled name or path), text and sha256."""

    name: str
    text: str

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    def render(self, batch: ClaimsBatch) -> str:
        """The prompt with the claims file name and the batch inserted."""
        return self.text.replace("{{file}}", batch.file).replace("{{batch}}", render_batch(batch))


def render_batch(batch: ClaimsBatch) -> str:
    """The batch as a fenced JSON array, one claim per line (what the judge, and the stand-in, read)."""
    rows = [
        json.dumps(
            {"id": c.id, "claim": c.claim, "claim_type": c.claim_type, "evidence_url": c.evidence_url},
            ensure_ascii=False,
        )
        for c in batch.claims
    ]
    return "```json\n[\n" + ",\n".join(rows) + "\n]\n```"


def parse_rendered_batch(text: str) -> list[dict[str, Any]] | None:
    """The claims of a rendered prompt, or None when the text holds no batch."""
    m = _BATCH_FENCE.search(text)
    if not m:
        return None
    try:
        claims = json.loads(m.group(1))
    except json.JSONDecodeError:
        return None
    return claims if isinstance(claims, list) else None


def calibration_rules(text: str) -> dict[str, str]:
    """The calibration rules a prompt defines: rule id -> its title."""
    return {
        m.group(1): re.sub(r"\s*\(fixes [^)]*\)\s*$", "", m.group(2).strip())
        for m in CALIBRATION_HEADING.finditer(text)
    }
