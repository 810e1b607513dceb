"""`judge-replay grade`: score a results file against the gold set; with a baseline, apply the gate."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from replay.analysis.adjudication import adjudicate, run_claims, without_a_result_note
from replay.analysis.bakeoff import rerecord_hint
from replay.analysis.frozen import set_frozen
from replay.cli._jobs import jobs_option
from replay.cli._output import append_job_summary, check_option, dash_is_stdout, emit_report
from replay.core.cost import cost_line, run_cost
from replay.core.display import printable
from replay.core.gate import Side, adoption_gate
from replay.core.grading import ClaimKey, grade_results
from replay.errors import CheckFailed, UsageError
from replay.files.inputs import load_claims, load_gold
from replay.files.json_text import dump_json
from replay.files.paths import display_path
from replay.files.results import load_compact_results
from replay.reports.adjudication import adjudication_markdown, adjudication_panels
from replay.reports.markdown import markdown_code, markdown_text
from replay.reports.scores import (
    gate_lines,
    headline,
    no_verdict_heading,
    no_verdict_lines,
    score_tables,
    unmatched_lines,
    unstable_heading,
    unstable_lines,
)
from replay.reports.tables import console_for, print_panels, print_wrapped
from replay.runs.folder import Run, holds_manifest, warm_conversations
from replay.runs.stand_in_notes import stand_in_notes_for, stand_ins_of
from replay.schema.claims import AnyClaim
from replay.schema.gold import CompactGold
from replay.schema.results import CompactResults
from replay.schema.scores import GateDecision, Scores
from replay.settings import gate_stability, given_endpoints, project_prices, setting, setting_path


@dataclass
class Graded:
    """One results file, graded (and adjudicated when its run's cassettes are at hand)."""

    path: Path
    results: CompactResults
    run: Run | None
    scores: Scores
    cost_usd: float | None = None
    """USD of the run: its recorded usage at current prices (`core.cost.run_cost`); None: the model has no price."""

    def describe(self) -> str:
        header = self.results.header
        meta = [f"prompt {header.prompt}" if header.prompt else None,
                f"model {header.model}" if header.model else None,
                "frozen" if header.frozen else None]
        extra = " · ".join(m for m in meta if m)
        return display_path(self.path) + (f" ({extra})" if extra else "")

    @property
    def label(self) -> str:
        """The run folder the results come from, else the results path."""
        return display_path(self.run.path if self.run is not None else self.path)

    @property
    def stand_ins(self) -> list[str] | None:
        """Which services were the local stand-ins (None: not known)."""
        return stand_ins_of(self.results.header, self.run)

    @property
    def side(self) -> Side:
        """What the gate needs to say how to record more samples of these results."""
        return Side(display_path(self.run.path) if self.run is not None else None, self.cost_usd, given_endpoints())

    @property
    def cost(self) -> str:
        return cost_line(self.cost_usd, batch=self.run is not None and self.run.manifest.batch_ids is not None)

    @property
    def rerecord(self) -> str | None:
        """How to re-record the claims without a verdict (None when there is none)."""
        return rerecord_hint(display_path(self.path), self.run, self.scores)


def notes_of(*graded: Graded | None) -> list[str]:
    """What the grades rest on: stand-ins, or that it is not known."""
    return stand_in_notes_for([(g.label, g.stand_ins) for g in graded if g is not None])


def run_of(results_path: Path, run_flag: Path | None) -> Run | None:
    """The run whose cassettes hold the pages: --run, else the run folder given or holding the results file
    (a folder with a results.json but no run.json is no run: it has no pages)."""
    if run_flag is not None:
        return Run(run_flag)
    folder = results_path if results_path.is_dir() else results_path.parent
    return Run(folder) if holds_manifest(folder) else None


def grade_path(path: Path, gold: CompactGold, run: Run | None, extra_claims: Mapping[ClaimKey, AnyClaim],
               results: CompactResults | None = None) -> Graded:
    """Grade the results at `path` (`results`: those results, already loaded). Held compact: what a run
    of thousands of claims keeps in memory is one small row per verdict."""
    results = results if results is not None else load_compact_results(path)
    if run is not None:
        warm_conversations(run)  # its cassettes parsed on every core where the parse cache lacks them
    claims = {**(run_claims(run) if run else {}), **extra_claims}
    scores = adjudicate(grade_results(results, gold, claims), run, claims)
    if run is not None:
        run.forget_claims()  # the scores hold what the report shows of them
    cost = run_cost(results.header, run.manifest if run is not None else None, project_prices())
    return Graded(path, results, run, scores, cost)


def grade_json(graded: Graded, gold_path: Path, baseline: Graded | None, gate: GateDecision | None) -> dict[str, Any]:
    out: dict[str, Any] = {"results": display_path(graded.path), "gold": display_path(gold_path),
                           "stand_ins": graded.stand_ins, "notes": notes_of(graded, baseline),
                           "cost_usd": graded.cost_usd, **graded.scores.model_dump(mode="json")}
    if baseline is not None and gate is not None:
        out["baseline"] = {"results": display_path(baseline.path), "stand_ins": baseline.stand_ins,
                           "cost_usd": baseline.cost_usd, **baseline.scores.model_dump(mode="json")}
        out["gate"] = gate.model_dump(mode="json")
    return out


def grade_markdown(graded: Graded, gold_path: Path, baseline: Graded | None, gate: GateDecision | None) -> str:
    s = graded.scores
    parts = [f"## Grade: {markdown_code(graded.describe())} against {markdown_code(display_path(gold_path))}", ""]
    parts += [f"> **{markdown_text(note)}**\n" for note in notes_of(graded, baseline)]
    parts += [headline(s), "", markdown_text(graded.cost)]
    parts += ["", *(f"- {markdown_text(line)}" for line in unmatched_lines(s))] if unmatched_lines(s) else []
    if s.no_verdict:
        parts += ["", f"**{markdown_text(no_verdict_heading(s))}**", "",
                  *(f"- {markdown_text(line)}" for line in no_verdict_lines(s))]
    if s.unstable:
        parts += ["", f"**{markdown_text(unstable_heading(s))}**", "",
                  *(f"- {markdown_text(line)}" for line in unstable_lines(s))]
    for table in score_tables(s):
        parts += ["", table.markdown()]
    if baseline is not None and gate is not None:
        parts += ["", f"### Against baseline {markdown_code(baseline.describe())}", "",
                  f"baseline: {headline(baseline.scores)}", "", f"baseline {markdown_text(baseline.cost)}", "",
                  *(f"- {markdown_text(line)}" for line in gate_lines(gate))]
    parts += ["", f"### Disagreements with the gold set ({len(s.errors)})", "", adjudication_markdown(s.errors, "####")]
    return "\n".join(parts) + "\n"


def print_grade(file: Any, graded: Graded, gold_path: Path, baseline: Graded | None, gate: GateDecision | None) -> None:
    console = console_for(file)
    s = graded.scores
    for note in notes_of(graded, baseline):
        print_wrapped(console, note, "bold yellow")
    print_wrapped(console, f"Grade: {graded.describe()} against {display_path(gold_path)}", "bold")
    print_wrapped(console, headline(s))
    print_wrapped(console, graded.cost)
    for line in unmatched_lines(s):
        print_wrapped(console, line, "yellow")
    if s.no_verdict:
        print_wrapped(console, no_verdict_heading(s), "bold red")
        for line in no_verdict_lines(s):
            print_wrapped(console, line, indent=2, hang=4)
    if s.unstable:
        print_wrapped(console, unstable_heading(s), "bold yellow")
        for line in unstable_lines(s):
            print_wrapped(console, line, indent=2, hang=4)
    for table in score_tables(s):
        table.print(console)
    print_wrapped(console, f"Disagreements with the gold set ({len(s.errors)})", "bold")
    left_out = without_a_result_note(s.errors)
    if left_out is not None:
        print_wrapped(console, left_out)
    print_panels(console, adjudication_panels(s.errors))
    if baseline is not None and gate is not None:
        print_wrapped(console, f"Against baseline {baseline.describe()}", "bold")
        print_wrapped(console, f"baseline:  {headline(baseline.scores)}  |  {baseline.cost}")
        print_wrapped(console, f"candidate: {headline(s)}  |  {graded.cost}")
        for i, line in enumerate(gate_lines(gate)):
            style = ("bold green" if gate.adopt else "bold red") if i == 0 else ("yellow" if gate.within_noise else "")
            print_wrapped(console, line, style)


@click.command("grade", epilog="""\b
Examples:
  judge-replay grade cassettes/v3-demo                          # gold set from pyproject.toml
  judge-replay grade cassettes/v3-demo --baseline cassettes/v2-demo --json""")
@click.argument("results", type=click.Path(readable=False, path_type=Path))
@click.option("--gold", "gold_flag", type=click.Path(readable=False, path_type=Path),
              help="Gold set JSON (default: [tool.judge-replay] gold).")
@click.option("--baseline", type=click.Path(readable=False, path_type=Path),
              help="Baseline results (run folder or results JSON): also apply the adoption gate.")
@click.option("--run", "run_flag", type=click.Path(readable=False, path_type=Path),
              help="Run folder whose cassettes hold the pages, when RESULTS is a results file outside it.")
@click.option("--claims", "claims_paths", multiple=True, type=click.Path(readable=False, path_type=Path),
              help="Claims files/folders giving claim texts and types (a run's own are found by itself).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default=None,
              help="Output format (default text).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--markdown", "as_markdown", is_flag=True, help="Same as --format markdown.")
@click.option("--out", callback=dash_is_stdout, type=click.Path(readable=False, path_type=Path), help="Write the report to FILE instead of stdout.")
@click.option("--freeze", "freeze", flag_value=True, default=None,
              help="Mark RESULTS frozen (\"frozen\": true in the results file; for a run folder also in "
                   "run.json): the runner will not re-record it and the bake-off will not overwrite it "
                   "unless forced. Without a gold set, only freezes.")
@click.option("--unfreeze", "freeze", flag_value=False, help="Remove the frozen mark.")
@check_option
@jobs_option
def command(
    results: Path, gold_flag: Path | None, baseline: Path | None, run_flag: Path | None,
    claims_paths: tuple[Path, ...], fmt: str | None, as_json: bool, as_markdown: bool, out: Path | None,
    freeze: bool | None, check: bool | None,
) -> None:
    """Score RESULTS (a run folder or a results JSON) against the gold set.

    Prints P/R/F1/accuracy, TP/FP/FN/TN, the confusion matrix, breakdowns by claim type and gold failure
    mode, and every disagreement with the page region it rests on (from the run's cassettes; the judge is
    never re-run).

    A run judged K times per claim (judge --samples K) is scored sample by sample: P, R, F1 and accuracy
    are the means over the samples with their min-max, the counts and the confusion matrix those of the
    majority verdicts, and the claims whose samples disagree (unstable) are listed with their verdict
    counts. With --baseline, also the adoption gate and the statistics saying whether the
    difference is beyond noise.

    A claim without a verdict (a failed or cut-off conversation, or no result at all) is counted as
    "no verdict": never TP, FP or TN, an FN where the gold says outdated/wrong, always against accuracy.
    The gate adopts no candidate with such claims (in any sample) and prints how to re-record them. When
    either side has samples, the gate also simulates re-runs (each claim's verdicts drawn as its samples and
    the run's other claims make likely) and adopts only a decision that holds in at least
    [tool.judge-replay] gate-stability (default 0.95) of them; otherwise it prints the
    judge --add-samples commands that would settle it, with their estimated cost. Every format says
    which runs used the local stand-ins.

    In CI: --check (or check = true under [tool.judge-replay]) exits 1 when the gate refuses the
    candidate; when GITHUB_STEP_SUMMARY is set, the markdown report is appended to that file.
    """
    chosen = [f for f, on in (("json", as_json), ("markdown", as_markdown)) if on]
    if len(chosen) > 1 or (chosen and fmt and fmt != chosen[0]):
        raise UsageError("choose one output format: --json, --markdown or --format")
    fmt = fmt or (chosen[0] if chosen else "text")
    loaded = load_compact_results(results)  # a bad results file is reported before anything is changed
    if freeze is not None:
        for changed in set_frozen(results, freeze):
            click.echo(f"{'froze' if freeze else 'unfroze'} {printable(display_path(changed))}", err=True)
    gold_path = setting_path("gold", gold_flag)
    if gold_path is None:
        if freeze is not None:
            return
        raise UsageError("no gold set: give --gold GOLD or set gold under [tool.judge-replay] in pyproject.toml")
    gold = CompactGold.of(load_gold(gold_path))  # a gold set's thousands of items, held compact
    batches = load_claims(list(claims_paths)) if claims_paths else []
    extra_claims = {(b.file, c.id): c for _, b in batches for c in b.claims}
    graded = grade_path(results, gold, run_of(results, run_flag), extra_claims,
                        loaded if freeze is None else None)  # --freeze rewrote the file
    base = grade_path(baseline, gold, run_of(baseline, None), extra_claims) if baseline is not None else None
    gate = (adoption_gate(base.results, graded.results, gold, baseline_scores=base.scores,
                          candidate_scores=graded.scores, candidate_rerecord=graded.rerecord,
                          baseline_rerecord=base.rerecord,
                          claims_differ=base.run.claims_differing_from(graded.run, {(g.file, g.id) for g in gold.items})
                          if base.run and graded.run else (),
                          required_stability=gate_stability(), baseline_side=base.side, candidate_side=graded.side)
            if base is not None else None)

    text = (dump_json(grade_json(graded, gold_path, base, gate)) if fmt == "json"
            else grade_markdown(graded, gold_path, base, gate) if fmt == "markdown" else None)
    emit_report(out, text, lambda stream: print_grade(stream, graded, gold_path, base, gate))
    append_job_summary(lambda: text if fmt == "markdown" and text is not None
                       else grade_markdown(graded, gold_path, base, gate))
    if gate is not None and not gate.adopt and setting("check", check, False):
        raise CheckFailed(f"grade --check: the gate does not adopt {display_path(results)} against "
                          f"{display_path(baseline or results)}: {gate.reason}")
