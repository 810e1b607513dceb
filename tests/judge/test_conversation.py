"""One judge conversation: the tool loop, the answer parsing, quote verification, per-file failures."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from factories import LocalServer
from replay.errors import CassetteMiss
from replay.judge.answers import NO_VERDICT, extract_json_object, verdicts_from_answer
from replay.judge.conversation import judge_file
from replay.learn.client import LearnClient
from replay.learn.wire import FETCH_TOOL, SEARCH_TOOL
from replay.prompts import load_prompt
from replay.schema.claims import ClaimsBatch
from replay.sim import start_learn, start_model

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
QUOTAS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
MODELS_PAGE = """# Azure OpenAI models

| Model | Context window | Max output |
|---|---|---|
| gpt-4.1 | 1,047,576 | 32,768 |
| gpt-4o | 128,000 | 16,384 |
"""
QUOTAS_PAGE = "# Quotas and limits\n\nThe default quota for gpt-4o global standard deployments is 450,000 tokens per minute.\n"

BATCH = ClaimsBatch.model_validate({"file": "docs/models.md", "claims": [
    {"id": "m-1", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
     "evidence_url": "https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/models/"},
    {"id": "m-2", "claim": "gpt-4o has a context window of 64,000 tokens.", "claim_type": "version",
     "evidence_url": MODELS_URL},
    {"id": "m-3", "claim": "The default quota for gpt-4o global standard is 450,000 tokens per minute.",
     "claim_type": "tpm"},
]})


@pytest.fixture(scope="module")
def learn_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pages = tmp_path_factory.mktemp("pages")
    (pages / "models.md").write_text(f"---\nurl: {MODELS_URL}\ntitle: Models\n---\n{MODELS_PAGE}", "utf-8")
    (pages / "quotas.md").write_text(f"---\nurl: {QUOTAS_URL}\ntitle: Quotas\n---\n{QUOTAS_PAGE}", "utf-8")
    with start_learn(pages) as server:
        yield server.url


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with start_model() as server:
        yield server.url


# --------------------------------------------------------------------------- with both stand-ins


def test_stand_in_policy_verdicts_with_checked_quotes(learn_url: str, model_url: str) -> None:
    stand_ins: set[str] = set()
    client = anthropic.Anthropic(api_key="any", base_url=model_url, max_retries=0)
    with LearnClient(learn_url) as learn:
        v1 = judge_file(BATCH, load_prompt("v1"), anthropic_client=client, learn=learn, model="claude-test",
                        stand_ins=stand_ins)
        v3 = judge_file(BATCH, load_prompt("v3"), anthropic_client=client, learn=learn, model="claude-test")
    # v1 has no exact-value rule (the stand-in accepts a page "about" the claim) nor R1
    assert [(r.id, r.judge_verdict, r.rule) for r in v1.results] == [
        ("m-1", "grounded", ""), ("m-2", "grounded", ""), ("m-3", "grounded", "")]
    # v3: a 200k+ bound against 1,047,576 grossly understates (R1); 64,000 is not on the page
    assert [(r.id, r.judge_verdict, r.rule) for r in v3.results] == [
        ("m-1", "not_grounded", "R1"), ("m-2", "not_grounded", ""), ("m-3", "grounded", "")]
    assert all(r.quote_verified is True for r in v3.results)
    assert all(r.quote_verified is True and r.error is None for r in v1.results)
    assert v1.results[2].evidence_quote.startswith("The default quota")
    # one fetch per distinct (normalised) evidence URL, a search for the claim without one, then its top hit
    assert [(c.tool, c.url or c.arguments["query"]) for c in v1.tool_calls or []] == [
        (FETCH_TOOL, BATCH.claims[0].evidence_url), (SEARCH_TOOL, BATCH.claims[2].claim), (FETCH_TOOL, QUOTAS_URL)]
    fetched = [c for c in v1.tool_calls or [] if c.tool == FETCH_TOOL]
    assert all(c.page_sha256 and len(c.page_sha256) == 64 for c in fetched)
    search = next(c for c in v1.tool_calls or [] if c.tool == SEARCH_TOOL)
    assert search.result_urls[0] == QUOTAS_URL
    assert v1.turns == 3 and v1.usage and v1.usage.input_tokens > 0 and v1.usage.output_tokens > 0
    assert stand_ins == {"model", "learn"}


# --------------------------------------------------------------------------- a scripted Messages API


class ScriptedModel(LocalServer):
    """A real Messages API endpoint on 127.0.0.1 answering with scripted replies, keeping each request."""

    def __init__(self, replies: list[tuple[int, dict[str, Any]]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        super().__init__(self._respond)

    def _respond(self, request: Any) -> tuple[int, dict[str, str], bytes]:
        self.requests.append(request)
        status, body = self.replies.pop(0) if self.replies else (500, _api_error("script exhausted"))
        headers = {"content-type": "application/json", "request-id": f"req_{len(self.requests)}"}
        return status, headers, json.dumps(body).encode()


def _message(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 10}}


def tool_turn(*calls: tuple[str, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    blocks = [{"type": "text", "text": "Let me check."}]
    blocks += [{"type": "tool_use", "id": f"toolu_{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)]
    return 200, _message(blocks, "tool_use")


def answer(text: str) -> tuple[int, dict[str, Any]]:
    return 200, _message([{"type": "text", "text": text}], "end_turn")


def _api_error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}, "request_id": "req_x"}


@pytest.fixture
def scripted() -> Iterator[Any]:
    servers: list[ScriptedModel] = []

    def start(*replies: tuple[int, dict[str, Any]]) -> ScriptedModel:
        servers.append(ScriptedModel(list(replies)))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def run(model: ScriptedModel, learn_url: str, **kwargs: Any) -> Any:
    client = anthropic.Anthropic(api_key="any", base_url=model.url, max_retries=0)
    with LearnClient(learn_url) as learn:
        return judge_file(BATCH, load_prompt("v3"), anthropic_client=client, learn=learn, model="claude-test", **kwargs)


def verdict(cid: str, v: str, url: str = MODELS_URL, quote: str = "", **extra: Any) -> dict[str, Any]:
    return {"id": cid, "judge_verdict": v, "rule": "", "evidence_url": url, "evidence_quote": quote,
            "reason": "r", **extra}


def test_requests_follow_the_tool_loop_contract(scripted: Any, learn_url: str) -> None:
    final = {"file": BATCH.file, "results": [verdict("m-1", "grounded", quote="| gpt-4.1 | 1,047,576 | 32,768 |"),
                                             verdict("m-2", "source_silent"), verdict("m-3", "source_silent")]}
    model = scripted(tool_turn((FETCH_TOOL, {"url": MODELS_URL}), (FETCH_TOOL, {"url": MODELS_URL + "/missing"}),
                               ("bogus_tool", {})),
                     answer(json.dumps(final)))
    result = run(model, learn_url)
    first, second = model.requests
    assert first["messages"] == [{"role": "user", "content": load_prompt("v3").render(BATCH)}]
    assert "system" not in first and "temperature" not in first
    assert [t["name"] for t in first["tools"]] == [SEARCH_TOOL, FETCH_TOOL]
    assert second["messages"][1] == {"role": "assistant", "content": tool_turn(
        (FETCH_TOOL, {"url": MODELS_URL}), (FETCH_TOOL, {"url": MODELS_URL + "/missing"}), ("bogus_tool", {}))[1]["content"]}
    replies = second["messages"][2]
    assert replies["role"] == "user" and [b["tool_use_id"] for b in replies["content"]] == ["toolu_0", "toolu_1", "toolu_2"]
    assert replies["content"][0]["content"].strip() == MODELS_PAGE.strip() and "is_error" not in replies["content"][0]
    assert "could not be retrieved" in replies["content"][1]["content"]
    assert replies["content"][2]["is_error"] is True and "no tool named 'bogus_tool'" in replies["content"][2]["content"]
    assert result.turns == 2 and result.usage.input_tokens == 200 and result.usage.output_tokens == 20
    assert [c.page_sha256 is None for c in result.tool_calls] == [False, True]
    assert result.results[0].quote_verified is True and result.results[1].quote_verified is None


def test_answer_in_a_fence_with_prose_and_bad_items(scripted: Any, learn_url: str) -> None:
    final = {"file": BATCH.file, "results": [
        verdict("m-1", "grounded", quote="| gpt-4o | 128,000 | 16,384 |"),
        verdict("m-2", "maybe", quote="nothing like this is on the page"),
        verdict("zz-9", "grounded"),
        verdict("m-1", "not_grounded")]}
    model = scripted(tool_turn((FETCH_TOOL, {"url": MODELS_URL})),
                     answer("Here are my verdicts:\n```json\n" + json.dumps(final) + "\n```\nDone."))
    result = run(model, learn_url)
    m1, m2, m3 = result.results
    assert (m1.judge_verdict, m1.quote_verified, m1.error) == ("grounded", True, None)
    assert m2.judge_verdict is None and m2.error == "invalid verdict 'maybe'" and m2.quote_verified is False
    assert m3.judge_verdict is None and m3.error == NO_VERDICT
    assert result.error is None
    assert result.warnings == ["ignored a verdict for unknown claim id 'zz-9'", "ignored a second verdict for claim 'm-1'"]


def test_quote_from_a_page_not_fetched_is_not_verified(scripted: Any, learn_url: str) -> None:
    final = {"results": [verdict("m-1", "grounded", url=QUOTAS_URL, quote="| gpt-4.1 | 1,047,576 | 32,768 |")]}
    model = scripted(tool_turn((FETCH_TOOL, {"url": MODELS_URL})), answer("prose first " + json.dumps(final)))
    result = run(model, learn_url)
    assert result.results[0].judge_verdict == "grounded" and result.results[0].quote_verified is False


def test_unparseable_answer_gives_every_claim_an_error(scripted: Any, learn_url: str) -> None:
    result = run(scripted(answer("I could not decide, sorry.")), learn_url)
    assert [r.judge_verdict for r in result.results] == [None, None, None]
    assert all(r.error and r.error.startswith("the judge's answer is not JSON") for r in result.results)


def test_max_turns_stops_the_loop(scripted: Any, learn_url: str) -> None:
    model = scripted(*[tool_turn((SEARCH_TOOL, {"query": "gpt-4o quota"}))] * 3)
    result = run(model, learn_url, max_turns=2)
    assert len(model.requests) == 2 and result.turns == 2
    assert result.error == "the judge did not give its answer within 2 model turns"
    assert all(r.error == result.error and r.judge_verdict is None for r in result.results)
    assert [c.tool for c in result.tool_calls] == [SEARCH_TOOL, SEARCH_TOOL]


def test_api_error_becomes_a_file_error(scripted: Any, learn_url: str) -> None:
    result = run(scripted((400, _api_error("temperature is not supported"))), learn_url)
    assert result.error and "HTTP 400" in result.error and "temperature is not supported" in result.error
    assert len(result.results) == 3 and all(r.error == result.error for r in result.results)


def test_unreachable_learn_becomes_a_file_error(scripted: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/api/mcp"
    result = run(scripted(tool_turn((FETCH_TOOL, {"url": MODELS_URL}))), closed)
    assert result.error and result.error.startswith(f"cannot reach the Learn MCP endpoint at {closed}")
    assert result.turns == 1 and all(r.error == result.error for r in result.results)


def test_replay_error_inside_the_sdk_propagates(learn_url: str) -> None:
    miss = CassetteMiss(claims_file=BATCH.file, request="model turn 1", closest=None, rerecord="judge-replay judge ...")

    def transport(request: httpx2.Request) -> httpx2.Response:
        raise miss

    client = anthropic.Anthropic(api_key="any", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(transport)))
    with LearnClient(learn_url) as learn, pytest.raises(CassetteMiss) as caught:
        judge_file(BATCH, load_prompt("v1"), anthropic_client=client, learn=learn, model="claude-test")
    assert caught.value is miss


# --------------------------------------------------------------------------- answer parsing (pure)


@pytest.mark.parametrize("text", [
    '{"results": [{"id": "a"}]}',
    '```json\n{"results": [{"id": "a"}]}\n```',
    'Sure! Here it is:\n{"results": [{"id": "a"}]}\nHope that helps {not json}',
    'I considered {braces} first.\n```\n{"results": [{"id": "a"}]}\n```',
])
def test_extract_json_object_tolerates_fences_and_prose(text: str) -> None:
    assert extract_json_object(text) == {"results": [{"id": "a"}]}


def test_verdicts_from_answer_never_raises() -> None:
    for text in ["", "null", "[1, 2]", '{"results": "none"}', '{"results": [null, {"id": {}}]}']:
        results, _ = verdicts_from_answer(text, BATCH)
        assert [r.id for r in results] == ["m-1", "m-2", "m-3"] and all(r.error for r in results)
    results, _ = verdicts_from_answer('[{"id": "m-2", "judge_verdict": "grounded", "rule": null, "reason": 5}]', BATCH)
    assert (results[1].judge_verdict, results[1].rule, results[1].reason) == ("grounded", "", "5")


def test_an_assistant_turn_goes_back_exactly_as_it_came(scripted: Any, learn_url: str) -> None:
    """Thinking blocks (signed, or redacted), fields we do not know and nulls: the next request carries the
    assistant turn exactly as the API sent it, as current models require."""
    blocks = [
        {"type": "thinking", "thinking": "I should read the models page.", "signature": "EqQBCkYIBRgCKkB+/sig=="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw=="},
        {"type": "text", "text": "Let me check.", "citations": None},
        {"type": "tool_use", "id": "toolu_0", "name": FETCH_TOOL, "input": {"url": MODELS_URL},
         "caller": {"type": "direct"}},
    ]
    first = {**_message(blocks, "tool_use"),
             "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 700,
                       "cache_read_input_tokens": 0, "cache_creation": {"ephemeral_5m_input_tokens": 700}}}
    final = {"file": BATCH.file, "results": [verdict(c.id, "source_silent") for c in BATCH.claims]}
    last = {**answer(json.dumps(final))[1],
            "usage": {"input_tokens": 20, "output_tokens": 7, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 700}}
    model = scripted((200, first), (200, last))
    result = run(model, learn_url)
    assert model.requests[1]["messages"][1] == {"role": "assistant", "content": blocks}
    assert "tool_choice" not in model.requests[0] and "tool_choice" not in model.requests[1]  # never forced
    usage = result.usage.model_dump() if result.usage else {}
    assert {name: usage[name] for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                           "cache_read_input_tokens")} == {
        "input_tokens": 30, "output_tokens": 12, "cache_creation_input_tokens": 700, "cache_read_input_tokens": 700}


def test_a_retired_model_is_an_error_the_user_understands(scripted: Any, learn_url: str) -> None:
    gone = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-3-opus-20240229"},
            "request_id": "req_1"}
    result = run(scripted((404, gone)), learn_url)
    assert result.error == ("the Anthropic API failed: the model 'claude-test' is not available to this key (retired, "
                            "or an unknown name): choose a current model with --model (the default is the current "
                            "Sonnet) (HTTP 404: not_found_error: model: claude-3-opus-20240229)")


def test_an_answer_stopped_by_the_context_window_says_so(scripted: Any, learn_url: str) -> None:
    model = scripted((200, _message([{"type": "text", "text": '{"results": [{"id": "m-1", "judge'}],
                                    "model_context_window_exceeded")))
    result = run(model, learn_url)
    assert result.error is not None and result.error.startswith("the conversation outgrew the model's context window")
    assert all(r.error == result.error for r in result.results)


@pytest.mark.parametrize("body, reason", [
    (b"<html>gateway</html>", "not JSON"),
    (b'{"id":"m","type":"message","content":' + b"[" * 5000 + b"]" * 5000 + b',"stop_reason":"end_turn"}',
     "JSON nested too deeply"),
    (b'{"id":"m","type":"message","content":[{"type":"text","text":"\\ud800"}],"stop_reason":"end_turn"}',
     "a lone surrogate escape"),
    (b'{"id":"m","type":"message","content":"oops","stop_reason":"end_turn","usage":"none"}', "not a message"),
], ids=["html", "deep", "surrogate", "shape"])
def test_a_malformed_model_reply_fails_the_file_saying_so(learn_url: str, body: bytes, reason: str) -> None:
    server = LocalServer(lambda request: (200, {"content-type": "application/json"}, body))
    try:
        client = anthropic.Anthropic(api_key="any", base_url=server.url, max_retries=0)
        with LearnClient(learn_url) as learn:
            result = judge_file(BATCH, load_prompt("v3"), anthropic_client=client, learn=learn, model="claude-test",
                                shown_model_url="http://127.0.0.1:8932")
    finally:
        server.stop()
    assert (result.error or "").startswith(f"malformed reply from http://127.0.0.1:8932: {reason}")
    assert all(r.error == result.error for r in result.results)


def test_an_answer_with_a_lone_surrogate_gives_no_verdict_and_never_raises() -> None:
    results, _ = verdicts_from_answer('{"results": [{"id": "m-1", "judge_verdict": "grounded", "reason": "\\ud800"}]}',
                                      BATCH)
    assert all(r.judge_verdict is None for r in results)
    results, _ = verdicts_from_answer("[" * 5000 + "]" * 5000, BATCH)  # nested too deeply: read where it can be
    assert all(r.judge_verdict is None for r in results)
