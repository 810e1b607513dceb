"""judge-replay: record, replay, grade, snapshot and explain runs of the Learn groundedness judge.

The public API is what `__all__` lists; everything else lives in `_`-prefixed modules and may change.
"""

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
