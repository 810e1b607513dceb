"""Flip explanation output: one flip and the report of all of them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from replay.schema.common import FlipCause, GoldLabel, Verdict

# --------------------------------------------------------------------------- flips and drift


class Flip(BaseModel):
    """One claim whose verdict differs between two runs, and why (SPEC.md `diff --format json`)."""

    file: str
    id: str
    verdict_a: Verdict | None
    verdict_b: Verdict | None
    primary_cause: FlipCause
    causes: list[FlipCause]
    gold: GoldLabel | None = None
    right: Literal["a", "b", "neither"] | None = None
    evidence: dict[str, Any] = {}
    summary: str = ""
    """One line a person can read: why this verdict moved."""


class FlipReport(BaseModel):
    """`judge-replay diff` output."""

    run_a: str
    run_b: str
    paired: int
    flips: list[Flip]
    held_despite_page_change: list[dict[str, str]] = []
    """Claims whose page changed but whose verdict did not move."""
    unpaired: list[dict[str, str]] = []
    confirm_commands: list[str] = []
    """`judge` commands that would record the controlled runs (crossed prompt/pages, repeats) still missing."""
    counts: dict[str, int] = {}
    """Flips per primary cause."""
    prompt: dict[str, Any] = {}
    """Run-level prompt comparison: names, sha256s, changed, sections and calibration rules that differ."""
    runs: dict[str, dict[str, Any]] = {}
    """`a` and `b`: name, path, prompt, prompt_sha256, model, versions, pages_from of each run."""
    extra_runs: list[str] = []
    """Other runs used to confirm causes (crossed prompt/pages runs) or to measure repeat noise."""
    controlled_runs: list[dict[str, Any]] = []
    """Each of `extra_runs`, and why it was used: run, path, found (`given` with --with, or `sibling folder`),
    role (which side it holds fixed: A's prompt with B's pages, ...; None when it holds neither), claims
    (flipped claims per role), why (one line), stand_ins."""
    notes: list[str] = []
    """What a reader must know first (runs made against the local stand-ins, test equipment)."""
