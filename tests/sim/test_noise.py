"""Simulated model noise: which claims are close calls, their runner-up verdicts, reproducible draws."""

import json
from pathlib import Path

import pytest

from locations import REPO

from replay.prompts import load_prompt
from replay.sim.model import Conversation
from replay.sim.noise import ModelNoise
from replay.sim.policy import judge_claim, runner_up

V2, V3 = (load_prompt(name).text for name in ("v2", "v3"))
PAGE = """| Model | Context window | Max output tokens |
|--|--|--|
| gpt-4.1 (2025-04-14) | 1,047,576 | 32,768 |
| gpt-4o (2024-11-20) | 128,000 | 16,384 |
"""


def claim(text: str, claim_type: str = "version") -> dict[str, str]:
    return {"id": "c", "claim": text, "claim_type": claim_type}


def close_calls(prompt_name: str) -> set[str]:
    """The demo claims with a runner-up verdict under a prompt."""
    from replay.sim.learn import load_pages
    from replay.urls import normalise_learn_url

    pages = load_pages(REPO / "demo" / "pages" / "2026-06")
    prompt = load_prompt(prompt_name).text
    found = set()
    for path in sorted((REPO / "demo" / "claims").glob("*.json")):
        for c in json.loads(path.read_text("utf-8"))["claims"]:
            page = pages.get(normalise_learn_url(c["evidence_url"])) if c.get("evidence_url") else None
            if page is not None and runner_up(c, page.body, prompt) is not None:
                found.add(c["id"])
    return found


@pytest.mark.parametrize("prompt", [V2, V3])
def test_a_plainly_stated_value_is_no_close_call(prompt: str) -> None:
    assert runner_up(claim("gpt-4.1 returns at most 32,768 output tokens."), PAGE, prompt) is None


def test_a_lower_bound_is_a_close_call_read_the_other_way() -> None:
    c = claim("gpt-4.1 offers a 200k+ token context window.")
    assert judge_claim(c, PAGE, V3)["judge_verdict"] == "not_grounded"  # R1: more than twice the bound
    assert runner_up(c, PAGE, V3)["judge_verdict"] == "grounded"
    assert judge_claim(c, PAGE, V2)["judge_verdict"] == "grounded"
    assert runner_up(c, PAGE, V2)["judge_verdict"] == "not_grounded"


def test_the_demo_close_calls_are_the_same_claims_under_v2_and_v3() -> None:
    """The calibration rules (R2, R5, R7) and the lower bounds decide the same demo claims whichever prompt
    has the rules: noise touches both sides of the bake-off alike."""
    assert close_calls("v2") == close_calls("v3")
    assert {"models-002", "models-004", "models-005", "eval-004", "quotas-006"} <= close_calls("v3")


def test_no_page_is_no_close_call() -> None:
    assert runner_up(claim("gpt-4.1 offers a 200k+ token context window."), None, V3) is None


def conversation(prompt: str) -> Conversation:
    claims = [{"id": "lb", "claim": "gpt-4.1 offers a 200k+ token context window.", "claim_type": "version",
               "evidence_url": "https://learn.microsoft.com/x"},
              {"id": "plain", "claim": "gpt-4.1 returns at most 32,768 output tokens.", "claim_type": "version",
               "evidence_url": "https://learn.microsoft.com/x"}]
    return Conversation(prompt, "docs/a.md", claims, pages={"https://learn.microsoft.com/x": PAGE})


def verdicts(noise: ModelNoise | None, answers: int = 20) -> list[tuple[str, str]]:
    out = []
    for _ in range(answers):
        results = conversation(V3).verdicts(noise)["results"]
        out.append((results[0]["judge_verdict"], results[1]["judge_verdict"]))
    return out


def test_noise_flips_only_close_calls_and_the_same_seed_draws_the_same() -> None:
    noisy = verdicts(ModelNoise(0.5, seed=7))
    assert {plain for _, plain in noisy} == {"grounded"}  # never drawn for: not a close call
    assert {lb for lb, _ in noisy} == {"grounded", "not_grounded"}
    assert noisy == verdicts(ModelNoise(0.5, seed=7))
    assert noisy != verdicts(ModelNoise(0.5, seed=8))
    assert verdicts(None) == verdicts(ModelNoise(0.0, seed=7)) == [("not_grounded", "grounded")] * 20
    assert {lb for lb, _ in verdicts(ModelNoise(1.0, seed=7))} == {"grounded"}


def test_one_draw_per_close_call() -> None:
    noise = ModelNoise(0.5, seed=1)
    verdicts(noise, answers=5)
    assert noise.draws == 5
    assert noise.note == "model noise 0.5, seed 1"
