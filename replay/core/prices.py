"""The bundled Claude price table (each row with its source and the date it was read; overridable) and a model's price.

USD per million tokens, Claude API (first-party), standard service tier. Every row gives the five token kinds
as the price list gives them (cache prices are not derived by one multiplier: Opus 5.5 and Sonnet 5.5 read the
cache at 0.05x input, Fable and Mythos 5.1 at 0.025x, the rest at 0.1x), Claude Haiku 5.5's price step for a
prompt over 100,000 tokens, and what US-only inference (`usage.inference_geo == "us"`) multiplies every price
by. A row whose figures come only from third parties says which in `third_party`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from replay.schema.results import LONG_PROMPT_TOKENS

PRICES_AS_OF = "2026-12"
BATCH_DISCOUNT = 0.5
"""The Message Batches API bills every token kind at half price (the discounts stack)."""
US_ONLY = 1.1
"""US-only inference (`inference_geo: "us"`) on Claude 4.6 and later: 1.1x on input, output, cache writes and reads."""


@dataclass(frozen=True)
class Rates:
    """USD per million tokens of each token kind."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


@dataclass(frozen=True)
class LongPrompt:
    """A price step: a request whose prompt (input + cache writes + cache reads) is over `over_tokens` pays
    `rates` for every token of it, output included (each request is priced on its own)."""

    over_tokens: int
    rates: Rates


@dataclass(frozen=True)
class Price:
    """A model's price: its rates, a price step for long prompts where the price list has one, the US-only
    multiplier, and where the figures come from."""

    rates: Rates
    long_prompt: LongPrompt | None = None
    us_only: float = US_ONLY
    """What `usage.inference_geo == "us"` multiplies every price by; 1.0 for a model that does not take
    `inference_geo` (before Claude 4.6: the API refuses the request)."""
    dated_snapshots: bool = False
    """The id is an alias of dated snapshots (`claude-opus-4-5` -> `claude-opus-4-5-20251101`), priced alike. From
    the 4.6 generation on every id is its own snapshot, and a dated look-alike of one is no known model."""
    source: str = ""
    read_on: str = ""
    """The date of the source's copy (or when a quoting source says it read the page)."""
    third_party: str = ""
    """Which figures only third parties give (no Anthropic text for them was found); empty: none."""


PRICING_PAGE = "platform.claude.com/docs/en/about-claude/pricing"


def _row(input: float, output: float, write_5m: float, write_1h: float, cache_read: float, **rest: Any) -> Price:
    return Price(Rates(input, output, write_5m, write_1h, cache_read), **rest)


_PRE_4_6 = {"us_only": 1.0, "dated_snapshots": True}
"""Models before Claude 4.6: no `inference_geo` (a request with it is refused), ids that alias dated snapshots."""

PRICES: dict[str, Price] = {
    "claude-fable-5-2": _row(
        8, 40, 10, 16, 0.20, read_on="2026-12-01", third_party="cache writes and reads",
        source="$8 / $40: the Claude Opus 5 overview's comparison table (platform.claude.com/docs/id/models/opus-5/"
               "overview). Cache writes $10 / $16 and reads $0.20 from third parties only (archid21/rightsize "
               "v0.10.2; phuryn/claude-usage v1.5.7, 'checked 2026-12-01'; docs.laozhang.ai, 2026-11-10)"),
    "claude-mythos-5-2": _row(
        8, 40, 10, 16, 0.20, read_on="2026-12-01", third_party="every price",
        source="phuryn/claude-usage v1.5.7 ('Fable 5.2 and Mythos 5.2 ($8/$40, $0.20 cache read)', checked "
               "2026-12-01); writes at the page-wide 1.25x / 2x of that input. Limited availability"),
    "claude-fable-5-1": _row(10, 50, 12.50, 20, 0.25, read_on="2026-09-28",
                             source=f"{PRICING_PAGE} (reads 0.025x input, footnote 1)"),
    "claude-mythos-5-1": _row(10, 50, 12.50, 20, 0.25, read_on="2026-09-28",
                              source=f"{PRICING_PAGE} (reads 0.025x input, footnote 1). Limited availability"),
    "claude-fable-5": _row(10, 50, 12.50, 20, 1.00, read_on="2026-09-28", source=f"{PRICING_PAGE}. Legacy"),
    "claude-mythos-5": _row(10, 50, 12.50, 20, 1.00, read_on="2026-09-28",
                            source=f"{PRICING_PAGE}. Limited availability"),
    "claude-opus-5-5": _row(4, 20, 5, 8, 0.20, read_on="2026-09-28",
                            source=f"{PRICING_PAGE} (reads 0.05x input, footnote 2); the Opus 5.5 overview"),
    "claude-opus-5": _row(5, 25, 6.25, 10, 0.50, read_on="2026-09-28", source=f"{PRICING_PAGE}. Legacy"),
    "claude-opus-4-8": _row(5, 25, 6.25, 10, 0.50, read_on="2026-09-28", source=PRICING_PAGE),
    "claude-opus-4-7": _row(5, 25, 6.25, 10, 0.50, read_on="2026-09-28", source=PRICING_PAGE),
    "claude-opus-4-6": _row(5, 25, 6.25, 10, 0.50, read_on="2026-09-28", source=PRICING_PAGE),
    "claude-opus-4-5": _row(5, 25, 6.25, 10, 0.50, read_on="2026-09-28", **_PRE_4_6,
                            source=f"{PRICING_PAGE}; no inference_geo (data-residency page)"),
    "claude-sonnet-5-5": _row(
        2, 10, 2.50, 4, 0.10, read_on="2026-10-09",
        source=f"{PRICING_PAGE} as quoted on 2026-10-08/09 (reads 0.05x input since 2026-10-07, footnote 2; "
               "$0.20 before); the cut re-checked by third parties on 2026-10-24 and 2026-12-01"),
    "claude-sonnet-5": _row(2, 10, 2.50, 4, 0.20, read_on="2026-09-28", source=f"{PRICING_PAGE}. Legacy"),
    "claude-sonnet-4-6": _row(3, 15, 3.75, 6, 0.30, read_on="2026-09-28", source=PRICING_PAGE),
    "claude-sonnet-4-5": _row(3, 15, 3.75, 6, 0.30, read_on="2026-09-28", **_PRE_4_6,
                              source=f"{PRICING_PAGE}. Retired 2026-11-30 (kept to price runs recorded before)"),
    "claude-haiku-5-5": _row(
        0.10, 0.50, 0.125, 0.20, 0.01, read_on="2026-10-10",
        long_prompt=LongPrompt(100_000, Rates(0.50, 2.50, 0.625, 1.00, 0.05)),
        source="the Haiku 5.5 overview (platform.claude.com/docs/ja/models/haiku-5-5/overview); "
               f"{PRICING_PAGE} rows and long-prompt rule as quoted on 2026-10-09/10"),
    "claude-haiku-4-5": _row(1, 5, 1.25, 2, 0.10, read_on="2026-09-28", **_PRE_4_6, source=PRICING_PAGE),
    # retired: kept to price runs recorded with them
    **{model: _row(15, 75, 18.75, 30, 1.50, read_on="2026-08-22", **_PRE_4_6, source=f"{PRICING_PAGE}. Retired")
       for model in ("claude-opus-4-1", "claude-opus-4-0", "claude-opus-4")},
    **{model: _row(3, 15, 3.75, 6, 0.30, read_on="2026-08-22", **_PRE_4_6, source=f"{PRICING_PAGE}. Retired")
       for model in ("claude-sonnet-4-0", "claude-sonnet-4")},
}
"""Bundled prices; `[tool.judge-replay.prices]` adds or replaces entries (`price_table`). Not here:
`claude-mythos-preview` (no price found) and Bedrock / Vertex ids (partner pricing)."""


def price_for(model: str, prices: Mapping[str, Price] = PRICES) -> Price | None:
    """The model's price: its id's, else, for a dated snapshot id (`claude-sonnet-4-5-20250929`), its alias's
    when that alias has dated snapshots. Nothing else is guessed from a look-alike: `claude-opus-5-6` is not
    priced as `claude-opus-5`, nor `claude-opus-4-9` as `claude-opus-4`."""
    if model in prices:
        return prices[model]
    dated = _DATED_ID.fullmatch(model)
    alias = prices.get(dated.group(1)) if dated else None
    return alias if alias is not None and alias.dated_snapshots else None


_DATED_ID = re.compile(r"(.+)-\d{8}")
"""A snapshot id: the alias, then `-YYYYMMDD`."""


# --------------------------------------------------------------------------- [tool.judge-replay.prices]

MAX_PRICE = 1_000_000
"""The highest price a table may give (USD per million tokens, 10,000x today's dearest): a larger one is a
typo, and would make a run's cost too large for a number ("unknown")."""
MAX_US_ONLY = 10
MAX_PROMPT_TOKENS = 100_000_000

RATES = tuple(f.name for f in fields(Rates))
STANDARD_RATIOS = Rates(1.0, 0.0, 1.25, 2.0, 0.1)
"""The price list's standard cache prices as multiples of input (5-minute write, 1-hour write, read), for a model
the table does not have."""


def price_table(overrides: Mapping[str, Any] | None) -> dict[str, Price]:
    """The bundled table with `[tool.judge-replay.prices]` applied. An entry gives a model's prices
    (`{input = 4, output = 20, cache_write_5m = 5, cache_write_1h = 8, cache_read = 0.2}`), `us_only` (what
    US-only inference multiplies them by) and `long_prompt` (a price step: `{over_tokens = 100000, input = ...,
    output = ..., ...}`; `false`: none). What it leaves out: for a model the table has, its bundled figures,
    except that a cache price keeps the model's own ratio to input (a new input moves it); for a new model,
    input and output are needed, cache prices follow `STANDARD_RATIOS`, US-only is 1.1x, no price step.
    Raises ValueError saying what is wrong."""
    table = dict(PRICES)
    for model, entry in (overrides or {}).items():
        where = f"prices.{model}"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where} must be a table of USD per million tokens")
        _known_keys(where, entry, {*RATES, "us_only", "long_prompt"})
        bundled = PRICES.get(model)
        rates = _rates(where, entry, bundled.rates if bundled else None)
        step = bundled.long_prompt if bundled else None
        if "long_prompt" in entry:
            step = _long_prompt(f"{where}.long_prompt", entry["long_prompt"], step, rates)
        us_only = bundled.us_only if bundled else US_ONLY
        if "us_only" in entry:
            us_only = _number(f"{where}.us_only", entry["us_only"], 1, MAX_US_ONLY, "a multiplier")
        table[model] = Price(rates, step, us_only, bundled.dated_snapshots if bundled else False,
                             source="[tool.judge-replay.prices]")
    return table


def _known_keys(where: str, entry: Mapping[str, Any], known: set[str]) -> None:
    unknown = sorted(map(str, set(entry) - known))
    if unknown:
        raise ValueError(f"{where} has unknown keys {unknown}; known: {sorted(known)}")


def _number(where: str, value: Any, low: float, high: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{where} must be a number from {low:,} to {high:,} ({what}), not {value!r}")
    return float(value)


def _ratios(rates: Rates) -> Rates:
    """`rates` as multiples of their input (the standard ones when there is no input to divide by)."""
    if not rates.input:
        return STANDARD_RATIOS
    return Rates(*(getattr(rates, name) / rates.input for name in RATES))


def _rates(where: str, entry: Mapping[str, Any], bundled: Rates | None, ratios: Rates | None = None) -> Rates:
    """The rates an entry gives; input and output left out are `bundled`'s (needed when there is none), cache
    prices left out are `ratios` (by default `bundled`'s own, else the standard ones) of the input."""
    given = {k: _number(f"{where}.{k}", entry[k], 0, MAX_PRICE, "USD per million tokens") for k in RATES if k in entry}
    if bundled is None and not {"input", "output"} <= set(given):
        raise ValueError(f"{where} needs at least input and output (the bundled table has none to keep)")
    ratios = ratios or (_ratios(bundled) if bundled else STANDARD_RATIOS)
    input = given.get("input", bundled.input if bundled else 0.0)
    output = given.get("output", bundled.output if bundled else 0.0)
    cache = [given.get(name, input * getattr(ratios, name)) for name in RATES[2:]]
    return Rates(input, output, *cache)


def _long_prompt(where: str, value: Any, bundled: LongPrompt | None, model_rates: Rates) -> LongPrompt | None:
    """An entry's `long_prompt`: what it leaves out is the bundled step's, its cache prices at the step's ratios
    (or, for a model with no bundled step, the model's)."""
    if value is False:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a table (over_tokens and prices) or false (no price step)")
    _known_keys(where, value, {"over_tokens", *RATES})
    over = value.get("over_tokens", bundled.over_tokens if bundled else None)
    if isinstance(over, bool) or not isinstance(over, int) or not LONG_PROMPT_TOKENS <= over <= MAX_PROMPT_TOKENS:
        raise ValueError(f"{where}.over_tokens must be a whole number from {LONG_PROMPT_TOKENS:,} to "
                         f"{MAX_PROMPT_TOKENS:,} (a recording keeps apart the requests over {LONG_PROMPT_TOKENS:,} "
                         f"tokens: a lower step could not be priced), not {over!r}")
    rates = _rates(where, value, bundled.rates if bundled else None,
                   None if bundled else _ratios(model_rates))
    return LongPrompt(over, rates)
