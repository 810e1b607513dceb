"""The model stand-in's judge policy: the documented steps, numbers, the lower-bound rule, prompt-dependent rules."""

import pytest

from replay.prompts import load_prompt
from replay.sim.policy import is_magnitude, judge_claim, prompt_headings

V1, V2, V3 = (load_prompt(name).text for name in ("v1", "v2", "v3"))

PAGE = """# Azure OpenAI models

| Model | Context window | Max output tokens |
|--|--|--|
| gpt-4.1 (2025-04-14) | 1,047,576 | 32,768 |
| gpt-4o (2024-11-20) | 128,000 | 16,384 |

Global Standard deployments support batch processing in every region.
The default quota for gpt-4.1 Global Standard deployments is 1 M tokens per minute.
Zone-redundant deployments fail over automatically with no data loss.
Measured throughput reaches 2,850 tokens per second on a single instance.
Content filters screen prompts and completions for hate and violence.

| Before April 3, 2024 | Storage limit per resource | 100 GB |
| Current | Storage limit per resource | 500 GB |
"""
HEADER = "| Model | Context window | Max output tokens |"
GPT41_ROW = "| gpt-4.1 (2025-04-14) | 1,047,576 | 32,768 |"
BATCH = "Global Standard deployments support batch processing in every region."
ZONE = "Zone-redundant deployments fail over automatically with no data loss."
MEASURED = "Measured throughput reaches 2,850 tokens per second on a single instance."
FILTERS = "Content filters screen prompts and completions for hate and violence."
LEGACY_ROW = "| Before April 3, 2024 | Storage limit per resource | 100 GB |"
CURRENT_ROW = "| Current | Storage limit per resource | 500 GB |"

# (case, claim text, claim_type, {prompt: (verdict, rule, quote)})
CASES = [
    ("step 3: every value occurs", "gpt-4.1 returns at most 32,768 output tokens.", "version",
     {p: ("grounded", "", GPT41_ROW) for p in ("v1", "v2", "v3")}),
    ("step 3: one line has every subject word", "Global Standard deployments support batch processing.", "sku",
     {p: ("grounded", "", BATCH) for p in ("v1", "v2", "v3")}),
    ("step 4: a value is missing, a line shares two subject words", "gpt-4o returns at most 4,096 output tokens.",
     "version", {"v1": ("grounded", "", HEADER), "v2": ("not_grounded", "", HEADER), "v3": ("not_grounded", "", HEADER)}),
    ("step 5: nothing shared", "Provisioned throughput costs 2 dollars an hour.", "tpm",
     {p: ("source_silent", "", "") for p in ("v1", "v2", "v3")}),
    # lower bound: B = 200000, M = 1047576 (> 2B)
    ("lower bound, gross understatement", "gpt-4.1 offers a 200k+ token context window.", "version",
     {"v1": ("grounded", "", GPT41_ROW), "v2": ("grounded", "", GPT41_ROW), "v3": ("not_grounded", "R1", GPT41_ROW)}),
    ("lower bound, thousands separators", "gpt-4.1 offers a 500,000+ token context window.", "version",
     {"v2": ("grounded", "", GPT41_ROW), "v3": ("not_grounded", "R1", GPT41_ROW)}),
    ("lower bound, tight (1M)", "gpt-4.1 offers a 1M+ token context window.", "version",
     {p: ("grounded", "", GPT41_ROW) for p in ("v1", "v2", "v3")}),
    ("lower bound, tight (600k)", "gpt-4.1 offers a 600k+ token context window.", "version",
     {"v2": ("grounded", "", GPT41_ROW), "v3": ("grounded", "", GPT41_ROW)}),
    ("lower bound above the page (1.5M)", "gpt-4.1 offers a 1.5M+ token context window.", "version",
     {p: ("not_grounded", "", GPT41_ROW) for p in ("v1", "v2", "v3")}),
    ("lower bound: other value picks the line", "gpt-4o offers a 100k+ token context window.", "version",
     {"v2": ("grounded", "", "| gpt-4o (2024-11-20) | 128,000 | 16,384 |"),
      "v3": ("grounded", "", "| gpt-4o (2024-11-20) | 128,000 | 16,384 |")}),
    ("lower bound: best line has no number", "A context window of 100+ tokens.", "version",
     {"v2": ("source_silent", "", ""), "v3": ("source_silent", "", "")}),
    # R7: "~15" is illustrative under R7, a value to find verbatim otherwise
    ("R7 illustrative number", "Zone-redundant deployments fail over automatically (~15 min).", "taxonomy",
     {"v1": ("grounded", "", ZONE), "v2": ("not_grounded", "", ZONE), "v3": ("grounded", "R7", ZONE)}),
    ("R7 illustrative number, approx sign", "Zone-redundant deployments fail over automatically in ≈15 min.", "taxonomy",
     {"v2": ("not_grounded", "", ZONE), "v3": ("grounded", "R7", ZONE)}),
    # R5: 3,000 vs 2,850 is within 10%; 4,000 is not; a missing non-number blocks it
    ("R5 equivalent number", "Throughput reaches 3,000 tokens per second.", "tpm",
     {"v1": ("grounded", "", MEASURED), "v2": ("not_grounded", "", MEASURED), "v3": ("grounded", "R5", MEASURED)}),
    ("R5 too far off", "Throughput reaches 4,000 tokens per second.", "tpm",
     {"v2": ("not_grounded", "", MEASURED), "v3": ("not_grounded", "", MEASURED)}),
    ("R5 blocked by a missing non-number", "Throughput reaches 3,000 tokens per second on gpt-9.", "tpm",
     {"v3": ("not_grounded", "", MEASURED)}),
    # R6: 6 of 7 subject words on one line (>= ceil(5.25)); 3 of 8 is not enough
    ("R6 core grounded", "Content filters screen prompts for hate, violence and sexual content.", "taxonomy",
     {"v1": ("grounded", "", FILTERS), "v2": ("not_grounded", "", FILTERS), "v3": ("grounded", "R6", FILTERS)}),
    ("R6 core not grounded", "Content filters screen images for self-harm, sexual and weapons categories.", "taxonomy",
     {"v2": ("not_grounded", "", FILTERS), "v3": ("not_grounded", "", FILTERS)}),
    # R4: matching only the legacy row
    ("R4 legacy row", "Storage limit per resource is 100 GB.", "tpm",
     {"v1": ("grounded", "", LEGACY_ROW), "v2": ("grounded", "", LEGACY_ROW), "v3": ("not_grounded", "R4", CURRENT_ROW)}),
    ("R4 current row", "Storage limit per resource is 500 GB.", "tpm",
     {p: ("grounded", "", CURRENT_ROW) for p in ("v1", "v2", "v3")}),
    # R2: existence claims on a retrieved page
    ("R2 absent, nothing shared: first table row", "The Ultra tier is offered for Foundry hosting.", "sku",
     {"v1": ("source_silent", "", ""), "v2": ("source_silent", "", ""), "v3": ("not_grounded", "R2", HEADER)}),
    ("R2 absent, one word shared", "The Ultra tier supports batch hosting.", "region",
     {"v2": ("source_silent", "", ""), "v3": ("not_grounded", "R2", BATCH)}),
    ("R2 does not touch other claim types", "The Ultra tier is offered for Foundry hosting.", "version",
     {"v3": ("source_silent", "", "")}),
]

PROMPTS = {"v1": V1, "v2": V2, "v3": V3}


@pytest.mark.parametrize(
    "claim, claim_type, prompt, expected",
    [pytest.param(c, t, p, e, id=f"{name} [{p}]") for name, c, t, table in CASES for p, e in table.items()],
)
def test_policy_table(claim, claim_type, prompt, expected):
    verdict = judge_claim({"id": "x", "claim": claim, "claim_type": claim_type}, PAGE, PROMPTS[prompt])
    assert (verdict["judge_verdict"], verdict["rule"], verdict["evidence_quote"]) == expected
    assert verdict["reason"].startswith("stand-in policy:")
    assert set(verdict) == {"judge_verdict", "rule", "evidence_quote", "reason"}


def test_every_quote_is_a_page_line():
    for _, claim, claim_type, table in CASES:
        for prompt in table:
            quote = judge_claim({"claim": claim, "claim_type": claim_type}, PAGE, PROMPTS[prompt])["evidence_quote"]
            assert quote == "" or quote in PAGE.splitlines()


def test_headings_of_the_bundled_prompts():
    assert prompt_headings(V1) == frozenset()
    assert prompt_headings(V2) == {"EXACT-VALUE"}
    assert prompt_headings(V3) == {"EXACT-VALUE", "R1", "R2", "R3", "R4", "R5", "R6", "R7"}


def test_lower_bound_rule_is_keyed_on_the_r1_heading_alone():
    claim = {"claim": "gpt-4.1 offers a 200k+ token context window.", "claim_type": "version"}
    with_r1 = "EXACT-VALUE RULE\n**R1 — Lower-bound understatement.**"
    assert judge_claim(claim, PAGE, with_r1)["rule"] == "R1"
    assert judge_claim(claim, PAGE, "EXACT-VALUE RULE\nR1 - hyphen, not an em dash")["judge_verdict"] == "grounded"


def test_missing_page_is_source_silent_whatever_the_prompt():
    for prompt in PROMPTS.values():
        verdict = judge_claim({"claim": "The Ultra tier is offered.", "claim_type": "sku"}, None, prompt)
        assert verdict["judge_verdict"] == "source_silent" and verdict["evidence_quote"] == ""
        assert "could not be retrieved" in verdict["reason"]


def test_ties_go_to_the_first_line():
    page = "alpha beta gamma one\n\nalpha beta gamma two\n"
    verdict = judge_claim({"claim": "alpha beta delta 7", "claim_type": "tpm"}, page, V2)
    assert verdict == {**verdict, "judge_verdict": "not_grounded", "evidence_quote": "alpha beta gamma one"}
    # step 3: the line holding the most values wins, the first on a tie
    page = "model 5 here\nmodel 5 and 6 here\nmodel 6 and 5 there\n"
    assert judge_claim({"claim": "Model 5 or 6", "claim_type": "tpm"}, page, V2)["evidence_quote"] == "model 5 and 6 here"


def test_values_compare_as_tokens_after_thousands_removal():
    page = "The limit is 1048576 tokens.\nThe other limit is 200,000 tokens.\n"
    assert judge_claim({"claim": "limit of 1,048,576", "claim_type": "tpm"}, page, V2)["judge_verdict"] == "grounded"
    assert judge_claim({"claim": "limit of 200000", "claim_type": "tpm"}, page, V2)["judge_verdict"] == "grounded"
    # `200k` is a number for the lower-bound rule, but not the token `200000`
    assert judge_claim({"claim": "other limit of 200k tokens", "claim_type": "tpm"}, page, V2)["judge_verdict"] == "not_grounded"


def test_r2_quotes_the_first_table_row_after_a_separator():
    page = "Intro text.\n|--|:--:|\n| Premium | 99.9% |\n"
    verdict = judge_claim({"claim": "An Ultra offer exists.", "claim_type": "sku"}, page, V3)
    assert (verdict["judge_verdict"], verdict["rule"], verdict["evidence_quote"]) == ("not_grounded", "R2", "| Premium | 99.9% |")
    assert "absent" in verdict["reason"]
    # nothing to quote: the strict evidence rule keeps it source_silent
    bare = judge_claim({"claim": "An Ultra offer exists.", "claim_type": "sku"}, "Intro text.\n", V3)
    assert bare["judge_verdict"] == "source_silent"


def test_a_claim_without_values_or_subject_words_is_source_silent():
    verdict = judge_claim({"claim": "It is so.", "claim_type": "status"}, PAGE, V2)
    assert verdict["judge_verdict"] == "source_silent"


def test_r4_needs_a_current_line_sharing_two_subject_words():
    page = "| Legacy | Storage limit | 100 GB |\n| Current | Quota | 500 GB |\n"
    verdict = judge_claim({"claim": "Storage limit is 100 GB.", "claim_type": "tpm"}, page, V3)
    assert (verdict["judge_verdict"], verdict["rule"]) == ("grounded", "")


def test_r7_without_r7_heading_keeps_the_tilde_token():
    claim = {"claim": "Zone-redundant deployments fail over automatically (~15 min).", "claim_type": "taxonomy"}
    page_with_token = PAGE + "Failover takes ~15 min for zone-redundant deployments.\n"
    assert judge_claim(claim, page_with_token, V2)["judge_verdict"] == "grounded"


RETIREMENTS = """# Model retirements

gpt-4o (2024-11-20) retires on March 31, 2027; its context window holds 128,000 tokens.
gpt-35-turbo (0125) retires on March 31, 2025; its context window holds 16,385 tokens.
"""
GPT4O_LINE = "gpt-4o (2024-11-20) retires on March 31, 2027; its context window holds 128,000 tokens."
TURBO_LINE = "gpt-35-turbo (0125) retires on March 31, 2025; its context window holds 16,385 tokens."


def test_r5_never_treats_a_year_as_within_10_percent():
    # the page gives the year before (2025) on the model's own line, and 2027 (within 10% of 2026 as a
    # magnitude) on another model's line: neither is "equivalent" to 2026
    claim = {"claim": "gpt-35-turbo retires on March 31, 2026.", "claim_type": "status"}
    verdict = judge_claim(claim, RETIREMENTS, V3)
    assert (verdict["judge_verdict"], verdict["rule"]) == ("not_grounded", "")
    assert "2026" in verdict["reason"]
    assert judge_claim(claim, RETIREMENTS.replace("2025;", "2026;"), V3)["judge_verdict"] == "grounded"
    # the same claim with a count on its own line is an R5 equivalent (16,000 vs 16,385)
    count = {"claim": "gpt-35-turbo context window holds 16,000 tokens.", "claim_type": "version"}
    assert _table(judge_claim(count, RETIREMENTS, V3)) == ("grounded", "R5", TURBO_LINE)


def test_r5_quotes_the_claims_own_line_never_another_models():
    # 130,000 is within 10% of gpt-4o's 128,000 only: gpt-4o's line is no evidence for gpt-35-turbo
    claim = {"claim": "gpt-35-turbo context window holds 130,000 tokens.", "claim_type": "version"}
    assert _table(judge_claim(claim, RETIREMENTS, V3))[:2] == ("not_grounded", "")
    about_gpt4o = {"claim": "gpt-4o context window holds 130,000 tokens.", "claim_type": "version"}
    assert _table(judge_claim(about_gpt4o, RETIREMENTS, V3)) == ("grounded", "R5", GPT4O_LINE)


@pytest.mark.parametrize("claimed, page_value, equivalent", [
    ("2,000", "2,025", True),     # counts with separators
    ("2,000", "2025", False),     # a year on the line is no equivalent of a count
    ("2024", "2025", False),      # years are exact
    ("4.2", "4.1", False),        # possible version numbers are exact
    ("1.5M", "1.45M", True),      # an amount with a suffix is a magnitude
    ("200k", "210,000", True),
])
def test_r5_reads_years_and_versions_exactly(claimed, page_value, equivalent):
    page = f"Throughput reaches {page_value} tokens per second on a single instance.\n"
    verdict = judge_claim({"claim": f"Throughput reaches {claimed} tokens per second.", "claim_type": "tpm"}, page, V3)
    assert (verdict["rule"] == "R5") is equivalent
    assert verdict["judge_verdict"] == ("grounded" if equivalent else "not_grounded")


def test_magnitudes():
    assert [t for t in ("2025", "2,025", "4.1", "1.5m", "200k", "2025-04-14", "gpt-4.1", "31", "1900", "2100")
            if is_magnitude(t)] == ["2,025", "1.5m", "200k", "31", "2100"]


def _table(verdict: dict) -> tuple:
    return verdict["judge_verdict"], verdict["rule"], verdict["evidence_quote"]


LIFECYCLE = """# Model deprecations and retirements

| Model | Version | Lifecycle status | Deprecation date | Retirement date |
|:--|:--|:--|:--|:--|
| `gpt-5` | 2025-08-07 | Generally Available | 2026-08-07 | 2027-02-06 |
| `gpt-4.1` | 2025-04-14 | Generally Available | 2026-04-14 | 2026-10-14 |
| `gpt-4o` | 2024-11-20 | Generally Available | 2025-11-20 | 2026-10-01 |
| `dall-e-3` | 3 | Retired | n/a | n/a |
"""
GPT5_ROW, GPT41_LIFECYCLE_ROW = LIFECYCLE.splitlines()[4], LIFECYCLE.splitlines()[5]


@pytest.mark.parametrize("prompt", ["v2", "v3"])
def test_a_year_claim_is_judged_on_the_entitys_own_row(prompt):
    text = {"v2": V2, "v3": V3}[prompt]

    def judged(claim: str) -> dict:
        return judge_claim({"claim": claim, "claim_type": "status"}, LIFECYCLE, text)

    # 2026 is on gpt-4.1's row (2026-10-14): true, quoted from that row, never "absent from the page" (R2)
    verdict = judged("The `gpt-4.1` model retires in 2026.")
    assert _table(verdict) == ("grounded", "", GPT41_LIFECYCLE_ROW)
    assert "2026-10-14" in verdict["reason"] and "absent" not in verdict["reason"]
    # 2027 is on the page (gpt-5's row), not on gpt-4.1's: the row's dates contradict it
    verdict = judged("The `gpt-4.1` model retires in 2027.")
    assert _table(verdict) == ("not_grounded", "", GPT41_LIFECYCLE_ROW)
    assert verdict["reason"].endswith("gives 2025-04-14, 2026-04-14, 2026-10-14, not 2027")
    assert _table(judged("The `gpt-5` model retires in 2027.")) == ("grounded", "", GPT5_ROW)
    # the entity's row gives no date at all: silent on the year, not "absent"
    assert _table(judged("The `dall-e-3` model retires in 2026.")) == ("source_silent", "", "")
    # an entity that is on no row: the base steps, unchanged (R2 in v3)
    absent = judged("The `gpt-3.5` model retires in 2026.")
    assert absent["judge_verdict"] == ("not_grounded" if prompt == "v3" else "source_silent")


def test_a_year_on_another_models_row_never_grounds_the_claim():
    # 2027 is a page token (gpt-5's row), so step 3 alone would say grounded, quoting gpt-5's row
    verdict = judge_claim({"claim": "gpt-4.1 2025-04-14 retires in 2027.", "claim_type": "status"}, LIFECYCLE, V3)
    assert _table(verdict) == ("not_grounded", "", GPT41_LIFECYCLE_ROW)


def test_a_count_is_not_a_year_and_v1_reads_years_as_tokens():
    # `2,025` is a count, not a claimed year: the base steps decide it
    count = judge_claim({"claim": "gpt-4.1 serves 2,025 requests.", "claim_type": "tpm"}, LIFECYCLE, V3)
    assert "own line" not in count["reason"]
    # v1 has no exact-value rule: the base policy (2026 is no token of the page)
    assert judge_claim({"claim": "The `gpt-4.1` model retires in 2026.", "claim_type": "status"}, LIFECYCLE,
                       V1)["judge_verdict"] == "source_silent"
