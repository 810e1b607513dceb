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
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ._records import FileResult, ResultsFile, RunManifest, Usage

PRICES_AS_OF = "2026-11"
BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """USD per million tokens of one model."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


def _family(input: float, output: float) -> Price:
    """The usual shape: 5-minute writes 1.25x input, 1-hour writes 2x, reads 0.1x."""
    return Price(input, output, input * 1.25, input * 2, input * 0.1)


PRICES: dict[str, Price] = {
    "claude-fable-5-1": Price(10, 50, 12.5, 20, 0.25),
    "claude-fable-5": _family(10, 50),
    "claude-opus-5": _family(5, 25),
    "claude-opus-4-8": _family(5, 25),
    "claude-opus-4-7": _family(5, 25),
    "claude-opus-4-6": _family(5, 25),
    "claude-opus-4-5": _family(5, 25),
    "claude-opus-4-1": _family(15, 75),
    "claude-opus-4-0": _family(15, 75),
    "claude-opus-4": _family(15, 75),
    "claude-sonnet-5-5": Price(2, 10, 2.5, 4, 0.2),
    "claude-sonnet-5": _family(2, 10),
    "claude-sonnet-4-6": _family(3, 15),
    "claude-sonnet-4-5": _family(3, 15),
    "claude-sonnet-4-0": _family(3, 15),
    "claude-sonnet-4": _family(3, 15),
    "claude-haiku-4-5": _family(1, 5),
}
"""Bundled prices (see the module docstring for source and date); `[tool.judge-replay.prices]` adds or
replaces entries."""


@dataclass(frozen=True)
class TokenUsage:
    """The token classes of one or more responses."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """Of `cache_creation_input_tokens`, those written with the 1-hour lifetime."""


def price_for(model: str, prices: Mapping[str, Price] = PRICES) -> Price | None:
    """The model's price: its id's, or, for a dated snapshot id (`claude-sonnet-4-5-20250929`), its
    alias's. Nothing else is guessed from a prefix: `claude-opus-4-9` is not priced as `claude-opus-4`."""
    if model in prices:
        return prices[model]
    dated = _DATED_ID.fullmatch(model)
    return prices.get(dated.group(1)) if dated else None


_DATED_ID = re.compile(r"(.+)-\d{8}")
"""A snapshot id: the alias, then `-YYYYMMDD`."""


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


MAX_PRICE = 1_000_000
"""The highest price a table may give (USD per million tokens, 10,000x today's dearest): a larger one is a
typo, and would make a run's cost too large for a number ("unknown")."""


def price_table(overrides: Mapping[str, Any] | None) -> dict[str, Price]:
    """The bundled table with `[tool.judge-replay.prices]` applied: `{model = {input = 2, output = 10,
    cache_write_5m = 2.5, cache_write_1h = 4, cache_read = 0.2}}`; an entry may give only input and
    output (cache prices then follow the usual multipliers). Raises ValueError saying what is wrong."""
    table = dict(PRICES)
    for model, entry in (overrides or {}).items():
        if not isinstance(entry, Mapping):
            raise ValueError(f"prices.{model} must be a table of USD per million tokens")
        known = {f.name for f in fields(Price)}
        unknown = sorted(set(entry) - known)
        if unknown:
            raise ValueError(f"prices.{model} has unknown keys {unknown}; known: {sorted(known)}")
        values: dict[str, float] = {}
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_PRICE:
                raise ValueError(f"prices.{model}.{key} must be a number from 0 to {MAX_PRICE:,} (USD per million "
                                 f"tokens), not {value!r}")
            values[key] = float(value)
        if "input" not in values or "output" not in values:
            raise ValueError(f"prices.{model} needs at least input and output")
        base = _family(values["input"], values["output"])
        table[model] = Price(**{f.name: values.get(f.name, getattr(base, f.name)) for f in fields(Price)})
    return table


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


# --------------------------------------------------------------------------- --max-cost

BYTES_PER_TOKEN_ESTIMATE = 3
"""`--max-cost` counts one input token per 3 bytes of a request's JSON: Claude's tokenizers average 3.5 to 4
characters a token on English text and JSON, so this counts more tokens than are billed (the safe side)."""


def request_estimate_usd(model: str, body_bytes: int, max_tokens: int, *, cache: bool, batch: bool,
                         prices: Mapping[str, Price] = PRICES) -> float | None:
    """The most one Messages request is expected to bill, for `--max-cost`: every input token (one per
    `BYTES_PER_TOKEN_ESTIMATE` bytes of its JSON) at the uncached price, or with caching on at the 1-hour
    write price (the dearest input class: as if nothing were read from the cache), and `max_tokens` of
    output (the most it may bill). None when the model has no price."""
    tokens = math.ceil(body_bytes / BYTES_PER_TOKEN_ESTIMATE)
    usage = (TokenUsage(cache_creation_input_tokens=tokens, cache_write_1h_tokens=tokens, output_tokens=max_tokens)
             if cache else TokenUsage(input_tokens=tokens, output_tokens=max_tokens))
    return cost_usd(model, usage, batch=batch, prices=prices)


def usage_from_response(reported: Any) -> TokenUsage:
    """The token classes of one Messages response's `usage` object (as the API reports it)."""
    if not isinstance(reported, Mapping):
        return TokenUsage()

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    creation = reported.get("cache_creation")
    return TokenUsage(count(reported.get("input_tokens")), count(reported.get("output_tokens")),
                      count(reported.get("cache_creation_input_tokens")), count(reported.get("cache_read_input_tokens")),
                      count(creation.get("ephemeral_1h_input_tokens")) if isinstance(creation, Mapping) else 0)


class CostBudget:
    """`judge --max-cost USD`: what the run has been billed so far, and whether the next requests fit.

    Shared by the conversations' threads. `admit` is asked before requests are sent (a direct call, or
    the new requests of a batch round) with their estimated cost (`request_estimate_usd`); it reserves
    that amount, or refuses for good once the spend plus the reservations would pass the limit. `charge`
    books what a response was billed and releases its reservation."""

    def __init__(self, limit_usd: float, model: str, *, prices: Mapping[str, Price] = PRICES) -> None:
        if price_for(model, prices) is None:
            raise ValueError(f"--max-cost needs the price of {model!r}, which the price table does not have: "
                             "add it under [tool.judge-replay.prices] in pyproject.toml")
        self.limit_usd = limit_usd
        self.model = model
        self.prices = prices
        self.spent_usd = 0.0
        self.reserved_usd = 0.0
        self.refused: str | None = None
        """Why a request was refused (None while within the limit): the run reports it at the end."""
        self._settled = threading.Condition()

    def estimate(self, body_bytes: int, max_tokens: int, *, cache: bool, batch: bool) -> float:
        value = request_estimate_usd(self.model, body_bytes, max_tokens, cache=cache, batch=batch, prices=self.prices)
        assert value is not None  # the constructor checked that the model has a price
        return value

    def admit(self, estimate_usd: float, what: str) -> bool:
        """Reserve `estimate_usd` for `what` (a model call, a batch of N requests), or refuse it: then
        every later request is refused too, so a run stops at one point rather than skipping around. A
        request that fits only once other requests in flight are billed waits for them first."""
        with self._settled:
            while (self.refused is None and self.reserved_usd > 0
                   and self.spent_usd + self.reserved_usd + estimate_usd > self.limit_usd):
                self._settled.wait()
            if self.refused is None and self.spent_usd + self.reserved_usd + estimate_usd > self.limit_usd:
                self.refused = (f"--max-cost {format_usd(self.limit_usd)} reached: {what} (estimated at up to "
                                f"{format_usd(estimate_usd)}) would take the run past it, {format_usd(self.spent_usd)} "
                                "already billed")
            if self.refused is not None:
                return False
            self.reserved_usd += estimate_usd
            return True

    def charge(self, usage: TokenUsage, reserved_usd: float, *, batch: bool) -> None:
        """Book a response's billed cost and release what was reserved for it."""
        billed = cost_usd(self.model, usage, batch=batch, prices=self.prices) or 0.0
        with self._settled:
            self.spent_usd += billed
            self._unreserve(reserved_usd)

    def release(self, reserved_usd: float) -> None:
        """A reserved request got no bill (it failed before the model answered)."""
        with self._settled:
            self._unreserve(reserved_usd)

    def _unreserve(self, reserved_usd: float) -> None:
        self.reserved_usd = max(0.0, self.reserved_usd - reserved_usd)
        if self.reserved_usd < 1e-9:
            self.reserved_usd = 0.0
        self._settled.notify_all()
