"""`--max-cost`: a run's spending limit, checked before each call and booked from what was billed."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

from replay.core.cost import TokenUsage, cost_usd, format_usd
from replay.core.prices import PRICES, Price, price_for

# --------------------------------------------------------------------------- --max-cost

BYTES_PER_TOKEN_ESTIMATE = 3
"""`--max-cost` counts one input token per 3 bytes of a request's JSON: Claude's tokenizers average 3.5 to 4
characters a token on English text and JSON, so this counts more tokens than are billed (the safe side)."""


def request_estimate_usd(model: str, body_bytes: int, max_tokens: int, *, cache: bool, batch: bool,
                         inference_geo: str | None = None, prices: Mapping[str, Price] = PRICES) -> float | None:
    """The most one Messages request is expected to bill, for `--max-cost`: every input token (one per
    `BYTES_PER_TOKEN_ESTIMATE` bytes of its JSON) at the uncached price, or with caching on at the 1-hour
    write price (the dearest input class: as if nothing were read from the cache), and `max_tokens` of
    output (the most it may bill); all of it at a price step's prices when that many input tokens are over
    it, and at the US-only multiplier when `inference_geo` is `"us"`. None when the model has no price."""
    tokens = math.ceil(body_bytes / BYTES_PER_TOKEN_ESTIMATE)
    usage = (TokenUsage.one_request(cache_creation_input_tokens=tokens, cache_write_1h_tokens=tokens,
                                    output_tokens=max_tokens, inference_geo=inference_geo)
             if cache else TokenUsage.one_request(input_tokens=tokens, output_tokens=max_tokens,
                                                  inference_geo=inference_geo))
    return cost_usd(model, usage, batch=batch, prices=prices)


def usage_from_response(reported: Any) -> TokenUsage:
    """The token classes of one Messages response's `usage` object (as the API reports it), with where
    inference ran."""
    if not isinstance(reported, Mapping):
        return TokenUsage()

    def count(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    creation = reported.get("cache_creation")
    geo = reported.get("inference_geo")
    return TokenUsage.one_request(
        count(reported.get("input_tokens")), count(reported.get("output_tokens")),
        count(reported.get("cache_creation_input_tokens")), count(reported.get("cache_read_input_tokens")),
        count(creation.get("ephemeral_1h_input_tokens")) if isinstance(creation, Mapping) else 0,
        geo if isinstance(geo, str) else None)


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
        self.inference_geo: str | None = None
        """`"us"` once a response said its inference ran US-only: later estimates include that multiplier. The
        first ones cannot know it; their input is counted at one token per 3 bytes, 17% to 33% above the
        tokens billed, which covers the 10%."""
        self._settled = threading.Condition()

    def estimate(self, body_bytes: int, max_tokens: int, *, cache: bool, batch: bool) -> float:
        value = request_estimate_usd(self.model, body_bytes, max_tokens, cache=cache, batch=batch,
                                     inference_geo=self.inference_geo, prices=self.prices)
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
            if usage.inference_geo == "us":
                self.inference_geo = "us"
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
