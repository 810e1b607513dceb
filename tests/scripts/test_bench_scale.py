"""The benchmarks: --commands times only those, the issue's targets come out of one run, and the cassette
writers are priced on the same exchanges.

The three scripts share one benchmark folder (`bench`): a workspace's runs are recorded by whichever script
first needs them and kept, as the scripts keep them between runs, so kb-2's "before" run (the scale and
cold benchmarks) and its "after" run (the record-write and cold benchmarks) are recorded once."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from locations import REPO

SCRIPTS = REPO / "scripts"
SCRIPT = SCRIPTS / "bench_scale.py"


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench")


def test_the_scale_benchmark_times_the_commands_asked_for_and_reports_the_targets(bench: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "1,2", "--commands", "grade,help",
                           "--workdir", str(bench)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    *human, last = done.stdout.strip().splitlines()
    result = json.loads(last)
    assert result["commands"] == ["grade", "help"]
    for size, files in zip(result["sizes"], (1, 2)):
        assert size["files"] == files and size["interactions"] > 0
        assert {"grade", "help"} <= set(size) and not {"replay", "verify", "diff", "drift"} & set(size)
        assert size["grade"]["ms_per_file"] > 0 and size["grade"]["peak_rss_mb"] > 0
    targets = {t["what"]: t for t in result["targets"]}
    assert targets["grade at 2 files (wall)"]["target"] == 2.0
    [rss] = [t for what, t in targets.items() if what.startswith("peak RSS grade 2/1 files")]
    assert rss["target"] == 1.2 and rss["figure"] > 0
    assert any(what.startswith("judge-replay --help") for what in targets)
    assert "targets (issue 13):" in human and any(line.rstrip().endswith(("ok", "MISSED")) for line in human)
    assert not (bench / "kb-1" / "runs" / "after").exists()  # only diff and drift need the later run


def test_the_record_write_benchmark_prices_both_writers_on_the_same_exchanges(bench: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPTS / "bench_record_write.py"), "--files", "2", "--repeat", "1",
                           "--workdir", str(bench)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["files"] == 2 and result["interactions"] >= 2 * 4  # two model turns and Learn calls each
    assert result["judge_replay_cpu_s"] > 0 and result["vcrpy_cpu_s"] > 0
    assert not list(bench.rglob("record-write-*"))  # its scratch folders are gone


def test_the_cold_benchmark_times_both_ways_and_the_floor(bench: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPTS / "bench_cold.py"), "--files", "2", "--repeat", "1",
                           "--commands", "grade,drift", "--jobs", "2", "--workdir", str(bench)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["files"] == 2 and result["jobs"] == 2 and "diff" not in result
    for name in ("grade", "drift"):
        figures = result[name]
        assert set(figures) == {"floor", "cold_jobs_1", "cold", "warm", "over_floor", "cold_met"}
        assert figures["floor"]["wall_s"] > 0 and figures["cold"]["cpu_s"] > 0 and figures["over_floor"]["warm"] > 0
    assert (bench / "kb-2" / ".judge-replay" / "bench-cache").is_dir()  # its own parse cache, no one else's
