"""`judge-replay cassettes verify`: replay a run in full and check it reproduces its results, using every recorded interaction."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import CassetteMiss
from ._io import load_results
from ._matching import results_differences
from ._recorder import recorders_created
from ._records import FileResult
from ._runner import replay_run
from ._runs import Run


@dataclass
class VerifyReport:
    """What `judge-replay cassettes verify` found for one run."""

    run: str
    problems: list[str]
    """One line each, naming the claims file (empty: the run reproduces)."""
    interactions: int = 0
    """Recorded interactions in the run's cassettes."""

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_run(run_dir: str | Path) -> VerifyReport:
    """Replay a run offline (its own prompt, claims and cassettes) and check that it reproduces its
    recorded results.json (`files`) and that every recorded interaction was used."""
    run = Run(run_dir)
    results = load_results(run.path)
    batched = {f.file: f.batch for f in results.files}
    recorded_files = [_KeptResult.of(f) for f in results.files]  # memory holds the replay's results, not two
    del results
    problems: list[str] = []
    try:
        with recorders_created() as recorders:
            replayed = replay_run(run, use_receipt=False, batched=batched)  # the check itself: always in full
    except CassetteMiss as miss:
        return VerifyReport(str(run.path), [f"{miss.claims_file}: the replay stopped: {line}" for line in str(miss).splitlines()[1:]])
    problems.extend(results_differences(recorded_files, replayed.files))
    recorder = next((r for r in recorders if r.mode == "replay"), None)
    unused = recorder.unused_requests() if recorder else {}
    for entry in run.manifest.claims:
        for index, what in unused.get(entry.file, []):
            problems.append(f"{entry.file}: recorded interaction {index} ({what}) was never used by the replay")
    if recorder is None:
        problems.append("the replay went through no recorder, so unused interactions could not be checked")
    return VerifyReport(str(run.path), problems, recorder.recorded_interactions if recorder else 0)


class _KeptResult:
    """A recorded file's results kept as its JSON (a fifth of the objects' memory) until compared."""

    def __init__(self, file: str, line: str) -> None:
        self.file = file
        self.line = line

    @classmethod
    def of(cls, result: FileResult) -> _KeptResult | FileResult:
        """`result` kept as JSON, or as it is when its JSON would not read back equal."""
        line = result.model_dump_json()
        return cls(result.file, line) if FileResult.model_validate_json(line) == result else result

    def model_dump(self, **options: Any) -> dict[str, Any]:
        return FileResult.model_validate_json(self.line).model_dump(**options)
