"""Replay speed: judge-replay's indexed replay against stock vcrpy, on traffic shaped like a judge run.

Every request is a POST of a distinct ~2 KB JSON body to one URL (as both Anthropic and MCP traffic
are), every response ~20 KB of JSON. Both sides replay through the real interception path: an httpx
client making the requests, ours under `HttpRecorder("replay", ...)`, stock vcrpy under
`vcr.use_cassette(..., match_on=["method", "uri", "body"])`.

Stock vcrpy answers the request stored at position i after comparing it with the i stored requests
before it (a body diff for each), so a full replay is quadratic: it runs on a smaller cassette
(`--vcrpy-interactions`, default 2,000) and, by default, replays an evenly spaced sample of that
cassette's requests (`--vcrpy-requests`, default 200; 0 = all). Because the cost of a request depends
only on its position, the mean over evenly spaced positions is the mean of a full replay.

The last line of output is JSON:
    {"interactions": N, "ms_per_request": X, "vcrpy_interactions": M, "vcrpy_ms_per_request": Y}
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx
import vcr  # type: ignore[import-untyped]

from replay._cassette import Interaction, save_cassette
from replay._recorder import HttpRecorder
from replay._runs import cassette_name

URL = "https://api.bench.invalid/v1/messages"
CLAIMS_FILE = "docs/bench.md"
_FILLER = "The deployment supports a context window of 1,047,576 tokens in these regions. "


def request_body(i: int) -> str:
    """A distinct ~2 KB Messages request."""
    text = f"claim {i}: " + (_FILLER * 26)[:1900]
    return json.dumps({"model": "claude-bench", "max_tokens": 1024, "messages": [{"role": "user", "content": text}]})


def response_body(i: int) -> str:
    """A ~20 KB Messages response."""
    text = f"verdict {i}: " + (_FILLER * 260)[:20_000]
    return json.dumps(
        {"id": f"msg_{i:06d}", "type": "message", "role": "assistant", "model": "claude-bench",
         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
         "usage": {"input_tokens": 500, "output_tokens": 5000}}
    )


def build(folder: Path, n: int) -> Path:
    interactions = [
        Interaction(method="POST", uri=URL, request_body=request_body(i), status=200, reason="OK",
                    response_body=response_body(i),
                    request_headers={"content-type": ["application/json"]},
                    response_headers={"content-type": ["application/json"]})
        for i in range(n)
    ]
    path = folder / cassette_name(CLAIMS_FILE)
    save_cassette(path, interactions, scrub=False)  # synthetic data: nothing to scrub, and not what is measured
    return path


def bench_ours(folder: Path, n: int) -> tuple[float, float]:
    """(load seconds, ms per request) replaying n requests through HttpRecorder."""
    bodies = [request_body(i).encode() for i in range(n)]
    client = httpx.Client(headers={"content-type": "application/json"})
    with HttpRecorder("replay", folder) as rec:
        t0 = time.perf_counter()
        with rec.conversation(CLAIMS_FILE):
            t1 = time.perf_counter()
            for i, body in enumerate(bodies):
                reply = client.post(URL, content=body)
                if i % 1000 == 0:
                    assert reply.json()["id"] == f"msg_{i:06d}"
            t2 = time.perf_counter()
    assert rec.unused() == {}
    # conversation() loads and indexes the cassette on entry; the requests follow.
    return t1 - t0, (t2 - t1) * 1000 / n


def bench_vcrpy(path: Path, n: int, requests: int) -> tuple[float, float]:
    """(load seconds, ms per request) replaying `requests` evenly spaced requests of an n-interaction
    cassette (all n when `requests` is 0 or larger) through stock vcrpy, with progress."""
    step = 1 if requests <= 0 or requests >= n else n / requests
    positions = sorted({int(k * step) for k in range(n if step == 1 else requests)})
    bodies = [(i, request_body(i).encode()) for i in positions]
    client = httpx.Client(headers={"content-type": "application/json"})
    t0 = time.perf_counter()
    with vcr.use_cassette(str(path), record_mode="none", match_on=["method", "uri", "body"]):
        t1 = time.perf_counter()
        for done, (i, body) in enumerate(bodies, 1):
            assert client.post(URL, content=body).json()["id"] == f"msg_{i:06d}"
            if done % max(len(bodies) // 10, 1) == 0:
                elapsed = time.perf_counter() - t1
                print(f"  vcrpy: {done}/{len(bodies)} requests, {elapsed:.1f} s", file=sys.stderr, flush=True)
        t2 = time.perf_counter()
    return t1 - t0, (t2 - t1) * 1000 / len(bodies)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactions", type=int, default=10_000, help="our cassette size (default 10,000)")
    parser.add_argument("--vcrpy-interactions", type=int, default=2_000,
                        help="stock vcrpy's cassette size (default 2,000; it is quadratic, so this takes minutes)")
    parser.add_argument("--vcrpy-requests", type=int, default=200,
                        help="how many of stock vcrpy's requests to replay, evenly spaced (default 200; 0 = all)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200 and 50 interactions")
    args = parser.parse_args(argv)
    n, m = (200, 50) if args.quick else (args.interactions, args.vcrpy_interactions)
    sample = 0 if args.quick else args.vcrpy_requests

    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        ours_dir, stock_dir = Path(tmp) / "ours", Path(tmp) / "stock"
        t = time.perf_counter()
        build(ours_dir, n)
        stock_path = build(stock_dir, m)
        print(f"built cassettes: {n} and {m} interactions in {time.perf_counter() - t:.1f} s", file=sys.stderr)

        load, ms = bench_ours(ours_dir, n)
        print(f"judge-replay: load+index {load:.2f} s, replay {ms:.3f} ms/request at {n} interactions")
        vload, vms = bench_vcrpy(stock_path, m, sample)
        shown = f"{sample} evenly spaced requests" if 0 < sample < m else "every request"
        print(f"vcrpy {vcr.__version__}: load {vload:.2f} s, replay {vms:.3f} ms/request at {m} interactions ({shown})")
    print(json.dumps({"interactions": n, "ms_per_request": round(ms, 4),
                      "vcrpy_interactions": m, "vcrpy_ms_per_request": round(vms, 4)}))


if __name__ == "__main__":
    main()
