"""`judge-replay judge --add-samples N --run DIR`: more samples recorded into a recorded run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import click

from replay.cli._budget import budget_for
from replay.cli._run_summary import summary
from replay.core.cost import file_cost, format_usd, total_usd
from replay.core.display import printable
from replay.core.sample_results import split
from replay.errors import UsageError
from replay.runs.folder import MANIFEST, Run
from replay.settings import check_endpoint, project_prices


def add_samples_command(more: int, *, run_dir: str | None, mode: str, mode_given: bool, prompt: str | None,
                        claims: Sequence[str], model: str | None, learn_url: str | None,
                        anthropic_base_url: str | None, pages_from: str | None, concurrency: int | None, force: bool,
                        retry_failed: bool, out: str | None, progress: bool, batch: bool, resume: bool,
                        no_cache: bool, samples: int | None, max_cost: float | None) -> None:
    """Check the options that go with `--add-samples`, record the samples, print the summary."""
    if run_dir is None:
        raise UsageError("--add-samples N adds samples to a recorded run: give it with --run DIR")
    if more < 1:
        raise UsageError(f"--add-samples must be at least 1, not {more}")
    if mode_given and mode != "record":
        raise UsageError(f"--add-samples records (billed): it does not go with --mode {mode}")
    if samples is not None:
        raise UsageError("--samples K sets how many samples a new run records; --add-samples N adds N to the run in "
                         "--run: give one of them")
    if retry_failed:
        raise UsageError("--retry-failed and --add-samples do not go together: retry the failed files first")
    if resume and not batch:
        raise UsageError("--resume continues an interrupted batch run: use it with --batch")
    if max_cost is not None and not (math.isfinite(max_cost) and max_cost > 0):
        raise UsageError("--max-cost limits what a live or record run is billed: give a positive USD amount")
    for flag, url in (("--learn-url", learn_url), ("--anthropic-base-url", anthropic_base_url)):
        if url is not None:
            check_endpoint(url, flag)
    from replay.judge.model_route import ModelRoute
    from replay.judge.more_samples import Given, added_samples
    from replay.runs.writer import recover
    from replay.settings import given_endpoints, setting

    recover(Path(run_dir))
    manifest = Run(run_dir).manifest if (Path(run_dir) / MANIFEST).is_file() else None
    run_model = manifest.model if manifest is not None else str(model)
    budget = budget_for(max_cost, run_model)
    batched = batch or (manifest is not None and manifest.batch_ids is not None)  # the run's way, unless refused
    cache = not no_cache and not (manifest is not None and manifest.cache is False)
    route = (ModelRoute.batched(run_dir, resume=resume, cache=cache, progress=progress, budget=budget) if batched
             else ModelRoute(cache=cache, budget=budget))
    # the endpoints the user gives (flag, environment, setting), else the run's own
    endpoints = given_endpoints(learn_url, anthropic_base_url)
    given = Given(prompt=prompt, claims=tuple(claims), model=model, learn_url=endpoints.learn_url,
                  anthropic_base_url=endpoints.anthropic_base_url, pages_from=pages_from)
    results = added_samples(run_dir, more, given, route=route, concurrency=int(setting("concurrency", concurrency, 4)),
                            progress=progress, force=force)
    route.finished([])
    written = [run_dir]
    if out:
        results.write(out)
        written.append(out)
    text = summary(results, "record", written, results.header.stand_ins, batch=route.batch is not None)
    click.echo(text)
    k = results.header.samples or 1
    prices = project_prices()
    added = [file_cost(part, results.header.model, batch=route.batch is not None, prices=prices)
             for f in results.files() for part in split(f)[k - more:]]
    click.echo(f"  added: samples {k - more + 1} to {k} of every claims file, costing {format_usd(total_usd(added))}; "
               f"the recorded samples 1 to {k - more} are kept as they were")
    if budget is not None and budget.refused:
        click.echo(f"judge: {printable(budget.refused)}", err=True)
