"""The derived-cache entry format against `marshal`, on the values a replay reads warm.

For every cassette of a run folder (default: the run `bench_replay.py` records), the three values the
parsed-cassette cache keeps (the parsed YAML document, replay's index, a conversation's Learn calls
and claims) are made once; then reading them back is timed, `marshal.loads` against
`entry_format.decode` (what the cache reads since marshal left it), interleaved, fastest of
`--repeat` passes. marshal is used here only to measure what it cost; nothing of ours reads it.

    python scripts/bench_cache_format.py [RUN_FOLDER] [--repeat 7]

The last line is JSON: {"cassettes", "marshal_ms", "entry_format_ms", "ratio"} (milliseconds per cassette,
all three values).
"""

from __future__ import annotations

import argparse
import json
import marshal
import time
from pathlib import Path

from replay.cassettes.cache import text_of
from replay.cassettes.cassette import load_cassette
from replay.cassettes.entry_format import decode, encode
from replay.files.safe_yaml import load_yaml
from replay.recording.tape import _replay_index
from replay.runs.folder import _conversation_of

DEFAULT = Path(".judge-replay") / "bench" / "kb-500" / "runs" / "after"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    values = []
    for path in sorted(args.run.glob("*.yaml")):
        values.append(load_yaml(text_of(path.read_bytes()), path))
        values.append(_replay_index(load_cassette(path)))
        values.append(_conversation_of(path))
    if not values:
        raise SystemExit(f"{args.run}: no cassettes")
    as_marshal = [marshal.dumps(v) for v in values]
    as_entry = [encode(v) for v in values]
    assert all(e is not None for e in as_entry)
    best = {"marshal": float("inf"), "entry_format": float("inf")}
    for _ in range(args.repeat):
        t = time.perf_counter()
        for data in as_marshal:
            marshal.loads(data)
        best["marshal"] = min(best["marshal"], time.perf_counter() - t)
        t = time.perf_counter()
        for blob in as_entry:
            decode(blob)  # type: ignore[arg-type]
        best["entry_format"] = min(best["entry_format"], time.perf_counter() - t)
    n = len(values) // 3
    ms = {k: v * 1000 / n for k, v in best.items()}
    print(f"{n} cassettes: marshal {ms['marshal']:.3f} ms, entry format {ms['entry_format']:.3f} ms per cassette")
    print(json.dumps({"cassettes": n, "marshal_ms": round(ms["marshal"], 4), "entry_format_ms": round(ms["entry_format"], 4),
                      "ratio": round(ms["entry_format"] / ms["marshal"], 2)}))


if __name__ == "__main__":
    main()
