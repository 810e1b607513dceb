"""Replay speed on the cassettes users have: one per conversation, a 500-file run, against stock vcrpy and the floor.

The run is recorded once through the real CLI against the stand-ins (`_bench_runs.py`): 500 claims
files of 10 claims about the real-size Learn pages of tests/data/learn-pages, one cassette per
conversation, each with the model turns and the Learn MCP exchanges (initialize, 9-30 KB page
fetches, a search) our recorder writes. Its requests are then replayed, conversation by conversation,
in four ways, all timed the same way (total wall time, loading included, divided by the number of
requests); the first three send them through a real `httpx.Client`:

    judge-replay   `replay.recording.recorder.HttpRecorder("replay", run)`, one `conversation()` block per
                   cassette: what `judge --mode replay` and `cassettes verify` do, minus the SDK.
                   Measured with the parsed-cassette cache warm (every command after the first),
                   and also cold (cache emptied) and off (JUDGE_REPLAY_NO_CACHE=1: YAML every time).
    vcrpy body     stock vcrpy, `vcr.use_cassette(cassette)` per conversation, its default matchers
                   plus `body` (method, scheme, host, port, path, query, body).
    vcrpy plain    stock vcrpy with one plain matcher: method, URI and JSON-equal bodies.
    floor          the same interactions read from a JSON file per conversation, plus a dict look-up
                   per request (what any replay must at least do; no HTTP client).

A fifth line, `httpx alone`, sends the same requests through an httpx.Client whose transport answers
at once: the HTTP client's own share, which every replay through it pays and the floor does not.
A sixth, `judge-replay's own`, hands the same requests (built beforehand) straight to the recording
transport a conversation's clients are built on, without a client: our code alone; the rest of the judge-replay figure is the
client's work with these requests and the recorded answers, which vcrpy's figures include as well.
The vcrpy plain line also says how far ahead of it a replay that cost nothing itself could be, through
the same client (vcrpy plain / httpx alone): the ceiling of that comparison on this machine.
Start-up (imports) is outside every figure; each is the fastest of `--repeat` passes.
The last line of output is JSON:
    {"files", "interactions", "ms_per_request", "floor_ms_per_request",
     "vcrpy_plain_ms_per_request", "vcrpy_body_ms_per_request"}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402
import vcr  # type: ignore[import-untyped]  # noqa: E402

from _bench_runs import BENCH, recorded_run  # noqa: E402
from replay.cassettes.cassette import load_cassette  # noqa: E402
from replay.recording.recorder import HttpRecorder  # noqa: E402
from replay.runs.folder import Run  # noqa: E402


@dataclass(frozen=True)
class Request:
    method: str
    uri: str
    headers: dict[str, str]
    body: bytes
    status: int


@dataclass(frozen=True)
class Conversation:
    claims_file: str
    cassette: Path
    floor: Path
    requests: tuple[Request, ...]


def _compact(body: str | None) -> bytes:
    """The request body as a client sends it: compact JSON (the cassette stores it re-indented)."""
    if not body:
        return b""
    try:
        return json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":")).encode()
    except json.JSONDecodeError:
        return body.encode()


def conversations(run_dir: Path, floor_dir: Path) -> list[Conversation]:
    """Every conversation of the run with the requests to replay, and its floor file (written here)."""
    floor_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for entry in Run(run_dir).manifest.claims:
        cassette = run_dir / entry.cassette
        interactions = load_cassette(cassette)
        requests = tuple(
            Request(it.method, it.uri, {k: v[0] for k, v in it.request_headers.items() if v}, _compact(it.request_body), it.status)
            for it in interactions
        )
        floor = floor_dir / (cassette.stem + ".json")
        rows = [[r.method, r.uri, r.body.decode(), it.status, it.response_body] for r, it in zip(requests, interactions)]
        floor.write_text(json.dumps(rows, ensure_ascii=False), "utf-8")
        out.append(Conversation(entry.file, cassette, floor, requests))
    return out


def _send_all(client: httpx.Client, conv: Conversation) -> None:
    for r in conv.requests:
        reply = client.request(r.method, r.uri, headers=r.headers, content=r.body)
        if reply.status_code != r.status:
            raise SystemExit(f"{conv.cassette.name}: replayed {reply.status_code}, recorded {r.status}")


def bench_ours(run_dir: Path, convs: list[Conversation]) -> float:
    """Seconds to replay every conversation through HttpRecorder (cassette load and index included)."""
    network = httpx.HTTPTransport()  # never reached: the seam's transport answers every request
    with HttpRecorder("replay", run_dir) as rec:
        t0 = time.perf_counter()
        for conv in convs:
            with rec.conversation(conv.claims_file) as seam:
                _send_all(httpx.Client(transport=seam.transport(network)), conv)
        seconds = time.perf_counter() - t0
    if rec.unused():
        raise SystemExit(f"judge-replay left interactions unused: {rec.unused()}")
    return seconds


def bench_own(run_dir: Path, convs: list[Conversation]) -> float:
    """Seconds of judge-replay's own code in `bench_ours`: the same requests, built beforehand (untimed),
    handed straight to the conversation's recording transport, without a client (cassette load and index
    included)."""
    network = httpx.HTTPTransport()
    requests = [[httpx.Request(r.method, r.uri, headers=r.headers, content=r.body) for r in conv.requests] for conv in convs]
    with HttpRecorder("replay", run_dir) as rec:
        t0 = time.perf_counter()
        for conv, sent in zip(convs, requests):
            with rec.conversation(conv.claims_file) as seam:
                transport = seam.transport(network)
                for r, request in zip(conv.requests, sent):
                    if transport.handle_request(request).status_code != r.status:
                        raise SystemExit(f"{conv.cassette.name}: replayed another status than recorded")
        seconds = time.perf_counter() - t0
    if rec.unused():
        raise SystemExit(f"judge-replay left interactions unused: {rec.unused()}")
    return seconds


def _json_body(r1: Any, r2: Any) -> None:
    """vcrpy matcher: the two bodies are equal as JSON (or as bytes, when not JSON)."""

    def parsed(body: Any) -> Any:
        raw = body.encode() if isinstance(body, str) else (body or b"")
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    assert parsed(r1.body) == parsed(r2.body)


def bench_vcrpy(convs: list[Conversation], match_on: tuple[str, ...], matchers: dict[str, Callable[..., None]]) -> float:
    """Seconds to replay every conversation through stock vcrpy, one use_cassette per conversation."""
    recorder = vcr.VCR(record_mode="none", match_on=match_on)
    for name, matcher in matchers.items():
        recorder.register_matcher(name, matcher)
    client = httpx.Client()
    t0 = time.perf_counter()
    for conv in convs:
        with recorder.use_cassette(str(conv.cassette)) as cassette:
            _send_all(client, conv)
            if not cassette.all_played:
                raise SystemExit(f"vcrpy left interactions of {conv.cassette.name} unplayed")
    return time.perf_counter() - t0


def bench_client(convs: list[Conversation]) -> float:
    """Seconds for the same requests through an httpx.Client whose transport answers at once (no
    cassette): the client's own share of every figure above the floor."""
    answers = {r.body: r.status for conv in convs for r in conv.requests}
    client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(answers[request.content], content=b"{}")))
    t0 = time.perf_counter()
    for conv in convs:
        _send_all(client, conv)
    return time.perf_counter() - t0


def bench_floor(convs: list[Conversation]) -> float:
    """Seconds to read every conversation's interactions from JSON and find each request's answer."""
    t0 = time.perf_counter()
    for conv in convs:
        index: dict[tuple[str, str, str], list[int]] = {}
        rows = json.loads(conv.floor.read_bytes())
        for i, row in enumerate(rows):
            index.setdefault((row[0], row[1], row[2]), []).append(i)
        for r in conv.requests:
            row = rows[index[(r.method, r.uri, r.body.decode())].pop(0)]
            if row[3] != r.status:
                raise SystemExit("floor: wrong answer")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500, help="claims files in the run (default 500)")
    parser.add_argument("--repeat", type=int, default=3, help="passes of each measurement; the fastest counts (default 3)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 files, one pass")
    parser.add_argument("--workdir", type=Path, default=BENCH,
                        help="where the recorded run is kept (default .judge-replay/bench, ignored by git)")
    args = parser.parse_args(argv)
    files, repeat = (5, 1) if args.quick else (args.files, args.repeat)
    if files < 1 or repeat < 1:
        parser.error("--files and --repeat must be 1 or more")

    t = time.perf_counter()
    run_dir = recorded_run(files, "after", args.workdir.resolve())
    ws = run_dir.parent.parent
    os.chdir(ws)  # the workspace is the project; its cassette cache is kept in ws/.judge-replay/cache
    os.environ["JUDGE_REPLAY_CACHE_DIR"] = str(ws / ".judge-replay" / "cache")
    convs = conversations(run_dir, ws / ".judge-replay" / "bench-floor")
    n = sum(len(c.requests) for c in convs)
    size = sum(c.cassette.stat().st_size for c in convs)
    print(f"run: {files} files, {len(convs)} cassettes, {n} interactions, {size / 1e6:.1f} MB of YAML"
          f" (ready in {time.perf_counter() - t:.1f} s)", flush=True)

    def per_request(measure: Callable[[], float], times: int = repeat) -> float:
        """ms per request, the fastest of `times` passes (the machine is shared: the minimum is the
        figure least disturbed by other processes)."""
        return min(measure() for _ in range(times)) * 1000 / n

    cache = ws / ".judge-replay" / "cache"

    def cold() -> float:
        shutil.rmtree(cache, ignore_errors=True)
        return bench_ours(run_dir, convs)

    os.environ["JUDGE_REPLAY_NO_CACHE"] = "1"
    ours_off = per_request(lambda: bench_ours(run_dir, convs))
    del os.environ["JUDGE_REPLAY_NO_CACHE"]
    ours_cold = per_request(cold)
    ours = per_request(lambda: bench_ours(run_dir, convs))
    own = per_request(lambda: bench_own(run_dir, convs))
    client = per_request(lambda: bench_client(convs))
    floor = per_request(lambda: bench_floor(convs))
    plain = per_request(lambda: bench_vcrpy(convs, ("method", "uri", "json_body"), {"json_body": _json_body}))
    body = per_request(lambda: bench_vcrpy(convs, ("method", "scheme", "host", "port", "path", "query", "body"), {}))

    print(f"judge-replay        {ours:8.3f} ms/request  (cache cold {ours_cold:.3f}, cache off {ours_off:.3f})")
    print(f"floor (JSON + dict) {floor:8.3f} ms/request  -> judge-replay is {ours / floor:.1f}x the floor")
    print(f"httpx client alone  {client:8.3f} ms/request  (no cassette: the client's share of the figures above)")
    print(f"judge-replay's own  {own:8.3f} ms/request  (the recording transport given the same requests, no client;"
          f" the client's work with these requests and answers: {ours - own:.3f})")
    print(f"vcrpy {vcr.__version__} plain   {plain:8.3f} ms/request  -> {plain / ours:.1f}x judge-replay"
          f" (at most {plain / client:.1f}x for any replay through this client: vcrpy plain / client alone)")
    print(f"vcrpy {vcr.__version__} body    {body:8.3f} ms/request  -> {body / ours:.1f}x judge-replay")
    print(json.dumps({"files": files, "interactions": n, "ms_per_request": round(ours, 4),
                      "floor_ms_per_request": round(floor, 4), "vcrpy_plain_ms_per_request": round(plain, 4),
                      "vcrpy_body_ms_per_request": round(body, 4)}))


if __name__ == "__main__":
    main()
