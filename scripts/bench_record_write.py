"""What writing a recording's cassettes costs, against stock vcrpy writing the same exchanges.

Recording's CPU over a live run's (`bench_scale.py`, target 1.15x) is mostly the cassettes it writes.
This script prices that part alone, in CPU seconds (user + system, so an fsync's writeback counts),
over the 500 conversations of the benchmark run (`_bench_runs.py`: real-size Learn pages):

    judge-replay   what the recorder does when a conversation ends, `normalise_recording` (allow-listed
                   headers, renumbered ids, scrubbing, JSON bodies re-indented for diffs), then
                   `save_cassette` (YAML, written to a temporary file, fsynced, renamed).
    vcrpy          stock vcrpy's save at the end of `use_cassette`: `FilesystemPersister.save_cassette`
                   with its default YAML serializer (libyaml's CDumper), given each exchange as its httpx
                   stub keeps it (a vcrpy `Request`, the response dict with the body bytes). No
                   normalising, no scrubbing, no fsync: vcrpy does none.

Both are given the exchanges as the client saw them: the benchmark run's cassettes, with each JSON body
written compactly again, as it came over the wire. Each figure is the fastest of `--repeat` passes.
The last line of output is JSON: {"files", "interactions", "judge_replay_cpu_s", "vcrpy_cpu_s"}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vcr.persisters.filesystem import FilesystemPersister  # type: ignore[import-untyped]  # noqa: E402
from vcr.request import Request as VcrRequest  # type: ignore[import-untyped]  # noqa: E402
from vcr.serializers import yamlserializer  # type: ignore[import-untyped]  # noqa: E402

from _bench_runs import BENCH, recorded_run  # noqa: E402
from replay.cassettes.interaction import Interaction
from replay.cassettes.cassette import load_cassette, save_cassette
from replay.cassettes.normalise import normalise_recording
from replay.cassettes.matching import canonical_request  # noqa: E402
from replay.runs.folder import Run  # noqa: E402
from replay.secrets.registry import remember  # noqa: E402


def _as_sent(body: str | None) -> str | None:
    """A body as it came over the wire: compact JSON (the cassette keeps it re-indented)."""
    if not body or body[:1] not in "{[":
        return body
    try:
        return json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":"))
    except ValueError:
        return body


def exchanges(run_dir: Path) -> list[list[Interaction]]:
    """Each conversation's exchanges as the client saw them."""
    out = []
    for entry in Run(run_dir).manifest.claims:
        out.append([Interaction(it.method, it.uri, _as_sent(it.request_body), it.status, _as_sent(it.response_body) or "",
                                it.request_headers, it.response_headers, it.reason)
                    for it in load_cassette(run_dir / entry.cassette)])
    return out


def kinds_of(conversations: list[list[Interaction]]) -> list[list[str]]:
    """Each request's kind, which the recorder knows from matching it as it was sent (untimed here)."""
    return [[canonical_request(it.method, it.uri, it.request_body).kind for it in c] for c in conversations]


def write_ours(conversations: list[list[Interaction]], kinds: list[list[str]], folder: Path) -> None:
    for n, (interactions, kinds_here) in enumerate(zip(conversations, kinds)):
        save_cassette(folder / f"c{n:04d}.yaml", normalise_recording(interactions, kinds_here), scrub=False)


def as_vcrpy(conversations: list[list[Interaction]]) -> list[dict[str, Any]]:
    """Each conversation as vcrpy's cassette holds it before saving (`Cassette._as_dict`)."""
    return [{"requests": [VcrRequest(it.method, it.uri, (it.request_body or "").encode(), {k: v[0] for k, v in it.request_headers.items()})
                          for it in interactions],
             "responses": [{"status": {"code": it.status, "message": it.reason},
                            "headers": {k: list(v) for k, v in it.response_headers.items()},
                            "body": {"string": it.response_body.encode()}} for it in interactions]}
            for interactions in conversations]


def write_vcrpy(cassettes: list[dict[str, Any]], folder: Path) -> None:
    for n, cassette in enumerate(cassettes):
        FilesystemPersister.save_cassette(folder / f"c{n:04d}.yaml", cassette, serializer=yamlserializer)


def cpu_seconds(write: Callable[[Path], None], repeat: int, where: Path, files: int) -> float:
    """CPU seconds of the fastest of `repeat` writes of `files` cassettes, each into an empty temporary
    folder under `where` (the benchmark's own disk: a tmpfs would make an fsync free)."""
    best = float("inf")
    for _ in range(repeat):
        folder = Path(tempfile.mkdtemp(prefix="record-write-", dir=where))
        try:
            t0 = time.process_time()
            write(folder)
            best = min(best, time.process_time() - t0)
            if len(list(folder.glob("*.yaml"))) != files:
                raise SystemExit(f"{folder}: not every cassette was written")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500, help="claims files in the run (default 500)")
    parser.add_argument("--repeat", type=int, default=3, help="passes of each measurement; the fastest counts (default 3)")
    parser.add_argument("--workdir", type=Path, default=BENCH,
                        help="where the recorded run is kept (default .judge-replay/bench, ignored by git)")
    args = parser.parse_args(argv)
    if args.files < 1 or args.repeat < 1:
        parser.error("--files and --repeat must be 1 or more")
    remember("sk-ant-bench-not-a-real-key")  # the key the benchmark's recordings ran with: scrubbing runs as in a recording
    run_dir = recorded_run(args.files, "after", args.workdir.resolve())
    conversations = exchanges(run_dir)
    n = sum(len(c) for c in conversations)
    vcrpy_form, kinds = as_vcrpy(conversations), kinds_of(conversations)
    ours = cpu_seconds(lambda folder: write_ours(conversations, kinds, folder), args.repeat, run_dir.parent, len(conversations))
    stock = cpu_seconds(lambda folder: write_vcrpy(vcrpy_form, folder), args.repeat, run_dir.parent, len(conversations))
    print(f"{args.files} conversations, {n} exchanges")
    print(f"judge-replay  {ours:6.2f} CPU s  (normalised, scrubbed, re-indented, fsynced)")
    print(f"vcrpy         {stock:6.2f} CPU s  (stock save: its YAML, no fsync)  -> {stock / ours:.2f}x judge-replay's")
    print(json.dumps({"files": args.files, "interactions": n, "judge_replay_cpu_s": round(ours, 3), "vcrpy_cpu_s": round(stock, 3)}))


if __name__ == "__main__":
    main()
