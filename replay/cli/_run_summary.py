"""The lines `judge` prints at the end of a run: verdicts, quotes, tokens, cost, failures, what was written."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from replay.core.cost import cost_line, file_cost, format_usd, total_usd
from replay.core.display import printable
from replay.core.sample_results import split
from replay.schema.common import VERDICTS
from replay.settings import project_prices

if TYPE_CHECKING:
    from replay.judge.held import RunResults


def _cost_notes(mode: str, stand_ins: Sequence[str]) -> list[str]:
    """What the cost line of `summary` rests on (`cost_line` adds the batch discount)."""
    return (["recorded usage at current prices; replaying is free"] if mode == "replay" else []) + (
        ["priced from the stand-in's token counts"] if "model" in stand_ins else [])


def _difference(total: float | None, part: float | None) -> str:
    """`total - part` in USD, as cost lines show it (unknown when either is)."""
    return format_usd(None if total is None or part is None else round(total - part, 6))


def summary(results: RunResults, mode: str, written: list[str], stand_ins: Sequence[str] = (), *,
            batch: bool = False) -> str:
    """A few lines a person reads at the end of a run (its files read once, one at a time)."""
    prices = project_prices()
    counts: Counter[str | None] = Counter()
    files = claims = unverified = tokens_in = tokens_out = written_to_cache = read_from_cache = 0
    costs: list[float | None] = []
    first_costs: list[float | None] = []
    failed: list[tuple[str, str]] = []
    k = results.header.samples or 1
    split_claims = 0
    for f in results.files():
        files += 1
        claims += len(f.results)
        counts.update(r.judge_verdict for r in f.results)
        unverified += sum(1 for r in f.results if r.quote_verified is False)
        if f.usage:
            tokens_in += f.usage.total_input
            tokens_out += f.usage.output_tokens
            written_to_cache += f.usage.cache_creation_input_tokens
            read_from_cache += f.usage.cache_read_input_tokens
        costs.append(file_cost(f, results.header.model, batch=batch, prices=prices))
        if k > 1:
            first_costs.append(file_cost(split(f)[0], results.header.model, batch=batch, prices=prices))
            split_claims += sum(1 for r in f.results if len(set(r.sample_verdicts())) > 1)
        if f.error:
            failed.append((f.file, f.error))
    verdicts = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    no_verdict = counts.get(None, 0)
    cache = (f" ({written_to_cache:,} written to the prompt cache, {read_from_cache:,} read from it)"
             if written_to_cache or read_from_cache else "")
    header = results.header
    lines = [
        f"judge {mode}: prompt {printable(header.prompt or '?')}, model {printable(header.model or '?')}",
        f"  {files} file{'' if files == 1 else 's'}, {claims} claim{'' if claims == 1 else 's'}: {verdicts}"
        + (f", {no_verdict} without a verdict" if no_verdict else ""),
        f"  quotes not found in the fetched page: {unverified}",
        f"  tokens: {tokens_in:,} in{cache}, {tokens_out:,} out",
        "  " + cost_line(total_usd(costs), batch=batch, notes=_cost_notes(mode, stand_ins)),
    ]
    if k > 1:
        lines.insert(2, f"  samples: {k} per claims file (verdicts above: each claim's majority); {split_claims} "
                        f"claim(s) whose samples disagree")
        lines.append(f"  the {k - 1} sample(s) beyond the first cost {_difference(total_usd(costs), total_usd(first_costs))}")
    if stand_ins:
        lines.append(f"  stand-ins (test equipment, not the real services): {', '.join(stand_ins)}")
    for file, error in failed:
        lines.append(f"  failed: {printable(file)}: {printable(error)}")
    lines.append(f"  written: {', '.join(printable(str(Path(w))) for w in written)}" if written else "  written: nothing")
    return "\n".join(lines)
