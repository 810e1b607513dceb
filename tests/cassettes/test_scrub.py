"""Secrets out of cassettes: removed on write by name and by value (page text never touched), and the
audit of any cassette, over real cassettes from other projects and planted secrets."""

from __future__ import annotations

import base64
import json
import random
import re
import string
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import vcr
import yaml
from vcr.persisters.filesystem import FilesystemPersister
from vcr.serializers import yamlserializer

from factories import LEARN
from replay.secrets import registry as _secrets
from replay.cassettes.interaction import Interaction
from replay.cassettes.cassette import dumps_cassette, load_cassette, save_cassette
from replay.errors import InputError
from replay.learn.wire import FETCH_TOOL, parse_jsonrpc_reply, tool_result_text
from replay.cassettes.audit import Finding, audit, audit_report
from replay.secrets.shapes import is_placeholder, mask
from replay.cassettes.scrub import scrub_interactions
from replay.secrets.in_urls import scrub_text, scrub_url
from locations import DATA, REPO

REAL = DATA / "real-cassettes"
KEY = "sk-ant-api03-" + "".join(random.Random(7).choices(string.ascii_letters + string.digits + "_-", k=80))
ORG = "4b9e2c1d-7a3f-4e8b-9c2d-1f0e3a5b7c9d"
PLAIN_SECRET = "".join(random.Random(11).choices(string.ascii_letters + string.digits, k=40))
"""A secret with no recognisable shape: only by-name and by-value rules can remove it."""


def real_cassettes() -> list[Path]:
    assert REAL.is_dir(), f"{REAL} is missing: the real cassettes are part of the test data"
    found = sorted(REAL.rglob("*.yaml"))
    assert len(found) == 11
    return found


def model_call(request: dict[str, object], reply: dict[str, object], *, status: int = 200,
               request_headers: dict[str, list[str]] | None = None,
               response_headers: dict[str, list[str]] | None = None) -> Interaction:
    return Interaction(
        method="POST", uri="https://api.anthropic.com/v1/messages", request_body=json.dumps(request), status=status,
        response_body=json.dumps(reply), request_headers={"content-type": ["application/json"], **(request_headers or {})},
        response_headers={"content-type": ["application/json"], **(response_headers or {})},
    )


# --------------------------------------------------------------------------- page text is never rewritten

SAS = "https://contoso.blob.core.windows.net/c/b.txt?sv=2024-11-04&sr=b&sp=r&sig=a1B2%2Bc3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ%3D"
JWT = ("eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0."
       "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PAGE = (
    "# Grant limited access with SAS\n\n"
    f"A service SAS URL looks like `{SAS}`.\n\n"
    f"Send it as `Authorization: Bearer {JWT}` on every call.\n\n"
    "```bash\ncurl \"https://westus.api.cognitive.microsoft.com/vision?subscription-key=0123456789abcdef0123456789abcdef\"\n"
    "export OPENAI_API_KEY=sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78\n```\n"
    "Quotes \"inside\", a back\\slash, <tags> & ampersands + pluses, and ü 概要.\n"
)


def dotnet_json(payload: object) -> str:
    """JSON as System.Text.Json writes it by default: non-ASCII and HTML-sensitive characters escaped."""
    text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"))
    for char in "&+<>'`":
        text = text.replace(char, f"\\u{ord(char):04X}")
    return text


def learn_fetch(url: str, page: str, *, rpc_id: int = 2, dotnet: bool = True) -> Interaction:
    reply = {"result": {"content": [{"type": "text", "text": page}]}, "id": rpc_id, "jsonrpc": "2.0"}
    data = dotnet_json(reply) if dotnet else json.dumps(reply, ensure_ascii=False)
    request = {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call", "params": {"name": FETCH_TOOL, "arguments": {"url": url}}}
    return Interaction(
        method="POST", uri=LEARN, request_body=json.dumps(request), status=200,
        response_body=f"event: message\r\ndata: {data}\r\n\r\n",
        request_headers={"content-type": ["application/json"]}, response_headers={"content-type": ["text/event-stream"]},
    )


def page_of(it: Interaction) -> str:
    text, _ = tool_result_text(parse_jsonrpc_reply(it.response_body, it.header("content-type")))
    return text


def test_page_text_and_the_models_quotes_of_it_are_stored_exactly_as_received(tmp_path: Path) -> None:
    _secrets.remember(PLAIN_SECRET)  # a secret is known, so every body is parsed and re-serialised
    url = "https://learn.microsoft.com/azure/storage/common/sas"
    fetch = learn_fetch(url, PAGE)
    asks = model_call(
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": PAGE}]}]},
        {"type": "message", "content": [{"type": "text", "text": json.dumps({"quote": f"`{SAS}`", "jwt": JWT})}]},
        request_headers={"x-api-key": [PLAIN_SECRET]},
    )
    path = tmp_path / "c.yaml"
    save_cassette(path, [fetch, asks])
    stored_fetch, stored_ask = load_cassette(path)
    assert page_of(stored_fetch) == PAGE
    assert json.loads(stored_ask.request_body or "")["messages"][0]["content"][0]["content"] == PAGE
    quoted = json.loads(json.loads(stored_ask.response_body)["content"][0]["text"])
    assert quoted == {"quote": f"`{SAS}`", "jwt": JWT}
    assert stored_fetch.response_body.endswith("\r\n\r\n") and stored_fetch.response_body.startswith("event: message\r\ndata: ")
    assert PLAIN_SECRET not in path.read_text()


def test_a_known_secret_is_removed_from_every_string_of_parsed_bodies_without_breaking_them(tmp_path: Path) -> None:
    _secrets.remember(PLAIN_SECRET)
    basic = base64.b64encode(f"user:{PLAIN_SECRET}".encode()).decode()
    sse_reply = {"result": {"content": [{"type": "text", "text": f"error for token {PLAIN_SECRET}"}]}, "id": 1, "jsonrpc": "2.0"}
    interactions = [
        model_call({"note": f"a\\b \"{PLAIN_SECRET}\" ü"}, {"echo": f"{quote(PLAIN_SECRET)} and {basic}"}, status=401),
        Interaction(method="POST", uri=f"https://x.test/mcp?key={PLAIN_SECRET}", request_body='{"jsonrpc":"2.0","id":1,"method":"initialize"}',
                    status=500, response_body=f"event: message\r\ndata: {dotnet_json(sse_reply)}\r\n\r\n",
                    response_headers={"content-type": ["text/event-stream"]}),
        Interaction(method="GET", uri="https://x.test/plain", request_body=None, status=500, response_body=f"oops {PLAIN_SECRET}\n"),
    ]
    text = dumps_cassette(interactions)
    for form in (PLAIN_SECRET, quote(PLAIN_SECRET), basic[8:40]):
        assert form not in text
    first, second, third = [Interaction.from_vcr(d) for d in yaml.safe_load(text)["interactions"]]
    assert json.loads(first.request_body or "") == {"note": 'a\\b "REDACTED" ü'}
    assert json.loads(first.response_body)["echo"].startswith("REDACTED and ")
    assert second.uri == "https://x.test/mcp?key=REDACTED"
    assert page_of(second) == "error for token REDACTED"
    assert second.response_body.startswith("event: message\r\ndata: {") and second.response_body.endswith("}\r\n\r\n")
    assert third.response_body == "oops REDACTED\n"


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("authorization", "Basic dXNlcjpodW50ZXIy"),
        ("authorization", "Bearer onlylettersnodigitsatallhere"),
        ("Proxy-Authorization", "Negotiate opaque"),
        ("x-api-key", "short-ish"),
        ("api-key", "abc"),
        ("ocp-apim-subscription-key", "plainlettersvalue"),
        ("x-goog-api-key", "plainlettersvalue"),
        ("x-auth-token", "plainlettersvalue"),
        ("cookie", "session=plainlettersvalue; theme=dark"),
        ("set-cookie", "session=plainlettersvalue; HttpOnly"),
        ("anthropic-organization-id", ORG),
        ("anthropic-workspace-id", "wrkspc_plainletters"),
    ],
)
def test_credential_headers_are_removed_by_name_whatever_their_value(header: str, value: str) -> None:
    it = model_call({"q": 1}, {"a": 1}, request_headers={header: [value]}, response_headers={header: [value]})
    (scrubbed,) = scrub_interactions([it])
    assert scrubbed.request_headers[header] == ["REDACTED"]
    assert scrubbed.response_headers[header] == ["REDACTED"]


def test_a_credential_header_value_echoed_in_a_body_is_removed_by_value() -> None:
    it = model_call({"q": 1}, {"error": {"message": f"invalid x-api-key {PLAIN_SECRET} for organization {ORG}"}}, status=401,
                    request_headers={"x-api-key": [PLAIN_SECRET]}, response_headers={"anthropic-organization-id": [ORG]})
    (scrubbed,) = scrub_interactions([it])
    assert json.loads(scrubbed.response_body)["error"]["message"] == "invalid x-api-key REDACTED for organization REDACTED"


def test_urls_lose_userinfo_and_credential_query_values_by_name_only() -> None:
    assert scrub_url("http://user:pa55word@127.0.0.1:8931/api/mcp?key=abc123456&lang=en&sig=Zz%2B9&x=1") == (
        "http://REDACTED@127.0.0.1:8931/api/mcp?key=REDACTED&lang=en&sig=REDACTED&x=1")
    assert scrub_url("https://learn.microsoft.com/api/mcp") == "https://learn.microsoft.com/api/mcp"
    assert scrub_url("https://x.test/?token=REDACTED") == "https://x.test/?token=REDACTED"
    assert scrub_text(f"HTTP 500 from https://x.test/mcp?client_secret={PLAIN_SECRET}: failed") == (
        "HTTP 500 from https://x.test/mcp?client_secret=REDACTED: failed")


@pytest.mark.parametrize("name", ["apiToken", "auth_token", "x-functions-key", "access-token", "bearer", "session",
                                  "AccessKey", "apitoken"])
def test_a_query_parameter_named_for_a_credential_is_one_whatever_its_spelling(name: str) -> None:
    url = f"http://127.0.0.1:8931/api/mcp?{name}=CANARYvalue123&api-version=2024-06-01"
    assert _secrets.url_credentials(url) == ["CANARYvalue123"]  # the API version is no credential
    assert scrub_url(url) == f"http://127.0.0.1:8931/api/mcp?{name}=REDACTED&api-version=2024-06-01"


def test_an_ordinary_value_of_a_credential_like_name_is_not_removed_wherever_it_occurs() -> None:
    """Registered values are removed from everything we write, page text included: `regionCode=Global` or
    `session=default` must not turn every "Global" of a page into REDACTED (the URL still loses it)."""
    for url in ("http://127.0.0.1:8931/api/mcp?regionCode=Global", "http://127.0.0.1:8931/api/mcp?session=default",
                "http://127.0.0.1:8931/api/mcp?key=production",
                "http://127.0.0.1:8931/api/mcp#learn-docs"):
        assert _secrets.url_credentials(url) == []
    assert scrub_url("http://127.0.0.1:8931/api/mcp?session=default") == "http://127.0.0.1:8931/api/mcp?session=REDACTED"


def test_a_fragment_is_never_shown_and_a_password_the_url_cannot_parse_is_a_secret() -> None:
    # a fragment is never sent: dropped from every endpoint we print or store; a token in one is a secret
    assert scrub_url("http://127.0.0.1:8931/api/mcp?token=T#lfragCANARYsecret") == "http://127.0.0.1:8931/api/mcp?token=REDACTED"
    assert "fragSECRETxyz123" in _secrets.url_credentials("http://127.0.0.1:8931/api/mcp#access_token=fragSECRETxyz123")
    # a `/`, `?` or `#` left unencoded in the password: the authority ends there, the password is still one
    for url, password in (("http://u:pppass/CANARY@127.0.0.1:8931/x", "pppass/CANARY"),
                          ("http://CANARYusr:CANARY?pass99@127.0.0.1:8931/api/mcp", "CANARY?pass99"),
                          ("http://CANARYusr:CANARY#pass99@127.0.0.1:8931/api/mcp", "CANARY#pass99")):
        assert password in _secrets.url_credentials(url)
    # an `@` in the path of a URL that parses is no userinfo
    assert _secrets.url_credentials("http://127.0.0.1:8932/proxy@v2") == []


def test_a_printed_command_never_carries_a_credential_of_the_url_whatever_it_looks_like() -> None:
    """The "to try again" command shows the endpoints as any URL we print: what is named for a credential
    is REDACTED whether or not its value was remembered (letters only, short), and no fragment."""
    from replay.core.commands import judge_command

    url = ("http://127.0.0.1:8931/api/mcp?zzToken=canaryonlyletterszq&x-functions-key=ABCDEFGHIJKLMNOPQRSTUVWXYZabcd=="
           "&sessionToken=AbCdEfGh&lang=en#access_token=fragCANARY")
    try:
        _secrets.remember_url(url)
        printed = _secrets.redact(judge_command(prompt="v3", claims=["claims"], run="runs/r", learn_url=url))
    finally:
        _secrets.forget_all()
    assert "canary" not in printed.lower() and "ABCDEFGH" not in printed and "AbCdEfGh" not in printed
    assert "?zzToken=REDACTED&x-functions-key=REDACTED&sessionToken=REDACTED&lang=en" in printed and "#" not in printed


def test_a_secret_written_with_lowercase_percent_escapes_is_removed_too() -> None:
    try:
        _secrets.remember("Zx81kQ0p+Lm92Vb7T")
        assert _secrets.redact("?apiToken=Zx81kQ0p%2bLm92Vb7T and Zx81kQ0p%2BLm92Vb7T") == "?apiToken=REDACTED and REDACTED"
    finally:
        _secrets.forget_all()


def test_a_malformed_endpoint_with_credentials_is_refused_without_showing_them(capsys: pytest.CaptureFixture[str]) -> None:
    from replay.cli.main import main

    try:
        for url in ("http://u:pppass/CANARY@127.0.0.1:8931/x", "http://u:pppassCANARY@[::1/api/mcp",
                    "http://CANARYusr:CANARY?pass99@127.0.0.1:8931/api/mcp",
                    "http://127.0.0.1:8931/api/mcp?token=tokCANARY123#lfragCANARYsecret x"):
            code = main(["judge", "--prompt", "v3", "--claims", "demo/claims", "--mode", "live", "--learn-url", url])
            err = capsys.readouterr().err
            assert code == 2 and "--learn-url" in err and "CANARY" not in err, err
    finally:
        _secrets.forget_all()


# --------------------------------------------------------------------------- the audit


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
        (1, "response.body.string.error", "anthropic key"),
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


GH = "ghp_" + "".join(random.Random(3).choices(string.ascii_letters + string.digits, k=36))
AWS = "AKIA" + "".join(random.Random(4).choices(string.ascii_uppercase + string.digits, k=16))
GOOGLE = "AIza" + "".join(random.Random(5).choices(string.ascii_letters + string.digits, k=35))


@pytest.mark.parametrize(
    ("where", "value", "kind"),
    [
        ("body", f"see https://admin:{PLAIN_SECRET}@db.internal.test/x", "password in URL"),
        ("body", f"https://login.test/token?client_secret={PLAIN_SECRET}&a=1", "credential in URL"),
        ("body", f"https://x.test/cb#state=1&x=2?access_token={PLAIN_SECRET}", "credential in URL"),
        ("body", f"https://acct.blob.core.windows.net/c?sv=1&sig={PLAIN_SECRET}", "credential in URL"),
        ("body", f"https://x.test/login?password={PLAIN_SECRET}", "credential in URL"),
        ("uri", f"https://user:{PLAIN_SECRET}@api.test/v1/messages", "password in URL"),
        ("header:ocp-apim-subscription-key", PLAIN_SECRET, "ocp-apim-subscription-key header"),
        ("header:x-goog-api-key", PLAIN_SECRET, "x-goog-api-key header"),
        ("header:x-auth-token", PLAIN_SECRET, "x-auth-token header"),
        ("body", json.dumps({"token": PLAIN_SECRET}), "secret field"),
        ("body", json.dumps({"data": {"auth_token": PLAIN_SECRET}}), "secret field"),
        ("body", json.dumps({"private_key": PLAIN_SECRET}), "secret field"),
        ("body", json.dumps({"client_secret": PLAIN_SECRET}), "secret field"),
        ("body", f"the token is {JWT}", "jwt"),
        ("body", f"GITHUB_TOKEN={GH}", "github token"),
        ("body", f"aws_access_key_id = {AWS}", "aws access key id"),
        ("body", f"maps key {GOOGLE}", "google api key"),
        ("body", "config: " + base64.b64encode(f"{{\"key\": \"{KEY}\"}}".encode()).decode(), "anthropic key (base64)"),
        ("body", json.dumps({"m": KEY.replace("-", "\\u002d")}), "anthropic key (escaped)"),
        ("body", "q=" + quote(json.dumps({"password": PLAIN_SECRET}), safe=""), "secret field (URL-encoded)"),
        ("body", f"sk-ant-api03-FAKE{KEY[13:60]}", "anthropic key"),
        ("body", f"example-{GH}", "github token"),
    ],
)
def test_the_audit_finds_what_others_leak(where: str, value: str, kind: str, tmp_path: Path) -> None:
    it = model_call({"q": 1}, {"a": 1})
    if where == "body":
        it.response_body = value
    elif where == "uri":
        it.uri = value
    else:
        it.request_headers[where.removeprefix("header:")] = [value]
    findings = audit_text(tmp_path / "c.yaml", it)
    assert kind in [f.kind for f in findings]
    assert all(f.page is None for f in findings)
    assert all(PLAIN_SECRET not in str(f) and KEY[13:40] not in str(f) for f in findings)


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
        '{"token": "REDACTED", "password": "${DB_PASSWORD}", "client_secret": "<client-secret>"}',
        "https://x.test/?key=YOUR_API_KEY&sig=REDACTED",
        '{"input_tokens": 10, "output_tokens": 3}',
    ],
)
def test_ordinary_text_and_placeholders_are_left_alone(text: str, tmp_path: Path) -> None:
    it = model_call({"q": 1}, {"a": 1})
    it.response_body = text
    assert audit_text(tmp_path / "c.yaml", it) == []


def test_placeholders() -> None:
    assert all(is_placeholder(v) for v in [
        "REDACTED", "**REDACTED**", "X-API-KEY-XXX", "ANTHROPIC-ORGANIZATION-ID-XXX", "<key>", "", "sk-ant-REDACTED",
        "YOUR_ANTHROPIC_API_KEY", "your-api-key-here", "${API_KEY}", "$TOKEN", "00000000", "xxxxxxxxxxxx",
        "aaaabbbb-0000-cccc-1111-dddd2222eeee", "FAKE-KEY-FOR-EXAMPLE"])
    assert not is_placeholder(KEY)
    assert not is_placeholder("sk-ant-api03-abcxxxdef0123456789")  # x's inside a random key are not a placeholder
    # a real key does not pass by merely containing a marker word
    assert not is_placeholder("sk-ant-api03-FAKE" + KEY[13:50])
    assert not is_placeholder("example" + PLAIN_SECRET)
    assert not is_placeholder(PLAIN_SECRET + "-REDACTED")


def test_credentials_quoted_by_a_learn_page_are_a_separate_lower_class(tmp_path: Path) -> None:
    url = "https://learn.microsoft.com/azure/storage/common/sas"
    quoting = model_call(
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": PAGE}]}]},
        {"content": [{"type": "text", "text": f"evidence: {SAS}"}]},
    )
    leak = model_call({"q": 1}, {"a": 1}, request_headers={"x-api-key": [KEY]})
    path = tmp_path / "c.yaml"
    save_cassette(path, [learn_fetch(url, PAGE), quoting, leak], scrub=False)
    report = audit_report([path])
    assert [(f.interaction, f.kind) for f in report.leaks] == [(2, "x-api-key header")]
    in_pages = {(f.interaction, f.kind) for f in report.in_pages}
    assert {(0, "credential in URL"), (0, "jwt"), (0, "api key"), (1, "credential in URL"), (1, "jwt")} <= in_pages
    assert all(f.page == url and url in str(f) for f in report.in_pages)


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


# --------------------------------------------------------------------------- hostile and malformed files

ALIAS_BOMB = """a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
interactions: [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (ALIAS_BOMB, "an alias bomb"),
        ("interactions: &x [*x]\n", "recursive alias"),
        ("interactions: " + "[" * 5000 + "]" * 5000 + "\n", "maximum nesting depth|nested too deeply"),
    ],
)
def test_hostile_yaml_is_refused_by_the_loader_and_read_as_text_by_the_audit(text: str, reason: str,
                                                                             tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    report = audit_report([path])  # nothing expanded: the file's own text is read, line by line
    assert (report.files, report.text, report.findings) == (1, 1, [])
    (problem,) = report.unparsed
    assert re.search(reason, str(problem)) and str(path) in str(problem)
    with pytest.raises(InputError, match=reason) as by_loader:
        load_cassette(path)
    assert str(path) in str(by_loader.value)


def test_a_few_harmless_aliases_are_read() -> None:
    shared = "h: &h {content-type: [application/json]}\ninteractions:\n- request: {method: GET, uri: 'https://x.test/', headers: *h}\n  response: {status: {code: 200}, headers: *h, body: {string: ok}}\n"
    path = DATA / "nonexistent"  # the loader names `path`, reads `text`
    from replay.files.safe_yaml import load_yaml

    data = load_yaml(shared, path)
    assert Interaction.from_vcr(data["interactions"][0]).response_body == "ok"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("interactions:\n- request: {method: GET, uri: 'https://x.test/'}\n  response: []\n", "interaction 0: response is list"),
        ("interactions:\n- response: {status: {code: 200}}\n", "interaction 0: request is missing"),
        ("interactions:\n- request: {method: GET, uri: 'https://x.test/'}\n  response: {status: {code: abc}}\n", "not an HTTP status"),
        ("interactions:\n- request: {method: GET, uri: 'https://x.test/'}\n  response: {status: {code: 200}, body: {string: 5}}\n", "response.body is int"),
        ("interactions:\n- request: {method: GET, uri: 'https://x.test/', headers: [1]}\n  response: {status: {code: 200}}\n", "request.headers is list"),
        ("interactions:\n- request: {method: 7, uri: 'https://x.test/'}\n  response: {status: {code: 200}}\n", "request.method"),
        ("interactions:\n- 42\n", "interaction 0: the interaction is int"),
        ("interactions: 3\n", "no 'interactions' list"),
        ("just text\n", "no 'interactions' list"),
        ("interactions: [\n", "not valid YAML"),
        ("interactions: !!python/object:os.system {}\n", "not valid YAML"),
    ],
)
def test_a_malformed_cassette_is_an_input_error_naming_the_file(content: str, reason: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(InputError, match=reason) as caught:
        load_cassette(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_binary_cassette_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError, match="not UTF-8"):
        load_cassette(path)
    report = audit_report([path])  # read as text, its bytes that are no UTF-8 replaced
    assert (report.text, report.findings) == (1, []) and "not UTF-8" in str(report.unparsed[0])


def test_a_malformed_file_is_read_as_text_by_the_audit(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions: [\n# sk-ant-api03-Zq8vN3kR7tY2wP5mX9bC4dF6gH1j\n")
    report = audit_report([bad])
    assert "bad.yaml: not valid YAML" in str(report.unparsed[0])
    assert [(f.where, f.kind) for f in report.findings] == [("line 2", "anthropic key")]


def audit_text(path: Path, it: Interaction) -> list[Finding]:
    """Audit a real cassette file holding `it`, written unscrubbed."""
    save_cassette(path, [it], scrub=False)
    return list(audit([path]))


def test_what_a_response_header_says_about_cookies_never_rewrites_page_text() -> None:
    page = "Pages live on learn.microsoft.com under the path /azure; see ARRAffinity docs."
    it = learn_fetch("https://learn.microsoft.com/azure/x", page)
    it.response_headers["set-cookie"] = ["ARRAffinity=9f8e7d6c5b4a39281706f5e4d3c2b1a0; Path=/azure; Domain=learn.microsoft.com; HttpOnly"]
    (scrubbed,) = scrub_interactions([it])
    assert page_of(scrubbed) == page and scrubbed.response_headers["set-cookie"] == ["REDACTED"]


def test_a_body_of_deeply_nested_json_is_read_audited_and_matched_without_a_crash(tmp_path: Path) -> None:
    from replay.cassettes.matching import canonical_request

    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.yaml"
    save_cassette(path, [Interaction(method="POST", uri="https://api.test/v1/messages", request_body=deep, status=200, response_body=deep)])
    (it,) = load_cassette(path)
    assert it.request_body == deep and it.request_json() is None
    assert canonical_request(it.method, it.uri, it.request_body).kind == "model"
    assert audit([path]) == []


def test_a_results_file_quoting_a_page_of_its_run_is_page_text_too(tmp_path: Path) -> None:
    url = "https://learn.microsoft.com/azure/storage/common/sas"
    save_cassette(tmp_path / "run" / "docs_a.md.yaml", [learn_fetch(url, PAGE)])
    results = {"files": [{"file": "docs/a.md", "results": [{"id": "a-1", "evidence_quote": f"A service SAS URL looks like `{SAS}`."}]}]}
    (tmp_path / "run" / "results.json").write_text(json.dumps(results))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "results.json").write_text(json.dumps(results))
    report = audit_report([tmp_path])
    assert {(Path(f.path).parent.name, f.kind) for f in report.leaks} == {
        ("other", "credential in URL"), ("other", "credential in URL (URL-encoded)")}
    assert ("run", "results.json", url) in {(Path(f.path).parent.name, Path(f.path).name, f.page) for f in report.in_pages}


# --------------------------------------------------------------------------- a hostile text cannot stall a scan

_LINEAR_CHECK = """
from replay.secrets import in_urls as u, shapes as s
patterns = [p for _kind, p in s._PATTERNS] + [u._URL_IN_TEXT, u._QUERY_PAIR, s._BASE64_RUN, s._ESCAPE, s._TRIGGER]
units = ["x", "a:", "a.b:", "sk-ant-", "sk-", "://a:", "?", "&a", "bearer ", "basic ", "eyJ", '"token": "', "org ",
         "AKIA", "ghp_", "-", "=", "http://a:b", "x-api-key:"]
for unit in units:
    text = unit * (200_000 // len(unit))
    for pattern in patterns:
        sum(1 for _ in pattern.finditer(text))
    u.scrub_text(text)
"""


def test_every_secret_pattern_is_linear_on_hostile_text() -> None:
    """200 KB of repeated pattern prefixes (`x`*n before a key, `a:`*n, `?`*n...) with no match to end
    them: a pattern that rescans from every start takes minutes on one of them (the `scheme://`
    prefix of the URL patterns did, 51 s on 100 KB); linear ones take well under a second each."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", _LINEAR_CHECK], check=True, timeout=30,
                   cwd=REPO)


def test_a_megabyte_of_text_before_a_key_audits_at_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    body = "x" * 1_000_000 + "AKIAZ5XQ3T7VJX2NBQRM"
    cassette = tmp_path / "slow.yaml"
    cassette.write_text(yaml.safe_dump({"interactions": [{
        "request": {"method": "POST", "uri": "http://h/x", "headers": {}, "body": body},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": ""}}}]}), "utf-8")
    done = subprocess.run([sys.executable, "-m", "replay.cli.main", "cassettes", "audit", str(cassette)],
                          capture_output=True, text=True, timeout=20)
    assert done.returncode == 1, done.stderr
    assert "aws access key id AKIAZ5…BQRM" in done.stdout
