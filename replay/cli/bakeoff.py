"""`judge-replay bakeoff`: the main job: replay each prompt version, grade it, gate it, explain the flips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from replay.analysis.bakeoff import Bakeoff, FlipLine, GateReport, Version, bakeoff_json, run_bakeoff
from replay.cli._output import append_job_summary, check_option, dash_is_stdout, emit_report
from replay.core.cost import format_usd
from replay.core.display import printable
from replay.core.prices import PRICES_AS_OF
from replay.errors import CheckFailed, UsageError
from replay.files.json_text import dump_json
from replay.files.paths import display_path
from replay.reports.adjudication import adjudication_markdown
from replay.reports.markdown import markdown_code, markdown_html, markdown_text
from replay.reports.scores import (
    gate_lines,
    no_verdict_heading,
    no_verdict_lines,
    range_text,
    ratio_text,
    unstable_heading,
    unstable_lines,
)
from replay.reports.tables import TextTable, console_for, print_wrapped
from replay.settings import gate_stability, project_prices, setting, setting_path, setting_paths


def versions_table(b: Bakeoff) -> TextTable:
    table = TextTable("Prompt versions against the gold set",
                      ["prompt", "run", "model", "P", "R", "F1", "accuracy", "TP", "FP", "FN", "TN",
                       "no verdict", "unverified quotes", "cost"], right_from=3)
    for i, v in enumerate(b.versions):
        s = v.scores
        role = "baseline" if i == 0 else "candidate"
        table.rows.append([
            f"{v.prompt} ({role})", v.label, v.run.manifest.model, ratio_text(s.precision), ratio_text(s.recall),
            ratio_text(s.f1), ratio_text(s.accuracy), str(s.tp), str(s.fp), str(s.fn), str(s.tn),
            str(s.no_verdict), str(s.quote_unverified), cost_text(v),
        ])
    return table


def cost_text(v: Version) -> str:
    """What the version's run costs: `$0.2248`, `$0.1124 (batch)`, or `unknown`."""
    return format_usd(v.cost_usd) + (" (batch)" if v.run.manifest.batch_ids is not None else "")


def cost_note(b: Bakeoff) -> str:
    """What the cost column is."""
    return (f"cost: each run's recorded token usage priced with the {PRICES_AS_OF} price table, "
            "[tool.judge-replay.prices] applied (half price for a batch run); replaying it is free")


def no_verdict_sections(b: Bakeoff) -> list[tuple[str, list[str]]]:
    """Per version with claims without a verdict: a heading and one line per claims file and error (raw data)."""
    return [(f"{v.prompt} ({v.label}): {no_verdict_heading(v.scores)}", no_verdict_lines(v.scores))
            for v in b.versions if v.scores.no_verdict]


def samples_sections(b: Bakeoff) -> list[tuple[str, list[str]]]:
    """Per version judged K >= 2 times: a heading with its means and ranges, and one line per unstable claim
    with its verdict counts (raw data). None when every version was judged once."""
    if all(v.scores.samples < 2 for v in b.versions):
        return []
    out: list[tuple[str, list[str]]] = []
    for v in b.versions:
        s = v.scores
        if s.samples < 2:
            out.append((f"{v.prompt} ({v.label}): 1 sample per claim (model noise not measured)", []))
            continue
        out.append((f"{v.prompt} ({v.label}): {s.samples} samples per claim; P {ratio_text(s.precision)} "
                    f"[{range_text(s.precision_range)}], R {ratio_text(s.recall)} [{range_text(s.recall_range)}] "
                    f"(mean [min–max] over samples); {unstable_heading(s)}", unstable_lines(s)))
    return out


def flip_line(f: FlipLine) -> str:
    """One flip, as raw data (pass it through `printable` or `markdown_text`)."""
    claim = f.claim or "(claim text not known)"
    gold = f"gold {f.gold}" if f.gold else "no gold label"
    right = {"baseline": "baseline right", "candidate": "candidate right", "neither": "neither right",
             None: "rightness unknown"}[f.right]
    summary = f.summary.removeprefix(f"{f.cause}:").strip()
    cause = f"cause {f.cause}" + (f" ({summary})" if summary else "")
    return (f"{f.file}:{f.id} \"{claim}\": {f.baseline or 'no verdict'} → {f.candidate or 'no verdict'}; "
            f"{gold}; {right}; {cause}")


def _gate_heading(g: GateReport) -> str:
    return f"{g.candidate.prompt} ({g.candidate.label}) against {g.baseline.prompt} ({g.baseline.label})"


def _flips_heading(g: GateReport) -> str:
    return f"Verdict flips {g.baseline.prompt} → {g.candidate.prompt}: {len(g.flips)}"


def bakeoff_markdown(b: Bakeoff) -> str:
    parts = ["## Judge prompt bake-off", ""]
    for note in b.notes:
        first, *rest = note.splitlines()
        parts.append(f"> **{markdown_text(first)}**" + "".join(f"<br>{markdown_text(line)}" for line in rest) + "\n")
    parts += [f"Gold set: {markdown_code(display_path(b.gold_path))}"
              + (f" ({markdown_text(b.gold.name)})" if b.gold.name else "")
              + f", {len(b.gold.items)} claims.", "", versions_table(b).markdown(), "", f"*{markdown_text(cost_note(b))}*"]
    for heading, lines in no_verdict_sections(b):
        parts += ["", f"**{markdown_text(heading)}**", "", *(f"- {markdown_text(line)}" for line in lines)]
    for heading, lines in samples_sections(b):
        parts += ["", f"**{markdown_text(heading)}**", *([""] if lines else []),
                  *(f"- {markdown_text(line)}" for line in lines)]
    for g in b.gates:
        parts += ["", f"### Gate: {markdown_text(_gate_heading(g))}", "",
                  *(f"- {markdown_text(line)}" for line in gate_lines(g.decision))]
        parts += ["", f"### {markdown_text(_flips_heading(g))}", ""]
        parts += [f"- {markdown_text(flip_line(f))}" for f in g.flips] or ["(none)"]
    for v in b.versions:
        parts += ["", f"<details><summary>Disagreements of {markdown_html(v.prompt)} ({markdown_html(v.label)}) "
                      f"with the gold set: {len(v.scores.errors)}</summary>", "",
                  adjudication_markdown(v.scores.errors, "####"), "", "</details>"]
    return "\n".join(parts) + "\n"


def print_bakeoff(file: Any, b: Bakeoff) -> None:
    console = console_for(file)
    for note in b.notes:
        print_wrapped(console, note, "bold yellow")
    print_wrapped(console, f"Gold set: {display_path(b.gold_path)}" + (f" ({b.gold.name})" if b.gold.name else "")
                  + f", {len(b.gold.items)} claims")
    versions_table(b).print(console)
    print_wrapped(console, cost_note(b), "dim")
    for heading, lines in no_verdict_sections(b):
        print_wrapped(console, heading, "bold red")
        for line in lines:
            print_wrapped(console, line, indent=2, hang=4)
    for heading, lines in samples_sections(b):
        print_wrapped(console, heading, "bold")
        for line in lines:
            print_wrapped(console, line, indent=2, hang=4)
    for g in b.gates:
        print_wrapped(console, f"Gate: {_gate_heading(g)}", "bold")
        for i, line in enumerate(gate_lines(g.decision)):
            style = ("bold green" if g.decision.adopt else "bold red") if i == 0 else (
                "yellow" if g.decision.within_noise else "")
            print_wrapped(console, line, style)
        print_wrapped(console, _flips_heading(g), "bold")
        for f in g.flips:
            print_wrapped(console, flip_line(f), indent=2, hang=4)
    print_wrapped(console, "Per-claim disagreements with their page regions: judge-replay grade RUN", "dim")


@click.command("bakeoff", epilog="""\b
Examples:
  judge-replay bakeoff                    # the configured runs, replayed offline
  judge-replay bakeoff --format html --out bakeoff.html     # one page: table, cost chart, flips
  judge-replay bakeoff --baseline cassettes/v2-demo --candidate cassettes/v3-demo --json""")
@click.option("--gold", "gold_flag", type=click.Path(readable=False, path_type=Path),
              help="Gold set JSON (default: [tool.judge-replay] gold).")
@click.option("--baseline", "baseline_flag", type=click.Path(readable=False, path_type=Path),
              help="Baseline run folder (default: [tool.judge-replay] baseline).")
@click.option("--candidate", "candidate_flags", multiple=True, type=click.Path(readable=False, path_type=Path),
              help="Candidate run folder; repeat for several (default: [tool.judge-replay] candidates).")
@click.option("--out-dir", type=click.Path(readable=False, path_type=Path),
              help="Write judge-bakeoff-results-<prompt>.json into DIR (default: [tool.judge-replay] "
                   "bakeoff-out-dir; with neither, no file is written).")
@click.option("--no-replay", is_flag=True, help="Grade each run's recorded results.json without replaying it.")
@click.option("--force", is_flag=True, help="With --out-dir: overwrite a frozen judge-bakeoff-results-<prompt>.json "
              "whose results changed.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "html"]), default=None,
              help="Output format (default text); html is one self-contained page with a cost chart.")
@click.option("--json", "as_json", is_flag=True, help="Machine output: versions, scores, gates, flips (--format json).")
@click.option("--markdown", "as_markdown", is_flag=True, help="Markdown, e.g. for a CI job summary (--format markdown).")
@click.option("--out", callback=dash_is_stdout, type=click.Path(readable=False, path_type=Path), help="Write the report to FILE instead of stdout.")
@check_option
def command(
    gold_flag: Path | None, baseline_flag: Path | None, candidate_flags: tuple[Path, ...], out_dir: Path | None,
    no_replay: bool, force: bool, fmt: str | None, as_json: bool, as_markdown: bool, out: Path | None,
    check: bool | None,
) -> None:
    """Replay each prompt version's run offline, grade it against the gold set, print the P/R table and
    the adoption decision (candidate vs baseline, with its statistical caveat), and explain every verdict
    flip. Writes nothing unless asked: with --out-dir DIR (or bakeoff-out-dir under [tool.judge-replay]),
    one judge-bakeoff-results-<prompt>.json per version (a frozen one is never rewritten; different
    results are refused unless --force).

    A claim without a verdict (a failed or cut-off conversation) is counted as "no verdict", never as a
    negative, and a version with such claims is never adopted. Exit 1 when a run's replay did not
    reproduce its recorded results (the report is still printed, grading the replay). Runs recorded against the local stand-ins
    are marked as such in every format.

    In CI: --check (or check = true under [tool.judge-replay]) exits 1 when the gate refuses a
    candidate or cannot decide; when GITHUB_STEP_SUMMARY is set, the markdown report is appended to
    that file.
    """
    chosen = [f for f, on in (("json", as_json), ("markdown", as_markdown)) if on]
    if len(chosen) > 1 or (chosen and fmt and fmt != chosen[0]):
        raise UsageError("choose one output format: --json, --markdown or --format")
    fmt = fmt or (chosen[0] if chosen else "text")
    gold = setting_path("gold", gold_flag)
    if gold is None:
        raise UsageError("no gold set: give --gold GOLD or set gold under [tool.judge-replay] in pyproject.toml")
    baseline = setting_path("baseline", baseline_flag)
    if baseline is None:
        raise UsageError("no baseline run: give --baseline RUN or set baseline under [tool.judge-replay]")
    candidates = setting_paths("candidates", [str(c) for c in candidate_flags])

    def warn(message: str) -> None:
        click.secho(f"judge-replay: {message}", err=True, fg="yellow", bold=True)

    report = run_bakeoff(gold_path=gold, baseline=baseline, candidates=candidates,
                         out_dir=setting_path("bakeoff-out-dir", out_dir), replay=not no_replay, force=force, warn=warn,
                         prices=project_prices(), required_stability=gate_stability())
    for path in report.written:
        click.echo(printable(f"wrote {display_path(path)}"), err=True)
    if fmt == "html":
        from replay.reports.bakeoff_html import render_html

        text: str | None = render_html(report, cost_note(report))
    else:
        text = (dump_json(bakeoff_json(report)) if fmt == "json" else bakeoff_markdown(report) if fmt == "markdown"
                else None)
    emit_report(out, text, lambda stream: print_bakeoff(stream, report))
    append_job_summary(lambda: text if fmt == "markdown" and text is not None else bakeoff_markdown(report))
    mismatched = [v.label for v in report.versions if v.replay_differences]
    if mismatched:  # the figures are the replay's: a run that does not reproduce is a failed check (exit 1)
        raise CheckFailed(f"bakeoff: replaying {', '.join(mismatched)} did not reproduce the recorded results.json "
                          "(REPLAY MISMATCH above); the figures grade the replay: `judge-replay cassettes verify RUN` "
                          "says what differs, and re-recording the run makes them agree")
    refused = [g for g in report.gates if not g.decision.adopt]
    if refused and setting("check", check, False):
        raise CheckFailed("bakeoff --check: the gate does not adopt "
                          + "; ".join(f"{g.candidate.label} ({g.decision.reason})" for g in refused))
