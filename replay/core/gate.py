"""The adoption gate (candidate vs baseline) with its paired evidence: McNemar exact test, bootstrap CIs."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat, starmap
from math import comb, floor

from replay.core.commands import NO_ENDPOINTS, Endpoints, add_samples_command
from replay.core.grading import Gold, Outcome, Results, claim_outcome, pair_claims, ratio
from replay.core.model_noise import RESAMPLES as NOISE_RESAMPLES
from replay.core.model_noise import settle_target, side_outcomes, stability
from replay.schema.scores import GateDecision, ModelNoise, Scores

ALPHA = 0.05
"""Significance level of the noise check (McNemar p and 95% CIs)."""
RESAMPLES = 2_000
SEED = 20_260_601
"""Fixed bootstrap seed: the same inputs always give the same CIs."""
_COUNTED = {"TP": 0, "FP": 1, "FN": 2}


@dataclass(frozen=True)
class PairedOutcome:
    """One gold claim as the baseline and the candidate judged it."""

    baseline: Outcome | None
    candidate: Outcome | None
    """None: the claim has no verdict and its gold label is correct/unsourced (neither TN nor FP)."""
    baseline_correct: bool
    candidate_correct: bool
    """Right on the binary outcome the gate's P and R count (TP or TN); what McNemar's test compares."""


def paired_outcomes(baseline: Results, candidate: Results, gold: Gold) -> list[PairedOutcome]:
    """Every gold claim, in gold order, with both versions' binary outcome, and whether it is right (TP or
    TN). Binary, not 3-class: a correct claim judged `source_silent` instead of `grounded` moves neither
    P nor R, so it is no evidence for or against the gate's decision."""
    out = []
    for b, c in zip(pair_claims(baseline, gold).paired, pair_claims(candidate, gold).paired, strict=True):
        label = b.gold.label
        outcome_b, outcome_c = claim_outcome(label, b.verdict), claim_outcome(label, c.verdict)
        out.append(PairedOutcome(outcome_b, outcome_c, outcome_b in _RIGHT, outcome_c in _RIGHT))
    return out


_RIGHT = ("TP", "TN")


def mcnemar_exact_p(only_baseline_right: int, only_candidate_right: int) -> float:
    """Two-sided exact McNemar test: P(as unbalanced a split of the discordant pairs | Binomial(n, 1/2))."""
    n = only_baseline_right + only_candidate_right
    if n == 0:
        return 1.0
    k = min(only_baseline_right, only_candidate_right)
    tail = sum(comb(n, i) for i in range(k + 1))
    return min(1.0, float(2 * tail / 2**n))


def _quantile(ordered: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = q * (len(ordered) - 1)
    lo = floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _interval(values: list[float], level: float) -> tuple[float, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    tail = (1 - level) / 2
    # rounded so that float dust (1e-17) never decides whether an interval spans 0
    return round(_quantile(ordered, tail), 9), round(_quantile(ordered, 1 - tail), 9)


def _count_index(outcome: Outcome | None) -> int:
    return _COUNTED.get(outcome, 3) if outcome is not None else 3


def bootstrap_delta_cis(
    outcomes: list[PairedOutcome], resamples: int = RESAMPLES, seed: int = SEED, level: float = 0.95
) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
    """Percentile CIs of ΔP and ΔR (candidate - baseline), resampling claims with replacement, paired.

    Resamples where a difference is undefined (a version flagged nothing, or no outdated/wrong claim was
    drawn) are left out of that difference's interval; None when no resample defines it.
    """
    if not outcomes:
        return None, None
    rng = random.Random(seed)
    n = len(outcomes)
    # each claim as one byte: 4 x the baseline's outcome + the candidate's (0 TP, 1 FP, 2 FN, 3 neither)
    codes = bytes(4 * _count_index(o.baseline) + _count_index(o.candidate) for o in outcomes)
    scale = float(n)
    d_precision: list[float] = []
    d_recall: list[float] = []
    for _ in range(resamples):
        # the claims `rng.choices(range(n), k=n)` draws: the same n calls of rng.random, in the same order,
        # each index floor(random() * n), run in C (tests/test_gate.py holds it to rng.choices)
        drawn = bytes(map(codes.__getitem__, map(int, map(scale.__mul__, starmap(rng.random, repeat((), n))))))
        count = [drawn.count(code) for code in range(16)]
        tp_b, fp_b, fn_b = (sum(count[4 * b:4 * b + 4]) for b in range(3))
        tp_c, fp_c, fn_c = (sum(count[c::4]) for c in range(3))
        p_b, p_c = ratio(tp_b, tp_b + fp_b), ratio(tp_c, tp_c + fp_c)
        r_b, r_c = ratio(tp_b, tp_b + fn_b), ratio(tp_c, tp_c + fn_c)
        if p_b is not None and p_c is not None:
            d_precision.append(p_c - p_b)
        if r_b is not None and r_c is not None:
            d_recall.append(r_c - r_b)
    return _interval(d_precision, level), _interval(d_recall, level)


def _move(before: float, after: float) -> str:
    """`before→after` to two decimals, or as many more as it takes to show that two values differ."""
    digits = 2
    while before != after and f"{before:.{digits}f}" == f"{after:.{digits}f}" and digits < 12:
        digits += 1
    return f"{before:.{digits}f}→{after:.{digits}f}"


def _undefined_why(scores: Scores, who: str) -> str | None:
    if scores.precision is None:
        return f"{who} precision is undefined (it flagged no claim not_grounded)"
    if scores.recall is None:
        return f"{who} recall is undefined (the gold set has no outdated or wrong claim)"
    return None


def missing_verdicts(scores: Scores, who: str) -> str | None:
    """Why a version's scores cannot be compared: it has claims without a verdict, in any of its samples
    (None when it has none)."""
    if scores.samples > 1 and scores.sample_no_verdict:
        m, k = scores.sample_no_verdict, scores.samples
        return (f"the {who} lacks {m} verdict{'' if m == 1 else 's'} among its {k} samples of {scores.graded} claims "
                f"({scores.no_verdict} claim{'' if scores.no_verdict == 1 else 's'} without a majority verdict; each "
                "sample scores its missing verdicts as no-verdict claims)")
    if not scores.no_verdict:
        return None
    n = scores.no_verdict
    unjudged = len(scores.unmatched_gold)  # gold claims the results say nothing of
    why = "failed or cut-off conversations:"
    if unjudged:
        why = ", ".join(part for part in (f"{n - unjudged} in failed or cut-off conversations" if n > unjudged else "",
                                          f"{unjudged} it never judged") if part) + ";"
    return (f"the {who} has {n} claim{'' if n == 1 else 's'} without a verdict out of {scores.graded} "
            f"({why} counted as FN where the gold flags the claim, never as a negative)")


def gate_rule(baseline: Scores, candidate: Scores) -> tuple[bool, str]:
    """The adoption gate's rule alone: adopt iff P_c >= P_b and R_c >= R_b with at least one strictly greater.

    Never adopted: a candidate with claims without a verdict, nor one compared with a baseline
    that has some (its understated P/R would flatter the candidate).
    """
    incomplete = [why for why in (missing_verdicts(candidate, "candidate"), missing_verdicts(baseline, "baseline"))
                  if why]
    if incomplete:
        return False, f"do not adopt: {' and '.join(incomplete)}"
    for scores, who in ((baseline, "baseline"), (candidate, "candidate")):
        why = _undefined_why(scores, who)
        if why:
            return False, f"do not adopt: {why}"
    pb, pc, rb, rc = baseline.precision, candidate.precision, baseline.recall, candidate.recall
    assert pb is not None and pc is not None and rb is not None and rc is not None
    moves = f"P {_move(pb, pc)}, R {_move(rb, rc)}"
    if pc >= pb and rc >= rb and (pc > pb or rc > rb):
        return True, f"adopt: {moves}"
    if pc == pb and rc == rb:
        return False, f"do not adopt: {moves}: P and R are equal, nothing gained"
    if (pc > pb and rc < rb) or (pc < pb and rc > rb):
        return False, f"do not adopt: {moves}: a trade-off, one rose while the other fell"
    return False, f"do not adopt: {moves}: the candidate is worse"


@dataclass(frozen=True)
class Side:
    """Where a gate side's samples come from, to say how to record more of them: its run folder as printed
    (None: a results file outside a run) and what the run cost at current prices (None: unknown)."""

    run: str | None = None
    cost_usd: float | None = None
    endpoints: Endpoints = NO_ENDPOINTS
    """The endpoints the user gave (`core.commands.Endpoints`), for the commands that record more samples."""


def adoption_gate(
    baseline: Results,
    candidate: Results,
    gold: Gold,
    *,
    baseline_scores: Scores,
    candidate_scores: Scores,
    candidate_rerecord: str | None = None,
    baseline_rerecord: str | None = None,
    claims_differ: Sequence[str] = (),
    resamples: int = RESAMPLES,
    seed: int = SEED,
    required_stability: float = 0.95,
    baseline_side: Side = Side(),
    candidate_side: Side = Side(),
) -> GateDecision:
    """The gate decision, with the paired evidence that says whether it rests on differences within noise.

    `candidate_rerecord` / `baseline_rerecord` say how to re-record a version's claims without a verdict
    (a command, or which files); the reason of a refusal for missing verdicts ends with them, and then
    `within_noise` is None: no comparison was made. `claims_differ`: the claims files whose claims the
    two runs judged differently (`Run.claims_differing_from`): their P and R rest on different claims,
    so nothing is adopted.

    Within noise: the exact McNemar p on the claims only one version got right (TP or TN: the outcome P
    and R count) is >= 0.05, or the 95% CI
    of a difference that moved (ΔP or ΔR != 0) includes 0. A held metric's CI spanning 0 is what
    "holds" means, so it does not count. A rejection where a metric is significantly worse (its CI lies
    wholly below 0) is not within noise.
    """
    adopt, head = gate_rule(baseline_scores, candidate_scores)
    rule_head = head
    if claims_differ:
        n = len(claims_differ)
        adopt, head = False, (f"do not adopt: the two runs judged different claims in {n} claims file{'' if n == 1 else 's'} "
                              f"({', '.join(claims_differ[:5])}{', …' if n > 5 else ''}), so their P and R do not "
                              "compare the prompts; record both on the same claims files")
    outcomes = paired_outcomes(baseline, candidate, gold)
    only_b = sum(o.baseline_correct and not o.candidate_correct for o in outcomes)
    only_c = sum(o.candidate_correct and not o.baseline_correct for o in outcomes)
    p_value = mcnemar_exact_p(only_b, only_c)
    ci_p, ci_r = bootstrap_delta_cis(outcomes, resamples, seed)
    d_p = _delta(baseline_scores.precision, candidate_scores.precision)
    d_r = _delta(baseline_scores.recall, candidate_scores.recall)

    discordant = only_b + only_c
    split = (f"{discordant} discordant claim{'' if discordant == 1 else 's'} "
             f"({only_c} only the candidate got right, {only_b} only the baseline; McNemar p={p_value:.3g})")
    noise: list[str] = []
    if p_value >= ALPHA:
        noise.append(f"only {split}")
    cis: list[str] = []
    for name, delta, ci in (("ΔP", d_p, ci_p), ("ΔR", d_r, ci_r)):
        if delta is None or delta == 0 or ci is None:
            continue
        text = f"{name} 95% CI [{ci[0]:.2f}, {ci[1]:.2f}]"
        cis.append(text)
        if ci[0] <= 0 <= ci[1]:
            noise.append(f"{text} spans 0")
    # A rejection that rests on a metric significantly worse (its whole CI below 0) is not noise.
    worse = [f"{name} 95% CI [{ci[0]:.2f}, {ci[1]:.2f}]" for name, delta, ci in (("ΔP", d_p, ci_p), ("ΔR", d_r, ci_r))
             if delta is not None and delta < 0 and ci is not None and ci[1] < 0]
    within: bool | None = bool(noise) and not (not adopt and worse)
    size = f"on a gold set of {len(outcomes)}"
    fixes = [f"to re-record the {who}'s claims without a verdict: {fix or 'record its failed claims files again'}"
             for who, scores, fix in (("candidate", candidate_scores, candidate_rerecord),
                                      ("baseline", baseline_scores, baseline_rerecord))
             if scores.no_verdict or scores.sample_no_verdict]
    undefined = [why for why in (_undefined_why(baseline_scores, "baseline"), _undefined_why(candidate_scores, "candidate"))
                 if why]
    if claims_differ:  # the claims first; then what else stands in the way, with how to fix it
        also = [f"also {rule_head.removeprefix('do not adopt: ')}", *fixes] if fixes else []
        reason, within = "; ".join([head, *also]), None
    elif fixes:
        reason, within = f"{head}; {'; '.join(fixes)}", None
    elif undefined:  # the gate cannot compare what is undefined: its refusal rests on no difference, noisy or not
        reason, within = head, None
    elif discordant == 0 and d_p == 0 and d_r == 0:
        reason, within = f"{head}: both versions got the same claims right", None
    elif not adopt and worse:
        reason = f"{head}; {' and '.join(worse)} lies below 0: significantly worse {size}"
    elif within:
        reason = f"{head}; but {' and '.join(noise)}: the decision rests on differences within noise {size}"
    else:
        evidence = [split] + cis
        reason = f"{head}; {', '.join(evidence)}: beyond noise {size}"
    compared = not (claims_differ or fixes or undefined)
    noise_measured = model_noise(baseline, candidate, gold, baseline_scores, candidate_scores, rule_adopts=adopt,
                                 compared=compared, required=required_stability,
                                 sides=(baseline_side, candidate_side))
    if noise_measured.stability is not None:
        reason, adopt = _with_model_noise(reason, adopt, noise_measured)
    return GateDecision(
        adopt=adopt, reason=reason, within_noise=within, mcnemar_p=p_value,
        only_candidate_right=only_c, only_baseline_right=only_b,
        delta_precision_ci=ci_p, delta_recall_ci=ci_r, paired=len(outcomes),
        delta_precision=d_p, delta_recall=d_r, bootstrap_resamples=resamples, model_noise=noise_measured,
    )


def model_noise(
    baseline: Results, candidate: Results, gold: Gold, baseline_scores: Scores, candidate_scores: Scores, *,
    rule_adopts: bool, compared: bool, required: float, sides: tuple[Side, Side],
) -> ModelNoise:
    """The decision's stability against the model's noise, when either side has K >= 2 samples and the gate
    compared the two; with the `--add-samples` commands projected to settle an unstable decision."""
    ks = {"baseline": baseline_scores.samples, "candidate": candidate_scores.samples}
    if max(ks.values()) < 2:
        return ModelNoise(measured=False, samples=ks, required=required)
    if not compared:
        return ModelNoise(measured=True, samples=ks, required=required)
    base, cand = side_outcomes(baseline, gold), side_outcomes(candidate, gold)
    share = stability(base, cand, rule_adopts)
    if share >= required:
        return ModelNoise(measured=True, stability=share, samples=ks, resamples=NOISE_RESAMPLES, required=required)
    target = settle_target(base, cand, rule_adopts, required)
    settle: list[str] = []
    costs: list[float | None] = []
    goal = target or max(ks.values()) * 2
    for who, side, k in (("baseline", sides[0], ks["baseline"]), ("candidate", sides[1], ks["candidate"])):
        if k >= goal:
            continue
        settle.append(add_samples_command(side.run, goal - k, endpoints=side.endpoints) if side.run else
                      f"record {goal - k} more samples of the {who} (its results are not a run folder, so the "
                      "command is not known)")
        costs.append(None if side.cost_usd is None else side.cost_usd / k * (goal - k))
    cost = None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 6)
    return ModelNoise(measured=True, stability=share, samples=ks, resamples=NOISE_RESAMPLES, required=required,
                      settle=settle, settle_samples=target, settle_cost_usd=cost)


def _with_model_noise(reason: str, adopt: bool, noise: ModelNoise) -> tuple[str, bool]:
    """The reason with the model-noise stability said, and the decision: an adoption that does not hold in
    enough simulated re-runs is not made."""
    assert noise.stability is not None
    ks = noise.samples
    held = (f"the decision holds in {noise.stability:.1%} of {noise.resamples} simulated re-runs of the judge "
            f"(K {ks['baseline']} baseline, {ks['candidate']} candidate; {noise.required:.0%} needed)")
    if noise.stability >= noise.required:
        return f"{reason}; model noise: {held}", adopt
    if adopt:
        reason = f"do not adopt: model noise: {held}, so it may not survive a re-run (the rule alone: {reason})"
    else:
        reason = f"{reason}; model noise: {held}: a re-run might adopt"
    return reason, False


def _delta(base: float | None, cand: float | None) -> float | None:
    return None if base is None or cand is None else round(cand - base, 12)
