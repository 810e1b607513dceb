"""Warm speed of two installs side by side: grade, diff, drift (and replay) with every cache warm, CPU seconds.

Each side is an installed `judge-replay` (the script in a venv's bin/) and a copy of the benchmark
workspace of its own (`bench_scale.py`'s `.judge-replay/bench/kb-500`, copied with `cp -a`), so that the
two never share a cache: each side's derived caches live in a folder of its workspace
(`JUDGE_REPLAY_CACHE_DIR=<workspace>/.judge-replay/warm-cache`). Every command is first run twice on
each side, not counted (the caches are then warm on both: an older install may keep its caches
elsewhere, in the project), then the two sides alternate, pairs B A, A B, B A, ..., each timed as a whole process
(`os.wait4`: user + system CPU seconds of that process and its children). Printed: per command, each
side's median CPU seconds, and the median, least and largest of the pair-by-pair ratios A/B.

    python scripts/bench_warm.py --a /tmp/venv-new/bin/judge-replay /tmp/ws-new \\
                                 --b /tmp/venv-old/bin/judge-replay /tmp/ws-old --repeat 5

The last line of output is JSON: per command, the two sides' medians and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_runs import Measure, timed  # noqa: E402

COMMANDS: dict[str, tuple[list[str], tuple[int, ...]]] = {
    # name: (arguments, exit codes that are fine)
    "diff": (["diff", "runs/before", "runs/after", "--format", "json"], (0, 1)),
    "grade": (["grade", "runs/before/results.json", "--gold", "gold.json"], (0,)),
    "drift": (["drift", "runs/before", "--against", "runs/after"], (0, 1)),
    "grade-json": (["grade", "runs/before/results.json", "--gold", "gold.json", "--json"], (0,)),
    "drift-json": (["drift", "runs/before", "--against", "runs/after", "--json"], (0, 1)),
    "replay": (["judge", "--mode", "replay", "--run", "runs/before", "--no-progress"], (0,)),
}


def _run(cli: str, ws: Path, args: list[str], ok: tuple[int, ...]) -> Measure:
    os.environ["JUDGE_REPLAY_CACHE_DIR"] = str(ws / ".judge-replay" / "warm-cache")
    return timed([cli, *args], ws, ok_codes=ok)


def bench(a: tuple[str, Path], b: tuple[str, Path], commands: list[str], repeat: int,
          extra: list[str]) -> dict[str, object]:
    out: dict[str, object] = {"repeat": repeat}
    print(f"warm, {repeat} pair(s), B A then A B in turn; CPU seconds (user+sys) of the whole process, medians")
    print(f"  A: {a[0]} in {a[1]}\n  B: {b[0]} in {b[1]}")
    print(f"  {'command':<8} {'A cpu s':>8} {'B cpu s':>8} {'A/B median':>11} {'min':>6} {'max':>6}  same output")
    for name in commands:
        args, ok = COMMANDS[name]
        args = [*args, *extra]
        for cli, ws in (a, b, a, b):  # warm-up, not counted
            _run(cli, ws, args, ok)
        ta: list[Measure] = []
        tb: list[Measure] = []
        for i in range(repeat):  # B A, A B, B A, ...: neither side is always the first of its pair
            if i % 2:
                ta.append(_run(*a, args, ok))
                tb.append(_run(*b, args, ok))
            else:
                tb.append(_run(*b, args, ok))
                ta.append(_run(*a, args, ok))
        ratios = [x.cpu / y.cpu for x, y in zip(ta, tb)]
        ma, mb = statistics.median(m.cpu for m in ta), statistics.median(m.cpu for m in tb)
        same = ta[0].stdout == tb[0].stdout and ta[0].returncode == tb[0].returncode
        print(f"  {name:<8} {ma:8.2f} {mb:8.2f} {statistics.median(ratios):11.3f} {min(ratios):6.3f}"
              f" {max(ratios):6.3f}  {'yes' if same else 'no'}")
        sys.stdout.flush()
        out[name] = {"a_cpu_s": round(ma, 3), "b_cpu_s": round(mb, 3),
                     "ratio_median": round(statistics.median(ratios), 3),
                     "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3), "same_output": same}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", nargs=2, metavar=("CLI", "WORKSPACE"), required=True,
                        help="the judge-replay to measure and its own copy of the workspace")
    parser.add_argument("--b", nargs=2, metavar=("CLI", "WORKSPACE"), required=True,
                        help="the judge-replay to compare it with and its own copy of the workspace")
    parser.add_argument("--repeat", type=int, default=5, help="pairs of counted runs (default 5)")
    parser.add_argument("--commands", default="diff,grade,drift", help=f"some of {','.join(COMMANDS)}")
    parser.add_argument("--jobs", type=int, default=None, help="give every command --jobs N (both sides must know it)")
    args = parser.parse_args(argv)
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    if not commands or set(commands) - set(COMMANDS):
        parser.error(f"--commands takes some of {','.join(COMMANDS)}")
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    a = (args.a[0], Path(args.a[1]).resolve())
    b = (args.b[0], Path(args.b[1]).resolve())
    if a[1] == b[1]:
        parser.error("each side needs a workspace of its own (cp -a one)")
    os.environ.pop("JUDGE_REPLAY_NO_CACHE", None)
    extra = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    result = bench(a, b, commands, args.repeat, extra)
    after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average (1 min) before and after: {load:.1f}, {after:.1f} on {os.cpu_count()} cores")
    print(json.dumps({**result, "load_before": round(load, 2), "load_after": round(after, 2)}))


if __name__ == "__main__":
    main()
