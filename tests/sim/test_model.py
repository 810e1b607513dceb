"""The Messages API stand-in, driven by the real `anthropic` SDK through a full tool loop against the Learn stand-in."""

import json
import signal
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx
import pytest

from replay.cli.main import main
from replay.learn.wire import SESSION_HEADER, parse_jsonrpc_reply, tool_result_text
from replay.prompts import load_prompt
from replay.schema.claims import ClaimsBatch
from replay.urls import MODEL_STAND_IN_PORT
from replay.sim import start_learn, start_model
from replay.sim.model import CONTEXT_EXCEEDED_MARKER
from locations import REPO

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
QUOTAS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
GONE_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/retired-page"
MODEL_ROW = "| gpt-4.1 (2025-04-14) | 1,047,576 | 32,768 |"
QUOTA_LINE = "The default quota for gpt-4.1 Global Standard deployments is 1 M tokens per minute."

PAGES = {
    "models.md": f"---\nurl: {MODELS_URL}\ntitle: Models\n---\n\n# Azure OpenAI models\n\n"
                 f"| Model | Context window | Max output tokens |\n|--|--|--|\n{MODEL_ROW}\n",
    "quotas.md": f"---\nurl: {QUOTAS_URL}\ntitle: Quotas\n---\n\n# Quotas and limits\n\n## Rate limits\n\n{QUOTA_LINE}\n",
}
SEARCHED_CLAIM = "Global Standard deployments of gpt-4.1 have a default quota of 1 M tokens per minute."
BATCH = ClaimsBatch(file="docs/azure-openai-models.md", claims=[
    {"id": "m-1", "claim": "gpt-4.1 returns at most 32,768 output tokens.", "claim_type": "version",
     "evidence_url": MODELS_URL},
    {"id": "m-2", "claim": "gpt-4.1 offers a 200k+ token context window.", "claim_type": "version",
     "evidence_url": "https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/models/"},
    {"id": "m-3", "claim": "gpt-4.1 returns at most 4,096 output tokens.", "claim_type": "version",
     "evidence_url": MODELS_URL},
    {"id": "m-4", "claim": SEARCHED_CLAIM, "claim_type": "tpm"},
    {"id": "m-5", "claim": "gpt-4.1 was retired on 2025-01-01.", "claim_type": "status", "evidence_url": GONE_URL},
    {"id": "m-6", "claim": "Zebras prefer quiet meadows.", "claim_type": "taxonomy"},
])
EXPECTED = {  # id -> (verdict, rule, evidence_url, quote), under v3
    "m-1": ("grounded", "", MODELS_URL, MODEL_ROW),
    "m-2": ("not_grounded", "R1", "https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/models/", MODEL_ROW),
    "m-3": ("not_grounded", "", MODELS_URL, "| Model | Context window | Max output tokens |"),
    "m-4": ("grounded", "", QUOTAS_URL, QUOTA_LINE),
    "m-5": ("source_silent", "", GONE_URL, ""),
    "m-6": ("source_silent", "", "", ""),
}
TOOLS = [
    {"name": "microsoft_docs_fetch", "description": "Fetch a Learn page.",
     "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}},
    {"name": "microsoft_docs_search", "description": "Search Learn.",
     "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
]


class LearnCaller:
    """Runs the model's tool calls against the Learn stand-in with raw httpx (handshake once)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=5, headers={"Accept": "application/json, text/event-stream"})
        init = self.http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                         "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                                                    "clientInfo": {"name": "test", "version": "1"}}})
        self.http.headers[SESSION_HEADER] = init.headers[SESSION_HEADER]
        self.http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, name: str, arguments: dict) -> str:
        reply = self.http.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                               "params": {"name": name, "arguments": arguments}})
        return tool_result_text(parse_jsonrpc_reply(reply.text, reply.headers["content-type"]))[0]


def judge(client: anthropic.Anthropic, learn_url: str, prompt: str, *, model: str = "stand-in",
          system: bool = False, batch: ClaimsBatch = BATCH) -> tuple[dict, list]:
    """A tiny judge loop: call the model, run its tool calls, feed the results back (the assistant turn
    unchanged, thinking blocks included), until it answers."""
    rendered = load_prompt(prompt).render(batch)
    extra = {"system": rendered} if system else {}
    messages: list[dict] = [{"role": "user", "content": "Judge the batch." if system else rendered}]
    learn = LearnCaller(learn_url)
    responses = []
    for _ in range(6):
        response = client.messages.create(model=model, max_tokens=4096, messages=messages, tools=TOOLS, **extra)
        responses.append(response)
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        if response.stop_reason != "tool_use":
            break
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": [{"type": "text", "text": learn.call(b.name, b.input)}]}
            for b in response.content if b.type == "tool_use"]})
    return json.loads(answer_text(response)), responses


def answer_text(response) -> str:
    return "".join(b.text for b in response.content if b.type == "text")


def tool_uses(response) -> list:
    return [b for b in response.content if b.type == "tool_use"]


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    for name, text in PAGES.items():
        (folder / name).write_text(text, encoding="utf-8")
    with start_learn(folder) as learn, start_model() as model:
        yield learn, model


@pytest.fixture
def client(stand_ins):
    return anthropic.Anthropic(base_url=stand_ins[1].url, api_key="test-key", max_retries=0)


def verdict_table(answer: dict) -> dict:
    return {r["id"]: (r["judge_verdict"], r["rule"], r["evidence_url"], r["evidence_quote"]) for r in answer["results"]}


def test_full_tool_loop_with_the_real_sdk(stand_ins, client):
    learn, _ = stand_ins
    answer, responses = judge(client, learn.url, "v3")
    assert answer["file"] == "docs/azure-openai-models.md"
    assert [r["id"] for r in answer["results"]] == [c.id for c in BATCH.claims]
    assert verdict_table(answer) == EXPECTED
    assert all(r["reason"].startswith("stand-in policy:") for r in answer["results"])
    assert [r.stop_reason for r in responses] == ["tool_use", "tool_use", "end_turn"]
    first = [(b.name, b.input) for b in tool_uses(responses[0])]
    assert first == [  # one fetch per distinct URL (the locale variant is the same page), one search per URL-less claim
        ("microsoft_docs_fetch", {"url": MODELS_URL}),
        ("microsoft_docs_search", {"query": SEARCHED_CLAIM}),
        ("microsoft_docs_fetch", {"url": GONE_URL}),
        ("microsoft_docs_search", {"query": "Zebras prefer quiet meadows."}),
    ]
    assert [(b.name, b.input) for b in tool_uses(responses[1])] == [("microsoft_docs_fetch", {"url": QUOTAS_URL})]
    # like current models, every answer starts with a signed thinking block (sent back unchanged by `judge`)
    assert [[b.type for b in r.content][:1] for r in responses] == [["thinking"]] * 3
    assert all(r.content[0].signature and r.content[0].thinking for r in responses)
    final = responses[-1]
    assert final.id.startswith("msg_") and final.model == "stand-in" and final.role == "assistant"
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 0
    assert final.usage.service_tier == "standard" and final.usage.cache_read_input_tokens == 0
    assert final.usage.cache_creation_input_tokens == 0
    assert all(b.id.startswith("toolu_") for r in responses[:2] for b in tool_uses(r))


def test_verdicts_follow_the_prompt(stand_ins, client):
    v2, _ = judge(client, stand_ins[0].url, "v2")
    assert verdict_table(v2)["m-2"] == ("grounded", "", EXPECTED["m-2"][2], MODEL_ROW)  # no R1 in v2
    v1, _ = judge(client, stand_ins[0].url, "v1")
    assert verdict_table(v1)["m-3"][:2] == ("grounded", "")  # v1 accepts a page that is about the claim


def test_batch_in_the_system_prompt(stand_ins, client):
    answer, _ = judge(client, stand_ins[0].url, "v3", system=True)
    assert answer["file"] == "docs/azure-openai-models.md" and verdict_table(answer) == EXPECTED


def test_identical_runs_give_identical_traffic(stand_ins, client):
    _, first = judge(client, stand_ins[0].url, "v3")
    _, second = judge(client, stand_ins[0].url, "v3")
    assert [r.model_dump() for r in first] == [r.model_dump() for r in second]
    assert [r._request_id for r in first] == [r._request_id for r in second]
    assert all(r._request_id.startswith("req_") for r in first)
    assert len({b.id for r in first[:2] for b in tool_uses(r)}) == 5  # ids differ within and across turns


def test_flaky_model_fails_each_request_once_and_the_sdk_retries(stand_ins):
    learn, model = stand_ins
    retrying = anthropic.Anthropic(base_url=model.url, api_key="test-key", max_retries=2)
    seen = len(model.requests)
    answer, responses = judge(retrying, learn.url, "v3", model="stand-in-flaky")
    assert verdict_table(answer) == EXPECTED and len(responses) == 3
    attempts = model.requests[seen:]
    assert len(attempts) == 6 and attempts[0::2] == attempts[1::2]  # each request twice, the retry identical

    once = anthropic.Anthropic(base_url=model.url, api_key="test-key", max_retries=0)
    request = {"model": "other-flaky", "max_tokens": 10, "messages": [{"role": "user", "content": load_prompt("v3").render(BATCH)}]}
    with pytest.raises(anthropic.OverloadedError) as err:
        once.messages.create(**request)
    assert err.value.status_code == 529 and err.value.response.headers["retry-after"] == "0"
    assert err.value.body["error"]["type"] == "overloaded_error"
    assert once.messages.create(**request).stop_reason == "tool_use"


def test_error_bodies_have_the_api_shape(stand_ins, client):
    url = stand_ins[1].url
    reply = httpx.post(f"{url}/v1/messages", headers={"x-api-key": "k"},
                       json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    body = reply.json()
    assert reply.status_code == 400 and list(body) == ["type", "error", "request_id"]
    assert body["error"] == {"type": "invalid_request_error", "message": "max_tokens: Field required"}
    assert body["request_id"] == reply.headers["request-id"] and body["request_id"].startswith("req_")
    assert reply.headers["x-judge-replay-stand-in"] == "model"
    missing = httpx.get(f"{url}/v1/models")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError, match="no claims batch"):
        client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "Hello"}])


def test_raw_response_headers(stand_ins, client):
    raw = client.messages.with_raw_response.create(
        model="stand-in", max_tokens=10, messages=[{"role": "user", "content": load_prompt("v2").render(BATCH)}])
    assert raw.headers["x-judge-replay-stand-in"] == "model"
    assert raw.headers["request-id"].startswith("req_")
    assert int(raw.headers["content-length"]) == len(raw.http_response.content)
    body = json.loads(raw.http_response.content)
    assert list(body) == ["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"]
    assert body["stop_sequence"] is None and body["type"] == "message"


def first_turns(client: anthropic.Anthropic, learn_url: str, model: str = "stand-in") -> list:
    """The messages after one tool round: the prompt, the assistant turn as returned, its tool results."""
    messages: list[dict] = [{"role": "user", "content": load_prompt("v3").render(BATCH)}]
    response = client.messages.create(model=model, max_tokens=4096, messages=messages, tools=TOOLS)
    learn = LearnCaller(learn_url)
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b.id, "content": learn.call(b.name, b.input)} for b in tool_uses(response)]})
    return messages


def test_thinking_blocks_must_come_back_unchanged(stand_ins, client):
    messages = first_turns(client, stand_ins[0].url)
    assert client.messages.create(model="stand-in", max_tokens=4096, messages=messages, tools=TOOLS).stop_reason == "tool_use"

    changed = json.loads(json.dumps(messages))
    changed[1]["content"][0]["thinking"] += " (edited)"
    with pytest.raises(anthropic.BadRequestError) as err:
        client.messages.create(model="stand-in", max_tokens=4096, messages=changed, tools=TOOLS)
    assert err.value.body["error"] == {"type": "invalid_request_error",
                                       "message": "messages.1.content.0: Invalid `signature` in `thinking` block"}

    dropped = json.loads(json.dumps(messages))
    del dropped[1]["content"][0]
    with pytest.raises(anthropic.BadRequestError, match=r"messages\.1\.content\.0\.type: Expected `thinking` or "
                       r"`redacted_thinking`, but found `tool_use`"):
        client.messages.create(model="stand-in", max_tokens=4096, messages=dropped, tools=TOOLS)

    # thinking blocks are bound to the model: another model rejects them
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        client.messages.create(model="claude-other", max_tokens=4096, messages=messages, tools=TOOLS)


def test_forced_tool_use_is_an_error_for_a_thinking_model(stand_ins, client):
    request = {"model": "stand-in", "max_tokens": 10, "tools": TOOLS,
               "messages": [{"role": "user", "content": load_prompt("v3").render(BATCH)}]}
    for choice in ({"type": "any"}, {"type": "tool", "name": "microsoft_docs_fetch"}):
        with pytest.raises(anthropic.BadRequestError) as err:
            client.messages.create(**request, tool_choice=choice)
        assert err.value.body["error"]["message"] == "Thinking may not be enabled when tool_choice forces tool use."
    assert client.messages.create(**request, tool_choice={"type": "auto"}).stop_reason == "tool_use"


def test_the_old_shape_without_thinking(tmp_path):
    for name, text in PAGES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with start_learn(tmp_path) as learn, start_model(thinking=False) as model:
        sdk = anthropic.Anthropic(base_url=model.url, api_key="test-key", max_retries=0)
        answer, responses = judge(sdk, learn.url, "v3")
        assert verdict_table(answer) == EXPECTED
        assert [[b.type for b in r.content] for r in responses] == [["tool_use"] * 4, ["tool_use"], ["text"]]
        forced = sdk.messages.create(model="stand-in", max_tokens=10, tools=TOOLS, tool_choice={"type": "any"},
                                     messages=[{"role": "user", "content": load_prompt("v3").render(BATCH)}])
        assert forced.stop_reason == "tool_use"


@pytest.mark.parametrize("model", ["claude-3-opus-20240229", "claude-3-5-sonnet-20241022", "stand-in-retired"])
def test_a_retired_model_is_the_apis_404(stand_ins, client, model):
    with pytest.raises(anthropic.NotFoundError) as err:
        client.messages.create(model=model, max_tokens=10,
                               messages=[{"role": "user", "content": load_prompt("v3").render(BATCH)}])
    assert err.value.status_code == 404
    assert err.value.body["error"] == {"type": "not_found_error", "message": f"model: {model}"}


def test_context_window_exceeded_on_purpose(stand_ins, client):
    claims = [*BATCH.claims[:1], {"id": "m-9", "claim": f"{CONTEXT_EXCEEDED_MARKER} gpt-4.1 exists.",
                                   "claim_type": "status", "evidence_url": MODELS_URL}]
    batch = ClaimsBatch(file=BATCH.file, claims=claims)
    messages: list[dict] = [{"role": "user", "content": load_prompt("v3").render(batch)}]
    learn = LearnCaller(stand_ins[0].url)
    for _ in range(3):
        response = client.messages.create(model="stand-in", max_tokens=4096, messages=messages, tools=TOOLS)
        if response.stop_reason != "tool_use":
            break
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id,
                                                      "content": learn.call(b.name, b.input)} for b in tool_uses(response)]})
    assert response.stop_reason == "model_context_window_exceeded"
    text = answer_text(response)
    assert text.startswith('{"file":') and not text.endswith("}")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    # the same batch without the marker ends normally
    plain = ClaimsBatch(file=BATCH.file, claims=[*BATCH.claims[:1], {**claims[1], "claim": "gpt-4.1 exists."}])
    answer, responses = judge(client, stand_ins[0].url, "v3", batch=plain)
    assert responses[-1].stop_reason == "end_turn" and len(answer["results"]) == 2


CLI = [sys.executable, "-c", "from replay.cli.main import main; import sys; sys.exit(main())"]


def test_cli_serves_until_sigint():
    proc = subprocess.Popen([*CLI, "sim", "model", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert "stand-in (test equipment)" in proc.stdout.readline()
        sdk = anthropic.Anthropic(base_url=url, api_key="test-key", max_retries=0)
        reply = sdk.messages.create(model="stand-in", max_tokens=10,
                                    messages=[{"role": "user", "content": load_prompt("v3").render(BATCH)}])
        assert reply.stop_reason == "tool_use"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_cli_port_in_use_is_a_usage_error(stand_ins, capsys):
    assert main(["sim", "model", "--port", str(stand_ins[1].port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{stand_ins[1].port}" in err and "--port" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_defaults_to_the_port_stored_runs_name():
    from replay.cli.sim import command
    port = next(p for p in command.commands["model"].params if p.name == "port")
    assert port.default == MODEL_STAND_IN_PORT == 8932


def test_cli_logs_requests_only_when_verbose():
    for flags, lines in (([], 0), (["--verbose"], 1)):
        proc = subprocess.Popen([*CLI, "sim", "model", "--port", "0", *flags], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            url = proc.stdout.readline().strip()
            proc.stdout.readline()
            assert httpx.get(f"{url}/v1/models").status_code == 404
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=10)
        logged = [line for line in err.splitlines() if line.startswith("model stand-in:")]
        assert len(logged) == lines, err
        assert err.strip().splitlines()[-1] == "judge-replay Messages API stand-in stopped."


def test_the_batch_list_pages_newest_first_as_the_api_does() -> None:
    # GET /v1/messages/batches through the real SDK: newest first, `limit` per page, `after_id` / `before_id`
    # cursors, `has_more`; the SDK's auto-paging reads every page; a limit outside 1..1000 is a 400
    params = {"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    with start_model() as model:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=model.url, max_retries=0)
        ids = [client.messages.batches.create(requests=[{"custom_id": f"c{n}", "params": params}]).id  # type: ignore[list-item]
               for n in range(5)]
        page = client.messages.batches.list(limit=2)
        assert [b.id for b in page.data] == ids[::-1][:2] and page.has_more and page.last_id == ids[3]
        assert [b.id for b in client.messages.batches.list(limit=2)] == ids[::-1]  # every page, in order
        last = client.messages.batches.list(limit=2, after_id=ids[1])
        assert [b.id for b in last.data] == [ids[0]] and not last.has_more
        assert [b.id for b in client.messages.batches.list(limit=2, before_id=ids[1]).data] == [ids[3], ids[2]]
        listed = client.messages.batches.list(limit=1).data[0]
        counts = listed.request_counts
        assert counts.processing + counts.succeeded + counts.errored + counts.expired + counts.canceled == 1
        assert listed.created_at.tzinfo is not None
        with pytest.raises(anthropic.BadRequestError, match="limit"):
            client.messages.batches.list(limit=1001)


def test_cut_off_makes_one_claims_files_conversation_outgrow_the_context_window(tmp_path, monkeypatch) -> None:
    # `sim model --cut-off docs/evaluation.md`: that file's conversation fails as a context-window overflow,
    # its claims unchanged (so a run stays comparable with one recorded on the same claims); the others pass
    from replay.judge.runner import run_judge

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    demo = REPO / "demo"
    with start_learn(demo / "pages" / "2026-06") as learn, start_model(cut_off=frozenset({"docs/evaluation.md"})) as model:
        results = run_judge("v3", [str(demo / "claims")], "run", "record", model="claude-sonnet-5-5", learn_url=learn.url,
                            anthropic_base_url=model.url, progress=False)
    failed = {f.file: f.error for f in results.files if f.error}
    assert list(failed) == ["docs/evaluation.md"] and "outgrew the model's context window" in str(failed["docs/evaluation.md"])
