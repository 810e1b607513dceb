"""The model stand-in's deterministic judge policy: one claim, one fetched page, one prompt -> a verdict.

A pure function of its inputs (no I/O). The stand-ins reference page documents the base policy; the prompt text
switches on the documented prompt-dependent behaviours below, which only touch the claims they name.

Base policy (the documented steps 2-5 and the lower-bound rule)
    Tokens, value tokens and subject words come from the stand-in's own tokenisation (the documented one). Duplicate
    value tokens and subject words count once. A "line" is a line of the page text
    (`str.splitlines()`); blank lines are ignored; every tie goes to the first line.
    - No page (missing, or the fetch said it "could not be retrieved"): `source_silent`.
    - Step 3: `grounded` if the claim has value tokens and every one is a token of the page (quote:
      the line containing the most of them), or if it has none, has subject words, and one line
      contains every subject word (quote: that line).
    - Step 4: else `not_grounded` if some line shares at least two subject words with the claim
      (quote: the line sharing the most).
    - Step 5: else `source_silent` with an empty quote.
    - Lower bound: a value token ending in `+` whose rest is a number (`200k+`, `100+`) is a lower
      bound B and the claim is decided by this rule instead of steps 3-5 (the first such token is B;
      the other value tokens are the non-`+` ones). Candidate lines: those containing every other
      value token (all lines, if none does); take the one sharing the most subject words and M, the
      largest number on it. With `R1 —` in the prompt: `grounded` if B <= M <= 2B, `not_grounded`
      rule "R1" if M > 2B; without it: `grounded` if M >= B. Always `not_grounded` (rule "") if
      M < B. The quote is that line. A line without any number gives `source_silent`.

Prompt-dependent behaviours (by the headings the prompt text contains: `R1 —` ... `R7 —`,
`EXACT-VALUE RULE`)
    - Years (`EXACT-VALUE RULE`: "the specific ... date ... must match"): a claim with a year among its
      value tokens (a bare four-digit 1900-2099 token of the claim, as in "retires in 2026"; `2,025` is
      a count) is judged on its own line before step 3, when it has one: the line that contains every
      other value token of the claim (the model name, the other figures: the entity's row, never
      another model's), or, when it has no other value token, that shares at least two subject words;
      among those, the one sharing the most subject words. A line's years are its year tokens and the
      year of each date on it (`2026-10-14` gives 2026). Every claimed year among them: `grounded`
      (then R4 as in step 3); else, if the line has years: `not_grounded` rule "" (the exact-value
      rule: the row gives another date), naming the line's dates; a line without any year or date:
      `source_silent` (the row states no date). No such line: the steps below, unchanged. Any date on
      the line counts (the stand-in reads no column headers: a release date in the claimed year
      grounds "retires in" that year). Without the heading (prompt v1) years are plain tokens.
    - No `EXACT-VALUE RULE` (prompt v1): where step 4 would say `not_grounded`, say `grounded`
      instead (v1 accepts a page that is "about" the claim), same quote, rule "".
    - R7 (`R7 —`): raw claim tokens that begin with `~` or `≈` are illustrative: they are dropped from
      the value tokens before the steps above; if step 3 then says `grounded`, rule "R7". (Without
      R7 they stay value tokens compared as-is: "~15" must occur as a page token, which it normally
      will not.)
    - R5 (`R5 —`): where step 4 would say `not_grounded` and the claim has value tokens: if every
      value token that does not occur in the page is a magnitude (below) and the claim's own line
      carries a magnitude within ±10% of each of them, `grounded`, rule "R5", quote that line. The
      claim's own line is, among the lines that contain every value token of the claim that does occur
      in the page (the model name, the other figures: the claim's row, not another model's), the one
      sharing the most subject words, and it must share at least two; no such line, no R5.
      A magnitude is a count or an amount: a number token (as the scoring docs define numbers) that is not a year (a
      bare four-digit 1900-2099, as in `2025`; `2,025` with a separator is a count) and not a
      possible version number (a decimal without a `k`/`M` suffix, as in `4.1`; `1.5M` is an
      amount). Dates (`2025-04-14`) and versions (`gpt-4.1`, `1.2.3`) are not numbers at all. Years,
      dates and versions are compared exactly, never "within 10%": a model that retires in 2026 is
      not the page's 2025. The numbers on the line are read the same way (a year on the line is no
      equivalent of a claimed count).
    - R6 (`R6 —`): where step 4 would say `not_grounded` and the claim has no value tokens: if the
      quote line contains at least 75% of the subject words (rounded up), `grounded`, rule "R6",
      quote that line.
    - R4 (`R4 —`): where step 3 says `grounded` from value tokens, the quote line carries a legacy
      marker (case-insensitive: "before ", "legacy", "previous", "prior to", "retired") and another
      line without a legacy marker shares at least two subject words with the claim:
      `not_grounded`, rule "R4", quoting that other line (the one sharing the most subject words).
    - R2 (`R2 —`): where step 5 would say `source_silent` on a retrieved page and the claim_type is
      `sku`, `taxonomy`, `status` or `region`: `not_grounded`, rule "R2", quoting the line sharing
      the most subject words if any shares one, else the first markdown table row that is not a
      header separator (no such line: `source_silent` stays, as there is nothing to quote).
    - R3 (frame/unit replacement) is NOT implemented: like prompt v2, the stand-in misses a replaced
      frame whose numbers survive on the page.
    R5 and R6 are checked before the v1 leniency; a prompt that has them gets their rule name.

Close calls (`runner_up`, what `sim model --noise P` flips): a claim whose verdict rests on a threshold or
a calibration rule rather than on what the page plainly states. A lower bound (the verdict compares
the page's number with the bound: its runner-up is the other of grounded / not_grounded); or a claim
that the calibration rules decide, an equivalence (R5), an illustrative number (R7), an existence
check (R2): the verdict changes when those rules are taken away from the prompt (or, for a prompt
without them, given to it), and the runner-up is that other verdict. Every other claim has no
runner-up: its verdict is what the page states.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from replay.core.text import line_token_set, parse_number, subject_words, tokens, value_tokens, without_thousands

ILLUSTRATIVE_PREFIXES = ("~", "≈")
LEGACY_MARKERS = ("before ", "legacy", "previous", "prior to", "retired")
EXISTENCE_CLAIM_TYPES = frozenset({"sku", "taxonomy", "status", "region"})
RULE_HEADINGS = tuple(f"R{i} —" for i in range(1, 8))
EXACT_VALUE_HEADING = "EXACT-VALUE RULE"
R5_TOLERANCE = 0.10
R6_SHARE = 0.75
_YEAR = re.compile(r"^(19|20)\d\d$")
_DATE = re.compile(r"^((19|20)\d\d)-\d\d(-\d\d)?$")


def prompt_headings(prompt_text: str) -> frozenset[str]:
    """Which rule headings (`R1`..`R7`, `EXACT-VALUE`) the prompt text contains."""
    found = {h.split(" ")[0] for h in RULE_HEADINGS if h in prompt_text}
    if EXACT_VALUE_HEADING in prompt_text:
        found.add("EXACT-VALUE")
    return frozenset(found)


def judge_claim(claim: dict[str, Any], page: str | None, prompt_text: str) -> dict[str, str]:
    """The stand-in's verdict on one claim: {judge_verdict, rule, evidence_quote, reason}."""
    return _Judgement(claim, page, prompt_headings(prompt_text)).decide()


CALIBRATION_RULES = frozenset({"R2", "R5", "R7"})
"""The rules that calibrate a verdict rather than read it off the page (existence, equivalence, illustrative)."""
NOISE_REASON = "simulated model noise: the runner-up verdict"


def runner_up(claim: dict[str, Any], page: str | None, prompt_text: str) -> dict[str, str] | None:
    """For a close call (module docstring), the verdict a model in two minds would give instead, in the
    shape `judge_claim` gives (its reason saying it is simulated noise); None for any other claim."""
    if page is None:
        return None
    headings = prompt_headings(prompt_text)
    judgement = _Judgement(claim, page, headings)
    verdict = judgement.decide()
    if any(_lower_bound(v) is not None for v in judgement.values):
        if verdict["judge_verdict"] not in ("grounded", "not_grounded"):
            return None  # no number to compare: nothing close about it
        other = "not_grounded" if verdict["judge_verdict"] == "grounded" else "grounded"
        return _verdict(other, "", verdict["evidence_quote"], f"{NOISE_REASON} (a lower bound read the other way)")
    other_view = _Judgement(claim, page, headings ^ CALIBRATION_RULES).decide()
    if other_view["judge_verdict"] == verdict["judge_verdict"]:
        return None
    return {**other_view, "reason": f"{NOISE_REASON} ({other_view['reason'].removeprefix('stand-in policy: ')})"}


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _verdict(verdict: str, rule: str, quote: str, reason: str) -> dict[str, str]:
    return {"judge_verdict": verdict, "rule": rule, "evidence_quote": quote, "reason": f"stand-in policy: {reason}"}


def _numbers(tokens: Iterable[str]) -> list[float]:
    return [n for n in (parse_number(t) for t in tokens) if n is not None]


def is_magnitude(token: str) -> bool:
    """Whether R5 may compare this (raw, lower-cased) token within 10%: a count or an amount, never a
    year, a date or a version number (module docstring)."""
    if parse_number(token) is None or _YEAR.match(token):
        return False
    plain = without_thousands(token)
    return "." not in plain or plain[-1].isalpha()


def line_years(tokens_of_line: Iterable[str]) -> dict[str, list[str]]:
    """year -> the tokens of a line that carry it: a year token (`2026`) or a date (`2026-10-14`)."""
    out: dict[str, list[str]] = {}
    for t in sorted(tokens_of_line):
        m = _DATE.match(t)
        year = m.group(1) if m else t if _YEAR.match(t) else None
        if year is not None:
            out.setdefault(year, []).append(t)
    return out


def _magnitudes(text: str) -> list[float]:
    """The magnitudes among a text's tokens, as numbers."""
    return [n for t in tokens(text) if is_magnitude(t) and (n := parse_number(t)) is not None]


def _is_legacy(line: str) -> bool:
    lowered = line.lower()
    return any(marker in lowered for marker in LEGACY_MARKERS)


def _lower_bound(token: str) -> float | None:
    return parse_number(token[:-1]) if token.endswith("+") else None


def _is_table_row(line: str) -> bool:
    stripped = line.strip()
    if not stripped.startswith("|"):
        return False
    return not set(stripped) <= set("|-: ")  # a header separator such as `|--|:--:|`


class _Judgement:
    """One claim against one page; each method is one step of the module docstring."""

    def __init__(self, claim: dict[str, Any], page: str | None, headings: frozenset[str]) -> None:
        self.text = str(claim.get("claim") or "")
        self.claim_type = str(claim.get("claim_type") or "")
        self.page = page
        self.headings = headings
        values = _unique(value_tokens(self.text))
        self.dropped: list[str] = []
        if "R7" in headings:
            self.dropped = [v for v in values if v.startswith(ILLUSTRATIVE_PREFIXES)]
            values = [v for v in values if not v.startswith(ILLUSTRATIVE_PREFIXES)]
        self.values = values
        self.magnitudes = {without_thousands(t) for t in tokens(self.text) if is_magnitude(t)}
        """The value tokens (normalised as in `values`) that are magnitudes, for R5."""
        self.years = [v for v in values if _YEAR.match(v) and v in tokens(self.text)]
        """The claimed years: bare four-digit tokens of the claim (`2,025`, a count, is `2025` in `values`)."""
        self.subjects = _unique(subject_words(self.text))
        self.lines: list[str] = [ln for ln in (page or "").splitlines() if ln.strip()]
        self.line_tokens: list[set[str]] = [line_token_set(ln) for ln in self.lines]
        self.page_tokens: set[str] = set().union(*self.line_tokens) if self.line_tokens else set()

    # -------------------------------------------------------------- helpers

    def shared_subjects(self, index: int) -> int:
        return sum(1 for w in self.subjects if w in self.line_tokens[index])

    def best_by(self, indices: Sequence[int], score: Any) -> int | None:
        """The index with the highest score, the first on a tie (None when there is no index)."""
        best: int | None = None
        for i in indices:
            if best is None or score(i) > score(best):
                best = i
        return best

    def best_subject_line(self, indices: Sequence[int] | None = None) -> int | None:
        return self.best_by(range(len(self.lines)) if indices is None else indices, self.shared_subjects)

    # -------------------------------------------------------------- steps

    def decide(self) -> dict[str, str]:
        if self.page is None:
            return _verdict("source_silent", "", "", "the page could not be retrieved")
        bounds = [(v, b) for v in self.values if (b := _lower_bound(v)) is not None]
        if bounds:
            return self.lower_bound(*bounds[0], others=[v for v in self.values if _lower_bound(v) is None])
        if self.years and "EXACT-VALUE" in self.headings:
            dated = self.years_on_own_line()
            if dated is not None:
                return dated
        grounded = self.step3()
        if grounded is not None:
            return grounded
        return self.step4() or self.step5()

    def lower_bound(self, token: str, bound: float, others: list[str]) -> dict[str, str]:
        everywhere = list(range(len(self.lines)))
        candidates = [i for i in everywhere if all(v in self.line_tokens[i] for v in others)] or everywhere
        index = self.best_subject_line(candidates)
        if index is None:
            return _verdict("source_silent", "", "", "the page has no text")
        line = self.lines[index]
        numbers = _numbers(self.line_tokens[index])
        if not numbers:
            return _verdict("source_silent", "", "", f"no number on the line that matches the lower bound {token}")
        most = max(numbers)
        shown = str(int(most)) if most.is_integer() else str(most)
        if most < bound:
            return _verdict("not_grounded", "", line, f"the page states {shown}, below the claimed lower bound {token}")
        if "R1" in self.headings:
            if most > 2 * bound:
                return _verdict("not_grounded", "R1", line, f"the page states {shown}, more than twice the lower bound {token}")
            return _verdict("grounded", "", line, f"the page states {shown}, a tight fit for the lower bound {token}")
        return _verdict("grounded", "", line, f"the page states {shown}, which satisfies the lower bound {token}")

    def years_on_own_line(self) -> dict[str, str] | None:
        """The claimed years against the years and dates on the claim's own line (module docstring)."""
        others = [v for v in self.values if v not in self.years]
        if others:
            own = [i for i in range(len(self.lines)) if all(v in self.line_tokens[i] for v in others)]
        else:
            own = [i for i in range(len(self.lines)) if self.shared_subjects(i) >= 2]
        index = self.best_subject_line(own)
        if index is None:
            return None
        line, on_line = self.lines[index], line_years(self.line_tokens[index])
        if all(y in on_line for y in self.years):
            legacy = self.r4(index)
            if legacy is not None:
                return legacy
            found = ", ".join(t for y in self.years for t in on_line[y])
            return self.grounded(line, f"the claim's own line carries {' '.join(self.years)} ({found})")
        if not on_line:
            return _verdict("source_silent", "", "", f"the claim's own line gives no date for {' '.join(self.years)}")
        dates = ", ".join(t for ts in on_line.values() for t in ts)
        missing = " ".join(y for y in self.years if y not in on_line)
        return _verdict("not_grounded", "", line, f"the claim's own line gives {dates}, not {missing}")

    def step3(self) -> dict[str, str] | None:
        if self.values:
            if not all(v in self.page_tokens for v in self.values):
                return None
            index = self.best_by(
                range(len(self.lines)), lambda i: sum(1 for v in self.values if v in self.line_tokens[i])
            )
            assert index is not None  # every value occurs, so the page has lines
            legacy = self.r4(index)
            if legacy is not None:
                return legacy
            return self.grounded(self.lines[index], "every claimed value occurs in the page")
        if not self.subjects:
            return None
        for i, toks in enumerate(self.line_tokens):
            if all(w in toks for w in self.subjects):
                return self.grounded(self.lines[i], "one page line carries every subject word of the claim")
        return None

    def grounded(self, quote: str, reason: str) -> dict[str, str]:
        if self.dropped:
            return _verdict("grounded", "R7", quote, f"{reason}; illustrative {' '.join(self.dropped)} not held to the page")
        return _verdict("grounded", "", quote, reason)

    def r4(self, index: int) -> dict[str, str] | None:
        if "R4" not in self.headings or not _is_legacy(self.lines[index]):
            return None
        current = [i for i in range(len(self.lines)) if i != index and not _is_legacy(self.lines[i])]
        other = self.best_subject_line(current)
        if other is None or self.shared_subjects(other) < 2:
            return None
        return _verdict("not_grounded", "R4", self.lines[other], "the claim matches a legacy row; the current row differs")

    def step4(self) -> dict[str, str] | None:
        index = self.best_subject_line()
        if index is None or self.shared_subjects(index) < 2:
            return None
        line = self.lines[index]
        if self.values and "R5" in self.headings:
            equivalent = self.r5()
            if equivalent is not None:
                return equivalent
        if not self.values and "R6" in self.headings:
            if self.shared_subjects(index) >= math.ceil(R6_SHARE * len(self.subjects)):
                return _verdict("grounded", "R6", line, "the page line carries the core of the claim")
        if "EXACT-VALUE" not in self.headings:
            return _verdict("grounded", "", line, "the page is about the claim")
        if self.values:
            absent = [v for v in self.values if v not in self.page_tokens]
            return _verdict("not_grounded", "", line, f"the page does not state {' '.join(absent)}")
        return _verdict("not_grounded", "", line, "no page line carries every subject word of the claim")

    def r5(self) -> dict[str, str] | None:
        """`grounded` R5 when every missing value is a magnitude within 10% of one on the claim's own line."""
        missing = [v for v in self.values if v not in self.page_tokens]
        if not missing or not all(v in self.magnitudes for v in missing):
            return None
        present = [v for v in self.values if v in self.page_tokens]
        own_rows = [i for i in range(len(self.lines)) if all(v in self.line_tokens[i] for v in present)]
        index = self.best_subject_line(own_rows)
        if index is None or self.shared_subjects(index) < 2:
            return None
        on_line = _magnitudes(self.lines[index])
        for token in missing:
            value = parse_number(token)
            if value is None or not any(abs(n - value) <= R5_TOLERANCE * abs(value) for n in on_line):
                return None
        return _verdict("grounded", "R5", self.lines[index], "the page states an equivalent value within 10%")

    def step5(self) -> dict[str, str]:
        if "R2" in self.headings and self.claim_type in EXISTENCE_CLAIM_TYPES:
            index = self.best_subject_line()
            if index is not None and self.shared_subjects(index) >= 1:
                quote = self.lines[index]
            else:
                quote = next((ln for ln in self.lines if _is_table_row(ln)), "")
            if quote:
                return _verdict("not_grounded", "R2", quote, "the entity is absent from the enumerating page")
        return _verdict("source_silent", "", "", "the page neither states nor contradicts the claim")
