"""The model stand-in's prompt cache: which prefixes it holds, and how a request's input splits into
uncached, cache-write and cache-read tokens (deterministic; direct calls and batch entries alike).

Only requests that carry `cache_control` are accounted (others keep the plain usage). The breakpoints are
read in the API's order: tools, system, messages, one block at a time. As the API does:
- a cache hit is looked for at each breakpoint and at the block ends before it, at most `LOOKBACK` blocks
  back (the breakpoint's own block counts); the longest prefix held within its lifetime is read, and the
  read refreshes that lifetime;
- every breakpoint prefix past what was read is written (split by lifetime in `usage.cache_creation`),
  unless it is shorter than the model's minimum cacheable length (`minimum_tokens`): then nothing is
  cached there, and its tokens are plain input.
Tokens are counted as the stand-in counts them (`len(json.dumps([system, messages])) // 4`, of the
request without its breakpoints), so a cached run and an uncached one have the same total.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from replay.sim.reading import plain_request, unmarked

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
LOOKBACK = 20
"""Blocks a cache hit is looked for from each breakpoint, its own block included."""
MINIMUM_TOKENS = (("opus", 4096), ("haiku-4-5", 4096), ("haiku-5", 4096), ("haiku-3-5", 2048), ("haiku-3", 2048))
"""Model id part -> the shortest prefix, in tokens, the API caches for it; any other model: 1,024."""


def minimum_tokens(model: str) -> int:
    """The shortest prefix the API caches for `model` (shorter: no write, no read, no error)."""
    return next((n for part, n in MINIMUM_TOKENS if part in model), 1024)


def count_tokens(system: Any, messages: Any) -> int:
    """Input tokens as the stand-in counts them (a quarter of the JSON length), of the request as it
    would be without breakpoints, so that caching changes no total."""
    plain = plain_request({"system": system, "messages": messages})
    return len(json.dumps([plain["system"], plain["messages"]], ensure_ascii=False)) // 4


@dataclass(frozen=True)
class Prefix:
    """The request up to the end of one block: its cache key, its tokens, and its breakpoint's lifetime
    (None: no breakpoint on this block)."""

    key: str
    tokens: int
    ttl: str | None


def prefixes(request: dict[str, Any]) -> list[Prefix]:
    """The request's prefixes at every block end, in the API's order (tools, system, messages)."""
    tools: list[Any] = request["tools"] if isinstance(request.get("tools"), list) else []
    system = request.get("system")
    messages: list[Any] = request["messages"] if isinstance(request.get("messages"), list) else []
    found: list[Prefix] = []

    def add(block: Any, prefix: list[Any], tokens: int) -> None:
        marker = block.get("cache_control") if isinstance(block, dict) else None
        ttl = None
        if isinstance(marker, dict):
            ttl = marker.get("ttl", "5m") if marker.get("ttl", "5m") in TTL_SECONDS else "5m"
        text = json.dumps([request.get("model"), unmarked(prefix)], ensure_ascii=False, sort_keys=True)
        found.append(Prefix(hashlib.sha256(text.encode()).hexdigest(), tokens, ttl))

    for i, tool in enumerate(tools):
        add(tool, [tools[: i + 1]], 0)
    system_blocks = system if isinstance(system, list) else []
    for i, block in enumerate(system_blocks):
        add(block, [tools, system_blocks[: i + 1]], count_tokens(system_blocks[: i + 1], []))
    for m, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for b, block in enumerate(content):
                partial = [*messages[:m], {**message, "content": content[: b + 1]}]
                add(block, [tools, system, partial], count_tokens(system, partial))
        else:
            add(None, [tools, system, messages[: m + 1]], count_tokens(system, messages[: m + 1]))
    return found


class CacheLedger:
    """Which prompt prefixes the stand-in holds in its cache, and until when."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._expires: dict[str, float] = {}

    def account(self, request: dict[str, Any], usage: dict[str, Any]) -> None:
        """Split `usage["input_tokens"]` into uncached, cache-write and cache-read tokens (in place; the
        module docstring says how)."""
        every = prefixes(request)
        marks = [i for i, p in enumerate(every) if p.ttl is not None]
        if not marks:
            return
        total = max(1, count_tokens(request.get("system"), request["messages"]))
        smallest = minimum_tokens(str(request.get("model") or ""))
        reachable = sorted({j for i in marks for j in range(max(0, i - LOOKBACK + 1), i + 1)}, reverse=True)
        now = self._clock()
        with self._lock:
            read = 0
            for j in reachable:
                if self._expires.get(every[j].key, -1.0) > now:
                    read = min(every[j].tokens, total)
                    ttl = next(p.ttl for p in every[j:] if p.ttl is not None)
                    self._expires[every[j].key] = now + TTL_SECONDS[ttl]
                    break
            written = {"5m": 0, "1h": 0}
            covered = read
            for i in marks:
                prefix = every[i]
                assert prefix.ttl is not None
                if prefix.tokens < smallest:
                    continue  # too short to cache: plain input, no entry
                end = min(prefix.tokens, total)
                if end > covered:
                    written[prefix.ttl] += end - covered
                    covered = end
                self._expires[prefix.key] = max(self._expires.get(prefix.key, -1.0), now + TTL_SECONDS[prefix.ttl])
        creation = written["5m"] + written["1h"]
        usage["input_tokens"] = max(0, total - read - creation)
        usage["cache_creation_input_tokens"] = creation
        usage["cache_read_input_tokens"] = read
        usage["cache_creation"] = {"ephemeral_5m_input_tokens": written["5m"],
                                   "ephemeral_1h_input_tokens": written["1h"]}
