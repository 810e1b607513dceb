"""What a run cost: USD from recorded usage with the price table (`replay.core.prices`; pure).

Usage classes, as the API reports them: `input_tokens` is the uncached rest of the input;
`cache_creation_input_tokens` were written to the cache (at the 5-minute or 1-hour write price; a
response's `usage.cache_creation` splits them, otherwise they count as 5-minute writes);
`cache_read_input_tokens` were read from it. A request whose prompt is over a model's price step (Claude Haiku
5.5: 100,000 tokens) pays the step's prices for all of it, output included; `usage.inference_geo == "us"`
multiplies everything by the model's US-only multiplier; the Message Batches API halves everything. The three
stack. A model that is not in the table has no price: its cost is `None`, shown as "unknown", never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from replay.core.prices import BATCH_DISCOUNT, PRICES, Price, Rates, price_for
from replay.schema.manifest import RunManifest
from replay.schema.results import LONG_PROMPT_TOKENS, FileResult, ResultsFile, Tokens, Usage


@dataclass(frozen=True)
class TokenUsage:
    """The token classes of one or more responses."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of `cache_creation_input_tokens`, those written with the 1-hour lifetime."""
    inference_geo: str | None = None
    """Where inference ran (`"us"`: US-only, priced higher); None: not reported."""
    long_prompts: tuple[TokenUsage, ...] = ()
    """Of these tokens, those of each request whose prompt was over `LONG_PROMPT_TOKENS`, one entry a request
    (what a price step needs: such a request is priced on its own)."""

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @classmethod
    def one_request(cls, input_tokens: int = 0, output_tokens: int = 0, cache_creation_input_tokens: int = 0,
                    cache_read_input_tokens: int = 0, cache_write_1h_tokens: int = 0,
                    inference_geo: str | None = None) -> TokenUsage:
        """The tokens of a single request (kept apart as a long prompt when its prompt is one)."""
        request = cls(input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens,
                      cache_write_1h_tokens)
        long = (request,) if request.prompt_tokens > LONG_PROMPT_TOKENS else ()
        return cls(input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens,
                   cache_write_1h_tokens, inference_geo, long)


def cost_usd(model: str, usage: TokenUsage, *, batch: bool = False,
             prices: Mapping[str, Price] = PRICES) -> float | None:
    """USD billed for `usage` on `model` (None when the model has no price, or the figure is too large
    for a number: never NaN or infinity, which JSON cannot hold)."""
    price = price_for(model, prices)
    if price is None:
        return None
    step = price.long_prompt
    stepped = [r for r in usage.long_prompts if r.prompt_tokens > step.over_tokens] if step else []
    try:
        total = _usd(_less(usage, stepped) if stepped else usage, price.rates)
        if step:
            total += sum(_usd(request, step.rates) for request in stepped)
    except OverflowError:  # a token count too large for a float
        return None
    total *= (price.us_only if usage.inference_geo == "us" else 1.0) * (BATCH_DISCOUNT if batch else 1.0)
    return round(total, 6) if math.isfinite(total) else None


def _usd(usage: TokenUsage, rates: Rates) -> float:
    """USD of these tokens at these rates (no multiplier)."""
    write_1h = min(usage.cache_write_1h_tokens, usage.cache_creation_input_tokens)
    write_5m = usage.cache_creation_input_tokens - write_1h
    return (usage.input_tokens * rates.input + usage.output_tokens * rates.output
            + write_5m * rates.cache_write_5m + write_1h * rates.cache_write_1h
            + usage.cache_read_input_tokens * rates.cache_read) / 1_000_000


def _less(usage: TokenUsage, requests: Sequence[TokenUsage]) -> TokenUsage:
    """`usage` without `requests`' tokens (none below 0: a record whose parts exceed its sums is not ours)."""
    def rest(name: str) -> int:
        left: int = getattr(usage, name) - sum(getattr(r, name) for r in requests)
        return max(0, left)

    return TokenUsage(rest("input_tokens"), rest("output_tokens"), rest("cache_creation_input_tokens"),
                      rest("cache_read_input_tokens"), rest("cache_write_1h_tokens"))


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
    return TokenUsage(*_counts(usage), inference_geo=usage.inference_geo,
                      long_prompts=tuple(TokenUsage(*_counts(r)) for r in usage.long_prompts or ()))


def _counts(tokens: Tokens) -> tuple[int, int, int, int, int]:
    return (tokens.input_tokens, tokens.output_tokens, tokens.cache_creation_input_tokens,
            tokens.cache_read_input_tokens, tokens.cache_write_1h_tokens)


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
