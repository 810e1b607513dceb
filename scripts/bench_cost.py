"""What a large run costs three ways: direct uncached, direct with prompt caching, Message Batches with caching.

    python scripts/bench_cost.py                 # 200 claims files (the demo's five, copied under new names)
    python scripts/bench_cost.py --files 400 --keep /tmp/bench-cost

Everything runs against the stand-ins, through the real CLI in subprocesses (`judge-replay sim learn`,
`judge-replay sim model --fetch-per-turn 1 --verbose`, `judge-replay judge --mode record`), with a
fresh model stand-in for each way, so no way reads another's cache. `--fetch-per-turn 1` makes the
stand-in fetch one page per turn, the longer conversations of a real agent, where each turn re-sends
the whole conversation so far.

For each way: the billed cost in USD from the bundled price table (`replay.core.cost`, the run's model,
the batch discount for the batch way), input tokens by class (uncached, cache write, cache read) and
output tokens summed from the `usage` of every model response in the run's cassettes, the HTTP requests
the stand-ins served (their request logs: model calls, batch create / polls / results, Learn calls),
and the wall time of the `judge` command. Verdicts must be identical in all three runs (exit 1 if not).
The same figures follow for the stand-in's default mode (every page fetched in one turn), where caching
has less to save. The stand-in's token counts are its own (a quarter of the JSON length), not Claude's
tokenizer: the ratios are what the benchmark shows, not the absolute dollars.

Samples (`--samples K`, default 3; 1 skips it): the cached direct and batch ways are recorded again with
`judge --samples K`, and what each sample beyond the first costs is printed, as USD and as a share of
the first sample. Why it is less than a whole sample: the samples of a claims file send the same first
request (tools, prompt, the claims batch), so every sample after the first reads that prefix from the
prompt cache that the first wrote (a tenth of the input price instead of 1.25x); and every page is
fetched once for all samples. What the cache cannot share: a real model's samples diverge after their
first answer, so from the second turn on each sample pays for its own turns (it reads its own earlier
turns from the cache, as the first sample does). The stand-in's samples give identical answers until
the final one, so on it the later turns are shared too; the "real model" column reprices the extra
samples as a real model would bill them: each costs what the first did, with its first-turn cache write
read instead.

The last line is JSON, for the `--fetch-per-turn 1` runs:
    {"files": N, "direct_usd": A, "cached_usd": B, "batch_cached_usd": C, "ratio": C/A,
     "samples": K, "extra_sample_direct_usd": D, "extra_sample_batch_usd": E}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from replay.core.cost import TokenUsage, cost_usd, format_usd  # noqa: E402
from replay.cassettes.cassette import load_cassette  # noqa: E402
from replay.runs.folder import Run  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from replay.cli.main import main; sys.exit(main())"]
DEMO_CLAIMS = REPO / "demo" / "claims"
PAGES = REPO / "demo" / "pages" / "2026-06"
WAYS = (("direct, no cache", ["--no-cache"], False),
        ("direct, cached", [], False),
        ("batch, cached", ["--batch"], True))


@dataclass
class Figures:
    """One way's run: what it cost and what it took."""

    way: str
    usd: float | None
    usage: TokenUsage
    requests: int
    seconds: float
    verdicts: dict[tuple[str, str], Any]


def make_claims(folder: Path, files: int) -> None:
    """`files` claims files: the demo's, cycled, each under a `file` name of its own."""
    sources = sorted(DEMO_CLAIMS.glob("*.json"))
    folder.mkdir(parents=True)
    for i in range(files):
        source = sources[i % len(sources)]
        data = json.loads(source.read_text("utf-8"))
        data["file"] = f"kb-{i:04d}/{data['file']}"
        (folder / f"{i:04d}-{source.name}").write_text(json.dumps(data, indent=1), "utf-8")


class StandIn:
    """A `judge-replay sim ...` subprocess: its URL (first stdout line) and its request log (stderr)."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._log_file = log.open("w")
        self.proc = subprocess.Popen([*CLI, "sim", *args, "--port", "0", "--verbose"], stdout=subprocess.PIPE,
                                     stderr=self._log_file, text=True, cwd=REPO)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            raise SystemExit(f"the stand-in did not start: {' '.join(args)} (see {log})")

    def requests(self) -> int:
        return sum(1 for line in self.log.read_text("utf-8").splitlines() if " stand-in: " in line and '"' in line)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self._log_file.close()


def usage_of(run: Path) -> TokenUsage:
    """Every model response's usage in the run's cassettes, summed by token class."""
    totals = dict.fromkeys(("input_tokens", "output_tokens", "cache_creation_input_tokens",
                            "cache_read_input_tokens", "cache_write_1h_tokens"), 0)
    r = Run(run)
    for entry in r.manifest.claims:
        for it in (it for k in range(1, len(entry.cassettes) + 1) for it in load_cassette(r.cassette_path(entry.file, k))):
            if not it.uri.endswith("/v1/messages") or it.status != 200:
                continue
            usage = json.loads(it.response_body).get("usage") or {}
            for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
                totals[name] += int(usage.get(name) or 0)
            totals["cache_write_1h_tokens"] += int((usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0)
    return TokenUsage(**totals)


def verdicts_of(run: Path) -> dict[tuple[str, str], Any]:
    results = json.loads((run / "results.json").read_text("utf-8"))
    return {(f["file"].split("/", 1)[1], r["id"]): (r["judge_verdict"], r["rule"], r["evidence_quote"], r["error"])
            for f in results["files"] for r in f["results"]}


def record(work: Path, claims: Path, name: str, flags: list[str], batch: bool, fetch_per_turn: int,
           concurrency: int) -> Figures:
    learn = StandIn(["learn", "--pages", str(PAGES)], work / f"{name}.learn.log")
    model = StandIn(["model", "--fetch-per-turn", str(fetch_per_turn)], work / f"{name}.model.log")
    try:
        run = work / name
        started = time.perf_counter()
        done = subprocess.run([*CLI, "judge", "--prompt", "v3", "--claims", str(claims), "--run", str(run),
                               "--mode", "record", "--learn-url", learn.url, "--anthropic-base-url", model.url,
                               "--concurrency", str(concurrency), "--no-progress", *flags],
                              cwd=work, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"judge {' '.join(flags)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        requests = learn.requests() + model.requests()
    finally:
        learn.stop()
        model.stop()
    usage = usage_of(run)
    usd = cost_usd(Run(run).manifest.model, usage, batch=batch)
    return Figures(name, usd, usage, requests, seconds, verdicts_of(run))


def first_turn_writes(run: Path) -> int:
    """Cache-write tokens of each conversation's first model request (sample 1's): the prefix every later
    sample of a file reads from the cache instead."""
    r = Run(run)
    total = 0
    for entry in r.manifest.claims:
        first = next((it for it in r.interactions(entry.file) if it.uri.endswith("/v1/messages") and it.status == 200), None)
        if first is not None:
            total += int((json.loads(first.response_body).get("usage") or {}).get("cache_creation_input_tokens") or 0)
    return total


def samples_report(one: Figures, many: Figures, samples: int, writes: int, batch: bool, model: str) -> float | None:
    """What each sample beyond the first costs (and what a real model would bill for it)."""
    if one.usd is None or many.usd is None:
        return None
    extra = (many.usd - one.usd) / (samples - 1)
    repriced = TokenUsage(input_tokens=0, output_tokens=0, cache_creation_input_tokens=writes,
                          cache_read_input_tokens=0, cache_write_1h_tokens=0)
    as_read = TokenUsage(input_tokens=0, output_tokens=0, cache_creation_input_tokens=0,
                         cache_read_input_tokens=writes, cache_write_1h_tokens=0)
    saved = (cost_usd(model, repriced, batch=batch) or 0.0) - (cost_usd(model, as_read, batch=batch) or 0.0)
    real = one.usd - saved
    print(f"  {many.way:<18} first sample {format_usd(one.usd):>9}; each further sample {format_usd(extra):>9} "
          f"({extra / one.usd:.0%} of the first) on the stand-in, ~{format_usd(real)} ({real / one.usd:.0%}) "
          "with a real model")
    return round(extra, 6)


def report(title: str, figures: list[Figures]) -> None:
    print(title)
    print(f"  {'way':<18} {'billed':>10} {'uncached in':>12} {'cache write':>12} {'cache read':>12} "
          f"{'output':>9} {'requests':>9} {'wall':>8}")
    for f in figures:
        u = f.usage
        print(f"  {f.way:<18} {format_usd(f.usd):>10} {u.input_tokens:>12,} {u.cache_creation_input_tokens:>12,} "
              f"{u.cache_read_input_tokens:>12,} {u.output_tokens:>9,} {f.requests:>9,} {f.seconds:>7.1f}s")
    same = all(f.verdicts == figures[0].verdicts for f in figures)
    print(f"  verdicts identical in all three runs: {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200, help="claims files per run (default 200)")
    parser.add_argument("--concurrency", type=int, default=4, help="direct conversations at once (default 4)")
    parser.add_argument("--keep", type=Path, help="keep the runs and logs in this (new) folder")
    parser.add_argument("--samples", type=int, default=3, help="samples per claims file for the samples figures "
                        "(default 3; 1 skips them)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        claims = work / "claims"
        make_claims(claims, args.files)
        results: dict[int, list[Figures]] = {}
        for fetch_per_turn in (1, 0):
            results[fetch_per_turn] = [
                record(work, claims, f"{way.split(',')[0]}-{'cached' if '--no-cache' not in flags else 'plain'}-f{fetch_per_turn}",
                       flags, batch, fetch_per_turn, args.concurrency)
                for way, flags, batch in WAYS
            ]
            for figures, (way, _, _) in zip(results[fetch_per_turn], WAYS):
                figures.way = way
        report(f"{args.files} claims files, stand-in fetching one page per turn (--fetch-per-turn 1):", results[1])
        report(f"{args.files} claims files, stand-in default mode (every page in one turn):", results[0])
        direct, cached, batch = (f.usd for f in results[1])
        ratio = round(batch / direct, 4) if direct and batch is not None else None
        extra: dict[str, float | None] = {}
        if args.samples > 1:
            print(f"{args.files} claims files, --samples {args.samples}, stand-in fetching one page per turn:")
            for (way, flags, batched), one in zip(WAYS[1:], results[1][1:]):
                name = f"{way.split(',')[0]}-samples"
                many = record(work, claims, name, [*flags, "--samples", str(args.samples)], batched, 1, args.concurrency)
                many.way = way
                writes = first_turn_writes(work / f"{way.split(',')[0]}-cached-f1")
                extra[way] = samples_report(one, many, args.samples, writes, batched, Run(work / name).manifest.model)
        print(json.dumps({"files": args.files, "direct_usd": direct, "cached_usd": cached,
                          "batch_cached_usd": batch, "ratio": ratio, "samples": args.samples,
                          "extra_sample_direct_usd": extra.get("direct, cached"),
                          "extra_sample_batch_usd": extra.get("batch, cached")}))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
