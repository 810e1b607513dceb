"""`judge-replay judge`: run the judge live, record a run, or replay one offline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import click

from .._config import setting
from .._errors import UsageError
from .._io import write_model
from .._records import LEARN_MCP_URL, VERDICTS, ResultsFile
from .._runs import Run

DEFAULT_MODEL = "claude-sonnet-4-6"


@click.command("judge")
@click.option("--prompt", "prompt", metavar="P", help="Bundled prompt name (v1, v2, v3) or a prompt file.")
@click.option("--claims", "claims", multiple=True, metavar="PATH...",
              help="Claims files and/or folders of *.json batches (repeat, or list several).")
@click.argument("more_claims", nargs=-1, type=click.Path(), metavar="")
@click.option("--run", "run_dir", type=click.Path(file_okay=False), help="The run folder (cassettes/<run-id>).")
@click.option("--mode", type=click.Choice(["live", "record", "replay"]), default="live", show_default=True)
@click.option("--model", default=None, help=f"Claude model ([tool.judge-replay] model, else {DEFAULT_MODEL}).")
@click.option("--learn-url", default=None, help=f"Learn MCP endpoint (default {LEARN_MCP_URL}).")
@click.option("--anthropic-base-url", default=None, help="Messages API base URL (default: the SDK's).")
@click.option("--pages-from", type=click.Path(file_okay=False),
              help="Serve every Learn call from this run's cassettes while the model runs live.")
@click.option("--concurrency", type=int, default=None, help="Conversations at once (default 4).")
@click.option("--force", is_flag=True, help="Record over a frozen run.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the results JSON here.")
@click.option("--no-progress", is_flag=True, help="No progress bar or progress lines.")
def command(
    prompt: str | None,
    claims: tuple[str, ...],
    more_claims: tuple[str, ...],
    run_dir: str | None,
    mode: str,
    model: str | None,
    learn_url: str | None,
    anthropic_base_url: str | None,
    pages_from: str | None,
    concurrency: int | None,
    force: bool,
    out: str | None,
    no_progress: bool,
) -> None:
    """Run the judge: one conversation per claims file (live, recorded into --run, or replayed from it)."""
    claims_paths = [*claims, *more_claims]
    if more_claims and not claims:
        raise UsageError(f"unexpected argument {more_claims[0]!r}: claims go after --claims")
    if mode != "replay" and (prompt is None or not claims_paths):
        raise UsageError(f"--mode {mode} needs --prompt P and --claims PATH...")
    from .._runner import run_judge  # imports anthropic (~2 s): only when the judge really runs

    results = run_judge(
        prompt,
        list(claims_paths),
        run_dir,
        mode,  # type: ignore[arg-type]
        model=str(setting("model", model, DEFAULT_MODEL)),
        learn_url=str(setting("learn_url", learn_url, LEARN_MCP_URL)),
        anthropic_base_url=setting("anthropic_base_url", anthropic_base_url, None),
        pages_from=pages_from,
        concurrency=int(setting("concurrency", concurrency, 4)),
        progress=not no_progress,
        force=force,
    )
    written = []
    if run_dir and mode != "replay":
        written.append(run_dir)
    if out:
        write_model(out, results)
        written.append(out)
    manifest = Path(run_dir or "") / "run.json"
    stand_ins = Run(run_dir).manifest.stand_ins if run_dir and manifest.is_file() else []
    click.echo(summary(results, mode, written, stand_ins))


def summary(results: ResultsFile, mode: str, written: list[str], stand_ins: Sequence[str] = ()) -> str:
    """A few lines a person reads at the end of a run."""
    claims = [r for f in results.files for r in f.results]
    counts = Counter(r.judge_verdict for r in claims)
    verdicts = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    no_verdict = counts.get(None, 0)
    unverified = sum(1 for r in claims if r.quote_verified is False)
    tokens_in = sum(f.usage.input_tokens for f in results.files if f.usage)
    tokens_out = sum(f.usage.output_tokens for f in results.files if f.usage)
    failed = [f for f in results.files if f.error]
    lines = [
        f"judge {mode}: prompt {results.prompt}, model {results.model}",
        f"  {len(results.files)} files, {len(claims)} claims: {verdicts}"
        + (f", {no_verdict} without a verdict" if no_verdict else ""),
        f"  quotes not found in the fetched page: {unverified}",
        f"  tokens: {tokens_in:,} in, {tokens_out:,} out",
    ]
    if stand_ins:
        lines.append(f"  stand-ins (test equipment, not the real services): {', '.join(stand_ins)}")
    for f in failed:
        lines.append(f"  failed: {f.file}: {f.error}")
    lines.append(f"  written: {', '.join(str(Path(w)) for w in written)}" if written else "  written: nothing")
    return "\n".join(lines)
