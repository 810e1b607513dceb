"""Scores rendered: the headline, confusion and breakdown tables, no-verdict lines, the gate's lines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replay.core.display import MAX_LISTED, listed
from replay.core.grading import NO_VERDICT
from replay.reports.tables import TextTable
from replay.schema.common import VERDICTS
from replay.schema.scores import ClaimError, ClaimSamples, GateDecision, ModelNoise, Scores, VerdictCounts


def ratio_text(value: float | None, digits: int = 3) -> str:
    """A ratio for people: `0.833`, or `n/a` when undefined."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def range_text(span: tuple[float, float] | None, digits: int = 3) -> str:
    """A ratio's range over samples: `0.500–1.000` (`n/a` when no sample defines it)."""
    return "n/a" if span is None else f"{span[0]:.{digits}f}–{span[1]:.{digits}f}"


def ratio_with_range(value: float | None, span: tuple[float, float] | None, samples: int, digits: int = 3) -> str:
    """A ratio, and for a run with samples its mean with the range over them: `0.750 [0.500–1.000]`."""
    text = ratio_text(value, digits)
    return text if samples < 2 or span is None else f"{text} [{range_text(span, digits)}]"


def headline(scores: Scores) -> str:
    """One line of a version's scores (with K samples: means with their ranges, and the samples' counts)."""
    k = scores.samples
    counts = "majority verdicts: " if k > 1 else ""
    line = (
        f"P {ratio_with_range(scores.precision, scores.precision_range, k)}  "
        f"R {ratio_with_range(scores.recall, scores.recall_range, k)}  "
        f"F1 {ratio_with_range(scores.f1, scores.f1_range, k)}  "
        f"accuracy {ratio_with_range(scores.accuracy, scores.accuracy_range, k)}  |  {counts}TP {scores.tp}  "
        f"FP {scores.fp}  FN {scores.fn}  TN {scores.tn}  no verdict {scores.no_verdict}  |  graded {scores.graded}  "
        f"quotes not verified {scores.quote_unverified}"
    )
    if k > 1:
        line += (f"  |  {k} samples per claim (P, R, F1, accuracy: mean [min–max]), {scores.unstable} unstable "
                 f"claim{'' if scores.unstable == 1 else 's'}, {scores.sample_no_verdict} sample verdicts missing")
    return line


def counts_text(counts: VerdictCounts) -> str:
    """A claim's verdict counts over its samples, the verdicts given only: `not_grounded 2, grounded 1`."""
    given = [(name, n) for name, n in counts.model_dump().items() if n]
    return ", ".join(f"{'no verdict' if name == NO_VERDICT else name} {n}" for name, n in given)


def unstable_claims(scores: Scores) -> list[ClaimSamples]:
    return [c for c in scores.claims if not c.stable]


def unstable_heading(scores: Scores) -> str:
    return (f"{scores.unstable} unstable claim(s): their {scores.samples} samples gave more than one verdict "
            "(a missing verdict counts as one)")


def unstable_lines(scores: Scores) -> list[str]:
    """The unstable claims, one line each: `file:id — majority v; verdict n, verdict n` (raw data)."""
    lines = [f"{c.file}:{c.id} — majority {c.verdict or 'none'}; {counts_text(c.verdicts)}" for c in unstable_claims(scores)]
    return lines[:MAX_LISTED] + ([f"... and {len(lines) - MAX_LISTED:,} more (--json lists every claim)"]
                                 if len(lines) > MAX_LISTED else [])


def confusion_table(scores: Scores) -> TextTable:
    table = TextTable("Confusion (rows: verdict the gold label expects; columns: judge verdict)",
                      ["expected \\ judge", *VERDICTS, "no verdict"])
    for expected in VERDICTS:
        row = scores.confusion.get(expected, {})
        table.rows.append([expected, *(str(row.get(v, 0)) for v in (*VERDICTS, NO_VERDICT))])
    return table


def breakdown_table(title: str, key_name: str, breakdown: dict[str, dict[str, Any]]) -> TextTable:
    table = TextTable(title, [key_name, "graded", "P", "R", "F1", "accuracy", "TP", "FP", "FN", "TN",
                              "no verdict"])
    for key, t in breakdown.items():
        table.rows.append([
            key, str(t["graded"]), ratio_text(t["precision"]), ratio_text(t["recall"]), ratio_text(t["f1"]),
            ratio_text(t["accuracy"]), str(t["tp"]), str(t["fp"]), str(t["fn"]), str(t["tn"]),
            str(t.get("no_verdict", 0)),
        ])
    return table


def score_tables(scores: Scores) -> list[TextTable]:
    """Confusion matrix and the breakdowns by claim type and by gold failure mode."""
    return [
        confusion_table(scores),
        breakdown_table("By claim type", "claim type", scores.by_claim_type),
        breakdown_table("By gold failure mode", "mode", scores.by_mode),
    ]


def no_verdict_errors(scores: Scores) -> list[ClaimError]:
    return [e for e in scores.errors if e.kind == "no_verdict"]


def no_verdict_lines(scores: Scores) -> list[str]:
    """The claims without a verdict, grouped by claims file and error: `file: id, id — error` (raw data:
    pass each line through `printable` or `markdown_text`)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for e in no_verdict_errors(scores):
        groups.setdefault((e.file, e.judge_error or "no verdict given"), []).append(e.id)
    lines = [f"{file}: {listed(ids)} — {error}" for (file, error), ids in groups.items()]
    return lines[:MAX_LISTED] + ([f"... and {len(lines) - MAX_LISTED:,} more files (--json lists every claim)"]
                                 if len(lines) > MAX_LISTED else [])


def no_verdict_heading(scores: Scores) -> str:
    return (f"{scores.no_verdict} claim(s) without a verdict (never TP, FP or TN; FN where the gold says "
            f"outdated/wrong; against accuracy)")


def unmatched_lines(scores: Scores) -> list[str]:
    """Gold items with no result and results with no gold item, one line each (raw data, as above)."""
    lines = []
    if scores.unmatched_gold:
        lines.append(f"{len(scores.unmatched_gold)} gold item(s) have no result (graded as no verdict): "
                     + listed(scores.unmatched_gold, _file_and_id))
    if scores.unmatched_results:
        lines.append(f"{len(scores.unmatched_results)} result(s) have no gold item (not graded): "
                     + listed(scores.unmatched_results, _file_and_id))
    return lines


def _file_and_id(item: Mapping[str, str]) -> str:
    return f"{item['file']}:{item['id']}"


def gate_lines(decision: GateDecision) -> list[str]:
    """The gate decision, its reason, and the statistics behind it."""
    verdict = "ADOPT" if decision.adopt else "DO NOT ADOPT"
    noise = {True: "yes: do not read much into these differences", False: "no", None: "n/a"}[decision.within_noise]

    def delta(name: str, value: float | None, ci: tuple[float, float] | None) -> str:
        text = f"{name} {'n/a' if value is None else f'{value:+.3f}'}"
        return text + (f" (95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}])" if ci else "")

    stats = (
        f"paired on {decision.paired} gold claims: only the candidate right on {decision.only_candidate_right}, "
        f"only the baseline on {decision.only_baseline_right}; exact McNemar p="
        f"{'n/a' if decision.mcnemar_p is None else f'{decision.mcnemar_p:.3g}'}; "
        f"{delta('ΔP', decision.delta_precision, decision.delta_precision_ci)}; "
        f"{delta('ΔR', decision.delta_recall, decision.delta_recall_ci)} "
        f"(paired bootstrap, {decision.bootstrap_resamples} resamples, fixed seed)"
    )
    return [f"gate: {verdict}", decision.reason, stats, f"within noise: {noise}", *model_noise_lines(decision.model_noise)]


def model_noise_lines(noise: ModelNoise) -> list[str]:
    """What the gate measured of the model's own noise, and what would settle an unstable decision."""
    ks = noise.samples
    per_side = f"{ks.get('baseline', 1)} baseline, {ks.get('candidate', 1)} candidate"
    if not noise.measured:
        return ["model noise: not measured (one sample per claim on each side; record more with "
                "`judge --mode record --add-samples N --run DIR` to measure it)"]
    if noise.stability is None:
        return [f"model noise: not measured (samples per claim: {per_side}): the gate made no comparison"]
    lines = [f"model noise: the decision holds in {noise.stability:.1%} of {noise.resamples} simulated re-runs of "
             f"the judge (samples per claim: {per_side}; {noise.required:.0%} needed)"]
    if noise.settle:
        when = (f"projected stable at {noise.settle_samples} samples per claim on each side"
                if noise.settle_samples is not None
                else "not projected to settle within 20 samples per side: the versions may be within model noise")
        cost = ("cost unknown (a model without a price, or results outside a run)" if noise.settle_cost_usd is None
                else f"estimated cost ${noise.settle_cost_usd:.2f} (the recorded cost per sample at current prices: "
                     "an estimate)")
        lines.append(f"to settle it ({when}; {cost}):")
        lines += [f"  {command}" for command in noise.settle]
    return lines
