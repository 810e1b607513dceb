"""The model stand-in refuses what the API refuses, and its cache looks only 20 blocks back."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from replay.core.cache_control import with_breakpoints
from replay.sim.api_errors import ApiError
from replay.sim.caching import CacheLedger
from replay.sim.strict import check_message_request

PAGE = "word " * 2000  # well over the minimum cacheable length


def conversation(fetches_per_turn: int, turns: int) -> dict[str, Any]:
    """A judge-like request: a prompt, then `turns` turns of `fetches_per_turn` tool calls each."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "## Batch to judge\n" + PAGE}]
    for t in range(turns):
        uses = [{"type": "tool_use", "id": f"toolu_{t}_{i}", "name": "fetch", "input": {"url": f"u{t}{i}"}}
                for i in range(fetches_per_turn)]
        messages.append({"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, *uses]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": u["id"], "content": PAGE[:400]}
                                                     for u in uses]})
    return {"model": "claude-sonnet-5-5", "max_tokens": 100, "messages": messages,
            "tools": [{"name": "fetch", "description": "d", "input_schema": {"type": "object"}}]}


def refused(request: dict[str, Any]) -> str:
    with pytest.raises(ApiError) as err:
        check_message_request(request)
    assert err.value.status == 400 and err.value.kind == "invalid_request_error"
    return err.value.message


def test_what_the_api_refuses_the_stand_in_refuses_with_its_words() -> None:
    base = with_breakpoints(conversation(2, 2), "5m")
    check_message_request(base)  # what the product sends passes
    r = copy.deepcopy(base)
    r["messages"][1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    assert refused(r) == "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted"
    r = copy.deepcopy(base)
    r["messages"][2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    assert refused(r) == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    r = with_breakpoints(conversation(2, 2), "5m")
    r["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    assert refused(r).startswith("a ttl='1h' cache_control block must not come after a ttl='5m'")
    assert refused({**base, "temperature": 0}).startswith("temperature: is not supported on claude-sonnet-5-5")
    check_message_request({**base, "model": "claude-sonnet-4-5", "temperature": 0})  # older models take it
    assert refused({**base, "speeed": 1}) == "speeed: Extra inputs are not permitted"
    assert refused({**base, "thinking": {"type": "enabled", "budget_tokens": 100}}).startswith(
        "`max_tokens` must be greater than `thinking.budget_tokens`")
    assert refused({**base, "messages": [{"role": "robot", "content": "x"}]}) == "messages.0.role: Input should be 'user'"


def test_the_product_never_puts_a_breakpoint_on_a_thinking_block() -> None:
    request = conversation(1, 1)
    request["messages"].append({"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]})
    request["messages"].append({"role": "user", "content": [{"type": "text", "text": "go on"}]})
    request["messages"][-1] = request["messages"][-2]  # the last message holds nothing but a thinking block
    request["messages"].pop(-2)
    marked = with_breakpoints(request, "5m")
    check_message_request(marked)  # the stand-in would refuse a breakpoint on the thinking block
    assert all("cache_control" not in b for m in marked["messages"] for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "thinking")


@pytest.mark.parametrize("fetches", [1, 10])
def test_a_turn_of_many_fetches_still_reads_the_previous_turn_from_the_cache(fetches: int) -> None:
    ledger = CacheLedger(clock=lambda: 0.0)
    for turns in range(3):
        usage: dict[str, Any] = {}
        request = with_breakpoints(conversation(fetches, turns), "5m")
        check_message_request(request)
        ledger.account(request, usage)
    previous = with_breakpoints(conversation(fetches, 1), "5m")
    usage_then: dict[str, Any] = {}
    CacheLedger(clock=lambda: 0.0).account(previous, usage_then)
    # the third request read everything the second one sent (its breakpoint is 2 x fetches + 1 blocks back)
    assert usage["cache_read_input_tokens"] >= usage_then["cache_creation_input_tokens"] + usage_then["input_tokens"] - 10


def test_without_the_trailing_breakpoint_more_than_20_blocks_miss() -> None:
    ledger = CacheLedger(clock=lambda: 0.0)
    first = with_breakpoints(conversation(10, 1), "5m")
    ledger.account(first, {})
    second = conversation(10, 2)
    second["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # the last block only
    usage: dict[str, Any] = {}
    ledger.account(second, usage)
    # 21 blocks after the first request's end: only the prompt's entry is in reach
    assert usage["cache_read_input_tokens"] < 3000
