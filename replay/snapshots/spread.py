"""Snapshots of runs with samples: which changes stay inside a claim's recorded spread (shown, not failed)."""

from __future__ import annotations

import json
from typing import Any

from replay.snapshots.format import unpack

VERDICTS_KEY = "verdicts"
"""A snapshot claim entry's verdict counts over its samples (present only for a run judged K >= 2 times)."""


def is_stable_counts(counts: dict[str, Any]) -> bool:
    """The samples gave one verdict (a missing verdict, `none`, counts as one)."""
    return sum(1 for n in counts.values() if n) <= 1


def became_unstable(was: dict[str, Any], now: dict[str, Any]) -> bool:
    """A claim whose samples all agreed in the snapshot disagree now."""
    old, new = was.get(VERDICTS_KEY), now.get(VERDICTS_KEY)
    return isinstance(new, dict) and not is_stable_counts(new) and (not isinstance(old, dict) or is_stable_counts(old))


def _documents(data: str) -> dict[str, Any] | None:
    try:
        return {name: json.loads(text) for name, text in unpack(data).items()}
    except ValueError:
        return None


def within_spread(received: str, snapshot: str) -> list[str] | None:
    """The changes of `received` from `snapshot`, one line per claim, when every one of them stays inside a
    claim's recorded spread: the same claims files and claims, the same header, and each changed claim one
    judged several times whose majority verdict is the same and that was unstable already or is stable
    still (its counts, rule or quote may move). None when any change is more than that (the snapshot fails)."""
    new, old = _documents(received), _documents(snapshot)
    if new is None or old is None or new.keys() != old.keys():
        return None
    lines = []
    for name in sorted(new):
        a, b = old[name], new[name]
        if not isinstance(a, dict) or not isinstance(b, dict):
            return None
        if {k: v for k, v in a.items() if k != "claims"} != {k: v for k, v in b.items() if k != "claims"}:
            return None
        claims_a, claims_b = a.get("claims"), b.get("claims")
        if not isinstance(claims_a, list) or not isinstance(claims_b, list) or len(claims_a) != len(claims_b):
            return None
        for was, now in zip(claims_a, claims_b):
            if was == now:
                continue
            if (not isinstance(was, dict) or not isinstance(now, dict) or was.get("id") != now.get("id")
                    or VERDICTS_KEY not in was or VERDICTS_KEY not in now or was.get("verdict") != now.get("verdict")
                    or became_unstable(was, now)):
                return None
            lines.append(f"  {b.get('file')}:{now.get('id')}  majority {now.get('verdict') or 'no verdict'} held, "
                         f"within its recorded spread: verdicts {_counts(was[VERDICTS_KEY])} → {_counts(now[VERDICTS_KEY])}")
    return lines


def _counts(counts: Any) -> str:
    if not isinstance(counts, dict):
        return str(counts)
    return ", ".join(f"{k} {n}" for k, n in counts.items() if n) or "none"
