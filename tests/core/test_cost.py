"""The price table, cost arithmetic and the `--max-cost` budget, checked against figures worked out by hand."""

from __future__ import annotations

import json
import math
import re
from dataclasses import astuple

import pytest

from replay.core.budget import CostBudget, request_estimate_usd, usage_from_response
from replay.core.cost import TokenUsage, cost_line, cost_usd, format_usd, results_cost, tokens_of, with_costs
from replay.core.prices import PRICES, Price, Rates, price_for, price_table
from replay.errors import InputError
from replay.schema.results import ResultsFile, Usage
from replay.settings import project_prices
from locations import REPO

# One usage priced on every model below: 1,000,000 uncached input, 100,000 output, 200,000 cache writes of which
# 100,000 for an hour, 1,000,000 cache reads. At rates (in, out, 5m, 1h, read) it costs
#   in + 0.1 out + 0.1 5m + 0.1 1h + read   (USD)
MIXED = TokenUsage(input_tokens=1_000_000, output_tokens=100_000, cache_creation_input_tokens=200_000,
                   cache_write_1h_tokens=100_000, cache_read_input_tokens=1_000_000)

BY_HAND = {
    "claude-fable-5-2": 8 + 4 + 1.0 + 1.6 + 0.20,        # 14.80 ($8 / $40, writes $10 / $16, reads $0.20)
    "claude-mythos-5-2": 8 + 4 + 1.0 + 1.6 + 0.20,       # 14.80 (third-party figures, as Fable 5.2's)
    "claude-fable-5-1": 10 + 5 + 1.25 + 2 + 0.25,        # 18.50 (reads 0.025x input)
    "claude-mythos-5-1": 10 + 5 + 1.25 + 2 + 0.25,       # 18.50
    "claude-fable-5": 10 + 5 + 1.25 + 2 + 1.00,          # 19.25 (reads 0.1x input)
    "claude-mythos-5": 10 + 5 + 1.25 + 2 + 1.00,         # 19.25
    "claude-opus-5-5": 4 + 2 + 0.5 + 0.8 + 0.20,         # 7.50 (reads 0.05x input: $0.20, not $0.40)
    "claude-opus-5": 5 + 2.5 + 0.625 + 1.0 + 0.50,       # 9.625
    "claude-sonnet-5-5": 2 + 1 + 0.25 + 0.4 + 0.10,      # 3.75 (reads $0.10 since 2026-10-07)
    "claude-sonnet-5": 2 + 1 + 0.25 + 0.4 + 0.20,        # 3.85
    "claude-sonnet-4-6": 3 + 1.5 + 0.375 + 0.6 + 0.30,   # 5.775
    "claude-haiku-5-5": 0.10 + 0.05 + 0.0125 + 0.02 + 0.01,  # 0.1925 (a conversation: no request kept apart)
    "claude-haiku-4-5": 1 + 0.5 + 0.125 + 0.2 + 0.10,    # 1.925
}


@pytest.mark.parametrize("model", sorted(BY_HAND))
def test_every_model_of_the_lineup_by_hand(model: str) -> None:
    assert cost_usd(model, MIXED) == pytest.approx(BY_HAND[model])


def test_every_row_says_where_its_figures_come_from_and_when() -> None:
    for model, price in PRICES.items():
        assert price.source and price.read_on[:4] == "2026", model
    # the figures no Anthropic text gives are marked as such, in the row
    assert PRICES["claude-mythos-5-2"].third_party == "every price"
    assert PRICES["claude-fable-5-2"].third_party == "cache writes and reads"
    assert {m for m, p in PRICES.items() if p.third_party} == {"claude-mythos-5-2", "claude-fable-5-2"}


def test_sonnet_5_5_direct_cost_by_hand() -> None:
    # 1,000,000 uncached input at $2 + 100,000 output at $10 + 200,000 5-minute writes at $2.50
    # + 500,000 reads at $0.10 = 2 + 1 + 0.5 + 0.05 = $3.55
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=100_000, cache_creation_input_tokens=200_000,
                       cache_read_input_tokens=500_000)
    assert cost_usd("claude-sonnet-5-5", usage) == pytest.approx(3.55)


def test_one_hour_writes_cost_twice_input_and_batch_halves_everything() -> None:
    # 100,000 writes of which 40,000 for an hour on Sonnet 4.6 ($3 input): 60,000 x 3.75 + 40,000 x 6
    # = 0.225 + 0.24 = $0.465; in a batch, half: $0.2325
    usage = TokenUsage(cache_creation_input_tokens=100_000, cache_write_1h_tokens=40_000)
    assert cost_usd("claude-sonnet-4-6", usage) == pytest.approx(0.465)
    assert cost_usd("claude-sonnet-4-6", usage, batch=True) == pytest.approx(0.2325)


# --------------------------------------------------------------------------- Haiku 5.5's price step


def test_haiku_5_5_a_prompt_of_exactly_100000_tokens_is_on_the_low_step() -> None:
    # prompt = 40,000 input + 30,000 cache writes + 30,000 cache reads = 100,000: not over, low prices:
    # 40,000 x $0.10 + 30,000 x $0.125 + 30,000 x $0.01 + 1,000 output x $0.50
    # = 0.004 + 0.00375 + 0.0003 + 0.0005 = $0.00855
    at = TokenUsage.one_request(input_tokens=40_000, cache_creation_input_tokens=30_000,
                                cache_read_input_tokens=30_000, output_tokens=1_000)
    assert at.prompt_tokens == 100_000
    assert cost_usd("claude-haiku-5-5", at) == pytest.approx(0.00855, abs=1e-9)


def test_haiku_5_5_a_prompt_of_100001_tokens_pays_the_high_step_on_everything_output_included() -> None:
    # one more input token: 100,001 is over, so every token of the request is at the high prices:
    # 40,001 x $0.50 + 30,000 x $0.625 + 30,000 x $0.05 + 1,000 output x $2.50
    # = 0.0200005 + 0.01875 + 0.0015 + 0.0025 = $0.0427505
    over = TokenUsage.one_request(input_tokens=40_001, cache_creation_input_tokens=30_000,
                                  cache_read_input_tokens=30_000, output_tokens=1_000)
    assert cost_usd("claude-haiku-5-5", over) == pytest.approx(0.0427505, abs=1e-6)
    # the same tokens on a model with no step: only the one token more
    assert cost_usd("claude-haiku-4-5", over) == pytest.approx(
        (40_001 * 1 + 30_000 * 1.25 + 30_000 * 0.10 + 1_000 * 5) / 1e6)


def test_a_conversation_prices_each_request_on_its_own_side_of_the_step() -> None:
    # turn 1: 60,000 input, 2,000 output (prompt 60,000: low): 0.006 + 0.001 = $0.007
    # turn 2: 10,001 input + 90,000 cache reads (prompt 100,001: high), 4,000 output:
    #         10,001 x $0.50 + 90,000 x $0.05 + 4,000 x $2.50 = 0.0050005 + 0.0045 + 0.01 = $0.0195005
    # together $0.0265005; the summed prompt (160,001) says nothing: turn 1 stays on the low step
    usage = Usage()
    usage.add({"input_tokens": 60_000, "output_tokens": 2_000})
    usage.add({"input_tokens": 10_001, "cache_read_input_tokens": 90_000, "output_tokens": 4_000})
    assert usage.long_prompts is not None and len(usage.long_prompts) == 1
    assert cost_usd("claude-haiku-5-5", tokens_of(usage)) == pytest.approx(0.0265005, abs=1e-6)
    # a model with no step prices the sums: 70,001 x $0.10 + 90,000 x $0.01 + 6,000 x $0.50 on Haiku 5.5's
    # low prices would be $0.0109001; Sonnet 5.5: 70,001 x 2 + 90,000 x 0.10 + 6,000 x 10 = $0.209002
    assert cost_usd("claude-sonnet-5-5", tokens_of(usage)) == pytest.approx(0.209002)
    # and the record reads back the same (a results file keeps what pricing needs)
    again = Usage.model_validate_json(usage.model_dump_json())
    assert cost_usd("claude-haiku-5-5", tokens_of(again)) == pytest.approx(0.0265005, abs=1e-6)


# --------------------------------------------------------------------------- US-only inference


def test_us_only_inference_costs_1_1x_on_every_token_kind() -> None:
    # Opus 5.5, MIXED: $7.50 x 1.1 = $8.25; "global" (the default) is the standard price
    assert cost_usd("claude-opus-5-5", _geo(MIXED, "us")) == pytest.approx(8.25)
    assert cost_usd("claude-opus-5-5", _geo(MIXED, "global")) == pytest.approx(7.50)
    # each kind alone: 1,000,000 reads at $0.20 x 1.1 = $0.22; 1,000,000 output at $20 x 1.1 = $22
    assert cost_usd("claude-opus-5-5", TokenUsage(cache_read_input_tokens=10**6, inference_geo="us")) == \
        pytest.approx(0.22)
    assert cost_usd("claude-opus-5-5", TokenUsage(output_tokens=10**6, inference_geo="us")) == pytest.approx(22)
    # a model before 4.6 does not take inference_geo (the API refuses it): standard prices, $1.925
    assert cost_usd("claude-haiku-4-5", _geo(MIXED, "us")) == pytest.approx(1.925)


def test_batch_cache_step_and_us_only_stack() -> None:
    # one Haiku 5.5 request over the step: MIXED's tokens at the high prices
    # 1,000,000 x 0.50 + 100,000 x 2.50 + 100,000 x 0.625 + 100,000 x 1.00 + 1,000,000 x 0.05
    # = 0.5 + 0.25 + 0.0625 + 0.1 + 0.05 = $0.9625; US-only x1.1 and batch x0.5: $0.529375
    request = TokenUsage.one_request(1_000_000, 100_000, 200_000, 1_000_000, 100_000, inference_geo="us")
    assert cost_usd("claude-haiku-5-5", request, batch=True) == pytest.approx(0.529375)
    # Sonnet 5.5, MIXED: $3.75 x 1.1 x 0.5 = $2.0625
    assert cost_usd("claude-sonnet-5-5", _geo(MIXED, "us"), batch=True) == pytest.approx(2.0625)


def test_the_responses_inference_geo_is_kept_where_usage_is_kept_and_absent_stays_absent() -> None:
    plain = Usage()
    plain.add({"input_tokens": 3, "output_tokens": 7})
    assert "inference_geo" not in plain.model_dump() and "long_prompts" not in plain.model_dump_json()
    assert json.loads(plain.model_dump_json()) == {
        "input_tokens": 3, "output_tokens": 7, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
        "cache_write_1h_tokens": 0}
    us = Usage()
    us.add({"input_tokens": 3_000, "output_tokens": 7_000, "inference_geo": "global"})
    us.add({"input_tokens": 5_000, "output_tokens": 1_000, "inference_geo": "us"})  # should they differ, the dearer
    us.add({"input_tokens": 5_000, "output_tokens": 1_000, "inference_geo": "global"})
    assert json.loads(us.model_dump_json())["inference_geo"] == "us"
    assert tokens_of(Usage.model_validate_json(us.model_dump_json())).inference_geo == "us"
    # 13,000 input at $4 + 9,000 output at $20, x1.1 = (0.052 + 0.18) x 1.1 = $0.2552
    assert cost_usd("claude-opus-5-5", tokens_of(us)) == pytest.approx(0.2552)


def test_response_usage_splits_one_hour_writes_and_says_where_inference_ran() -> None:
    usage = usage_from_response({"input_tokens": 3, "output_tokens": 7, "cache_creation_input_tokens": 100,
                                 "cache_read_input_tokens": 50, "inference_geo": "us",
                                 "cache_creation": {"ephemeral_5m_input_tokens": 60, "ephemeral_1h_input_tokens": 40}})
    assert usage == TokenUsage(3, 7, 100, 50, 40, "us")
    assert usage_from_response(None) == TokenUsage()
    assert usage_from_response({"input_tokens": 100_001}).long_prompts == (TokenUsage(100_001),)
    assert usage_from_response({"input_tokens": 100_000}).long_prompts == ()


# --------------------------------------------------------------------------- which row a model id takes


def test_dated_ids_of_older_models_take_their_alias_price_and_look_alikes_have_none() -> None:
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]
    assert price_for("claude-opus-4-5-20251101") == PRICES["claude-opus-4-5"]
    assert price_for("claude-haiku-4-5-20251001") == PRICES["claude-haiku-4-5"]
    assert price_for("claude-opus-4-1-20250805") == PRICES["claude-opus-4-1"]  # not claude-opus-4
    assert price_for("claude-opus-4-20250514") == PRICES["claude-opus-4"]
    # the longest id wins: Opus 5.5 is not priced as Opus 5, Fable 5.1 not as Fable 5
    assert price_for("claude-opus-5-5") == PRICES["claude-opus-5-5"] != PRICES["claude-opus-5"]
    assert price_for("claude-fable-5-1") == PRICES["claude-fable-5-1"] != PRICES["claude-fable-5"]
    # a later model of a family is not its family's price; 4.6+ ids have no dated snapshots
    for newer in ("claude-opus-4-9", "claude-sonnet-4-7", "claude-opus-5-6", "claude-fable-5-3",
                  "claude-sonnet-4-5-latest", "claude-opus-5-5-20261201", "claude-haiku-5-5-20261007",
                  "claude-opus-4-9-20260101", "claude-mythos-preview", "opus", "us.anthropic.claude-sonnet-5-5"):
        assert price_for(newer) is None, newer


def test_an_unknown_model_costs_unknown_never_zero() -> None:
    assert cost_usd("gpt-4o", TokenUsage(input_tokens=10)) is None
    assert cost_usd("claude-mythos-preview", TokenUsage()) is None
    results = with_costs(_results("my-own-model", [{"input_tokens": 5}]), batch=False)
    assert results.cost_usd is None and results.files[0].cost_usd is None
    assert cost_line(results.cost_usd).startswith("cost: unknown")
    assert json.loads(results.model_dump_json())["cost_usd"] is None
    assert format_usd(None) == "unknown"
    assert format_usd(0.0) == "$0.0000"
    with pytest.raises(ValueError, match="price"):
        CostBudget(1.0, "claude-mythos-preview")
    CostBudget(1.0, "claude-opus-5-5")  # the current lineup has a price: --max-cost takes it


# --------------------------------------------------------------------------- [tool.judge-replay.prices]


def test_overrides_add_models_with_the_standard_cache_ratios() -> None:
    table = price_table({"my-model": {"input": 1, "output": 4}})
    assert astuple(table["my-model"].rates) == pytest.approx((1, 4, 1.25, 2, 0.1))
    assert table["my-model"].us_only == 1.1 and table["my-model"].long_prompt is None
    assert cost_usd("my-model", TokenUsage(output_tokens=1_000_000), prices=table) == pytest.approx(4)


def test_an_override_of_a_listed_model_keeps_its_own_cache_ratios_and_step() -> None:
    # Opus 5.5 reads at 0.05x input: a new input of $3 makes them $0.15, writes $3.75 / $6; output stays $20
    opus = price_table({"claude-opus-5-5": {"input": 3}})["claude-opus-5-5"]
    assert astuple(opus.rates) == pytest.approx((3, 20, 3.75, 6, 0.15))
    # every kind given explicitly (the price reference's example) is exactly the bundled row's prices
    explicit = {"input": 4, "output": 20, "cache_write_5m": 5, "cache_write_1h": 8, "cache_read": 0.2}
    assert price_table({"claude-opus-5-5": explicit})["claude-opus-5-5"].rates == PRICES["claude-opus-5-5"].rates
    haiku = price_table({"claude-haiku-5-5": {"output": 0.6}})["claude-haiku-5-5"]
    assert haiku.rates.output == 0.6 and haiku.long_prompt == PRICES["claude-haiku-5-5"].long_prompt
    moved = price_table({"claude-haiku-5-5": {"long_prompt": {"over_tokens": 200_000}}})["claude-haiku-5-5"]
    assert moved.long_prompt is not None and moved.long_prompt.over_tokens == 200_000
    over = TokenUsage.one_request(input_tokens=150_000)  # over 100,000, not over 200,000: $0.015
    assert cost_usd("claude-haiku-5-5", over, prices={"claude-haiku-5-5": moved}) == pytest.approx(0.015)
    flat = price_table({"claude-haiku-5-5": {"long_prompt": False}})["claude-haiku-5-5"]
    assert flat.long_prompt is None
    # a step for a model that had none: cache prices left out at the model's own ratios (Opus 5.5 reads 0.05x)
    stepped = price_table({"claude-opus-5-5": {"long_prompt": {"over_tokens": 150_000, "input": 8, "output": 40}}})
    step = stepped["claude-opus-5-5"].long_prompt
    assert step is not None and astuple(step.rates) == pytest.approx((8, 40, 10, 16, 0.4))
    assert price_table({"claude-opus-5-5": {"us_only": 1.2}})["claude-opus-5-5"].us_only == 1.2


@pytest.mark.parametrize("entry, said", [
    (3, "prices.m must be a table"),
    ({"input": -1, "output": 1}, "prices.m.input must be a number from 0 to 1,000,000"),
    ({"input": "2", "output": 1}, "prices.m.input must be a number"),
    ({"input": True, "output": 1}, "prices.m.input must be a number"),
    ({"input": math.inf, "output": 1}, "prices.m.input must be a number"),
    ({"input": 1, "output": math.nan}, "prices.m.output must be a number"),
    ({"input": 1, "output": 1, "cache_read": -math.inf}, "prices.m.cache_read must be a number"),
    ({"input": 1e308, "output": 1}, "prices.m.input must be a number from 0 to 1,000,000"),
    ({"output": 1}, "prices.m needs at least input and output"),
    ({"input": 1, "output": 1, "x": 2}, "prices.m has unknown keys ['x']"),
    ({"input": 1, "output": 1, "us_only": 0.5}, "prices.m.us_only must be a number from 1 to 10"),
    ({"input": 1, "output": 1, "us_only": math.nan}, "prices.m.us_only must be a number"),
    ({"input": 1, "output": 1, "long_prompt": "yes"}, "prices.m.long_prompt must be a table"),
    ({"input": 1, "output": 1, "long_prompt": True}, "prices.m.long_prompt must be a table"),
    ({"input": 1, "output": 1, "long_prompt": {"over_tokens": 99_999, "input": 2, "output": 2}},
     "prices.m.long_prompt.over_tokens must be a whole number from 100,000"),
    ({"input": 1, "output": 1, "long_prompt": {"over_tokens": 150_000.0, "input": 2, "output": 2}},
     "prices.m.long_prompt.over_tokens must be a whole number"),
    ({"input": 1, "output": 1, "long_prompt": {"over_tokens": True, "input": 2, "output": 2}},
     "prices.m.long_prompt.over_tokens must be a whole number"),
    ({"input": 1, "output": 1, "long_prompt": {"input": 2, "output": 2}}, "prices.m.long_prompt.over_tokens"),
    ({"input": 1, "output": 1, "long_prompt": {"over_tokens": 200_000}}, "prices.m.long_prompt needs at least input"),
    ({"input": 1, "output": 1, "long_prompt": {"over_tokens": 200_000, "input": 2, "output": 2, "cache_read": -1}},
     "prices.m.long_prompt.cache_read must be a number"),
])
def test_a_hostile_override_is_refused_with_one_line(entry: object, said: str) -> None:
    with pytest.raises(ValueError) as refused:
        price_table({"m": entry})
    assert str(refused.value).startswith(said) and "\n" not in str(refused.value)


def test_a_hostile_override_in_pyproject_is_one_line_naming_the_file(tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.judge-replay.prices.claude-haiku-5-5]\ninput = 0.1\n\n'
        '[tool.judge-replay.prices.claude-haiku-5-5.long_prompt]\nover_tokens = 5\n')
    with pytest.raises(InputError) as refused:
        project_prices(tmp_path)
    assert "pyproject.toml" in str(refused.value) and "\n" not in str(refused.value)
    assert "prices.claude-haiku-5-5.long_prompt.over_tokens must be a whole number from 100,000" in str(refused.value)


def test_the_readme_override_example_gives_each_model_its_listed_prices(tmp_path) -> None:
    # the price reference's example (docs/reference/prices.md), as a user pastes it: every listed model keeps exactly its bundled prices
    readme = (REPO / "docs" / "reference" / "prices.md").read_text("utf-8")
    block = re.search(r"```toml\n(\[tool\.judge-replay\.prices\]\n.*?)```", readme, re.DOTALL)
    assert block is not None, "docs/reference/prices.md has no [tool.judge-replay.prices] example"
    (tmp_path / "pyproject.toml").write_text(block.group(1))
    table = project_prices(tmp_path)
    listed = [m for m in table if m in PRICES and table[m] is not PRICES[m]]
    assert listed, "the example corrects no listed model"
    for model in listed:
        assert (table[model].rates, table[model].long_prompt, table[model].us_only) == \
            (PRICES[model].rates, PRICES[model].long_prompt, PRICES[model].us_only), model
    assert astuple(table["my-fine-tuned-model"].rates) == pytest.approx((3, 15, 3.75, 6, 0.3))


def test_no_cost_is_ever_nan_or_infinite() -> None:
    # a price table refuses a price so large that a run's cost would overflow ("unknown": a typo, not a price)
    with pytest.raises(ValueError, match="prices.m.input must be a number from 0 to 1,000,000"):
        price_table({"m": {"input": 1e308, "output": 1}})
    # and should one reach `cost_usd` (the bundled table is code), a figure too large is no figure, never inf
    table = {"m": Price(Rates(1e308, 1, 1e308, 1e308, 1e308))}
    assert cost_usd("m", TokenUsage(input_tokens=10**9), prices=table) is None
    assert cost_usd("m", TokenUsage(input_tokens=10**400), prices=table) is None  # too large for a float at all
    priced = with_costs(_results("m", [{"input_tokens": 10**9}]), batch=False, prices=table)
    written = priced.model_dump_json()
    assert priced.cost_usd is None and "NaN" not in written and "Infinity" not in written
    # a results file whose kept-apart requests hold more than its sums (not ours): nothing below 0, no error
    odd = Usage(input_tokens=1, long_prompts=[Usage(input_tokens=200_000)])
    assert cost_usd("claude-haiku-5-5", tokens_of(odd)) == pytest.approx(0.1)


# --------------------------------------------------------------------------- costs of runs


def _results(model: str, usages: list[dict[str, object] | None], **extra: object) -> ResultsFile:
    return ResultsFile.model_validate({"model": model, **extra, "files": [
        {"file": f"f{i}.md", "results": [], "usage": u} for i, u in enumerate(usages)]})


def _geo(usage: TokenUsage, geo: str) -> TokenUsage:
    return TokenUsage(usage.input_tokens, usage.output_tokens, usage.cache_creation_input_tokens,
                      usage.cache_read_input_tokens, usage.cache_write_1h_tokens, geo, usage.long_prompts)


def test_costs_are_priced_from_the_usage_with_the_current_table() -> None:
    # Sonnet 5.5: 100,000 input at $2 = $0.20; 10,000 output at $10 = $0.10; a file with no usage costs 0
    old = _results("claude-sonnet-5-5", [{"input_tokens": 100_000}, {"output_tokens": 10_000}, None])
    total, per_file = results_cost(old, batch=False)
    assert per_file == {"f0.md": pytest.approx(0.2), "f1.md": pytest.approx(0.1), "f2.md": 0.0}
    assert total == pytest.approx(0.3)
    assert results_cost(old, batch=True)[0] == pytest.approx(0.15)
    priced = with_costs(old, batch=False)
    assert priced.cost_usd == pytest.approx(0.3) and priced.files[0].cost_usd == pytest.approx(0.2)
    # the stored figure is what it was priced at when recorded: every command prices the usage with the
    # current table, so an override changes it (100,000 input + 10,000 output at $100 = $11)
    reread = ResultsFile.model_validate_json(priced.model_dump_json())
    dearer = price_table({"claude-sonnet-5-5": {"input": 100, "output": 100}})
    assert results_cost(reread, batch=False, prices=dearer)[0] == pytest.approx(11.0)
    assert with_costs(reread, batch=False, prices=dearer).files[0].cost_usd == pytest.approx(10.0)
    # a US-only file of a results file: 100,000 input at $2 x 1.1 = $0.22
    us = _results("claude-sonnet-5-5", [{"input_tokens": 100_000, "inference_geo": "us"}])
    assert results_cost(us, batch=False)[0] == pytest.approx(0.22)


def test_cost_lines_read_as_one_sentence() -> None:
    # one parenthesis of notes for a known figure; an unknown one says only why and what to do
    assert cost_line(1.5, batch=True, notes=["replaying is free"]) == \
        "cost: $1.5000 (Message Batches, half price; replaying is free)"
    assert cost_line(1.5) == "cost: $1.5000"
    assert cost_line(None, batch=True, notes=["replaying is free"]) == \
        "cost: unknown: the model has no price (add it under [tool.judge-replay.prices] in pyproject.toml)"


# --------------------------------------------------------------------------- --max-cost


def test_request_estimate_is_above_what_the_request_can_be_billed_for_its_input() -> None:
    # 3,000 bytes -> 1,000 tokens; uncached Sonnet 5.5: 1,000 x $2 + 500 max output x $10 = $0.007
    assert request_estimate_usd("claude-sonnet-5-5", 3000, 500, cache=False, batch=False) == pytest.approx(0.007)
    # with caching, every input token at the 1-hour write price ($4): $0.004 + $0.005; batch halves it
    assert request_estimate_usd("claude-sonnet-5-5", 3000, 500, cache=True, batch=True) == pytest.approx(0.0045)
    # US-only: x1.1
    assert request_estimate_usd("claude-sonnet-5-5", 3000, 500, cache=False, batch=False, inference_geo="us") == \
        pytest.approx(0.0077)
    assert request_estimate_usd("my-own-model", 3000, 500, cache=False, batch=False) is None


def test_request_estimate_of_a_long_haiku_5_5_prompt_is_at_the_high_step() -> None:
    # 300,003 bytes -> 100,001 tokens, over the step: 100,001 x $0.50 + 1,000 output x $2.50 = $0.0525005
    assert request_estimate_usd("claude-haiku-5-5", 300_003, 1_000, cache=False, batch=False) == \
        pytest.approx(0.0525005, abs=1e-6)
    # 300,000 bytes -> exactly 100,000 tokens: 100,000 x $0.10 + 1,000 x $0.50 = $0.0105
    assert request_estimate_usd("claude-haiku-5-5", 300_000, 1_000, cache=False, batch=False) == pytest.approx(0.0105)


def test_budget_reserves_refuses_for_good_and_books_what_was_billed() -> None:
    budget = CostBudget(1.0, "claude-sonnet-5-5")
    assert budget.admit(0.6, "call 1")
    budget.charge(TokenUsage(input_tokens=100_000), 0.6, batch=False)  # billed $0.20, reservation released
    assert (budget.spent_usd, budget.reserved_usd) == (pytest.approx(0.2), 0.0)
    assert budget.admit(0.7, "call 2")
    budget.release(0.7)  # it failed before the model answered: nothing billed
    assert not budget.admit(0.81, "call 3")
    assert budget.refused is not None and "--max-cost $1.0000 reached: call 3" in budget.refused
    assert not budget.admit(0.01, "call 4")  # once refused, the run stops there
    with pytest.raises(ValueError, match="price"):
        CostBudget(1.0, "my-own-model")


def test_budget_books_us_only_responses_at_1_1x_and_estimates_the_next_requests_so() -> None:
    budget = CostBudget(1.0, "claude-sonnet-5-5")
    assert budget.estimate(3000, 500, cache=False, batch=False) == pytest.approx(0.007)
    assert budget.admit(0.1, "call 1")
    # 100,000 input at $2 x 1.1 = $0.22 billed
    budget.charge(usage_from_response({"input_tokens": 100_000, "inference_geo": "us"}), 0.1, batch=False)
    assert budget.spent_usd == pytest.approx(0.22)
    assert budget.estimate(3000, 500, cache=False, batch=False) == pytest.approx(0.0077)


def test_the_readme_price_table_is_the_bundled_one() -> None:
    # every row of the price reference's table read back: the same five prices, the same US-only multiplier, every
    # bundled model listed once (a price change that forgets docs/reference/prices.md fails here)
    readme = (REPO / "docs" / "reference" / "prices.md").read_text("utf-8")
    rows = [line for line in readme.splitlines() if line.startswith("| `claude-")]
    seen: dict[str, tuple[float, ...]] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        names = re.findall(r"`([^`]+)`", cells[0])
        family = "-".join(names[0].split("-")[:2])
        models = [family + n if n.startswith("-") else n for n in names]
        figures = tuple(float(re.sub(r"[^\d.]", "", c)) for c in cells[1:6])
        us_only = 1.0 if cells[6] == "n/a" else float(cells[6].rstrip("x"))
        for model in models:
            price = PRICES[model]
            step = "over 100,000" in cells[0]
            rates = price.long_prompt.rates if step and price.long_prompt else price.rates
            assert figures == astuple(rates), (model, figures)
            assert us_only == price.us_only, model
            assert bool(price.third_party) == ("³" in row), model
            seen[model + (" step" if step else "")] = figures
    assert set(seen) == set(PRICES) | {"claude-haiku-5-5 step"}
