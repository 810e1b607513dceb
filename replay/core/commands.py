"""The `judge-replay judge` commands we print for the user to paste (re-record, controlled runs): built in one place.

A printed command runs as printed: it carries the endpoints in effect for the command that prints it
(`Endpoints`: what the user gave by flag, environment variable or setting), and only where the user gave
none the endpoints a run folder recorded (which keeps a stand-in's loopback URL in one canonical form,
`urls.canonical_endpoint`: right only for stand-ins on their default ports)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from replay.schema.manifest import LEARN_MCP_URL, RunManifest
from replay.secrets.in_urls import scrub_url

DEFAULT_MAX_TOKENS = 32_000
"""`judge --max-tokens` by default: room for adaptive thinking and the JSON verdicts of a full claims file
(thinking counts toward `max_tokens`), within every current model's output limit (64K for Sonnet and Haiku
4.5 and later, 32K for the Opus 4 and 4.1 family)."""
LEGACY_MAX_TOKENS = 8192
"""The `max_tokens` of runs recorded before the run folder kept it (a replay must ask what they asked)."""


@dataclass(frozen=True)
class Endpoints:
    """The endpoints the user gave the printing command (`--learn-url`, `--anthropic-base-url`, their
    environment variables or settings), as given; None: not given, so a command built from a run folder
    uses the run's own."""

    learn_url: str | None = None
    anthropic_base_url: str | None = None


NO_ENDPOINTS = Endpoints()


def judge_command(
    *,
    prompt: str,
    claims: Sequence[str],
    run: str | None,
    mode: str = "record",
    model: str | None = None,
    learn_url: str | None = None,
    anthropic_base_url: str | None = None,
    pages_from: str | None = None,
    retry_failed: bool = False,
    batch: bool = False,
    resume: bool = False,
    no_cache: bool = False,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    samples: int = 1,
) -> str:
    """A `judge-replay judge` command line, shell-quoted; endpoints as given (the default Learn URL left out).
    `batch`, `resume`, `no_cache` and `max_cost` keep how the run was paid for (`--batch --resume`: the
    batches already submitted are not paid for again)."""
    args = ["judge-replay", "judge", "--prompt", prompt, "--claims", *claims, "--run", run or "DIR", "--mode", mode]
    if model:
        args += ["--model", model]
    if learn_url and learn_url != LEARN_MCP_URL:  # as any URL we print: credentials by name REDACTED, no fragment
        args += ["--learn-url", scrub_url(learn_url)]
    if anthropic_base_url:
        args += ["--anthropic-base-url", scrub_url(anthropic_base_url)]
    if pages_from:
        args += ["--pages-from", pages_from]
    if retry_failed:
        args += ["--retry-failed"]
    if batch:
        args += ["--batch"]
    if batch and resume:
        args += ["--resume"]
    if no_cache:
        args += ["--no-cache"]
    if max_cost is not None:
        args += ["--max-cost", f"{max_cost:g}"]
    if max_tokens is not None:
        args += ["--max-tokens", str(max_tokens)]
    if samples > 1:
        args += ["--samples", str(samples)]
    return shlex.join(args)


def add_samples_command(run: str, more: int, *, max_cost: float | None = None,
                        endpoints: Endpoints = NO_ENDPOINTS) -> str:
    """The command that records `more` samples of every claim into `run`, leaving its recorded ones as they are
    (the run's own prompt, model, claims and settings): `judge-replay judge --mode record --add-samples N --run RUN`,
    with the endpoints the user gave (without them it records against the run's own)."""
    args = ["judge-replay", "judge", "--mode", "record", "--add-samples", str(more), "--run", run]
    if endpoints.learn_url and endpoints.learn_url != LEARN_MCP_URL:
        args += ["--learn-url", scrub_url(endpoints.learn_url)]
    if endpoints.anthropic_base_url:
        args += ["--anthropic-base-url", scrub_url(endpoints.anthropic_base_url)]
    if max_cost is not None:
        args += ["--max-cost", f"{max_cost:g}"]
    return shlex.join(args)


def rerecord_command(manifest: RunManifest, claims: Sequence[str], run: str, *, pages_from: str | None = None,
                     endpoints: Endpoints = NO_ENDPOINTS, recorded_pages: bool = True) -> str:
    """The command that records `claims` into `run` the way `manifest`'s run was recorded (same prompt, model
    and endpoints, stand-in URLs included, and `--batch`, `--no-cache`, `--max-cost`), optionally
    page-pinned to another run. `endpoints`: those the user gave, in place of the run's; `recorded_pages`
    False: the run's own `--pages-from` is left out (a command meant to judge today's pages)."""
    return judge_command(
        prompt=manifest.prompt, claims=claims, run=run, model=manifest.model,
        learn_url=endpoints.learn_url or manifest.learn_url,
        anthropic_base_url=endpoints.anthropic_base_url or manifest.anthropic_base_url,
        pages_from=pages_from or (manifest.pages_from if recorded_pages else None),
        batch=manifest.batch_ids is not None, no_cache=manifest.cache is False, max_cost=manifest.max_cost_usd,
        max_tokens=_asked(manifest),
        samples=manifest.sample_count,
    )


def retry_failed_command(manifest: RunManifest, run: str, *, endpoints: Endpoints = NO_ENDPOINTS, batch: bool | None = None,
                         no_cache: bool | None = None, max_cost: float | None = None, resume: bool = False) -> str:
    """The command that records again only the claims files of `run` that have a claim without a verdict,
    keeping the others as recorded (`--retry-failed`: the run is never replaced by a part of itself);
    `resume` where the batch run kept its journal (`runs.writer.journal_path`: its turns already answered
    are not paid for again).
    Endpoints (those the user gave), `batch`, `no_cache` and `max_cost` default to the manifest's; pass the
    live choices where they are known."""
    return judge_command(
        prompt=manifest.prompt, claims=[entry.path for entry in manifest.claims], run=run, model=manifest.model,
        learn_url=endpoints.learn_url or manifest.learn_url,
        anthropic_base_url=endpoints.anthropic_base_url or manifest.anthropic_base_url,
        pages_from=manifest.pages_from, retry_failed=True, resume=resume,
        batch=manifest.batch_ids is not None if batch is None else batch,
        no_cache=manifest.cache is False if no_cache is None else no_cache,
        max_cost=manifest.max_cost_usd if max_cost is None else max_cost,
        max_tokens=_asked(manifest),
        samples=manifest.sample_count,
    )


def _asked(manifest: RunManifest) -> int | None:
    """The `--max-tokens` a command recording into `manifest`'s run must give (None: the default's)."""
    asked = manifest.max_tokens or LEGACY_MAX_TOKENS
    return asked if asked != DEFAULT_MAX_TOKENS else None
