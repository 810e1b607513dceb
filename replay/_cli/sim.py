"""`judge-replay sim learn|model`: run a local stand-in server (test equipment) until stopped."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import click

from .._errors import UsageError
from .._sim import StandIn, start_learn, start_model


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
    return UsageError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); try another --port, or 0")


def _log(line: str) -> None:
    click.echo(line, err=True)


@click.group("sim")
def command() -> None:
    """Run a local stand-in server on 127.0.0.1 (test equipment, for offline tests and the demo)."""


@command.command("learn")
@click.option("--pages", "pages", required=True, type=click.Path(path_type=Path),
              help="Folder of *.md pages, each with YAML front matter giving its `url:`.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: any free port).")
@click.option("--quiet", is_flag=True, help="Do not log each request on stderr.")
def learn(pages: Path, port: int, quiet: bool) -> None:
    """Serve a folder of pages as the Learn MCP endpoint; prints the endpoint URL first."""
    try:
        handle = start_learn(pages, port, log=None if quiet else _log)
    except OSError as exc:
        raise _port_error(port, exc) from exc
    _serve(handle, "Learn MCP")


@command.command("model")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: any free port).")
@click.option("--quiet", is_flag=True, help="Do not log each request on stderr.")
def model(port: int, quiet: bool) -> None:
    """Serve the Messages API with a deterministic judge policy; prints the base URL first."""
    try:
        handle = start_model(port, log=None if quiet else _log)
    except OSError as exc:
        raise _port_error(port, exc) from exc
    _serve(handle, "Messages API")
