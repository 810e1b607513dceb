"""Whole-command cost at knowledge-base scale: record, live, replay, verify, grade, diff, drift per size.

For each size (claims files of 10 claims each, `--sizes 50,500` by default) a workspace under
`.judge-replay/bench/kb-<size>/` holds claims about the real-size Learn pages of
tests/data/learn-pages (9-30 KB each) and a gold set (see `_bench_runs.py`). With the stand-ins
running as separate processes on 127.0.0.1 (`judge-replay sim learn|model`), it times, each as a
whole `judge-replay` process (wall, CPU = user+sys, peak RSS, from `os.wait4`):

    record        judge --mode record over the "before" pages into runs/before (fresh every time)
    live          judge --mode live, same claims and pages (what recording is compared with, in CPU)
    replay_cold   judge --mode replay --run runs/before, the cassette cache emptied first
    replay        the same again (the cache warm: what every later command sees)
    verify        cassettes verify runs/before
    grade         grade runs/before/results.json --gold gold.json
    diff          diff runs/before runs/after (runs/after: the same claims on the "after" pages,
                  recorded once and kept)
    drift         drift runs/before --against runs/after
    help          judge-replay --help

`--reuse` keeps an existing runs/before (skips record and live); `--repeat N` runs each offline command
N times and keeps the run with the least CPU (the machine may be shared). `--no-cache` sets
JUDGE_REPLAY_NO_CACHE=1 for every command (the figures without the parsed-cassette cache).
The last line of output is JSON: per size, each command's wall_s, cpu_s, peak_rss_mb and
ms_per_file, plus the cassette bytes and record CPU / live CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_runs import CLI, Measure, judge, recorded_run, stand_ins, timed, workspace  # noqa: E402

COMMANDS = ("record", "live", "replay_cold", "replay", "verify", "grade", "diff", "drift", "help")


def best(args: list[str], ws: Path, repeat: int, ok_codes: tuple[int, ...] = (0,)) -> Measure:
    """The least disturbed of `repeat` runs (least CPU; the machine may be shared)."""
    return min((timed(args, ws, ok_codes=ok_codes) for _ in range(repeat)), key=lambda m: m.cpu)


def bench_size(files: int, *, reuse: bool, repeat: int) -> dict[str, object]:
    ws = workspace(files)
    t = time.perf_counter()
    recorded_run(files, "after")  # kept between runs: only diff and drift read it
    measures: dict[str, Measure] = {}
    before = ws / "runs" / "before"
    if not (reuse and (before / "results.json").is_file()):
        shutil.rmtree(before, ignore_errors=True)
        with stand_ins() as urls:
            measures["record"] = judge(ws, "record", "runs/before", urls.before, urls.model)
            measures["live"] = judge(ws, "live", None, urls.before, urls.model)
    shutil.rmtree(ws / ".judge-replay" / "cache", ignore_errors=True)
    cli = str(CLI)
    replay = [cli, "judge", "--mode", "replay", "--run", "runs/before", "--no-progress"]
    measures["replay_cold"] = timed(replay, ws)
    measures["replay"] = best(replay, ws, repeat)
    measures["verify"] = best([cli, "cassettes", "verify", "runs/before"], ws, repeat)
    measures["grade"] = best([cli, "grade", "runs/before/results.json", "--gold", "gold.json"], ws, repeat)
    measures["diff"] = best([cli, "diff", "runs/before", "runs/after"], ws, repeat, ok_codes=(0, 1))
    measures["drift"] = best([cli, "drift", "runs/before", "--against", "runs/after"], ws, repeat, ok_codes=(0, 1))
    measures["help"] = best([cli, "--help"], ws, repeat)
    cassette_bytes = sum(p.stat().st_size for p in before.glob("*.yaml"))
    interactions = json.loads((before / "run.json").read_text("utf-8"))["stats"]["interactions"]
    print(f"{files} files ({cassette_bytes / 1e6:.1f} MB of cassettes, {interactions} interactions;"
          f" {time.perf_counter() - t:.0f} s in all):")
    print(f"  {'command':<12} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'ms/file':>8}")
    out: dict[str, object] = {"files": files, "cassette_mb": round(cassette_bytes / 1e6, 1), "interactions": interactions}
    for name in COMMANDS:
        m = measures.get(name)
        if m is None:
            continue
        per_file = m.wall * 1000 / files
        print(f"  {name:<12} {m.wall:8.2f} {m.cpu:8.2f} {m.rss_mb:8.0f} {per_file:8.1f}")
        out[name] = {**m.as_json(), "ms_per_file": round(per_file, 2)}
    if "record" in measures and "live" in measures:
        ratio = measures["record"].cpu / measures["live"].cpu
        out["record_cpu_over_live"] = round(ratio, 3)
        print(f"  record CPU / live CPU: {ratio:.2f}")
    sys.stdout.flush()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,500", help="claims-file counts, comma-separated (default 50,500)")
    parser.add_argument("--reuse", action="store_true", help="keep an already recorded runs/before (no record/live timing)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each offline command; the one with the least CPU counts (default 1)")
    parser.add_argument("--no-cache", action="store_true", help="run every command with JUDGE_REPLAY_NO_CACHE=1")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes must be numbers separated by commas, not {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        parser.error("--sizes needs at least one size of 1 or more")
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    if args.no_cache:
        os.environ["JUDGE_REPLAY_NO_CACHE"] = "1"
    results = [bench_size(n, reuse=args.reuse, repeat=args.repeat) for n in sizes]
    if len(results) > 1:
        small, large = results[0], results[-1]
        for name in ("replay", "verify", "grade", "diff", "drift"):
            a, b = small.get(name), large.get(name)
            if isinstance(a, dict) and isinstance(b, dict):
                print(f"peak memory {name}: {a['peak_rss_mb']:.0f} MB at {small['files']} files, "
                      f"{b['peak_rss_mb']:.0f} MB at {large['files']} files ({b['peak_rss_mb'] / a['peak_rss_mb']:.2f}x)")
    print(json.dumps({"cache": not args.no_cache, "sizes": results}))


if __name__ == "__main__":
    main()
