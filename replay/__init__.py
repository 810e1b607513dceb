"""judge-replay: record, replay, grade, snapshot and explain runs of the Learn groundedness judge.

The public API is what `__all__` lists; the packages below are the code's rooms and may change.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay.errors import CassetteMiss, CheckFailed, InputError, LearnError, ReplayError, UsageError
    from replay.analysis.flip_inputs import explain_flips
    from replay.core.gate import adoption_gate
    from replay.core.grading import grade_results
    from replay.files.inputs import load_claims, load_gold
    from replay.files.results import load_results
    from replay.schema.claims import Claim, ClaimsBatch
    from replay.schema.results import ClaimResult, FileResult, ResultsFile
    from replay.schema.drift import DriftReport
    from replay.schema.flips import Flip, FlipReport
    from replay.schema.scores import GateDecision, Scores
    from replay.schema.gold import GoldItem, GoldSet
    from replay.schema.manifest import RunManifest
    from replay.runs.folder import Run
    from replay.snapshots.verdicts import RunVerdicts, replay_run
    from replay.snapshots.extension import VerdictSnapshotExtension

_HOMES = {
    "replay.errors": ["CassetteMiss", "CheckFailed", "InputError", "LearnError", "ReplayError", "UsageError"],
    "replay.analysis.flip_inputs": ["explain_flips"],
    "replay.core.gate": ["adoption_gate"],
    "replay.core.grading": ["grade_results"],
    "replay.files.inputs": ["load_claims", "load_gold"],
    "replay.files.results": ["load_results"],
    "replay.schema.claims": ["Claim", "ClaimsBatch"],
    "replay.schema.results": ["ClaimResult", "FileResult", "ResultsFile"],
    "replay.schema.drift": ["DriftReport"],
    "replay.schema.flips": ["Flip", "FlipReport"],
    "replay.schema.scores": ["GateDecision", "Scores"],
    "replay.schema.gold": ["GoldItem", "GoldSet"],
    "replay.schema.manifest": ["RunManifest"],
    "replay.runs.folder": ["Run"],
    "replay.snapshots.verdicts": ["RunVerdicts", "replay_run"],
    "replay.snapshots.extension": ["VerdictSnapshotExtension"],
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
"""Where each public name lives. They are imported on first use, so that the command line (which imports
this package first) does not load pytest, syrupy or the SDK to print its help."""


def __getattr__(name: str) -> Any:
    if name not in _HOME_OF:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME_OF[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, the private ones, and the submodules loaded so far (not `Any`, `importlib`...)."""
    submodules = {n for n, v in globals().items()
                  if isinstance(v, ModuleType) and v.__name__.startswith(f"{__name__}.")}
    return sorted(set(__all__) | submodules | {n for n in globals() if n.startswith("_")})


__all__ = [
    "CassetteMiss",
    "CheckFailed",
    "Claim",
    "ClaimResult",
    "ClaimsBatch",
    "DriftReport",
    "FileResult",
    "Flip",
    "FlipReport",
    "GateDecision",
    "GoldItem",
    "GoldSet",
    "InputError",
    "LearnError",
    "ReplayError",
    "ResultsFile",
    "Run",
    "RunManifest",
    "RunVerdicts",
    "Scores",
    "UsageError",
    "VerdictSnapshotExtension",
    "adoption_gate",
    "explain_flips",
    "grade_results",
    "load_claims",
    "load_gold",
    "load_results",
    "replay_run",
]
