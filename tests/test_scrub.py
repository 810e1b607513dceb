"""Secret scrubbing on write and the audit, over real cassettes from other projects and planted keys."""

from __future__ import annotations

import random
import string
from pathlib import Path

import httpx
import pytest
import vcr
import yaml
from vcr.persisters.filesystem import FilesystemPersister
from vcr.serializers import yamlserializer

from replay._errors import InputError
from replay._cassette import Interaction, load_cassette, save_cassette
from replay._scrub import audit, audit_report, is_placeholder, mask, scrub_text

REAL = Path(__file__).resolve().parent / "data" / "real-cassettes"
KEY = "sk-ant-api03-" + "".join(random.Random(7).choices(string.ascii_letters + string.digits + "_-", k=80))
ORG = "4b9e2c1d-7a3f-4e8b-9c2d-1f0e3a5b7c9d"


def real_cassettes() -> list[Path]:
    assert REAL.is_dir(), f"{REAL} is missing: the real cassettes are part of the test data"
    found = sorted(REAL.rglob("*.yaml"))
    assert len(found) == 11
    return found


def test_real_cassettes_placeholders_are_not_reported() -> None:
    report = audit_report([REAL])
    assert report.findings == []
    assert report.cassettes == 11 and report.interactions == 16


def test_a_planted_key_in_a_header_and_a_body_is_reported_masked(tmp_path: Path) -> None:
    source = REAL / "crewai" / "test_anthropic_function_calling.yaml"
    data = yaml.safe_load(source.read_text())
    data["interactions"][0]["request"]["headers"]["x-api-key"] = [KEY]
    data["interactions"][1]["response"]["body"]["string"] = f'{{"error": "key {KEY} is not allowed"}}'
    planted = tmp_path / "planted.yaml"
    planted.write_text(yaml.safe_dump(data))
    findings = audit([planted])
    assert [(f.interaction, f.where, f.kind) for f in findings] == [
        (0, "request.headers.x-api-key", "x-api-key header"),
        (1, "response.body.string", "anthropic key"),
    ]
    for finding in findings:
        assert KEY not in str(finding) and KEY[20:40] not in str(finding)
        assert finding.excerpt == mask(KEY) == KEY[:6] + "…" + KEY[-4:]


def test_pydantic_ai_parsed_body_variant_is_audited(tmp_path: Path) -> None:
    source = REAL / "pydantic-ai" / "test_anthropic_count_tokens_error.yaml"
    data = yaml.safe_load(source.read_text())
    data["interactions"][0]["response"]["parsed_body"]["error"]["message"] = f"organization {ORG} is over its limit"
    data["interactions"][0]["request"]["headers"]["authorization"] = ["Bearer " + KEY]
    planted = tmp_path / "planted.yaml"
    planted.write_text(yaml.safe_dump(data))
    kinds = sorted(f.kind for f in audit([planted]))
    assert kinds == ["authorization header", "organization id"]


def test_our_loader_reads_real_cassettes_and_resaving_scrubs_and_stays_stock_loadable(tmp_path: Path) -> None:
    for path in real_cassettes():
        interactions = load_cassette(path)
        assert interactions and all(i.request_body or i.method == "GET" for i in interactions)
    source = REAL / "crewai" / "test_anthropic_function_calling.yaml"
    interactions = load_cassette(source)
    interactions[0].request_headers["authorization"] = ["Bearer " + KEY]
    interactions[0].response_body = interactions[0].response_body.replace('"type":"message"', f'"type":"message","note":"{KEY}"')
    resaved = tmp_path / "resaved.yaml"
    save_cassette(resaved, interactions)
    assert KEY not in resaved.read_text() and audit([resaved]) == []
    requests, responses = FilesystemPersister.load_cassette(resaved, yamlserializer)
    assert len(requests) == len(interactions)
    # and stock vcrpy replays it through httpx
    first = interactions[0]
    with vcr.use_cassette(str(resaved), record_mode="none", match_on=["method", "path", "body"]):
        reply = httpx.post(first.uri, content=(first.request_body or "").encode(), headers={"content-type": "application/json"})
    assert reply.json()["content"][0]["name"] == "get_weather"


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [
        (f"key={KEY}", "key=sk-ant-REDACTED"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123", "Authorization: Bearer REDACTED"),
        (f'{{"message": "organization {ORG} has exceeded"}}', '{"message": "organization REDACTED has exceeded"}'),
        (f'{{"organization_id": "{ORG}"}}', '{"organization_id": "REDACTED"}'),
        ("invalid x-api-key: abcdef0123456789abcd", "invalid x-api-key: REDACTED"),
        ('{"password": "hunter2hunter2"}', '{"password": "REDACTED"}'),
        ("https://x.test/a?api_key=0123456789abcdef&b=1", "https://x.test/a?api_key=REDACTED&b=1"),
        ("sk-proj-" + "a1B2" * 8, "sk-REDACTED"),
        ("https://x.test/mcp?key=AIzaSyD0123456789abc", "https://x.test/mcp?key=REDACTED"),
        ("https://x.test/mcp?x=1&api-key=0123456789abcdef", "https://x.test/mcp?x=1&api-key=REDACTED"),
    ],
)
def test_scrub_text_removes_secrets(text: str, scrubbed: str, tmp_path: Path) -> None:
    assert scrub_text(text) == scrubbed
    assert audit_text(tmp_path / "scrubbed.yaml", scrub_text(text)) == []
    assert audit_text(tmp_path / "raw.yaml", text) != []


@pytest.mark.parametrize(
    "text",
    [
        "Use your organization's tenant to deploy gpt-4.1 with 1,047,576 tokens.",
        "Bearer REDACTED",
        "x-api-key: X-API-KEY-XXX",
        "**REDACTED**",
        "sk-ant-REDACTED",
        "Authorization: Bearer <your-token-here>",
        "risk-assessment-and-mitigation-frameworks-for-models",
        "The API supports bearer authentication with Microsoft Entra ID.",
        "Your organization ID, such as aaaabbbb-0000-cccc-1111-dddd2222eeee.",
    ],
)
def test_ordinary_text_and_placeholders_are_left_alone(text: str, tmp_path: Path) -> None:
    assert scrub_text(text) == text
    assert audit_text(tmp_path / "c.yaml", text) == []


def test_placeholders() -> None:
    assert all(is_placeholder(v) for v in ["REDACTED", "**REDACTED**", "X-API-KEY-XXX", "ANTHROPIC-ORGANIZATION-ID-XXX", "<key>", ""])
    assert not is_placeholder(KEY)
    assert not is_placeholder("sk-ant-api03-abcxxxdef0123456789")  # x's inside a random key are not a placeholder


def test_a_malformed_file_is_an_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions: [\n")
    with pytest.raises(InputError, match="bad.yaml: not valid YAML"):
        audit([bad])


def audit_text(path: Path, text: str) -> list[object]:
    """Audit a real cassette file (written unscrubbed) whose one response body is `text`."""
    it = Interaction(method="POST", uri="https://api.test/v1/messages", request_body="{}", status=200, response_body=text)
    save_cassette(path, [it], scrub=False)
    return list(audit([path]))
