"""judge-replay: record, replay, grade, snapshot and explain runs of the Learn groundedness judge.

The public API is what `__all__` lists; everything else lives in `_`-prefixed modules and may change.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._errors import CassetteMiss, CheckFailed, InputError, LearnError, ReplayError, UsageError
    from ._flip_inputs import explain_flips
    from ._gate import adoption_gate
    from ._grading import grade_results
    from ._io import load_claims, load_gold, load_results
    from ._records import (
        Claim,
        ClaimResult,
        ClaimsBatch,
        DriftReport,
        FileResult,
        Flip,
        FlipReport,
        GateDecision,
        GoldItem,
        GoldSet,
        ResultsFile,
        RunManifest,
        Scores,
    )
    from ._runs import Run
    from .snapshot import RunVerdicts, VerdictSnapshotExtension, replay_run

_HOMES = {
    "._errors": ["CassetteMiss", "CheckFailed", "InputError", "LearnError", "ReplayError", "UsageError"],
    "._flip_inputs": ["explain_flips"],
    "._gate": ["adoption_gate"],
    "._grading": ["grade_results"],
    "._io": ["load_claims", "load_gold", "load_results"],
    "._records": ["Claim", "ClaimResult", "ClaimsBatch", "DriftReport", "FileResult", "Flip", "FlipReport",
                  "GateDecision", "GoldItem", "GoldSet", "ResultsFile", "RunManifest", "Scores"],
    "._runs": ["Run"],
    ".snapshot": ["RunVerdicts", "VerdictSnapshotExtension", "replay_run"],
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
"""Where each public name lives. They are imported on first use, so that the command line (which imports
this package first) does not load pytest, syrupy or the SDK to print its help."""


def __getattr__(name: str) -> Any:
    if name not in _HOME_OF:
        raise AttributeError(f"module 'replay' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME_OF[name], __name__), name)
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
