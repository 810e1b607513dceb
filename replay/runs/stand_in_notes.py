"""The notes every output carries for a run recorded against the local stand-ins."""

from __future__ import annotations

from replay.files.paths import display_path
from replay.runs.folder import Run
from replay.schema.results import ResultsFile

# --------------------------------------------------------------------------- stand-ins

STAND_IN_JUDGE_NOTE = "runs used the local stand-in judge (test equipment), not Claude"
STAND_IN_LEARN_NOTE = "pages came from the local Learn stand-in (test equipment), not learn.microsoft.com"
SIMULATED_NOTE = "the model stand-in simulated model noise on close calls"
SERVICES = ("learn", "model")
"""The services a run's `stand_ins` names; anything else there is a stand-in's note (`sim model --noise`)."""


def stand_in_notes(runs: list[Run]) -> list[str]:
    """What people must read first when runs used the local stand-ins (test equipment)."""
    return stand_in_notes_for([(display_path(r.path), r.manifest.stand_ins) for r in runs])


def stand_in_notes_for(sources: list[tuple[str, list[str] | None]]) -> list[str]:
    """The stand-in notes for labelled results: (label, the services that were stand-ins, None when not
    known: a results file outside a run folder that does not say)."""
    notes = []
    for service, note in (("model", STAND_IN_JUDGE_NOTE), ("learn", STAND_IN_LEARN_NOTE)):
        names = [label for label, stand_ins in sources if stand_ins and service in stand_ins]
        if names:
            notes.append(f"{note}: {', '.join(names)}")
    for note in sorted({n for _, stand_ins in sources for n in stand_ins or [] if n not in SERVICES}):
        names = [label for label, stand_ins in sources if stand_ins and note in stand_ins]
        notes.append(f"{SIMULATED_NOTE} ({note}): {', '.join(names)}")
    unknown = [label for label, stand_ins in sources if stand_ins is None]
    if unknown:
        notes.append(f"cannot tell whether {', '.join(unknown)} came from the real services or the local "
                     f"stand-ins (test equipment): not a run folder (give --run RUN to name the run it came from)")
    return notes


def stand_ins_of(results: ResultsFile, run: Run | None) -> list[str] | None:
    """Which services were stand-ins for these results: the run's manifest, else the results file's own
    `stand_ins` when it has the field (the bake-off writes it), else None (not known)."""
    if run is not None:
        return list(run.manifest.stand_ins)
    return list(results.stand_ins) if "stand_ins" in results.model_fields_set else None
