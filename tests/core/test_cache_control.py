"""Prompt-caching breakpoints (pure) and the model stand-in's cache accounting, spoken to with the real SDK."""

from __future__ import annotations

import copy
from typing import Any

import anthropic
import pytest

from replay.core.cache_control import MAX_BREAKPOINTS, lifetime_for, with_breakpoints, without_breakpoints
from replay.judge.conversation import TOOLS
from replay.sim import start_model

PROMPT = "## Batch to judge (from `docs/a.md`)\n\n```json\n" + (
    '[{"id": "a-1", "claim": "GPT-4.1 offers a 1,047,576 token context window.", "claim_type": "version", '
    '"evidence_url": "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"}]\n```\n') + "x " * 2000


def request(messages: list[dict[str, Any]], system: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 1024, "messages": messages,
                              "tools": copy.deepcopy(TOOLS)}
    if system is not None:
        params["system"] = system
    return params


def markers(value: Any) -> int:
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(markers(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list):
        return sum(markers(v) for v in value)
    return 0


TOOL_LOOP = [
    {"role": "user", "content": PROMPT},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "fetch it", "signature": "sig"},
                                      {"type": "tool_use", "id": "toolu_1", "name": "microsoft_docs_fetch",
                                       "input": {"url": "https://learn.microsoft.com/x"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "page text"}]},
]


def test_breakpoints_on_the_tools_the_prompt_and_the_end_of_the_conversation() -> None:
    params = request(copy.deepcopy(TOOL_LOOP), system="You judge claims.")
    cached = with_breakpoints(params, "1h")
    assert markers(cached) == MAX_BREAKPOINTS
    assert cached["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert cached["system"] == [{"type": "text", "text": "You judge claims.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    assert cached["messages"][0]["content"][0]["text"] == PROMPT  # the prompt text, unchanged
    assert "cache_control" in cached["messages"][0]["content"][0]
    assert "cache_control" in cached["messages"][-1]["content"][-1]
    assert "cache_control" not in cached["messages"][1]["content"][0]  # a thinking block never carries one
    assert params == request(copy.deepcopy(TOOL_LOOP), system="You judge claims.")  # the input is not changed
    assert without_breakpoints(cached) == without_breakpoints(params)


def test_never_more_than_four_breakpoints_and_existing_ones_count() -> None:
    params = request([{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                                                   {"type": "text", "text": PROMPT}]}],
                     system=[{"type": "text", "text": "s1", "cache_control": {"type": "ephemeral"}},
                             {"type": "text", "text": "s2", "cache_control": {"type": "ephemeral"}}])
    assert markers(with_breakpoints(params, "5m")) == MAX_BREAKPOINTS
    first_turn = with_breakpoints(request([{"role": "user", "content": PROMPT}]), "5m")
    assert markers(first_turn) == 2  # the tools and the prompt (which is also the end of the conversation)
    assert first_turn["tools"][-1]["cache_control"] == {"type": "ephemeral"}  # 5 minutes: the API default


@pytest.mark.parametrize(("rounds", "lifetime"), [
    ([], "5m"), ([3.0, 90.0], "5m"), ([130.0], "1h"), ([600.0, 1500.0], "1h"), ([1700.0], None),
])
def test_the_lifetime_outlasts_two_rounds(rounds: list[float], lifetime: str | None) -> None:
    assert lifetime_for(rounds) == lifetime


def test_the_stand_in_writes_then_reads_the_prefix_and_keeps_the_total() -> None:
    first = with_breakpoints(request([{"role": "user", "content": PROMPT}]), "5m")
    with start_model() as model:
        client = anthropic.Anthropic(api_key="stand-in", base_url=model.url, max_retries=0)
        plain = client.messages.create(**request([{"role": "user", "content": PROMPT}])).usage
        wrote = client.messages.create(**first).usage
        again = client.messages.create(**first).usage
        turn1 = client.messages.with_raw_response.create(**first).http_response.json()  # sent back as it came
        loop = [{"role": "user", "content": PROMPT},
                {"role": "assistant", "content": turn1["content"]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": turn1["content"][-1]["id"],
                                              "content": "page text " * 300}]}]
        turn2 = client.messages.create(**with_breakpoints(request(loop), "1h")).usage
    assert (plain.cache_creation_input_tokens, plain.cache_read_input_tokens) == (0, 0)
    assert wrote.cache_read_input_tokens == 0 and wrote.cache_creation_input_tokens > 1000
    assert again.cache_read_input_tokens == wrote.cache_creation_input_tokens and again.cache_creation_input_tokens == 0
    for usage in (wrote, again):
        total = usage.input_tokens + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
        assert total == plain.input_tokens
    # the next turn reads the first turn's prefix and writes only what is new, at the 1-hour lifetime
    assert turn2.cache_read_input_tokens == wrote.cache_creation_input_tokens
    assert turn2.cache_creation is not None and turn2.cache_creation.ephemeral_1h_input_tokens == turn2.cache_creation_input_tokens
    assert 0 < (turn2.cache_creation_input_tokens or 0) < (turn2.cache_read_input_tokens or 0)


def test_fetch_per_turn_spreads_the_fetches_over_turns() -> None:
    two_urls = PROMPT.replace('"}]\n```', '"}, {"id": "a-2", "claim": "Quotas exist.", "claim_type": "tpm", '
                              '"evidence_url": "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"}]\n```')
    with start_model() as every, start_model(fetch_per_turn=1) as one:
        params = request([{"role": "user", "content": two_urls}])
        all_at_once = anthropic.Anthropic(api_key="k", base_url=every.url).messages.create(**params)
        one_by_one = anthropic.Anthropic(api_key="k", base_url=one.url).messages.create(**params)
    assert [b.type for b in all_at_once.content].count("tool_use") == 2
    assert [b.type for b in one_by_one.content].count("tool_use") == 1
