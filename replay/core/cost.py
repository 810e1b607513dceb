"""What a run cost: the bundled Claude price table (dated, overridable) and USD from recorded usage (pure).

Prices are USD per million tokens, read 2026-11 from Anthropic's platform pricing page
(platform.claude.com/docs/en/about-claude/pricing) and each model's overview page. The Message Batches
API halves every price (input, output, cache writes and reads: the discounts stack). A model that is not
in the table has no price: its cost is `None`, shown as "unknown", never 0.

Usage classes, as the API reports them: `input_tokens` is the uncached rest of the input;
`cache_creation_input_tokens` were written to the cache (at the 5-minute or 1-hour write price; a
response's `usage.cache_creation` splits them, otherwise they count as 5-minute writes);
`cache_read_input_tokens` were read from it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from replay.core.prices import BATCH_DISCOUNT, PRICES, Price, price_for
from replay.schema.manifest import RunManifest
from replay.schema.results import FileResult, ResultsFile, Usage


@dataclass(frozen=True)
class TokenUsage:
    """The token classes of one or more responses."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of `cache_creation_input_tokens`, those written with the 1-hour lifetime."""


def cost_usd(model: str, usage: TokenUsage, *, batch: bool = False,
             prices: Mapping[str, Price] = PRICES) -> float | None:
    """USD billed for `usage` on `model` (None when the model has no price, or the figure is too large
    for a number: never NaN or infinity, which JSON cannot hold)."""
    price = price_for(model, prices)
    if price is None:
        return None
    write_1h = min(usage.cache_write_1h_tokens, usage.cache_creation_input_tokens)
    write_5m = usage.cache_creation_input_tokens - write_1h
    try:
        total = (usage.input_tokens * price.input + usage.output_tokens * price.output
                 + write_5m * price.cache_write_5m + write_1h * price.cache_write_1h
                 + usage.cache_read_input_tokens * price.cache_read) / 1_000_000
    except OverflowError:  # a token count too large for a float
        return None
    return round(total * (BATCH_DISCOUNT if batch else 1.0), 6) if math.isfinite(total) else None


def format_usd(value: float | None) -> str:
    """`$0.0123`, or `unknown` for a model with no price."""
    if value is None:
        return "unknown"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


# --------------------------------------------------------------------------- cost of recorded runs


def tokens_of(usage: Usage | None) -> TokenUsage:
    """A record's usage as the token classes priced here (no usage: nothing billed)."""
    if usage is None:
        return TokenUsage()
    return TokenUsage(usage.input_tokens, usage.output_tokens, usage.cache_creation_input_tokens,
                      usage.cache_read_input_tokens, usage.cache_write_1h_tokens)


def total_usd(values: Iterable[float | None]) -> float | None:
    """The sum of costs; unknown (None) when any of them is."""
    items = list(values)
    return None if any(v is None for v in items) else round(sum(v for v in items if v is not None), 6)


def file_cost(file: FileResult, model: str | None, *, batch: bool, prices: Mapping[str, Price] = PRICES) -> float | None:
    """USD one conversation costs: its recorded usage priced with `prices` (the current table, overrides
    applied). A stored `cost_usd` is only what it was priced at when recorded, and is not read here.
    `batch`: the run's calls went through Message Batches, for a file that does not say (`FileResult.batch`)."""
    batch = batch if file.batch is None else file.batch
    return cost_usd(model, tokens_of(file.usage), batch=batch, prices=prices) if model else None


def results_cost(results: ResultsFile, *, batch: bool,
                 prices: Mapping[str, Price] = PRICES) -> tuple[float | None, dict[str, float | None]]:
    """(USD of the whole run, USD per claims file), priced from the recorded usage with `prices`: the one
    rule every command follows. `batch`: the run went through Message Batches (half price)."""
    per_file = {f.file: file_cost(f, results.model, batch=batch, prices=prices) for f in results.files}
    return total_usd(per_file.values()), per_file


def run_cost(results: ResultsFile, manifest: RunManifest | None = None,
             prices: Mapping[str, Price] = PRICES) -> float | None:
    """USD a run (or a results file) costs, priced now from its recorded usage (`results_cost`), with the
    batch discount when its run used batches."""
    batch = manifest is not None and manifest.batch_ids is not None
    return results_cost(results, batch=batch, prices=prices)[0]


UNKNOWN_COST = "unknown: the model has no price (add it under [tool.judge-replay.prices] in pyproject.toml)"


def cost_line(value: float | None, *, batch: bool = False, notes: Sequence[str] = ()) -> str:
    """`cost: $0.0123 (Message Batches, half price; <notes>)`, as grade and judge print it. An unknown cost
    says why and how to give the model a price instead (a discount or note of an unknown figure says nothing)."""
    if value is None:
        return f"cost: {UNKNOWN_COST}"
    said = (["Message Batches, half price"] if batch else []) + list(notes)
    return f"cost: {format_usd(value)}" + (f" ({'; '.join(said)})" if said else "")


def costed(file: FileResult, model: str | None, *, batch: bool, prices: Mapping[str, Price] = PRICES) -> FileResult:
    """A file's results with `cost_usd` priced now from its usage (`file_cost`)."""
    return file.model_copy(update={"cost_usd": file_cost(file, model, batch=batch, prices=prices)})


def with_costs(results: ResultsFile, *, batch: bool, prices: Mapping[str, Price] = PRICES) -> ResultsFile:
    """The results with `cost_usd` set per file and in total, priced now from their usage (`costed`)."""
    files = [costed(f, results.model, batch=batch, prices=prices) for f in results.files]
    return results.model_copy(update={"files": files, "cost_usd": total_usd(f.cost_usd for f in files)})
