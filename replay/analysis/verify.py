"""`judge-replay cassettes verify`: replay a run in full and check it reproduces its results, using every recorded interaction."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from replay.cassettes.cache import every_byte_hashed, private_entries
from replay.cassettes.cassette import CASSETTE_SUFFIX
from replay.cassettes.matching import results_differences
from replay.errors import CassetteMiss, ReplayError
from replay.files.atomic import atomic_write_text
from replay.files.regular import read_regular_text
from replay.files.results import load_results
from replay.judge.replaying import _run_claims, _run_prompt, replayed_run
from replay.recording.recorder import recorders_created
from replay.runs.folder import Run
from replay.runs.receipts import receipt_for
from replay.runs.writer import reading
from replay.schema.results import FileResult


@dataclass
class VerifyReport:
    """What `judge-replay cassettes verify` found for one run."""

    run: str
    problems: list[str]
    """One line each, naming the claims file (empty: the run reproduces)."""
    interactions: int = 0
    """Recorded interactions in the run's cassettes."""
    page_snapshot: bool = False
    """The folder is a page snapshot `drift --live` wrote, not a run: no model was called, nothing to replay."""
    cached: bool = False
    """Not replayed: it verified before, and nothing it reads has changed since (`verified`)."""

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_run(run_dir: str | Path) -> VerifyReport:
    """Replay a run offline (its own prompt, claims and cassettes) and check that it reproduces its
    recorded results.json (`files`) and that every recorded interaction was used. The run is read as a
    whole (`runs.writer.reading`): a recording into it swaps its new run in afterwards."""
    with reading(run_dir):
        return _verify(Run(run_dir))


def verified(run_dir: str | Path) -> VerifyReport:
    """`verify_run`, remembered: a run that verified once is not replayed again while nothing a replay
    reads has changed (the inputs and code a replay receipt hashes, `runs.receipts`). The mark sits beside
    the run's receipt; a run outside the project, `JUDGE_REPLAY_NO_CACHE=1`, or a failed verification is
    checked in full every time."""
    run = Run(run_dir)
    mark = _verified_mark(run)
    if mark is not None:
        path, inputs = mark
        try:
            if read_regular_text(path, "receipt", "utf-8") == inputs:
                return VerifyReport(str(run.path), [], cached=True)
        except (OSError, ReplayError, UnicodeDecodeError):
            pass
    report = verify_run(run_dir)
    after = _verified_mark(run) if report.ok and mark is not None else None
    if after is not None and after == mark:  # nothing changed while it was verified
        try:
            atomic_write_text(after[0], after[1])
        except (OSError, ReplayError):  # a mark that cannot be written only costs the next check its shortcut
            pass
    return report


def _verified_mark(run: Run) -> tuple[Path, str] | None:
    """(where the run's "verified" mark goes, the hash of the inputs it vouches for), or None when no
    receipt applies to the run (or its prompt or claims cannot be read: verify says what is wrong)."""
    try:
        receipt = receipt_for(run, _run_prompt(run), _run_claims(run))
    except (ReplayError, OSError):
        return None
    if receipt is None:
        return None
    return receipt.path.with_name(receipt.path.stem + ".verified"), receipt.inputs_sha256


def _verify(run: Run) -> VerifyReport:
    if run.is_page_snapshot:
        return VerifyReport(str(run.path), [], page_snapshot=True)
    results = load_results(run.path)
    batched = {f.file: f.batch for f in results.files}
    recorded = {f.file: _fingerprint(f) for f in results.files}  # memory holds the replay's results, and these
    del results
    problems: list[str] = []
    try:
        # the check itself: in full, every byte read; the cassettes parsed on every core reach it only
        # through entries made in this check (`private_entries`), none of the user's cache
        with recorders_created() as recorders, every_byte_hashed(), private_entries():
            replayed = replayed_run(run, use_receipt=False, batched=batched)
    except CassetteMiss as miss:
        return VerifyReport(str(run.path), [f"{miss.claims_file}: the replay stopped: {line}" for line in miss.lines[1:]])
    if not _reproduced(recorded, replayed.files()):  # say how: read the recorded results again
        problems.extend(results_differences(load_results(run.path).files, list(replayed.files())))
    recorder = next((r for r in recorders if r.mode == "replay"), None)
    unused = recorder.unused_requests() if recorder else {}
    for entry in run.manifest.claims:
        for index, what in unused.get(entry.file, []):
            problems.append(f"{entry.file}: recorded interaction {index} ({what}) was never used by the replay")
    if recorder is None:
        problems.append("the replay went through no recorder, so unused interactions could not be checked")
    problems.extend(_unnamed_cassettes(run))
    return VerifyReport(str(run.path), problems, recorder.recorded_interactions if recorder else 0)


def _unnamed_cassettes(run: Run) -> list[str]:
    """A cassette in the run folder that run.json names for no claims file: it ships with the run, but no
    replay reads it (a stale one, as a reused staging folder of a killed recording would leave)."""
    named = {name for entry in run.manifest.claims for name in entry.cassettes}
    return [f"{path.name}: a cassette run.json names for no claims file (no replay reads it)"
            for path in sorted(run.path.glob("*" + CASSETTE_SUFFIX)) if path.name not in named]


def _reproduced(recorded: dict[str, str | None], files: Iterable[FileResult]) -> bool:
    """Whether the replay gave every recorded file's results, by their fingerprints (False: compare
    them in full, which may still find them equal); the files read once, one at a time."""
    replayed = set()
    for f in files:
        found = _fingerprint(f)
        if found is None or f.file not in recorded or found != recorded[f.file]:
            return False
        replayed.add(f.file)
    return replayed == recorded.keys()


def _fingerprint(result: FileResult) -> str | None:
    """The sha256 of what `results_differences` compares of a file's results (all but `cost_usd`), as
    canonical JSON; None when that is no strict JSON (a NaN or infinity kept as a number, which never
    compares equal): such a file is always compared in full. Equal fingerprints are equal results; in
    any other case verify reads the recorded results.json again and compares it with the replay's, so
    the report is the one a comparison of every file gives."""
    try:
        text = json.dumps(result.model_dump(mode="json", exclude={"cost_usd"}), sort_keys=True, allow_nan=False)
    except ValueError:
        return None
    return hashlib.sha256(text.encode()).hexdigest()
