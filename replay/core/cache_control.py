"""Prompt-caching breakpoints for a Messages request, and the cache lifetime a run should use (pure).

Where the breakpoints go (never more than the API's 4, one lifetime per request, the text unchanged):
1. the last tool definition: the tools are the same in every request of a run;
2. the last system block, when there is a system prompt;
3. the first user message: the prompt version's text with the claims batch, the same at every turn of a
   conversation (a string content becomes one text block holding exactly that string);
4. the last cacheable block of the last message: the conversation so far, which the next turn re-sends
   whole, so the next turn reads everything before its own new messages from the cache;
5. a trailing one on the last cacheable block of the previous turn (the message before the last assistant
   turn): the API looks for a cache hit only about 20 blocks back from a breakpoint, and a turn that adds
   more (ten page fetches: ten tool_use and ten tool_result blocks) would not reach the previous turn's
   entry from its new breakpoint; the trailing one is where that entry is, so it is read, not written
   again. With a system prompt too, the tools' breakpoint gives way to it (4 at most).

The API caches a prefix only from a per-model minimum length (1,024 to 4,096 tokens); a shorter one is
silently not cached and costs nothing extra, so breakpoints are placed whatever the length. Thinking
blocks and empty text blocks cannot carry a breakpoint and are passed over.

The lifetime (`lifetime_for`): a 5-minute write costs 1.25x input, a 1-hour write 2x, a read 0.1x, and
a read refreshes the lifetime. What a turn writes is read by the same conversation's next turn, so the
lifetime must outlast the time between two turns. Direct calls are seconds apart: 5 minutes. In batch
mode the next turn is processed in the next round, so the gap is up to about two rounds (this round
from its start, the next one to its end): with the longest measured round R, 2R under 4 minutes (a
minute of margin) keeps 5 minutes; 2R under 55 minutes takes 1 hour; longer, no lifetime outlasts the
gap and a write would never be read: no breakpoints at all. Before any round is measured: 5 minutes, in
batch mode too. Per cached token, a 1-hour first round costs 2x + 0.1x (write, then read); a 5-minute one
costs 1.25x + 0.1x when the second round comes in time and 1.25x + 1.25x (written again) when it does
not: 5 minutes is cheaper unless the first round outlasts its lifetime more than 65% of the time, and
after one measured round the lifetime follows the measurement, so a slow first round costs one round of
writes, once. (`scripts/bench_cost.py` on the strict stand-in, whose rounds are instant: batch+cache costs 0.31
of direct uncached with a 5-minute first round, one page per turn; 0.38 with a 1-hour one, measured on the
earlier, laxer stand-in.) A resumed batch run starts from
the round times its interrupted run measured (kept in its journal, `judge.batches.journal.BatchJournal`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal

Lifetime = Literal["5m", "1h"]
MAX_BREAKPOINTS = 4
FIVE_MINUTE_GAP = 240.0
"""Seconds between two turns up to which a 5-minute entry is still alive (one minute of margin)."""
ONE_HOUR_GAP = 3300.0
"""Seconds between two turns up to which a 1-hour entry is still alive (five minutes of margin)."""
_UNCACHEABLE = ("thinking", "redacted_thinking")


def marker(lifetime: Lifetime) -> dict[str, str]:
    """The `cache_control` value for a lifetime (5 minutes is the API's default: no `ttl`)."""
    return {"type": "ephemeral"} if lifetime == "5m" else {"type": "ephemeral", "ttl": lifetime}


def with_breakpoints(params: dict[str, Any], lifetime: Lifetime) -> dict[str, Any]:
    """A copy of Messages request `params` with cache breakpoints added (see the module docstring).
    Breakpoints already present are kept and count towards the 4."""
    out = copy.deepcopy(params)
    budget = MAX_BREAKPOINTS - _count(out)
    targets: list[dict[str, Any]] = []
    tools = out.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[-1], dict):
        targets.append(tools[-1])
    system = out.get("system")
    if isinstance(system, str) and system:
        out["system"] = system = [{"type": "text", "text": system}]
    if isinstance(system, list) and (block := _last_cacheable(system)) is not None:
        targets.append(block)
    messages = out.get("messages")
    if isinstance(messages, list) and messages:
        first_user = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
        answered = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"]
        previous = [messages[answered[-1] - 1]] if answered and answered[-1] >= 1 else []
        for message in ([first_user] if first_user is not None else []) + [messages[-1]] + previous:
            if isinstance(message, dict):
                if isinstance(message.get("content"), str) and message["content"]:
                    message["content"] = [{"type": "text", "text": message["content"]}]
                block = _last_cacheable(message.get("content"))
                if block is not None and all(block is not t for t in targets):
                    targets.append(block)
    if len([t for t in targets if "cache_control" not in t]) > budget and tools and targets[0] is tools[-1]:
        targets.pop(0)  # the tools alone are short: the trailing breakpoint keeps more in reach
    for block in targets:
        if budget <= 0:
            break
        if "cache_control" not in block:
            block["cache_control"] = marker(lifetime)
            budget -= 1
    return out


def strip_cache_control(value: Any) -> Any:
    """`value` with every `cache_control` key removed, at any depth (markers never change an answer)."""
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def without_breakpoints(params: Any) -> Any:
    """What a Messages request asks regardless of caching: `cache_control` removed everywhere, and a
    system or message content that is one plain text block written as its string (the form
    `with_breakpoints` had to change). Two requests that differ only in breakpoints are equal here."""
    value = strip_cache_control(params)
    if not isinstance(value, dict):
        return value
    if (text := _single_text(value.get("system"))) is not None:
        value["system"] = text
    messages = value.get("messages")
    if isinstance(messages, list):
        value["messages"] = [
            {**m, "content": text} if isinstance(m, dict) and (text := _single_text(m.get("content"))) is not None
            else m
            for m in messages
        ]
    return value


def _single_text(content: Any) -> str | None:
    if (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)
            and set(content[0]) == {"type", "text"} and content[0]["type"] == "text"
            and isinstance(content[0]["text"], str)):
        return content[0]["text"]
    return None


def lifetime_for(round_seconds: Sequence[float]) -> Lifetime | None:
    """The cache lifetime for the next request, from the measured durations of the batch rounds so far
    (none: direct calls, or no round measured yet); None when no lifetime would outlast the gap."""
    if not round_seconds:
        return "5m"  # see the module docstring: cheaper unless most first rounds outlast 5 minutes
    gap = 2 * max(round_seconds)
    if gap <= FIVE_MINUTE_GAP:
        return "5m"
    if gap <= ONE_HOUR_GAP:
        return "1h"
    return None


def _last_cacheable(content: Any) -> dict[str, Any] | None:
    if not isinstance(content, list):
        return None
    for block in reversed(content):
        if not isinstance(block, dict) or block.get("type") in _UNCACHEABLE:
            continue
        if block.get("type") == "text" and not block.get("text"):
            continue
        return block
    return None


def _count(value: Any) -> int:
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(_count(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(_count(v) for v in value)
    return 0
