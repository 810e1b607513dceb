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


@pytest.fixture(autouse=True)
def _forget_secrets():
    """Each test starts with no remembered secret: the registry (`replay.secrets.registry`) is process-wide, and a
    key one test's run remembered would otherwise be redacted from the files of every later test."""
    from replay.secrets import registry as _secrets

    _secrets.forget_all()
    yield
    _secrets.forget_all()


@pytest.fixture(autouse=True)
def _wide_reports(monkeypatch):
    """Text reports laid out 1,000 columns wide, so that a test looking for a phrase finds it on one line.
    The width tests (tests/reports/test_width.py) set COLUMNS themselves."""
    monkeypatch.setenv("COLUMNS", "1000")
