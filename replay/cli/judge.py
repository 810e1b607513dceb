"""`judge-replay judge`: run the judge live, record a run, or replay one offline."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from replay.cli._budget import budget_for
from replay.cli._jobs import jobs_option
from replay.cli._output import examples, no_dash
from replay.cli._run_summary import summary
from replay.core.commands import DEFAULT_MAX_TOKENS, Endpoints, judge_command, retry_failed_command
from replay.core.display import printable
from replay.errors import SystemFailed, UsageError
from replay.runs.folder import Run
from replay.schema.manifest import LEARN_MCP_URL
from replay.settings import check_endpoint, setting
from replay.reports.fit import fit_lines, text_width, wrap_command
from replay.urls import as_given



DEFAULT_MODEL = "claude-sonnet-5-5"
"""The current Sonnet (anthropic 2.14 lists it; claude-sonnet-4-6 is legacy)."""

MODES = ("live", "record", "replay")
MODES_LISTED = ("--mode live (billed; keeps the results only with --out FILE or --run DIR), --mode record (billed; "
                "records a run folder that replays offline: needs --run DIR), --mode replay (offline and free: "
                "needs --run naming a recorded run)")


EPILOG = "\n\n".join([
    "Nothing is billed unless you ask: live and record call the Anthropic API, which is billed, only when "
    "--mode (or JUDGE_REPLAY_MODE, or [tool.judge-replay] mode) says so. Without a mode, --run naming an "
    "existing run folder replays it, and anything else is refused. Live and record need ANTHROPIC_API_KEY "
    "(or ANTHROPIC_AUTH_TOKEN, sent as a bearer token) except against a stand-in; the Learn MCP endpoint "
    "needs no key. Live keeps nothing unless you give --out FILE (the results) or --run DIR (results, no "
    "cassettes); record keeps a run folder whose cassettes replay offline, free and without a key. Replay "
    "makes no network call at all.",
    "Without a key or network, start the local stand-ins (test equipment, not Claude nor Learn): "
    "`judge-replay sim learn --pages demo/pages/2026-06` (port 8931) and `judge-replay sim model` (port "
    "8932), and pass --learn-url http://127.0.0.1:8931/api/mcp --anthropic-base-url http://127.0.0.1:8932.",
    examples(
        "judge-replay judge --prompt v3 --claims demo/claims --mode live --out results.json   # billed, keeps results",
        "judge-replay judge --prompt v3 --claims demo/claims --run runs/v3 --mode record      # billed, keeps a run",
        "judge-replay judge --mode replay --run cassettes/v3-demo                             # offline, free",
        "judge-replay judge --run cassettes/v3-demo                                           # no mode: replays",
    ),
])


@click.command("judge", epilog=EPILOG)
@click.option("--prompt", "prompt", metavar="P", help="Bundled prompt name (v1, v2, v3) or a prompt file.")
@click.option("--claims", "claims", multiple=True, metavar="PATH...",
              help="Claims files and/or folders of *.json batches (repeat, or list several).")
@click.argument("more_claims", nargs=-1, type=click.Path(), metavar="")
@click.option("--run", "run_dir", type=click.Path(file_okay=False), help="The run folder (cassettes/<run-id>).")
@click.option("--mode", type=click.Choice(MODES), default=None,
              help="live (billed, keeps results only with --out or --run), record (billed, keeps a replayable run "
                   "in --run), replay (offline, free). Default: JUDGE_REPLAY_MODE, else [tool.judge-replay] mode, "
                   "else replay when --run is an existing run folder; nothing else is billed by default.")
@click.option("--model", default=None, help=f"Claude model ([tool.judge-replay] model, else {DEFAULT_MODEL}).")
@click.option("--learn-url", default=None, help=f"Learn MCP endpoint (default {LEARN_MCP_URL}).")
@click.option("--anthropic-base-url", default=None, help="Messages API base URL (default: the SDK's).")
@click.option("--pages-from", type=click.Path(file_okay=False),
              help="Serve every Learn call from this run's cassettes while the model runs live.")
@click.option("--concurrency", type=int, default=None, help="Conversations at once (default 4).")
@click.option("--max-tokens", type=int, default=None, metavar="N",
              help=f"The most tokens one model answer may use, thinking included ([tool.judge-replay] max-tokens, "
                   f"else {DEFAULT_MAX_TOKENS}): an answer cut off at it fails its file; raise it there.")
@click.option("--force", is_flag=True, help="Record over a frozen run; with --mode live, write over a recorded run (its cassettes go).")
@click.option("--retry-failed", is_flag=True,
              help="Record again only the claims files that failed in --run; keep the others as recorded.")
@click.option("--out", callback=no_dash, type=click.Path(dir_okay=False), help="Also write the results JSON here.")
@click.option("--no-progress", is_flag=True, help="No progress bar or progress lines.")
@click.option("--batch", is_flag=True, help="Send the model turns through Message Batches (half price, rounds of "
              "minutes to hours): record or live.")
@click.option("--resume", is_flag=True, help="With --batch: continue an interrupted batch run into --run from the "
              "batches it already submitted (nothing answered is paid for again).")
@click.option("--resubmit-archived", is_flag=True, help="With --batch: pay again for the requests of a batch the API "
              "archived before the run read its results (past retention); without it the run stops and says so.")
@click.option("--no-cache", is_flag=True, help="No prompt-caching breakpoints (caching is on by default).")
@click.option("--samples", type=int, default=None, metavar="K",
              help="Judge each claims file in K independent conversations (default 1; [tool.judge-replay] samples): "
                   "each claim's verdict is the majority, every sample is kept, and all samples read the same "
                   "page versions.")
@click.option("--add-samples", type=int, default=None, metavar="N",
              help="Record N more samples into the run in --run (its prompt, claims, model and settings), keeping "
                   "the recorded ones as they are.")
@click.option("--max-cost", type=float, default=None, metavar="USD",
              help="Stop before a model call (with --batch: a batch) that could take the run's cost past USD "
                   "(estimated high: every input token at the dearest input price, max_tokens of output).")
@jobs_option
def command(
    prompt: str | None,
    claims: tuple[str, ...],
    more_claims: tuple[str, ...],
    run_dir: str | None,
    mode: str | None,
    model: str | None,
    learn_url: str | None,
    anthropic_base_url: str | None,
    pages_from: str | None,
    concurrency: int | None,
    max_tokens: int | None,
    force: bool,
    retry_failed: bool,
    out: str | None,
    no_progress: bool,
    batch: bool,
    resume: bool,
    resubmit_archived: bool,
    no_cache: bool,
    samples: int | None,
    add_samples: int | None,
    max_cost: float | None,
) -> None:
    """Run the judge: one conversation per claims file (live, recorded into --run, or replayed from it).

    Exit 1 when a conversation failed (the run is kept, and the command that re-records just the failed
    files is printed) or when every one failed (nothing is written)."""
    claims_paths = [*claims, *more_claims]
    if more_claims and not claims:
        raise UsageError(f"unexpected argument {more_claims[0]!r}: claims go after --claims")
    if add_samples is not None:
        from replay.cli._samples import add_samples_command

        asked = setting("mode", mode, None)
        if asked != "record":
            raise UsageError("--add-samples records more samples (billed): give --mode record (or set JUDGE_REPLAY_MODE "
                             "or [tool.judge-replay] mode)" + (f", not {asked}" if asked else ""))
        add_samples_command(
            add_samples, run_dir=run_dir, mode="record", mode_given=True, prompt=prompt, claims=claims_paths,
            model=model, learn_url=learn_url, anthropic_base_url=anthropic_base_url, pages_from=pages_from,
            concurrency=concurrency, force=force, retry_failed=retry_failed, out=out, progress=not no_progress,
            batch=batch, resume=resume, no_cache=no_cache, samples=samples, max_cost=max_cost)
        return
    mode = chosen_mode(mode, run_dir, recording_flags={
        "--retry-failed": retry_failed, "--batch": batch, "--resume": resume, "--no-cache": no_cache,
        "--max-cost": max_cost is not None, "--pages-from": pages_from is not None, "--force": force})
    k = int(setting("samples", samples, 1))
    if k < 1:
        raise UsageError(f"--samples must be at least 1, not {k}")
    if mode != "replay" and (prompt is None or not claims_paths):
        raise UsageError(f"--mode {mode} needs --prompt P and --claims PATH...")
    if (batch or resume or no_cache) and mode == "replay":
        raise UsageError("--batch, --resume and --no-cache choose how a recording calls the model; replay calls nothing")
    if max_cost is not None and (mode == "replay" or not (math.isfinite(max_cost) and max_cost > 0)):
        raise UsageError("--max-cost limits what a live or record run is billed: give a positive USD amount"
                         if mode != "replay" else "--max-cost limits a billed run; replay calls nothing and is free")
    if max_tokens is not None and (mode == "replay" or max_tokens < 1):
        raise UsageError("--max-tokens sizes what a live or record run asks for: give a whole number of at least 1"
                         if mode != "replay" else "--max-tokens is the recorded run's own in replay: leave it out")
    if resubmit_archived and not batch:
        raise UsageError("--resubmit-archived pays again for an archived batch's requests: use it with --batch")
    if resume and not batch:
        raise UsageError("--resume continues an interrupted batch run: use it with --batch")
    for flag, url in (("--learn-url", learn_url), ("--anthropic-base-url", anthropic_base_url)):
        if url is not None:
            check_endpoint(url, flag)
    from replay.judge.runner import failed_files, judged_run  # anthropic (~2 s) is imported when a conversation runs

    model = str(setting("model", model, DEFAULT_MODEL))
    budget = budget_for(max_cost, model)
    route = None
    if mode != "replay":
        from replay.judge.model_route import ModelRoute

        route = (ModelRoute.batched(run_dir, resume=resume, cache=not no_cache, progress=not no_progress,
                                    budget=budget, resubmit_archived=resubmit_archived) if batch
                 else ModelRoute(cache=not no_cache, budget=budget))

    learn_url = str(setting("learn_url", learn_url, LEARN_MCP_URL))
    anthropic_base_url = setting("anthropic_base_url", anthropic_base_url, None)
    if mode == "live" and not run_dir and not out:
        click.echo("judge live: calls the Anthropic API (billed) and keeps nothing but the summary below; "
                   "--out FILE keeps the results, --mode record --run DIR a replayable run", err=True)
    try:
        results = judged_run(
            prompt,
            list(claims_paths),
            run_dir,
            mode,  # type: ignore[arg-type]
            model=model,
            learn_url=learn_url,
            anthropic_base_url=anthropic_base_url,
            pages_from=pages_from,
            concurrency=int(setting("concurrency", concurrency, 4)),
            max_tokens=int(setting("max_tokens", max_tokens, DEFAULT_MAX_TOKENS)),
            progress=not no_progress,
            force=force,
            retry_failed=retry_failed,
            route=route,
            samples=k,
        )
    except (KeyboardInterrupt, SystemFailed):  # Ctrl-C, or a batch journal that could not be written
        if route is not None and route.command_choices()["resume"]:
            resume_command = judge_command(
                prompt=str(prompt), claims=claims_paths, run=run_dir, mode=mode, model=model, learn_url=learn_url,
                anthropic_base_url=anthropic_base_url, pages_from=pages_from, retry_failed=retry_failed,
                samples=k, **route.command_choices())
            echo_fitted("judge: the batches the journal holds are kept; to continue without paying for them again "
                        "(--batch --resume):", command=resume_command)
        raise
    if route is not None:
        route.finished([f.file for f in failed_files(results.files())])
    written = []
    if run_dir and mode != "replay":
        written.append(run_dir)
    if out:
        results.write(out)
        written.append(out)
    replayed_batch_run = mode == "replay" and run_dir is not None and Run(run_dir).manifest.batch_ids is not None
    batched = (route is not None and route.batch is not None) or replayed_batch_run
    text = summary(results, mode, written, results.header.stand_ins, batch=batched)
    # the failures it quotes name a stand-in as the user gave it (the run stores the canonical form)
    text = as_given(text, learn_url, anthropic_base_url) if mode != "replay" else text
    click.echo("\n".join(fit_lines(text, text_width(sys.stdout))))  # wrapped at words, nothing cut
    if budget is not None and budget.refused:
        click.echo(f"judge: {budget.refused}: the claims files it stopped are failed files of the run; raise "
                   "--max-cost to record them", err=True)
    failed = failed_files(results.files())
    if failed and mode != "replay":
        if run_dir and mode == "record":
            m = Run(run_dir).manifest
            paths = [e.path for e in m.claims if e.file in {f.file for f in failed}]
            retry = retry_failed_command(m, str(run_dir), endpoints=Endpoints(learn_url, anthropic_base_url),
                                         batch=route is not None and route.batch is not None, no_cache=no_cache,
                                         max_cost=max_cost, resume=route is not None and route.command_choices()["resume"])
            echo_fitted(f"{len(failed)} of {sum(1 for _ in results.files())} claims files failed ({', '.join(paths)}); "
                        "the run keeps what was recorded. To record just those again:", command=retry)
        else:
            click.echo(f"{len(failed)} of {sum(1 for _ in results.files())} claims files failed", err=True)
        click.get_current_context().exit(1)


def echo_fitted(text: str, *, command: str) -> None:
    """A message on stderr wrapped at words to its width, then `command` on its own lines, wrapped with `\\`
    continuations (`fit.wrap_command`): pasted into a shell, it is the command."""
    width = text_width(sys.stderr)
    click.echo("\n".join([*fit_lines(printable(text), width), *wrap_command(printable(command), width, indent=2)]),
               err=True)


def chosen_mode(mode: str | None, run_dir: str | None, *, recording_flags: dict[str, bool]) -> str:
    """The mode to run in: the flag, else JUDGE_REPLAY_MODE, else `[tool.judge-replay] mode`; with none of
    them, replay when `run_dir` is an existing run folder and no flag asks for a recording. Anything else is
    a UsageError listing the modes: nothing is billed unless a mode says so."""
    chosen = setting("mode", mode, None)
    if chosen is not None:
        return str(chosen)
    asked = [flag for flag, given in recording_flags.items() if given]
    if run_dir is not None and (Path(run_dir) / "run.json").is_file() and not asked:
        return "replay"
    why = (f"{', '.join(asked)} {'is' if len(asked) == 1 else 'are'} for a recording" if asked
           else f"--run {run_dir} is not a recorded run folder" if run_dir is not None
           else "and no --run folder to replay")
    raise UsageError(f"no --mode given ({why}); nothing is billed unless you choose: {MODES_LISTED}; "
                     "or set JUDGE_REPLAY_MODE or [tool.judge-replay] mode")
