"""Cold and warm cost of the commands that read runs, against the floor: replay, verify, grade, diff, drift.

On the benchmark workspace of `bench_scale.py` (`--files` claims files, 500 by default, under
`.judge-replay/bench/kb-<files>/`: runs/before and runs/after recorded once through the real CLI
against the stand-ins, see `_bench_runs.py`), each command is timed as a whole process (`os.wait4`):

    cold, --jobs 1   the parse cache emptied first (and the project's receipts), as in a fresh CI job,
                     every cassette parsed one after another in the command's process
    cold, --jobs N   the same, the cassettes parsed by N worker processes (default: one per core)
    warm             the command again, with what the one before it left (what the next job sees when
                     a CI cache step keeps the caches)
    floor            one process reading every byte of the files the command reads (the run folders,
                     the claims or the gold set): what no command that reads its input can beat

The two cold runs alternate (paired: `--repeat` pairs), so both see the same load on a shared machine;
the median of each is printed, with each figure over the floor. The parse cache lives in a folder of
the workspace's own (`JUDGE_REPLAY_CACHE_DIR`), so nothing else's cache is touched.

    python scripts/bench_cold.py                 # 500 files, 3 pairs, every command
    python scripts/bench_cold.py --files 50 --repeat 1 --commands grade,diff

The last line of output is JSON: per command, the medians (wall_s, cpu_s) of each way, the floor, and
the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_runs import BENCH, CLI, Measure, compiled, recorded_run, timed, workspace  # noqa: E402

COMMANDS: dict[str, tuple[list[str], tuple[str, ...], tuple[int, ...]]] = {
    # name: (arguments, what it reads besides the run folders' files, exit codes that are fine)
    "replay": (["judge", "--mode", "replay", "--run", "runs/before", "--no-progress"], ("claims",), (0,)),
    "verify": (["cassettes", "verify", "runs/before"], ("claims",), (0,)),
    "grade": (["grade", "runs/before/results.json", "--gold", "gold.json"], ("gold.json",), (0,)),
    "diff": (["diff", "runs/before", "runs/after"], ("gold.json",), (0, 1)),
    "drift": (["drift", "runs/before", "--against", "runs/after"], (), (0, 1)),
}
RUNS = {"replay": ("before",), "verify": ("before",), "grade": ("before",), "diff": ("before", "after"),
        "drift": ("before", "after")}
TARGET = 15.0
"""The issue's bound: cold at most 15x the floor."""

FLOOR = """import os, sys
n = 0
for top in sys.argv[1:]:
    for folder, _, names in os.walk(top) if os.path.isdir(top) else [("", [], [top])]:
        for name in names:
            with open(os.path.join(folder, name), "rb") as fh:
                n += len(fh.read())
print(n)
"""


def _cold(ws: Path, cache: Path) -> None:
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(ws / ".judge-replay" / "cache", ignore_errors=True)  # receipts and verified marks


def _median(measures: list[Measure]) -> dict[str, float]:
    return {"wall_s": round(statistics.median(m.wall for m in measures), 3),
            "cpu_s": round(statistics.median(m.cpu for m in measures), 3)}


def bench(files: int, commands: list[str], repeat: int, jobs: int, root: Path = BENCH) -> dict[str, object]:
    ws = workspace(files, root)
    recorded_run(files, "before", root)
    recorded_run(files, "after", root)
    cache = ws / ".judge-replay" / "bench-cache"
    os.environ["JUDGE_REPLAY_CACHE_DIR"] = str(cache)
    out: dict[str, object] = {"files": files, "jobs": jobs, "repeat": repeat}
    cli = str(CLI)
    print(f"{files} files; cold --jobs 1 and --jobs {jobs} alternate, {repeat} pair(s); medians; x = over the floor")
    print(f"  {'command':<8} {'floor s':>8} {'cold j1 s':>10} {'x':>6} {f'cold j{jobs} s':>10} {'x':>6}"
          f" {'warm s':>8} {'x':>6}   (CPU s: cold j1, cold jN incl. workers, warm)")
    for name in commands:
        args, extra, ok = COMMANDS[name]
        reads = [str(ws / "runs" / run) for run in RUNS[name]] + [str(ws / e) for e in extra]
        floor = [timed([sys.executable, "-c", FLOOR, *reads], ws) for _ in range(repeat + 2)]
        serial: list[Measure] = []
        parallel: list[Measure] = []
        for _ in range(repeat):
            _cold(ws, cache)
            serial.append(timed([cli, *args, "--jobs", "1"], ws, ok_codes=ok))
            _cold(ws, cache)
            parallel.append(timed([cli, *args, "--jobs", str(jobs)], ws, ok_codes=ok))
        warm = [timed([cli, *args, "--jobs", str(jobs)], ws, ok_codes=ok) for _ in range(repeat)]
        if serial[0].stdout != parallel[0].stdout or serial[0].returncode != parallel[0].returncode:
            raise SystemExit(f"{name}: --jobs 1 and --jobs {jobs} printed different outputs")
        f, s, p, w = _median(floor), _median(serial), _median(parallel), _median(warm)
        ratios = {k: round(v["wall_s"] / f["wall_s"], 1) for k, v in (("cold_jobs_1", s), ("cold", p), ("warm", w))}
        print(f"  {name:<8} {f['wall_s']:8.3f} {s['wall_s']:10.2f} {ratios['cold_jobs_1']:6.1f} {p['wall_s']:10.2f}"
              f" {ratios['cold']:6.1f} {w['wall_s']:8.2f} {ratios['warm']:6.1f}   ({s['cpu_s']:.1f}, {p['cpu_s']:.1f},"
              f" {w['cpu_s']:.1f})")
        sys.stdout.flush()
        out[name] = {"floor": f, "cold_jobs_1": s, "cold": p, "warm": w, "over_floor": ratios,
                     "cold_met": ratios["cold"] <= TARGET}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500, help="claims files in the runs (default 500)")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of cold runs, and warm runs (default 3)")
    parser.add_argument("--jobs", type=int, default=None, help="jobs of the parallel cold runs (default: one per core)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help=f"some of {','.join(COMMANDS)}")
    parser.add_argument("--workdir", type=Path, default=BENCH,
                        help="where the kb-<files> workspaces live (default .judge-replay/bench)")
    args = parser.parse_args(argv)
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    if not commands or set(commands) - set(COMMANDS):
        parser.error(f"--commands takes some of {','.join(COMMANDS)}")
    if args.files < 1 or args.repeat < 1 or (args.jobs is not None and args.jobs < 1):
        parser.error("--files, --repeat and --jobs must be 1 or more")
    jobs = args.jobs or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    os.environ.pop("JUDGE_REPLAY_NO_CACHE", None)
    compiled()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result = bench(args.files, commands, args.repeat, jobs, args.workdir)
    after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average (1 min) before and after: {load:.1f}, {after:.1f} on {os.cpu_count()} cores")
    print(json.dumps({**result, "load_before": round(load, 2), "load_after": round(after, 2)}))


if __name__ == "__main__":
    main()
