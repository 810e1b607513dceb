"""The named JSON Schemas `judge-replay schema NAME` prints."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from replay.schema.claims import ClaimsBatch
from replay.schema.drift import DriftReport
from replay.schema.flips import FlipReport
from replay.schema.gold import GoldSet
from replay.schema.manifest import RunManifest
from replay.schema.results import ResultsFile
from replay.schema.scores import GateDecision, Scores

# --------------------------------------------------------------------------- JSON schemas

SCHEMAS: dict[str, type[BaseModel]] = {
    "claims": ClaimsBatch,
    "gold": GoldSet,
    "results": ResultsFile,
    "run": RunManifest,
    "grade": Scores,
    "gate": GateDecision,
    "diff": FlipReport,
    "drift": DriftReport,
}
"""The files and outputs whose JSON Schema `judge-replay schema NAME` prints, generated from the records."""


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one record (a key of SCHEMAS), as pydantic generates it."""
    return SCHEMAS[name].model_json_schema()
