"""`judge-replay grade`: score a results file against the gold set; with a baseline, apply the gate."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from .._adjudication import adjudicate, adjudication_markdown, adjudication_renderables, run_claims
from .._bakeoff import set_frozen, stand_in_notes
from ._output import emit_report
from .._config import setting_path
from .._errors import UsageError
from .._gate import adoption_gate
from .._grading import ClaimKey, grade_results
from .._io import display_path, dump_json, load_claims, load_gold, load_results
from .._records import Claim, GateDecision, GoldSet, ResultsFile, Scores
from .._render import console_for, gate_lines, headline, score_tables, unmatched_lines
from .._runs import MANIFEST, Run


@dataclass
class Graded:
    """One results file, graded (and adjudicated when its run's cassettes are at hand)."""

    path: Path
    results: ResultsFile
    run: Run | None
    scores: Scores

    def describe(self) -> str:
        meta = [f"prompt {self.results.prompt}" if self.results.prompt else None,
                f"model {self.results.model}" if self.results.model else None,
                "frozen" if self.results.frozen else None]
        extra = " · ".join(m for m in meta if m)
        return display_path(self.path) + (f" ({extra})" if extra else "")


def run_of(results_path: Path, run_flag: Path | None) -> Run | None:
    """The run whose cassettes hold the pages: --run, else the run folder given or holding the results file
    (a folder with a results.json but no run.json is no run: it has no pages)."""
    if run_flag is not None:
        return Run(run_flag)
    folder = results_path if results_path.is_dir() else results_path.parent
    return Run(folder) if (folder / MANIFEST).is_file() else None


def grade_path(path: Path, gold: GoldSet, run: Run | None, extra_claims: dict[ClaimKey, Claim]) -> Graded:
    results = load_results(path)
    claims = {**(run_claims(run) if run else {}), **extra_claims}
    scores = adjudicate(grade_results(results, gold, claims), run, claims)
    return Graded(path, results, run, scores)


def grade_json(graded: Graded, gold_path: Path, baseline: Graded | None, gate: GateDecision | None) -> dict[str, Any]:
    out: dict[str, Any] = {"results": display_path(graded.path), "gold": display_path(gold_path),
                           **graded.scores.model_dump(mode="json")}
    if baseline is not None and gate is not None:
        out["baseline"] = {"results": display_path(baseline.path), **baseline.scores.model_dump(mode="json")}
        out["gate"] = gate.model_dump(mode="json")
    return out


def grade_markdown(graded: Graded, gold_path: Path, baseline: Graded | None, gate: GateDecision | None) -> str:
    s = graded.scores
    parts = [f"## Grade: `{graded.describe()}` against `{display_path(gold_path)}`", ""]
    runs = [g.run for g in (graded, baseline) if g is not None and g.run is not None]
    parts += [f"> **{note}**\n" for note in stand_in_notes(runs)]
    parts += [headline(s)]
    parts += ["", *(f"- {line}" for line in unmatched_lines(s))] if unmatched_lines(s) else []
    for table in score_tables(s):
        parts += ["", table.markdown()]
    if baseline is not None and gate is not None:
        parts += ["", f"### Against baseline `{baseline.describe()}`", "", f"baseline: {headline(baseline.scores)}",
                  "", *(f"- {line}" for line in gate_lines(gate))]
    parts += ["", f"### Disagreements with the gold set ({len(s.errors)})", "", adjudication_markdown(s.errors, "####")]
    return "\n".join(parts) + "\n"


def print_grade(file: Any, graded: Graded, gold_path: Path, baseline: Graded | None, gate: GateDecision | None) -> None:
    console = console_for(file)
    s = graded.scores
    for note in stand_in_notes([g.run for g in (graded, baseline) if g is not None and g.run is not None]):
        console.print(Text(note, style="bold yellow"))
    console.print(Text(f"Grade: {graded.describe()} against {display_path(gold_path)}", style="bold"))
    console.print(Text(headline(s)))
    for line in unmatched_lines(s):
        console.print(Text(line, style="yellow"))
    for table in score_tables(s):
        console.print(table.rich(), soft_wrap=False)
    console.print(Text(f"Disagreements with the gold set ({len(s.errors)})", style="bold"))
    for panel in adjudication_renderables(s.errors):
        console.print(panel, soft_wrap=False)
    if baseline is not None and gate is not None:
        console.print(Text(f"Against baseline {baseline.describe()}", style="bold"))
        console.print(Text(f"baseline:  {headline(baseline.scores)}"))
        console.print(Text(f"candidate: {headline(s)}"))
        for i, line in enumerate(gate_lines(gate)):
            style = ("bold green" if gate.adopt else "bold red") if i == 0 else ("yellow" if gate.within_noise else "")
            console.print(Text(line, style=style))


@click.command("grade")
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--gold", "gold_flag", type=click.Path(path_type=Path),
              help="Gold set JSON (default: [tool.judge-replay] gold).")
@click.option("--baseline", type=click.Path(path_type=Path),
              help="Baseline results (run folder or results JSON): also apply the adoption gate.")
@click.option("--run", "run_flag", type=click.Path(path_type=Path),
              help="Run folder whose cassettes hold the pages, when RESULTS is a results file outside it.")
@click.option("--claims", "claims_paths", multiple=True, type=click.Path(path_type=Path),
              help="Claims files/folders giving claim texts and types (a run's own are found by itself).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default=None,
              help="Output format (default text).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--markdown", "as_markdown", is_flag=True, help="Same as --format markdown.")
@click.option("--out", type=click.Path(path_type=Path), help="Write the report to FILE instead of stdout.")
@click.option("--freeze", "freeze", flag_value=True, default=None,
              help="Mark RESULTS frozen (\"frozen\": true in the results file; for a run folder also in "
                   "run.json): the runner will not re-record it and the bake-off will not overwrite it "
                   "unless forced. Without a gold set, only freezes.")
@click.option("--unfreeze", "freeze", flag_value=False, help="Remove the frozen mark.")
def command(
    results: Path, gold_flag: Path | None, baseline: Path | None, run_flag: Path | None,
    claims_paths: tuple[Path, ...], fmt: str | None, as_json: bool, as_markdown: bool, out: Path | None,
    freeze: bool | None,
) -> None:
    """Score RESULTS (a run folder or a results JSON) against the gold set.

    Prints P/R/F1/accuracy, TP/FP/FN/TN, the confusion matrix, breakdowns by claim type and gold failure
    mode, and every disagreement with the page region it rests on (from the run's cassettes; the judge is
    never re-run). With --baseline, also the adoption gate and the statistics saying whether the
    difference is beyond noise.
    """
    chosen = [f for f, on in (("json", as_json), ("markdown", as_markdown)) if on]
    if len(chosen) > 1 or (chosen and fmt and fmt != chosen[0]):
        raise UsageError("choose one output format: --json, --markdown or --format")
    fmt = fmt or (chosen[0] if chosen else "text")
    load_results(results)  # a bad results file is reported before anything is changed
    if freeze is not None:
        for changed in set_frozen(results, freeze):
            click.echo(f"{'froze' if freeze else 'unfroze'} {display_path(changed)}", err=True)
    gold_path = setting_path("gold", gold_flag)
    if gold_path is None:
        if freeze is not None:
            return
        raise UsageError("no gold set: give --gold GOLD or set gold under [tool.judge-replay] in pyproject.toml")
    gold = load_gold(gold_path)
    batches = load_claims(list(claims_paths)) if claims_paths else []
    extra_claims = {(b.file, c.id): c for _, b in batches for c in b.claims}
    graded = grade_path(results, gold, run_of(results, run_flag), extra_claims)
    base = grade_path(baseline, gold, run_of(baseline, None), extra_claims) if baseline is not None else None
    gate = (adoption_gate(base.results, graded.results, gold, baseline_scores=base.scores,
                          candidate_scores=graded.scores) if base is not None else None)

    text = (dump_json(grade_json(graded, gold_path, base, gate)) if fmt == "json"
            else grade_markdown(graded, gold_path, base, gate) if fmt == "markdown" else None)
    emit_report(out, text, lambda stream: print_grade(stream, graded, gold_path, base, gate))

