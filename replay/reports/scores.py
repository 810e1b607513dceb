"""Scores rendered: the headline, confusion and breakdown tables, no-verdict lines, the gate's lines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replay.core.display import MAX_LISTED, listed
from replay.core.grading import NO_VERDICT
from replay.reports.tables import TextTable
from replay.schema.common import VERDICTS
from replay.schema.scores import ClaimError, GateDecision, Scores


def ratio_text(value: float | None, digits: int = 3) -> str:
    """A ratio for people: `0.833`, or `n/a` when undefined."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def headline(scores: Scores) -> str:
    """One line of a version's scores."""
    return (
        f"P {ratio_text(scores.precision)}  R {ratio_text(scores.recall)}  F1 {ratio_text(scores.f1)}  "
        f"accuracy {ratio_text(scores.accuracy)}  |  TP {scores.tp}  FP {scores.fp}  FN {scores.fn}  "
        f"TN {scores.tn}  no verdict {scores.no_verdict}  |  graded {scores.graded}  "
        f"quotes not verified {scores.quote_unverified}"
    )


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
    return [f"gate: {verdict}", decision.reason, stats, f"within noise: {noise}"]
