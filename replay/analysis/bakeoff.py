"""The bake-off: replay each prompt version's run, grade it, gate candidates against the baseline, list flips.

Also home of frozen baselines: `set_frozen` marks a results file (or a run) frozen; a frozen run's
`judge-bakeoff-results-<prompt>.json` is written frozen (only where asked: `--out-dir` or the
`bakeoff-out-dir` setting), and a frozen one is never rewritten: different results are refused unless forced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from replay.analysis.adjudication import adjudicate, run_claims
from replay.analysis.bakeoff_results import Warn, _plan_writes, _results_to_write, _write_results
from replay.cassettes.matching import results_differences
from replay.core.commands import Endpoints, retry_failed_command
from replay.core.cost import run_cost
from replay.core.display import listed
from replay.core.gate import Side, adoption_gate
from replay.core.grading import ClaimKey, claim_info, grade_results, is_correct
from replay.core.prices import PRICES, Price
from replay.errors import UsageError
from replay.files.inputs import load_gold
from replay.files.paths import display_path
from replay.runs.folder import Run
from replay.runs.stand_in_notes import stand_in_notes
from replay.runs.writer import journal_path
from replay.schema.claims import AnyClaim
from replay.schema.common import Verdict
from replay.schema.gold import GoldSet
from replay.schema.results import ClaimResult, ResultsFile
from replay.schema.scores import GateDecision, Scores
from replay.settings import given_endpoints

if TYPE_CHECKING:  # the flip records are made only by a bake-off's flip analysis: `grade` imports this module
    from replay.schema.flips import FlipReport

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
    results_file: Path | None
    """Where its `judge-bakeoff-results-<prompt>.json` goes (`--out-dir`, `[tool.judge-replay] bakeoff-out-dir`);
    None: no results file was asked for."""
    scores: Scores
    claims: dict[ClaimKey, AnyClaim]
    cost_usd: float | None = None
    """USD of the run: its recorded usage at current prices (`core.cost.run_cost`; replaying it is free); None:
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


def rerecord_hint(label: str, run: Run | None, scores: Scores, endpoints: Endpoints | None = None) -> str | None:
    """How to re-record the claims without a verdict (None when every claim has one): the `judge` command
    when the results come from a run folder with a run.json (with the endpoints the user gave, else
    `settings.given_endpoints`), else which claims files of `label` failed."""
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
        hints.append(retry_failed_command(run.manifest, display_path(run.path), resume=kept,
                                          endpoints=given_endpoints() if endpoints is None else endpoints))
    if files - judged:
        hints.append(f"{label} judged no claims file of {listed(sorted(files - judged))}: judge them into it, "
                     "or grade against a gold set of the files it judged")
    if files & judged - failed:
        hints.append(f"the claims without a verdict in {listed(sorted(files & judged - failed))} are not failed in "
                     f"{display_path(run.path)}: claims it never judged (the gold set names claims its claims files "
                     "do not hold), or results that are not the run's own")
    return "; and ".join(hints)


def _load_version(
    path: Path, replay: bool, warn: Warn, notes: list[str]
) -> tuple[Run, ResultsFile, Literal["replayed", "recorded"], list[str] | None]:
    run = Run(path)
    recorded = run.results
    if not replay:
        return run, recorded, "recorded", None
    from replay.judge.replaying import replay_run  # imports the anthropic SDK: only when a run is replayed

    replayed = replay_run(run.path)
    differences = results_differences(recorded.files, replayed.files)
    if differences:
        message = (f"REPLAY MISMATCH: replaying {display_path(run.path)} did not reproduce its results.json "
                   f"({len(differences)} claim(s) differ; graded the replay):\n  " + "\n  ".join(differences))
        notes.append(message)
        warn(message)
    return run, replayed, "replayed", differences


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
    from replay.analysis.flip_inputs import (
        explain_flips,  # the flip analysis: only for a bake-off (grade imports this module)
    )
    from replay.core.flips.causes import no_verdict_summary

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
    out_dir: Path | None,
    replay: bool = True,
    force: bool = False,
    warn: Warn = lambda message: None,
    prices: Mapping[str, Price] = PRICES,
    required_stability: float = 0.95,
    endpoints: Endpoints | None = None,
) -> Bakeoff:
    """Replay (or read) each run, write its `judge-bakeoff-results-<prompt>.json` into `out_dir` (None: no
    file is written anywhere), grade it against the gold set, gate each candidate against the baseline and
    list the verdict flips between them. `endpoints`: those the user gave, which the commands it prints
    carry (None: `settings.given_endpoints`)."""
    endpoints = given_endpoints() if endpoints is None else endpoints
    if not candidates:
        raise UsageError("no candidate run: give --candidate RUN or set [tool.judge-replay] candidates")
    gold = load_gold(gold_path)
    notes: list[str] = []
    loaded = [_load_version(p, replay, warn, notes) for p in [baseline, *candidates]]
    targets: list[Path | None] = [None] * len(loaded)
    written: list[Path] = []
    if out_dir is not None:
        planned = _plan_writes([(run, results) for run, results, _, _ in loaded], out_dir)
        written = _write_results([(t, _results_to_write(run, res, prices))
                                  for t, (run, res, _, _) in zip(planned, loaded, strict=True)], force, warn)
        targets = list(planned)
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
                                 candidate_rerecord=rerecord_hint(cand.label, cand.run, cand.scores, endpoints),
                                 baseline_rerecord=rerecord_hint(base.label, base.run, base.scores, endpoints),
                                 claims_differ=base.run.claims_differing_from(cand.run, graded),
                                 required_stability=required_stability,
                                 baseline_side=Side(base.label, base.cost_usd, endpoints),
                                 candidate_side=Side(cand.label, cand.cost_usd, endpoints))
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
            "replay_differences": v.replay_differences or [], "results_file": display_path(v.results_file) if v.results_file else None,
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
