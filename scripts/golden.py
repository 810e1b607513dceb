"""Golden outputs of every judge-replay command: check them, or write them again.

    python scripts/golden.py                  # run every case, print a unified diff of what differs (exit 1)
    python scripts/golden.py --update         # write tests/golden/expected/ from the current code
    python scripts/golden.py -k drift -k pages  # only the cases whose name contains one of these
    python scripts/golden.py --repeat 3       # run everything 3 times: any output that changes between
                                              # runs is nondeterministic (named, with its diff)
    python scripts/golden.py --list           # the cases
    python scripts/golden.py --subprocess     # every command a new process (default: forked from a
                                              # fork server that has the imports done: faster)
    python scripts/golden.py --compare-modes  # run both ways; any case whose bytes differ is named

The cases are in tests/golden/cases.py, the runner in tests/golden/harness.py; pytest runs the same
check (tests/golden/test_golden_outputs.py). Use it around a refactoring: --update on the code before,
then check on the code after; every stdout, stderr, exit code and written file must be byte-identical.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESS = HERE.parent / "tests" / "golden" / "harness.py"


def _harness():
    spec = importlib.util.spec_from_file_location("judge_replay_golden_harness", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="write the expected outputs from the current code")
    parser.add_argument("-k", action="append", default=[], metavar="TEXT",
                        help="only cases whose name contains TEXT (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run the cases N times and report any that differ between runs")
    parser.add_argument("--workers", type=int, default=None, help="cases run at once (default: CPUs + 1, 2 to 4)")
    parser.add_argument("--keep", action="store_true", help="keep the sandboxes (their folder is printed)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--subprocess", action="store_true",
                        help="run every judge-replay command as a new process (no fork server)")
    parser.add_argument("--compare-modes", action="store_true",
                        help="also run the cases as new processes and report any case whose output differs")
    parser.add_argument("--max-diff-lines", type=int, default=400, help="lines of diff shown per case")
    args = parser.parse_args(argv)

    h = _harness()
    everything = list(h.cases.by_name().values())
    selected = [c for c in everything if not args.k or any(k in c.name for k in args.k)]
    if args.list:
        for c in selected:
            print(c.name + (f"  (compared with {c.expect})" if c.expect else ""))
        return 0
    if not selected:
        print("golden: no case matches", file=sys.stderr)
        return 2
    if args.update and args.k and any(c.expect for c in selected):
        # a variant compares with its base case's output: update the base too
        bases = {c.expect for c in selected if c.expect}
        selected += [c for c in everything if c.name in bases and c not in selected]

    root = None
    if args.keep:
        import tempfile
        root = Path(tempfile.mkdtemp(prefix="judge-replay-golden-"))
        print(f"golden: sandboxes in {root}", file=sys.stderr)

    started = time.monotonic()
    fork = False if args.subprocess else None
    runs = []
    for n in range(args.repeat):
        run_root = None if root is None else root / f"run{n + 1}"
        runs.append(h.run_cases(selected, workers=args.workers, keep=args.keep, root=run_root, fork=fork))
    elapsed = time.monotonic() - started
    first = runs[0]
    if args.compare_modes:
        t = time.monotonic()
        runs.append(h.run_cases(selected, workers=args.workers, keep=args.keep,
                                root=None if root is None else root / "subprocess", fork=False))
        print(f"golden: the same cases as new processes: {time.monotonic() - t:.1f} s", file=sys.stderr)

    failed = 0
    errors = [o for o in first if o.error is not None]
    for o in errors:
        print(f"golden: {o.case.name}: {o.error}", file=sys.stderr)

    if len(runs) > 1:  # nondeterminism (or a fork-server difference): the same case, other bytes
        for later in runs[1:]:
            for a, b in zip(first, later):
                if a.error or b.error:
                    continue
                diffs = h.differences(b, a.streams)
                if diffs:
                    failed += 1
                    print(f"golden: NONDETERMINISTIC {a.case.name}:", file=sys.stderr)
                    _show(diffs, args.max_diff_lines)

    if args.update:
        if errors:
            print("golden: not updating: some cases could not run", file=sys.stderr)
            return 1
        for o in first:
            if o.case.expect is None:
                h.write_expected(o)
        if not args.k:
            import shutil
            for name in h.orphans(everything):
                shutil.rmtree(h.EXPECTED / name)
                print(f"golden: removed expected/{name} (no such case)", file=sys.stderr)
        h.ENVIRONMENT_FILE.write_bytes(h.environment_json())
        written = sum(1 for o in first if o.case.expect is None)
        print(f"golden: wrote {written} expected outputs to {h.EXPECTED.relative_to(HERE.parent)}", file=sys.stderr)

    # check (after an update too: the variants must match their base case's fresh output)
    differing = 0
    for o in first:
        if o.error is not None:
            continue
        diffs = h.differences(o)
        if diffs:
            differing += 1
            print(f"golden: DIFFERS {o.case.name}" + (f" (compared with {o.case.expect})" if o.case.expect else ""),
                  file=sys.stderr)
            _show(diffs, args.max_diff_lines)
    if not args.k:
        for name in h.orphans(everything):
            print(f"golden: expected/{name} belongs to no case", file=sys.stderr)
            differing += 1
    if differing and h.environment_note():
        print("golden: " + h.environment_note(), file=sys.stderr)
    slowest = sorted(first, key=lambda o: -o.seconds)[:5]
    print(f"golden: {len(selected)} cases x {args.repeat} in {elapsed:.1f} s; {len(errors)} could not run, "
          f"{differing} differ" + (f", {failed} differ between runs" if len(runs) > 1 else "")
          + "; slowest: " + ", ".join(f"{o.case.name} {o.seconds:.1f}s" for o in slowest), file=sys.stderr)
    return 1 if errors or differing or failed else 0


def _show(diffs: list[str], limit: int) -> None:
    lines = "".join(diffs).splitlines(keepends=True)
    sys.stdout.write("".join(lines[:limit]))
    if len(lines) > limit:
        sys.stdout.write(f"... {len(lines) - limit} more lines of diff\n")


if __name__ == "__main__":
    sys.exit(main())
