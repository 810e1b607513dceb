"""The gold set: a label per claim, and its compact form for large sets."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from replay.schema.common import GoldLabel, _Open


class GoldItem(_Open):
    """One adjudicated label of the gold set."""

    file: str
    id: str
    label: GoldLabel
    mode: str | None = None
    """Failure mode this item exercises (FN2..FN6, FP3..FP5), if any."""
    note: str | None = None
    """Why the label is what it is."""


class GoldSet(_Open):
    """A gold correctness set (`gold-correctness-set.json`)."""

    name: str | None = None
    items: list[GoldItem]


@dataclass(frozen=True, slots=True)
class GoldRow:
    """A `GoldItem` as grade holds a gold set's thousands: the same fields, without the bookkeeping a pydantic
    model keeps per instance."""

    file: str
    id: str
    label: GoldLabel
    mode: str | None
    note: str | None


@dataclass(frozen=True)
class CompactGold:
    """A gold set as grade holds it: its items as `GoldRow`s (their files and ids held once with the
    results' and claims', `sys.intern`)."""

    name: str | None
    items: tuple[GoldRow, ...]

    @classmethod
    def of(cls, gold: GoldSet) -> CompactGold:
        return cls(gold.name, tuple(GoldRow(sys.intern(item.file), sys.intern(item.id), item.label, item.mode, item.note)
                                    for item in gold.items))
