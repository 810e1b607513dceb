"""pytest plugin (entry point `pytest11`): the `verdict_snapshot` fixture, the `--replay-*` options, the
terminal summary listing every verdict snapshot mismatch in full, the record mode (`judge_run` marker and
fixture, `--record-mode`), and the stand-ins as fixtures (`learn_stand_in`, `model_stand_in`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Generator

    from syrupy.assertion import SnapshotAssertion

    from replay.sim import LearnStandIn, ModelStandIn
    from replay.snapshots.extension import VerdictSnapshotAssertion
    from replay.snapshots.verdicts import RunVerdicts


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("judge-replay", "judge-replay verdict snapshots")
    group.addoption(
        "--replay-snapshot-dir",
        dest="replay_snapshot_dir",
        default=None,
        metavar="DIR",
        help="Folder holding verdict snapshots, one subfolder per run (default: <rootdir>/snapshots; "
        "a relative path is taken from the rootdir).",
    )
    record_help = ("For tests marked judge_run: none (default: replay offline; a missing run fails), once (record "
                   "the runs that are missing), rewrite (record every marked run again). Recording is billed "
                   "unless the endpoints name the local stand-ins. Default: JUDGE_REPLAY_RECORD_MODE, else none.")
    try:
        group.addoption("--record-mode", "--judge-record-mode", dest="judge_record_mode", default=None,
                        choices=["none", "once", "rewrite"], help=record_help)
    except ValueError:  # pytest-recording owns --record-mode: ours keeps its longer name
        group.addoption("--judge-record-mode", dest="judge_record_mode", default=None,
                        choices=["none", "once", "rewrite"], help=record_help)
    group.addoption("--judge-learn-url", dest="judge_learn_url", default=None, metavar="URL",
                    help="Learn MCP endpoint for recordings (default: JUDGE_REPLAY_LEARN_URL, else [tool.judge-replay] "
                         "learn-url, else the public endpoint).")
    group.addoption("--judge-anthropic-base-url", dest="judge_anthropic_base_url", default=None, metavar="URL",
                    help="Messages API base URL for recordings (default: JUDGE_REPLAY_ANTHROPIC_BASE_URL, else "
                         "[tool.judge-replay] anthropic-base-url, else the SDK's).")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "judge_run(prompt, claims, run, model=None): the test uses this judge run (the judge_run "
        "fixture gives its verdicts, replayed offline); --record-mode once|rewrite records it")


def pytest_sessionstart(session: pytest.Session) -> None:
    from replay.secrets.environment import remember_environment

    remember_environment()  # before any run is read: no snapshot, cache or line printed holds them
    # the extension (and the verdicts it compares) loaded once per process: an inner pytester session
    # restores sys.modules when it ends, and a class loaded inside it would be another class next time
    import replay.snapshots.extension  # noqa: F401
    from replay.snapshots.session import begin_session

    begin_session(session.config)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
    """An interrupted session deletes no snapshot: a run whose test was stopped before its assertion is not
    unused. A wrapper, so that this runs before syrupy's own `pytest_sessionfinish` (which deletes unused
    snapshots on an update) whatever order the two plugins' `tryfirst` hooks are called in; and before a
    pytest-xdist worker's, which sends the controller what the worker hands it."""
    from replay.snapshots.session import hand_to_controller, keep_every_snapshot

    if exitstatus == pytest.ExitCode.INTERRUPTED:
        keep_every_snapshot(session.config)
    hand_to_controller(session.config)
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A pytest-xdist worker finished: its mismatches join the controller's summary."""
    from replay.snapshots.session import take_from_worker

    take_from_worker(node.config, getattr(node, "workeroutput", None))


def pytest_unconfigure(config: pytest.Config) -> None:
    from replay.snapshots.session import end_session

    end_session(config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    """Every verdict snapshot mismatch in full, whatever the verbosity: pytest cuts each assertion message
    after 8 lines, and a re-recorded run can flip dozens of verdicts (syrupy reports its own this way)."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller prints the summary
        return
    from replay.snapshots.session import session_records

    if exitstatus == pytest.ExitCode.INTERRUPTED:  # syrupy then says unused detection is disabled: why
        terminalreporter.write_line("judge-replay: the session was interrupted, so no snapshot is deleted or reported "
                                    "as unused (the --snapshot-disable-unused syrupy names is set for that, not by you)")
    mismatches = session_records(config).mismatches
    if not mismatches:
        return
    terminalreporter.write_sep("-", "verdict snapshots that differ (judge-replay)")
    for lines in mismatches:
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def judge_run(request: pytest.FixtureRequest) -> RunVerdicts:
    """The verdicts of the run named by the test's `@pytest.mark.judge_run(prompt=..., claims=..., run=...)`,
    replayed offline (recorded first when `--record-mode` says so): `assert judge_run == verdict_snapshot`."""
    from replay.secrets.environment import remember_environment
    from replay.snapshots.record_mode import marked_run

    remember_environment()  # again: a test (or a conftest) may have set them after the session began
    return marked_run(request)


@pytest.fixture
def verdict_snapshot(snapshot: SnapshotAssertion) -> VerdictSnapshotAssertion:
    """syrupy's `snapshot`, storing a run's verdicts under `snapshots/<run>/`:
    `assert replay_run("cassettes/v3-demo") == verdict_snapshot`."""
    from replay.secrets.environment import remember_environment
    from replay.snapshots.extension import VerdictSnapshotAssertion

    remember_environment()  # again: a test (or a conftest) may have set them after the session began
    return VerdictSnapshotAssertion.from_snapshot(snapshot)


@pytest.fixture
def learn_stand_in() -> Generator[Callable[..., LearnStandIn], None, None]:
    """Start the Learn MCP stand-in over a pages folder: `learn = learn_stand_in(pages_dir)`, then
    `learn.url` is its endpoint (127.0.0.1, a free port). Keyword options are `replay.sim.start_learn`'s
    (`strict_sessions`, `fail_first`, `fail_status`, `flaky`). Every stand-in started is stopped after the test."""
    from replay.sim import start_learn

    started: list[LearnStandIn] = []

    def start(pages_dir: str | os.PathLike[str], **options: Any) -> LearnStandIn:
        handle = start_learn(Path(pages_dir), **options)
        started.append(handle)
        return handle

    yield start
    for handle in reversed(started):
        handle.stop()


@pytest.fixture
def model_stand_in() -> Generator[Callable[..., ModelStandIn], None, None]:
    """Start the Messages API stand-in (a deterministic judge policy, as strict as the API about requests):
    `model = model_stand_in()`, then `model.url` is the base URL to give the `anthropic` client. Keyword
    options are `replay.sim.start_model`'s (`fetch_per_turn`, `batch_settings`, `thinking`, `cut_off`, `noise`).
    Every stand-in started is stopped after the test."""
    from replay.sim import start_model

    started: list[ModelStandIn] = []

    def start(**options: Any) -> ModelStandIn:
        handle = start_model(**options)
        started.append(handle)
        return handle

    yield start
    for handle in reversed(started):
        handle.stop()
