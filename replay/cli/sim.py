"""`judge-replay sim learn|model`: run a local stand-in server (test equipment) until stopped."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click

from replay.cli._output import examples
from replay.errors import UsageError
from replay.sim import StandIn, start_learn, start_model
from replay.sim.batches import BatchSettings
from replay.sim.noise import ModelNoise
from replay.urls import LEARN_STAND_IN_PORT, MODEL_STAND_IN_PORT


def _serve(handle: StandIn, what: str) -> None:
    """Print the URL first (scripts read that line), then serve until SIGINT or SIGTERM."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        click.echo(handle.url)
        click.echo(f"judge-replay {what} stand-in (test equipment) on 127.0.0.1:{handle.port}; "
                   "Ctrl-C or SIGTERM stops it.")
        sys.stdout.flush()
        while not stop.wait(0.2):
            pass
    finally:
        handle.stop()
        for sig, old in previous.items():
            signal.signal(sig, old)
    click.echo(f"judge-replay {what} stand-in stopped.", err=True)


def _port_error(port: int, exc: OSError) -> UsageError:
    return UsageError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); try another --port, or 0 for any free port")


def _log(line: str) -> None:
    """A stand-in's log line: what a client sent is in it, shown escaped."""
    from replay.core.display import printable

    click.echo(printable(line), err=True)


_VERBOSE = click.option("--verbose", is_flag=True, help="Log one line per request on stderr.")
_QUIET = click.option("--quiet", is_flag=True, hidden=True, help="No request log (the default; kept for old scripts).")


@click.group("sim", epilog=examples("judge-replay sim learn --pages demo/pages/2026-06 &",
                                      "judge-replay sim model &"))
def command() -> None:
    """Run a local stand-in server on 127.0.0.1 (test equipment, for offline tests and the demo)."""


@command.command("learn", epilog=examples("judge-replay sim learn --pages demo/pages/2026-06 &"))
@click.option("--pages", "pages", required=True, type=click.Path(readable=False, path_type=Path),
              help="Folder of *.md pages, each with YAML front matter giving its `url:`.")
@click.option("--port", type=click.IntRange(0, 65535), default=LEARN_STAND_IN_PORT, show_default=True,
              help="Port to listen on (0: any free port). Runs recorded against stand-ins store this default port.")
@click.option("--strict-sessions", is_flag=True,
              help="Require the session on every request after initialize (unknown or expired: 404). The real "
              "server issues sessions but does not require them.")
@click.option("--fail-first", type=click.IntRange(0), default=0, metavar="N",
              help="The first N tool calls get --fail-status (with retry-after: 0), to exercise retries.")
@click.option("--fail-status", type=click.Choice(["408", "429", "500", "502", "503", "504"]), default="503",
              show_default=True, help="The HTTP status of the failures --fail-first plans.")
@click.option("--flaky", is_flag=True, help="The first attempt of each distinct tool call gets 503.")
@_VERBOSE
@_QUIET
def learn(pages: Path, port: int, strict_sessions: bool, fail_first: int, fail_status: str, flaky: bool,
          verbose: bool, quiet: bool) -> None:
    """Serve a folder of pages as the Learn MCP endpoint; prints the endpoint URL first."""
    try:
        handle = start_learn(pages, port, log=_log if verbose else None, strict_sessions=strict_sessions,
                             fail_first=fail_first, fail_status=int(fail_status), flaky=flaky)
    except OSError as exc:
        raise _port_error(port, exc) from exc
    _serve(handle, "Learn MCP")


@command.command("model", epilog=examples("judge-replay sim model &"))
@click.option("--port", type=click.IntRange(0, 65535), default=MODEL_STAND_IN_PORT, show_default=True,
              help="Port to listen on (0: any free port). Runs recorded against stand-ins store this default port.")
@click.option("--no-thinking", is_flag=True,
              help="Answer in the older models' shape: no thinking blocks before text and tool calls.")
@click.option("--fetch-per-turn", type=click.IntRange(0), default=0, show_default=True, metavar="N",
              help="At most N tool calls per model turn, as real agents often make (0: every page in one turn).")
@click.option("--batch-delay", type=click.FloatRange(0), default=0.0, show_default=True, metavar="SECONDS",
              help="How long a message batch stays in progress.")
@click.option("--batch-errored", metavar="TEXT", default=None,
              help="Batch entries whose custom_id contains TEXT are errored on their first submission.")
@click.option("--batch-expired", metavar="TEXT", default=None,
              help="Batch entries whose custom_id contains TEXT expire on their first submission.")
@click.option("--batch-error-type", default="api_error", show_default=True, metavar="TYPE",
              type=click.Choice(["api_error", "overloaded_error", "rate_limit_error", "timeout_error",
                                 "invalid_request_error", "authentication_error", "permission_error",
                                 "not_found_error", "billing_error"]),
              help="The error type of the entries --batch-errored fails.")
@click.option("--rate-limited", type=click.IntRange(0), default=0, show_default=True, metavar="N",
              help="The first N calls of each kind (messages, batch create, list, status, results, cancel) get "
                   "429 rate_limit_error with retry-after.")
@click.option("--retry-after", type=click.IntRange(0), default=0, show_default=True, metavar="SECONDS",
              help="The retry-after of the --rate-limited 429s.")
@click.option("--archive-after", type=click.FloatRange(0), default=None, metavar="SECONDS",
              help="Archive each batch SECONDS after it ended: archived_at set, no results_url, its results "
                   "gone (as past retention).")
@click.option("--cut-off", "cut_off", metavar="FILE", multiple=True,
              help="The conversation of claims file FILE (e.g. docs/evaluation.md) outgrows the context window: "
                   "its final answer stops with model_context_window_exceeded.")
@click.option("--noise", type=click.FloatRange(0, 1), default=0.0, show_default=True, metavar="P",
              help="Simulated model noise: each close call (a lower bound, an equivalence, an illustrative number, an "
                   "existence check) gets its runner-up verdict with probability P; runs recorded say so.")
@click.option("--seed", type=int, default=0, show_default=True, metavar="S",
              help="Seed of the --noise draws (the same seed and order of calls draw the same).")
@_VERBOSE
@_QUIET
def model(port: int, no_thinking: bool, fetch_per_turn: int, batch_delay: float, batch_errored: str | None,
          batch_expired: str | None, batch_error_type: str, rate_limited: int, retry_after: int,
          archive_after: float | None, cut_off: tuple[str, ...], noise: float, seed: int, verbose: bool,
          quiet: bool) -> None:
    """Serve the Messages API with a deterministic judge policy; prints the base URL first.

    Like current models it answers with signed thinking blocks, which must come back unchanged.
    Model names steer it: one containing "flaky" fails the first attempt of each request with 529;
    a retired model (claude-2.1, claude-3-opus-20240229, ..., or a name containing "retired") gets
    the API's 404. A claim containing "[stand-in: context window exceeded]", or any claim of a
    --cut-off file, makes the final answer stop with model_context_window_exceeded. --noise P makes
    close calls flip to their runner-up verdict with probability P (reproducible with --seed), and the
    runs recorded against it say that the noise was simulated.

    It refuses with the API's 400 what the API refuses (a request that is not the SDK's request type, an
    unknown field, temperature/top_p/top_k on a 5.x model, more than 4 cache breakpoints, a 1-hour one
    after a 5-minute one, a breakpoint on a thinking block, a thinking budget not below max_tokens), and
    its prompt cache looks for hits 20 blocks back at most, caching nothing below the model's minimum.
    """
    try:
        handle = start_model(port, log=_log if verbose else None, thinking=not no_thinking,
                             fetch_per_turn=fetch_per_turn, cut_off=frozenset(cut_off),
                             batch_settings=BatchSettings(batch_delay, batch_errored, batch_expired,
                                                          error_type=batch_error_type, rate_limited=rate_limited,
                                                          retry_after=retry_after, archive_after=archive_after),
                             noise=ModelNoise(noise, seed) if noise > 0 else None)
    except OSError as exc:
        raise _port_error(port, exc) from exc
    _serve(handle, "Messages API")
