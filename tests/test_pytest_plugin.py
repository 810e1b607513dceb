"""The plugin's stand-in fixtures, used from a throwaway project (pytester) as another suite would use them."""

from __future__ import annotations

import shutil

import pytest

from locations import REPO

pytest_plugins = ["pytester"]

A_SUITE_OF_ITS_OWN = '''
import anthropic
import httpx

from replay.files.inputs import load_claims_batch
from replay.learn.wire import SESSION_HEADER
from replay.prompts import load_prompt

TOOLS = [{"name": name, "description": name, "input_schema": {"type": "object", "properties": {}}}
         for name in ("microsoft_docs_search", "microsoft_docs_fetch")]
STOPPED = []


def test_a_judge_talks_to_both_stand_ins(learn_stand_in, model_stand_in):
    learn = learn_stand_in("pages")
    model = model_stand_in()
    STOPPED.extend([learn, model])
    hello = httpx.post(learn.url, headers={"Accept": "application/json, text/event-stream"}, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    assert hello.status_code == 200 and hello.headers[SESSION_HEADER]
    client = anthropic.Anthropic(base_url=model.url, api_key="test-key", max_retries=0)
    prompt = load_prompt("v3").render(load_claims_batch("claims.json"))
    answer = client.messages.create(model="claude-sonnet-5-5", max_tokens=4096, tools=TOOLS,
                                    messages=[{"role": "user", "content": prompt}])
    assert answer.stop_reason == "tool_use"
    assert {b.name for b in answer.content if b.type == "tool_use"} <= {"microsoft_docs_search", "microsoft_docs_fetch"}


def test_the_stand_ins_are_stopped_after_the_test():
    assert len(STOPPED) == 2
    for handle in STOPPED:
        try:
            httpx.get(handle.url, timeout=2)
        except httpx.ConnectError:
            continue
        raise AssertionError(f"{handle.url} still answers after its test")


def test_the_model_stand_in_refuses_what_the_api_refuses(model_stand_in):
    client = anthropic.Anthropic(base_url=model_stand_in().url, api_key="test-key", max_retries=0)
    try:
        client.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}],
                               extra_body={"not_a_field": 1})
    except anthropic.BadRequestError as exc:
        assert exc.body["error"]["type"] == "invalid_request_error"
    else:
        raise AssertionError("an unknown top-level field was accepted")
'''


def test_another_suite_starts_the_stand_ins_with_the_plugins_fixtures(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "demo" / "pages" / "2026-06", pytester.path / "pages")
    shutil.copy(REPO / "demo" / "claims" / "azure-openai-models.json", pytester.path / "claims.json")
    pytester.makepyfile(test_suite=A_SUITE_OF_ITS_OWN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n0", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
