"""`judge --max-cost USD`: the run's budget, priced by the project's price table."""

from __future__ import annotations

from replay.core.budget import CostBudget
from replay.errors import UsageError
from replay.settings import project_prices


def budget_for(max_cost: float | None, model: str) -> CostBudget | None:
    """`--max-cost`: the run's budget, priced by the project's table (a model with no price is refused)."""
    if max_cost is None:
        return None
    try:
        return CostBudget(max_cost, model, prices=project_prices())
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
