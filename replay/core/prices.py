"""The bundled Claude price table (dated, overridable) and a model's price."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

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


def price_for(model: str, prices: Mapping[str, Price] = PRICES) -> Price | None:
    """The model's price: its id's, or, for a dated snapshot id (`claude-sonnet-4-5-20250929`), its
    alias's. Nothing else is guessed from a prefix: `claude-opus-4-9` is not priced as `claude-opus-4`."""
    if model in prices:
        return prices[model]
    dated = _DATED_ID.fullmatch(model)
    return prices.get(dated.group(1)) if dated else None


_DATED_ID = re.compile(r"(.+)-\d{8}")
"""A snapshot id: the alias, then `-YYYYMMDD`."""


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
