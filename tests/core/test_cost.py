"""The price table, cost arithmetic and the `--max-cost` budget, checked against figures worked out by hand."""

from __future__ import annotations

import json
import math

import pytest

from replay.core.prices import PRICES, Price, price_for, price_table
from replay.core.budget import CostBudget, request_estimate_usd, usage_from_response
from replay.core.cost import TokenUsage, cost_line, cost_usd, format_usd, results_cost, with_costs
from replay.schema.results import ResultsFile


def test_sonnet_5_5_direct_cost_by_hand() -> None:
    # 1,000,000 uncached input at $2 + 100,000 output at $10 + 200,000 5-minute writes at $2.50
    # + 500,000 reads at $0.20 = 2 + 1 + 0.5 + 0.1 = $3.60
    usage = TokenUsage(input_tokens=1_000_000, output_tokens=100_000, cache_creation_input_tokens=200_000,
                       cache_read_input_tokens=500_000)
    assert cost_usd("claude-sonnet-5-5", usage) == pytest.approx(3.60)


def test_one_hour_writes_cost_twice_input_and_batch_halves_everything() -> None:
    # 100,000 writes of which 40,000 for an hour on Sonnet 4.6 ($3 input): 60,000 x 3.75 + 40,000 x 6
    # = 0.225 + 0.24 = $0.465; in a batch, half: $0.2325
    usage = TokenUsage(cache_creation_input_tokens=100_000, cache_write_1h_tokens=40_000)
    assert cost_usd("claude-sonnet-4-6", usage) == pytest.approx(0.465)
    assert cost_usd("claude-sonnet-4-6", usage, batch=True) == pytest.approx(0.2325)


def test_dated_ids_take_their_family_price_and_unknown_models_have_none() -> None:
    assert price_for("claude-sonnet-4-5-20250929") == PRICES["claude-sonnet-4-5"]
    assert price_for("claude-opus-4-1-20250805") == PRICES["claude-opus-4-1"]  # not claude-opus-4
    # a later model of a family is not its family's price: only a date suffix is stripped
    for newer in ("claude-opus-4-9", "claude-sonnet-4-7", "claude-fable-5-2", "claude-opus-5-5", "claude-sonnet-4-5-latest"):
        assert price_for(newer) is None, newer
    assert price_for("claude-opus-4-9-20260101") is None
    assert cost_usd("gpt-4o", TokenUsage(input_tokens=10)) is None
    assert format_usd(None) == "unknown"
    assert format_usd(0.0) == "$0.0000"


def test_overrides_add_models_and_reject_nonsense() -> None:
    table = price_table({"my-model": {"input": 1, "output": 4}})
    assert table["my-model"].cache_read == pytest.approx(0.1)
    assert table["my-model"].cache_write_1h == pytest.approx(2)
    assert cost_usd("my-model", TokenUsage(output_tokens=1_000_000), prices=table) == pytest.approx(4)
    for bad in ({"input": -1, "output": 1}, {"input": "2", "output": 1}, {"output": 1}, {"input": 1, "output": 1, "x": 2},
                {"input": math.inf, "output": 1}, {"input": 1, "output": math.nan}, {"input": 1, "output": 1, "cache_read": -math.inf}):
        with pytest.raises(ValueError):
            price_table({"m": bad})


def test_no_cost_is_ever_nan_or_infinite() -> None:
    # a price table refuses a price so large that a run's cost would overflow ("unknown": a typo, not a price)
    with pytest.raises(ValueError, match="prices.m.input must be a number from 0 to 1,000,000"):
        price_table({"m": {"input": 1e308, "output": 1}})
    # and should one reach `cost_usd` (the bundled table is code), a figure too large is no figure, never inf
    table = {"m": Price(1e308, 1, 1e308, 1e308, 1e308)}
    assert cost_usd("m", TokenUsage(input_tokens=10**9), prices=table) is None
    assert cost_usd("m", TokenUsage(input_tokens=10**400), prices=table) is None  # too large for a float at all
    priced = with_costs(_results("m", [{"input_tokens": 10**9}]), batch=False, prices=table)
    assert priced.cost_usd is None and "NaN" not in priced.model_dump_json() and "Infinity" not in priced.model_dump_json()


def _results(model: str, usages: list[dict[str, int] | None], **extra: object) -> ResultsFile:
    return ResultsFile.model_validate({"model": model, **extra, "files": [
        {"file": f"f{i}.md", "results": [], "usage": u} for i, u in enumerate(usages)]})


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


def test_an_unknown_model_costs_unknown_never_zero() -> None:
    results = with_costs(_results("my-own-model", [{"input_tokens": 5}]), batch=False)
    assert results.cost_usd is None and results.files[0].cost_usd is None
    assert cost_line(results.cost_usd).startswith("cost: unknown")
    assert json.loads(results.model_dump_json())["cost_usd"] is None


def test_cost_lines_read_as_one_sentence() -> None:
    # one parenthesis of notes for a known figure; an unknown one says only why and what to do
    assert cost_line(1.5, batch=True, notes=["replaying is free"]) == \
        "cost: $1.5000 (Message Batches, half price; replaying is free)"
    assert cost_line(1.5) == "cost: $1.5000"
    assert cost_line(None, batch=True, notes=["replaying is free"]) == \
        "cost: unknown: the model has no price (add it under [tool.judge-replay.prices] in pyproject.toml)"


def test_response_usage_splits_one_hour_writes() -> None:
    usage = usage_from_response({"input_tokens": 3, "output_tokens": 7, "cache_creation_input_tokens": 100,
                                 "cache_read_input_tokens": 50,
                                 "cache_creation": {"ephemeral_5m_input_tokens": 60, "ephemeral_1h_input_tokens": 40}})
    assert usage == TokenUsage(3, 7, 100, 50, 40)
    assert usage_from_response(None) == TokenUsage()


def test_request_estimate_is_above_what_the_request_can_be_billed_for_its_input() -> None:
    # 3,000 bytes -> 1,000 tokens; uncached Sonnet 5.5: 1,000 x $2 + 500 max output x $10 = $0.007
    assert request_estimate_usd("claude-sonnet-5-5", 3000, 500, cache=False, batch=False) == pytest.approx(0.007)
    # with caching, every input token at the 1-hour write price ($4): $0.004 + $0.005; batch halves it
    assert request_estimate_usd("claude-sonnet-5-5", 3000, 500, cache=True, batch=True) == pytest.approx(0.0045)
    assert request_estimate_usd("my-own-model", 3000, 500, cache=False, batch=False) is None


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
