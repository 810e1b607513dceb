"""The bake-off: replay each prompt version's run, grade it, gate candidates against the baseline, list flips.

Also home of frozen baselines: `set_frozen` marks a results file (or a run) frozen; a frozen run's
`judge-bakeoff-results-<prompt>.json` is written frozen, and a frozen one is never overwritten with
different results unless forced.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._adjudication import adjudicate, run_claims
from ._commands import retry_failed_command
from ._cost import PRICES, Price, run_cost, with_costs
from ._errors import InputError, UsageError
from ._gate import adoption_gate
from ._grading import ClaimKey, claim_info, grade_results, is_correct
from ._io import atomic_write_text, display_path, dump_json, listed, load_gold, read_json, results_json_path
from ._matching import results_differences
from ._records import AnyClaim, Claim, ClaimResult, FlipReport, GateDecision, GoldSet, ResultsFile, Scores, Verdict
from ._runfolder import changing, journal_path
from ._runs import MANIFEST, RESULTS, Run, stand_in_notes, stand_in_notes_for, stand_ins_of

RESULTS_PREFIX = "judge-bakeoff-results-"

Warn = Callable[[str], None]


# --------------------------------------------------------------------------- frozen baselines


def is_frozen(path: Path) -> bool:
    """Whether a results file (or a run folder's results.json / run.json) says `"frozen": true`."""
    files = [path / RESULTS, path / MANIFEST] if path.is_dir() else [path]
    for p in files:
        if p.is_file():
            data = read_json(p)
            if isinstance(data, dict) and data.get("frozen") is True:
                return True
    return False


def _with_frozen(data: dict[str, Any], frozen: bool) -> dict[str, Any]:
    """`data` with `frozen` set, placed before `files`/`claims` as the records order it."""
    if "frozen" in data:
        return {**data, "frozen": frozen}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "files":
            out["frozen"] = frozen
        out[key] = value
    out.setdefault("frozen", frozen)
    return out


def set_frozen(path: str | Path, frozen: bool = True) -> list[Path]:
    """Mark a results file, or a run folder (its results.json and run.json), frozen or not.

    Returns the files changed. Only a results file with a `files` list can carry the mark.
    """
    path = Path(path)
    if path.is_dir() and (path / MANIFEST).is_file():  # a run: changed under its recording lock (`changing`)
        with changing(path):
            return _set_frozen([results_json_path(path), path / MANIFEST], frozen)
    return _set_frozen([results_json_path(path)], frozen)


def _set_frozen(targets: list[Path], frozen: bool) -> list[Path]:
    """The mark set in each file, results.json first: a kill between the two leaves the run refusing to be
    recorded over (the recorder reads results.json), and a second `--freeze` finishes it."""
    changed = []
    for p in targets:
        data = read_json(p)
        if not isinstance(data, dict) or (p.name != MANIFEST and "files" not in data):
            raise InputError(p, "cannot be frozen: only a results file with a 'files' list can carry "
                                "\"frozen\": true (a bare list of per-file outputs cannot)")
        if data.get("frozen", False) is not frozen:
            atomic_write_text(p, dump_json(_with_frozen(data, frozen)))
            changed.append(p)
    return changed


# --------------------------------------------------------------------------- replay


def _results_by_key(results: ResultsFile) -> dict[ClaimKey, ClaimResult]:
    return {(fr.file, r.id): r for fr in results.files for r in fr.results}


# --------------------------------------------------------------------------- the bake-off


@dataclass
class Version:
    """One prompt version in the bake-off: its run, the results graded, and their scores."""

    run: Run
    label: str
    """The run folder as people should read it (relative to the working folder when possible)."""
    results: ResultsFile
    source: Literal["replayed", "recorded"]
    replay_differences: list[str] | None
    """None when not replayed; empty when the replay reproduced the recorded results."""
    results_file: Path
    scores: Scores
    claims: dict[ClaimKey, AnyClaim]
    cost_usd: float | None = None
    """USD of the run: its recorded usage at current prices (`_cost.run_cost`; replaying it is free); None:
    the model has no price."""

    @property
    def prompt(self) -> str:
        return self.run.manifest.prompt


@dataclass(frozen=True)
class FlipLine:
    """A claim whose verdict differs between the baseline and a candidate."""

    file: str
    id: str
    claim: str | None
    baseline: Verdict | None
    candidate: Verdict | None
    gold: str | None
    right: Literal["baseline", "candidate", "neither"] | None
    cause: str
    summary: str = ""


@dataclass
class GateReport:
    """A candidate against the baseline: the gate decision and the verdict flips."""

    baseline: Version
    candidate: Version
    decision: GateDecision
    flips: list[FlipLine]
    flip_report: FlipReport | None = None
    """The flip explainer's full report (each flip's evidence), for the HTML page."""


@dataclass
class Bakeoff:
    gold_path: Path
    gold: GoldSet
    versions: list[Version]
    gates: list[GateReport]
    notes: list[str] = field(default_factory=list)
    """What people must know first (stand-in judge, replay fallback, replay mismatches)."""
    written: list[Path] = field(default_factory=list)


def rerecord_hint(label: str, run: Run | None, scores: Scores) -> str | None:
    """How to re-record the claims without a verdict (None when every claim has one): the `judge` command
    when the results come from a run folder with a run.json, else which claims files of `label` failed."""
    files = {e.file for e in scores.errors if e.kind == "no_verdict"}
    if not files:
        return None
    if run is None:
        return (f"record the claims of {listed(sorted(files))} again ({label} is not a run folder that names its "
                "claims files, so the command is not known)")
    judged = {c.file for c in run.manifest.claims}
    failed = {f.file for f in run.results.files if f.needs_recording_again} & files  # as the run holds them
    hints = []
    if failed:
        kept = run.manifest.batch_ids is not None and journal_path(run.path).is_file()  # its batches: not paid again
        hints.append(retry_failed_command(run.manifest, display_path(run.path), resume=kept))
    if files - judged:
        hints.append(f"{label} judged no claims file of {listed(sorted(files - judged))}: judge them into it, "
                     "or grade against a gold set of the files it judged")
    if files & judged - failed:
        hints.append(f"the claims without a verdict in {listed(sorted(files & judged - failed))} are not failed in "
                     f"{display_path(run.path)}: claims it never judged (the gold set names claims its claims files "
                     "do not hold), or results that are not the run's own")
    return "; and ".join(hints)


def results_file_name(prompt: str) -> str:
    """`judge-bakeoff-results-<prompt>.json`; a prompt given as a file path is named by its stem."""
    name = Path(prompt).stem if ("/" in prompt or prompt.endswith(".md")) else prompt
    return f"{RESULTS_PREFIX}{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}.json"


def _load_version(
    path: Path, replay: bool, warn: Warn, notes: list[str]
) -> tuple[Run, ResultsFile, Literal["replayed", "recorded"], list[str] | None]:
    run = Run(path)
    recorded = run.results
    if not replay:
        return run, recorded, "recorded", None
    from ._runner import replay_run  # imports the anthropic SDK: only when a run is replayed

    replayed = replay_run(run.path)
    differences = results_differences(recorded.files, replayed.files)
    if differences:
        message = (f"REPLAY MISMATCH: replaying {display_path(run.path)} did not reproduce its results.json "
                   f"({len(differences)} claim(s) differ; graded the replay):\n  " + "\n  ".join(differences))
        notes.append(message)
        warn(message)
    return run, replayed, "replayed", differences


def _results_to_write(run: Run, results: ResultsFile, prices: Mapping[str, Price]) -> ResultsFile:
    """The run's results with its metadata and what it cost; a frozen run's results file is frozen too."""
    m = run.manifest
    # which services were stand-ins travels with the results, so grading the file alone still says it
    out = ResultsFile(prompt=m.prompt, prompt_sha256=m.prompt_sha256, model=m.model, recorded_at=m.recorded_at,
                      frozen=is_frozen(run.path), stand_ins=list(m.stand_ins), files=results.files)
    return with_costs(out, batch=m.batch_ids is not None, prices=prices)


def _plan_writes(versions: list[tuple[Run, ResultsFile]], out_dir: Path) -> list[Path]:
    """The results file of each version; two versions of the same prompt get their run name appended, and
    two that would still share a name (runs of one folder name in two places, or names that differ only
    in characters a file name here leaves out) a short hash of the run's path: no version's file is
    written over another's."""
    names = [results_file_name(run.manifest.prompt) for run, _ in versions]
    names = [name.removesuffix(".json") + f"-{re.sub(r'[^A-Za-z0-9._-]+', '_', run.name)}.json"
             if names.count(name) > 1 else name for (run, _), name in zip(versions, names, strict=True)]
    runs = [run.path.resolve() for run, _ in versions]
    return [out_dir / (name.removesuffix(".json") + f"-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}.json"
                       if len({p for p, n in zip(runs, names) if n == name}) > 1 else name)
            for path, name in zip(runs, names, strict=True)]


def _changes_content(existing: str, new: str) -> bool:
    """Whether writing `new` over `existing` changes or drops anything it holds (adding a field an older
    file lacks, such as `stand_ins`, changes nothing it holds)."""
    try:
        old_data, new_data = json.loads(existing), json.loads(new)
    except json.JSONDecodeError:
        return True
    return _drops_or_changes(old_data, new_data)


def _drops_or_changes(old: Any, new: Any) -> bool:
    """`_changes_content` on parsed JSON, at every depth (a file's `cost_usd`, a usage's new counter: added
    fields, changing nothing the old value held)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return any(key not in new or _drops_or_changes(value, new[key]) for key, value in old.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) != len(new) or any(_drops_or_changes(a, b) for a, b in zip(old, new))
    return bool(old != new)


def _write_results(targets: list[tuple[Path, ResultsFile]], force: bool, warn: Warn) -> list[Path]:
    """Write each results file; refuse (before writing any) to change a frozen one unless forced."""
    texts = []
    refused = []
    for path, results in targets:
        frozen = path.is_file() and is_frozen(path)
        text = dump_json(results.model_copy(update={"frozen": frozen or results.frozen}).model_dump(mode="json"))
        existing = path.read_text("utf-8") if path.is_file() else None
        changed = existing is not None and existing != text and _changes_content(existing, text)
        if frozen and changed and not force:
            refused.append(path)
        texts.append((path, text, existing, frozen and changed))
    if refused:
        raise UsageError(
            "refusing to overwrite frozen results with different results: "
            + ", ".join(display_path(p) for p in refused)
            + " (a frozen baseline stays as it is; pass --force to overwrite it)"
        )
    written = []
    for path, text, existing, frozen_changed in texts:
        if existing == text:
            continue
        if frozen_changed:
            warn(f"overwriting frozen {display_path(path)} (--force); it stays frozen")
        atomic_write_text(path, text)
        written.append(path)
    return written


def _right(
    gold_label: str | None, a: Verdict | None, b: Verdict | None
) -> Literal["baseline", "candidate", "neither"] | None:
    if gold_label is None:
        return None
    if is_correct(gold_label, a):
        return "baseline"
    if is_correct(gold_label, b):
        return "candidate"
    return "neither"


def _flips(base: Version, cand: Version, gold: GoldSet, others: list[Run]) -> tuple[list[FlipLine], FlipReport]:
    from ._flip_inputs import explain_flips  # the flip analysis: only for a bake-off (grade imports this module)
    from ._flips import no_verdict_summary

    report = explain_flips(base.run, cand.run, gold, extra_runs=others)
    causes = {(f.file, f.id): (f.primary_cause, f.summary) for f in report.flips}
    a, b = _results_by_key(base.results), _results_by_key(cand.results)
    labels = {(g.file, g.id): g.label for g in gold.items}
    out = []
    for key in sorted(a.keys() | b.keys()):
        va = a[key].judge_verdict if key in a else None
        vb = b[key].judge_verdict if key in b else None
        if va == vb:
            continue
        text = claim_info(key, b.get(key), cand.claims)[0] or claim_info(key, a.get(key), base.claims)[0]
        missing = "A" if key not in a else "B"  # a claim absent from a side's results has no verdict there either
        cause, summary = causes.get(key) or ("unknown", no_verdict_summary(missing, "the claim is not in its results"))
        out.append(FlipLine(key[0], key[1], text, va, vb, labels.get(key),
                            _right(labels.get(key), va, vb), cause, summary))
    return out, report


def run_bakeoff(
    *,
    gold_path: Path,
    baseline: Path,
    candidates: list[Path],
    out_dir: Path,
    replay: bool = True,
    force: bool = False,
    warn: Warn = lambda message: None,
    prices: Mapping[str, Price] = PRICES,
) -> Bakeoff:
    """Replay (or read) each run, write its `judge-bakeoff-results-<prompt>.json`, grade it against the
    gold set, gate each candidate against the baseline and list the verdict flips between them."""
    if not candidates:
        raise UsageError("no candidate run: give --candidate RUN or set [tool.judge-replay] candidates")
    gold = load_gold(gold_path)
    notes: list[str] = []
    loaded = [_load_version(p, replay, warn, notes) for p in [baseline, *candidates]]
    targets = _plan_writes([(run, results) for run, results, _, _ in loaded], out_dir)
    to_write = [(t, _results_to_write(run, res, prices)) for t, (run, res, _, _) in zip(targets, loaded, strict=True)]
    written = _write_results(to_write, force, warn)
    versions = []
    for target, (run, results, source, differences) in zip(targets, loaded, strict=True):
        claims = run_claims(run)
        scores = adjudicate(grade_results(results, gold, claims), run, claims)
        versions.append(Version(run, display_path(run.path), results, source, differences, target, scores, claims,
                                run_cost(run.results, run.manifest, prices)))
    notes[:0] = stand_in_notes([v.run for v in versions])
    base = versions[0]
    graded = {(g.file, g.id) for g in gold.items}
    gates = []
    for cand in versions[1:]:
        decision = adoption_gate(base.results, cand.results, gold,
                                 baseline_scores=base.scores, candidate_scores=cand.scores,
                                 candidate_rerecord=rerecord_hint(cand.label, cand.run, cand.scores),
                                 baseline_rerecord=rerecord_hint(base.label, base.run, base.scores),
                                 claims_differ=base.run.claims_differing_from(cand.run, graded))
        others = [v.run for v in versions if v is not base and v is not cand]
        gates.append(GateReport(base, cand, decision, *_flips(base, cand, gold, others)))
    return Bakeoff(gold_path, gold, versions, gates, notes, written)


def bakeoff_json(b: Bakeoff) -> dict[str, Any]:
    """The machine-readable bake-off: versions with scores, gate decisions, flips."""
    def version(v: Version) -> dict[str, Any]:
        m = v.run.manifest
        return {
            "run": v.label, "prompt": m.prompt, "prompt_sha256": m.prompt_sha256, "model": m.model,
            "recorded_at": m.recorded_at, "stand_ins": m.stand_ins, "source": v.source,
            "replay_reproduced": None if v.replay_differences is None else not v.replay_differences,
            "replay_differences": v.replay_differences or [], "results_file": display_path(v.results_file),
            "frozen": m.frozen, "cost_usd": v.cost_usd, "batch": m.batch_ids is not None,
            "scores": v.scores.model_dump(mode="json"),
        }

    return {
        "gold": display_path(b.gold_path), "gold_name": b.gold.name, "notes": b.notes,
        "versions": [version(v) for v in b.versions],
        "gates": [{"baseline": g.baseline.label, "candidate": g.candidate.label,
                   **g.decision.model_dump(mode="json")} for g in b.gates],
        "flips": [{"baseline": g.baseline.label, "candidate": g.candidate.label, 
                   "flips": [f.__dict__ for f in g.flips]} for g in b.gates],
        "written": [display_path(p) for p in b.written],
    }
