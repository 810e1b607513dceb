"""The benchmarks: --commands times only those, the issue's targets come out of one run, and the cassette
writers are priced on the same exchanges."""

import json
import subprocess
import sys
from pathlib import Path
from locations import REPO

SCRIPTS = REPO / "scripts"
SCRIPT = SCRIPTS / "bench_scale.py"


def test_the_scale_benchmark_times_the_commands_asked_for_and_reports_the_targets(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--sizes", "1,2", "--commands", "grade,help",
                           "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=300)
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
    assert not (tmp_path / "kb-1" / "runs" / "after").exists()  # only diff and drift need the later run


def test_the_record_write_benchmark_prices_both_writers_on_the_same_exchanges(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPTS / "bench_record_write.py"), "--files", "2", "--repeat", "1",
                           "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["files"] == 2 and result["interactions"] >= 2 * 4  # two model turns and Learn calls each
    assert result["judge_replay_cpu_s"] > 0 and result["vcrpy_cpu_s"] > 0
    assert not list(tmp_path.rglob("record-write-*"))  # its scratch folders are gone


def test_the_cold_benchmark_times_both_ways_and_the_floor(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPTS / "bench_cold.py"), "--files", "2", "--repeat", "1",
                           "--commands", "grade,drift", "--jobs", "2", "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["files"] == 2 and result["jobs"] == 2 and "diff" not in result
    for name in ("grade", "drift"):
        figures = result[name]
        assert set(figures) == {"floor", "cold_jobs_1", "cold", "warm", "over_floor", "cold_met"}
        assert figures["floor"]["wall_s"] > 0 and figures["cold"]["cpu_s"] > 0 and figures["over_floor"]["warm"] > 0
    assert (tmp_path / "kb-2" / ".judge-replay" / "bench-cache").is_dir()  # its own parse cache, no one else's
