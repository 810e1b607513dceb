"""`cassettes.parallel.warm`: cold cassettes parsed in worker processes into the parse cache, nothing else."""

import shutil
from pathlib import Path

import pytest

from locations import REPO
from replay.cassettes.cache import OFF_VARIABLE, Cassette, entry_is_current, every_byte_hashed, private_entries
from replay.cassettes.parallel import MIN_COLD, jobs, using_jobs
from replay.recording.tape import warm_replay_indexes
from replay.runs.folder import Run, _conversation_parser, warm_conversations
from replay.secrets.registry import remember


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Two copies of the bundled demo runs (10 cassettes in all), the caches on and empty."""
    monkeypatch.delenv(OFF_VARIABLE, raising=False)
    out = []
    for name in ("v2-demo", "v3-demo"):
        shutil.copytree(REPO / "cassettes" / name, tmp_path / name)
        out.append(Run(tmp_path / name))
    return out


def _cassettes(runs):
    return [run.cassette_path(entry.file) for run in runs for entry in run.manifest.claims]


def _current(paths):
    return [entry_is_current(Cassette(p), "conversation", _conversation_parser()) for p in paths]


def test_workers_write_the_entries_and_only_the_cold_ones_go_to_them(runs):
    paths = _cassettes(runs)
    assert len(paths) >= MIN_COLD
    assert _current(paths) == [False] * len(paths)
    with using_jobs(2):
        assert warm_conversations(*runs) == len(paths)
        assert _current(paths) == [True] * len(paths)
        assert warm_conversations(*runs) == 0  # warm: no worker started
        paths[2].write_bytes(paths[2].read_bytes() + b"# changed\n")  # one stale, the rest still current
        assert sum(_current(paths)) == len(paths) - 1
        assert warm_conversations(*runs) == 0  # fewer than MIN_COLD cold: the serial work parses it


def test_one_job_starts_no_worker(runs):
    with using_jobs(1):
        assert jobs() == 1
        assert warm_conversations(*runs) == 0
    assert _current(_cassettes(runs)) == [False] * len(_cassettes(runs))


def test_outside_the_command_line_no_worker_starts(runs):
    """A library caller gets one process unless it asks (a worker would import its main module)."""
    assert jobs() == 1
    assert warm_conversations(*runs) == 0
    with using_jobs(None):
        assert jobs() >= 1
    assert jobs() == 1


def test_the_cache_off_starts_no_worker(runs, monkeypatch):
    monkeypatch.setenv(OFF_VARIABLE, "1")
    with using_jobs(2):
        assert warm_conversations(*runs) == 0


def test_workers_keep_no_entry_of_a_cassette_holding_a_secret(runs):
    """The secrets the command was given reach the workers: a cassette that holds one gets no entry."""
    paths = _cassettes(runs)
    secret = "sk-ant-planted-" + "x" * 20
    paths[4].write_bytes(paths[4].read_bytes() + f"# {secret}\n".encode())
    remember(secret)
    with using_jobs(2):
        assert warm_conversations(*runs) == len(paths)
    assert _current(paths) == [i != 4 for i in range(len(paths))]


def test_a_damaged_cassette_is_left_to_the_serial_work(runs):
    paths = _cassettes(runs)
    paths[1].write_text("interactions: [unclosed\n", "utf-8")
    with using_jobs(2):
        assert warm_conversations(*runs) == len(paths)
    assert _current(paths) == [i != 1 for i in range(len(paths))]


def test_private_entries_keep_the_user_cache_untouched(runs, tmp_path):
    """Inside `cassettes verify`'s blocks the workers' entries go to a folder of the check's own, deleted at
    its end; the user's cache gets none."""
    paths = [run.cassette_path(entry.file) for run in runs for entry in run.manifest.claims]
    with using_jobs(2), every_byte_hashed(), private_entries() as folder:
        assert warm_replay_indexes(paths) == len(paths)
        assert warm_replay_indexes(paths) == 0  # the check sees them, from its own folder
        made = sorted(p.name for p in Path(folder).iterdir())
        assert sum(name.endswith(".replay-index.bin") for name in made) == len(paths)
    assert not Path(folder).exists()
    cache = tmp_path / ".judge-replay" / "cache"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]
