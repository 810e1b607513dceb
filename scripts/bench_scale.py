"""Whole-command cost at knowledge-base scale: record, live, replay, verify, grade, diff, drift per size.

For each size (claims files of 10 claims each, `--sizes 50,500` by default) a workspace under
`.judge-replay/bench/kb-<size>/` (`--workdir` for another folder) holds claims about the real-size Learn pages of
tests/data/learn-pages (9-30 KB each) and a gold set (see `_bench_runs.py`). With the stand-ins
running as separate processes on 127.0.0.1 (`judge-replay sim learn|model`), it times, each as a
whole `judge-replay` process (wall, CPU = user+sys, peak RSS, from `os.wait4`), with our modules
compiled to bytecode first, as an install leaves them (`_bench_runs.compiled`):

    record        judge --mode record over the "before" pages into runs/before (fresh every time)
    live          judge --mode live, same claims and pages (what recording is compared with, in CPU)
    replay_cold   judge --mode replay --run runs/before, the cassette cache emptied first
    replay        the same again (the cache warm: what every later command sees), a full replay: the
                  receipt of the previous one deleted first
    replay_receipt the same once more, after a full replay: answered from its receipt (see README,
                  "How recording and replay work"), which is what a replay of an unchanged run costs
    verify        cassettes verify runs/before
    grade         grade runs/before/results.json --gold gold.json
    diff          diff runs/before runs/after (runs/after: the same claims on the "after" pages,
                  recorded once and kept)
    drift         drift runs/before --against runs/after
    help          judge-replay --help

`--reuse` keeps an existing runs/before (skips record and live); `--repeat N` runs each offline command
N times and keeps the run with the least CPU (the machine may be shared). `--no-cache` sets
JUDGE_REPLAY_NO_CACHE=1 for every command (the figures without the parsed-cassette cache).
`--commands grade,diff` times only those commands (record and live go together, and a missing
runs/before is recorded whatever the commands; replay_cold empties
the cassette cache first, so without it the other commands find the cache as the last command left it:
use `--repeat 2` for warm figures).

After the tables of the sizes it prints the issue's targets with the figures that meet or miss them:
record CPU / live CPU (<= 1.15), verify - replay (<= 0.5 s wall), grade, diff and drift at the largest
size (<= 2 s wall each), peak RSS at the largest size / at the smallest per command (<= 1.2x), `--help` (<= 0.15 s).
The last line of output is JSON: per size, each command's wall_s, cpu_s, peak_rss_mb and
ms_per_file, plus the cassette bytes and record CPU / live CPU; then the targets, each with its figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_runs import BENCH, CLI, Measure, compiled, judge, recorded_run, stand_ins, timed, workspace  # noqa: E402

COMMANDS = ("record", "live", "replay_cold", "replay", "replay_receipt", "verify", "grade", "diff", "drift", "help")
TARGETS = {"record_cpu_over_live": 1.15, "verify_minus_replay_s": 0.5, "seconds_at_largest": 2.0,
           "peak_rss_largest_over_smallest": 1.2, "help_s": 0.15}
"""The issue's targets (benchmarks, not timed tests)."""


def best(args: list[str], ws: Path, repeat: int, ok_codes: tuple[int, ...] = (0,),
         prepare: Callable[[], None] = lambda: None) -> Measure:
    """The least disturbed of `repeat` runs (least CPU; the machine may be shared), `prepare()` before each."""
    measures = []
    for _ in range(repeat):
        prepare()
        measures.append(timed(args, ws, ok_codes=ok_codes))
    return min(measures, key=lambda m: m.cpu)


def bench_size(files: int, *, reuse: bool, repeat: int, commands: tuple[str, ...] = COMMANDS,
               root: Path = BENCH) -> dict[str, object]:
    ws = workspace(files, root)
    # the parse cache inside the folder replay_cold empties (it lives in the user's cache folder otherwise)
    os.environ["JUDGE_REPLAY_CACHE_DIR"] = str(ws / ".judge-replay" / "cache" / "parsed")
    t = time.perf_counter()
    if {"diff", "drift"} & set(commands):
        recorded_run(files, "after", root)  # kept between runs: only diff and drift read it
    measures: dict[str, Measure] = {}
    before = ws / "runs" / "before"
    timing_record = bool({"record", "live"} & set(commands))
    if not (before / "results.json").is_file() or (timing_record and not reuse):
        shutil.rmtree(before, ignore_errors=True)
        with stand_ins() as urls:
            measures["record"] = judge(ws, "record", "runs/before", urls.before, urls.model)
            if timing_record:
                measures["live"] = judge(ws, "live", None, urls.before, urls.model)
    cli = str(CLI)
    replay = [cli, "judge", "--mode", "replay", "--run", "runs/before", "--no-progress"]
    offline: dict[str, tuple[list[str], tuple[int, ...]]] = {
        "replay": (replay, (0,)),
        "verify": ([cli, "cassettes", "verify", "runs/before"], (0,)),
        "grade": ([cli, "grade", "runs/before/results.json", "--gold", "gold.json"], (0,)),
        "diff": ([cli, "diff", "runs/before", "runs/after"], (0, 1)),
        "drift": ([cli, "drift", "runs/before", "--against", "runs/after"], (0, 1)),
        "help": ([cli, "--help"], (0,)),
    }
    receipts = Path(os.environ["JUDGE_REPLAY_CACHE_DIR"]) / "replays"  # the receipts live in the cache folder
    if "replay_cold" in commands:
        shutil.rmtree(ws / ".judge-replay" / "cache", ignore_errors=True)
        measures["replay_cold"] = timed(replay, ws)
    for name, (args, ok_codes) in offline.items():
        if name == "replay" and name in commands:  # a full replay: no receipt of an earlier one
            measures[name] = best(args, ws, repeat, prepare=lambda: shutil.rmtree(receipts, ignore_errors=True))
        elif name in commands:
            measures[name] = best(args, ws, repeat, ok_codes=ok_codes)
    if "replay_receipt" in commands:  # a replay of a run verified since its last change: answered from the receipt
        timed(replay, ws)
        measures["replay_receipt"] = best(replay, ws, repeat)
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


def _figure(size: dict[str, object], name: str, key: str) -> float | None:
    m = size.get(name)
    return float(m[key]) if isinstance(m, dict) else None


def target_figures(sizes: list[dict[str, object]]) -> list[tuple[str, float, float, str]]:
    """Each target the measured sizes give a figure for: (what, figure, target, unit)."""
    rows: list[tuple[str, float, float, str]] = []
    for size in sizes:
        n = size["files"]
        ratio = size.get("record_cpu_over_live")
        if isinstance(ratio, float):
            rows.append((f"record CPU / live CPU at {n} files", ratio, TARGETS["record_cpu_over_live"], "x"))
        verify, replay = _figure(size, "verify", "wall_s"), _figure(size, "replay", "wall_s")
        if verify is not None and replay is not None:
            rows.append((f"verify - replay at {n} files (wall)", round(verify - replay, 3),
                         TARGETS["verify_minus_replay_s"], " s"))
    largest, smallest = sizes[-1], sizes[0]
    for name in ("grade", "diff", "drift"):
        wall = _figure(largest, name, "wall_s")
        if wall is not None:
            rows.append((f"{name} at {largest['files']} files (wall)", wall, TARGETS["seconds_at_largest"], " s"))
    if len(sizes) > 1:
        for name in ("record", "live", "replay", "verify", "grade", "diff", "drift"):
            a, b = _figure(smallest, name, "peak_rss_mb"), _figure(largest, name, "peak_rss_mb")
            if a and b is not None:
                rows.append((f"peak RSS {name} {largest['files']}/{smallest['files']} files ({a:.0f} -> {b:.0f} MB)",
                             round(b / a, 3), TARGETS["peak_rss_largest_over_smallest"], "x"))
    helps = [h for h in (_figure(size, "help", "wall_s") for size in sizes) if h is not None]
    if helps:
        rows.append(("judge-replay --help (least wall time)", min(helps), TARGETS["help_s"], " s"))
    return rows


def print_targets(rows: list[tuple[str, float, float, str]]) -> None:
    if not rows:
        return
    print("targets (issue 13):")
    width = max(len(what) for what, *_ in rows)
    for what, figure, target, unit in rows:
        mark = "ok" if figure <= target else "MISSED"
        print(f"  {what:<{width}} {figure:8.3f}{unit:<2} (target <= {target}{unit.strip()})  {mark}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,500", help="claims-file counts, comma-separated (default 50,500)")
    parser.add_argument("--reuse", action="store_true", help="keep an already recorded runs/before (no record/live timing)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each offline command; the one with the least CPU counts (default 1)")
    parser.add_argument("--no-cache", action="store_true", help="run every command with JUDGE_REPLAY_NO_CACHE=1")
    parser.add_argument("--commands", default=",".join(COMMANDS),
                        help=f"commands to time, comma-separated (default all: {','.join(COMMANDS)})")
    parser.add_argument("--workdir", type=Path, default=BENCH,
                        help="where the kb-<size> workspaces live (default .judge-replay/bench)")
    args = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes must be numbers separated by commas, not {args.sizes!r}")
    if not sizes or min(sizes) < 1:
        parser.error("--sizes needs at least one size of 1 or more")
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    commands = tuple(c.strip() for c in args.commands.split(",") if c.strip())
    unknown = sorted(set(commands) - set(COMMANDS))
    if unknown or not commands:
        parser.error(f"--commands takes some of {','.join(COMMANDS)}, not {args.commands!r}")
    if args.no_cache:
        os.environ["JUDGE_REPLAY_NO_CACHE"] = "1"
    compiled()
    results = [bench_size(n, reuse=args.reuse, repeat=args.repeat, commands=commands, root=args.workdir)
               for n in sizes]
    rows = target_figures(results)
    print_targets(rows)
    targets = [{"what": what, "figure": figure, "target": target, "met": figure <= target}
               for what, figure, target, _ in rows]
    print(json.dumps({"cache": not args.no_cache, "commands": list(commands), "sizes": results, "targets": targets}))


if __name__ == "__main__":
    main()
