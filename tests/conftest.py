"""Fixtures every test folder shares. Tests import their shared builders as `factories` and their paths
from `locations` (pyproject.toml puts `tests/` on the path)."""

import pytest

from locations import REPO


@pytest.fixture
def learn_wire():
    """A server that answers with the real Learn endpoint's bytes (tests/learn_wire.py); its `url` is the endpoint."""
    from learn_wire import LearnWire

    with LearnWire() as server:
        yield server


@pytest.fixture
def demo_learn():
    """The Learn stand-in over the demo's 2026-06 page snapshot."""
    from replay.sim import start_learn

    with start_learn(REPO / "demo" / "pages" / "2026-06") as handle:
        yield handle


@pytest.fixture
def cached_project(tmp_path, monkeypatch):
    """A project folder (it has a pyproject.toml) as the working folder, with our caches on."""
    from replay.cassettes.cache import OFF_VARIABLE

    (tmp_path / "pyproject.toml").write_text("[tool.judge-replay]\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(OFF_VARIABLE, raising=False)
    return tmp_path


@pytest.fixture
def project(cached_project):
    """A project folder as the working folder, caches on (`cached_project`); test files that need runs or
    claims in it override this with their own `project`."""
    return cached_project


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """`tmp_path` as the working folder, with no Anthropic credential in the environment (a test that
    needs one passes it). Test files that need pages or claims in it override this, building on it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    return tmp_path


@pytest.fixture
def stand_ins(workdir):
    """(Learn stand-in over `workdir / "pages"`, model stand-in)."""
    from replay.sim import start_learn, start_model

    with start_learn(workdir / "pages") as learn, start_model() as model:
        yield learn, model


@pytest.fixture(autouse=True)
def _own_cache_folder(tmp_path, monkeypatch):
    """Each test's derived caches live in its own folder (`replay.cassettes.cache.cache_folder`), never in
    the user's cache folder."""
    monkeypatch.setenv("JUDGE_REPLAY_CACHE_DIR", str(tmp_path / ".judge-replay" / "cache"))


@pytest.fixture(autouse=True)
def _forget_secrets():
    """Each test starts with no remembered secret: the registry (`replay.secrets.registry`) is process-wide, and a
    key one test's run remembered would otherwise be redacted from the files of every later test."""
    from replay.secrets import registry as _secrets

    _secrets.forget_all()
    yield
    _secrets.forget_all()


SLOW = (
    "tests/test_typing.py",
    "tests/test_layers.py",
    "tests/test_docs.py::test_the_site_builds_strict_without_a_warning",
    "tests/test_docs.py::test_a_broken_link_or_anchor_fails_the_build",
    "tests/golden/test_golden_outputs.py::test_golden_output",
    "tests/test_acceptance.py",
    "tests/cli/test_not_regular_files.py",
    "tests/judge/test_system_limits.py",
    "tests/judge/test_batches.py",
    "tests/learn/test_sessions.py",
    "tests/runs/test_writer.py::test_a_killed_rerecord_leaves_the_previous_run_as_it_was",
    "tests/runs/test_writer.py::test_a_second_recording_into_a_run_in_flight_is_refused",
)
"""The tests that take seconds each (a CLI in a subprocess, a whole recording, mypy, the docs build), by
node id prefix, as `--durations=40` ranked them: marked `slow`, so `-m "not slow"` runs the rest in a
fraction of the time."""


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _wide_reports(monkeypatch):
    """Text reports laid out 1,000 columns wide, so that a test looking for a phrase finds it on one line.
    The width tests (tests/reports/test_width.py) set COLUMNS themselves."""
    monkeypatch.setenv("COLUMNS", "1000")
