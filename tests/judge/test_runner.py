"""A whole judge run against the stand-ins: inputs first, record, replay offline, the run folder."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from factories import closed_port_url, write_json
from replay.errors import CassetteMiss, InputError, LearnError, RecordingFailed, UsageError
from replay.files.results import load_results
from replay.analysis.verify import verify_run
from replay.judge.preflight import NO_KEY
from replay.judge.replaying import replay_run
from replay.judge.runner import run_judge
from replay.runs.folder import Run
from replay.runs.names import cassette_name
from replay.cassettes.audit import audit
from replay.sim import start_learn, start_model

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"
QUOTAS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits"
PAGES = {
    "models.md": (MODELS_URL, "# Azure OpenAI models\n\n| Model | Context window |\n|---|---|\n| gpt-4.1 | 1,047,576 |\n"
                              "| gpt-4o | 128,000 |\n"),
    "quotas.md": (QUOTAS_URL, "# Quotas and limits\n\nThe default quota for gpt-4o is 450,000 tokens per minute.\n"),
}
CLAIMS = {
    "a-models.json": {"file": "docs/models.md", "claims": [
        {"id": "m-1", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL},
        {"id": "m-2", "claim": "gpt-4o has a 128,000 token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL}]},
    "b-quotas.json": {"file": "docs/quotas.md", "claims": [
        {"id": "q-1", "claim": "The default quota for gpt-4o is 450,000 tokens per minute.", "claim_type": "tpm"}]},
    "c-missing.json": {"file": "docs/retired.md", "claims": [
        {"id": "r-1", "claim": "Model foo-1 retires in 2030.", "claim_type": "status",
         "evidence_url": "https://learn.microsoft.com/azure/no-such-page"}]},
}
EXPECTED_V3 = {  # the stand-in policy, prompt v3
    ("docs/models.md", "m-1"): ("not_grounded", "R1", True),
    ("docs/models.md", "m-2"): ("grounded", "", True),
    ("docs/quotas.md", "q-1"): ("grounded", "", True),
    ("docs/retired.md", "r-1"): ("source_silent", "", None),
}


@pytest.fixture
def workdir(workdir: Path) -> Path:
    """The shared `workdir` (cwd, no credential), with pages and a claims folder of three files."""
    tmp_path = workdir
    for name, (url, body) in PAGES.items():
        (tmp_path / "pages").mkdir(exist_ok=True)
        (tmp_path / "pages" / name).write_text(f"---\nurl: {url}\n---\n{body}", "utf-8")
    for name, data in CLAIMS.items():
        write_json(tmp_path / "claims" / name, data)
    return tmp_path



def verdicts(results: Any) -> dict[tuple[str, str], tuple[Any, str, Any]]:
    return {(f.file, r.id): (r.judge_verdict, r.rule, r.quote_verified) for f in results.files for r in f.results}


def record(stand_ins: tuple[Any, Any], run_dir: str = "runs/r1", **kwargs: Any) -> Any:
    learn, model = stand_ins
    options = dict(model="claude-test", learn_url=learn.url, anthropic_base_url=model.url, concurrency=2,
                   progress=False)
    options.update(kwargs)
    return run_judge("v3", ["claims"], run_dir, "record", **options)


def test_record_writes_the_run_folder(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    results = record(stand_ins)
    assert verdicts(results) == EXPECTED_V3
    assert [f.file for f in results.files] == ["docs/models.md", "docs/quotas.md", "docs/retired.md"]
    run = Run(workdir / "runs" / "r1")
    m = run.manifest
    assert (m.run_id, m.prompt, m.mode, m.model) == ("r1", "v3", "record", "claude-test")
    assert m.prompt_sha256 == results.prompt_sha256 and run.prompt_text is not None
    assert m.recorded_at.endswith("Z") and m.recorded_at == results.recorded_at
    assert m.stand_ins == ["learn", "model"] and m.learn_url == "http://127.0.0.1:8931/api/mcp"  # canonical
    assert m.anthropic_base_url == "http://127.0.0.1:8932" and results.stand_ins == ["learn", "model"]
    assert set(m.versions) == {"python", "judge-replay", "anthropic", "httpx", "httpx2", "vcrpy"}
    assert [(c.file, c.path, c.cassette) for c in m.claims] == [
        ("docs/models.md", "claims/a-models.json", cassette_name("docs/models.md")),
        ("docs/quotas.md", "claims/b-quotas.json", cassette_name("docs/quotas.md")),
        ("docs/retired.md", "claims/c-missing.json", cassette_name("docs/retired.md"))]
    assert all((run.path / c.cassette).is_file() and len(c.sha256) == 64 for c in m.claims)
    assert m.stats.model_calls >= 6 and m.stats.learn_calls > 0 and m.stats.input_tokens > 0
    assert load_results(run.path).model_dump() == results.model_dump()
    assert run.page(MODELS_URL) is not None


def test_replay_reproduces_the_recording_offline(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    recorded = record(stand_ins)
    for server in stand_ins:
        server.stop()  # nothing may leave the machine now
    replayed = replay_run(workdir / "runs" / "r1")
    assert replayed.model_dump() == recorded.model_dump()
    again = run_judge(None, [], "runs/r1", "replay", model="ignored", progress=False)
    assert verdicts(again) == EXPECTED_V3
    assert sorted(p.name for p in (workdir / "runs" / "r1").iterdir()) == sorted(
        ["run.json", "results.json", "prompt.md", *(cassette_name(c["file"]) for c in CLAIMS.values())])


def test_replay_with_another_prompt_is_a_cassette_miss(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    record(stand_ins)
    with pytest.raises(CassetteMiss, match="cassette miss while replaying docs/"):
        run_judge("v1", [], "runs/r1", "replay", model="ignored", progress=False)


def test_replay_refuses_changed_or_missing_claims(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    record(stand_ins)
    changed = workdir / "claims" / "b-quotas.json"
    changed.write_text(changed.read_text() + "\n")
    with pytest.raises(InputError, match="b-quotas.json: changed since run .* was recorded"):
        replay_run("runs/r1")
    changed.unlink()
    with pytest.raises(InputError, match="claims/b-quotas.json: claims file of run .* is missing"):
        replay_run("runs/r1")


def test_frozen_run_is_not_recorded_over(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    record(stand_ins)
    manifest = workdir / "runs" / "r1" / "run.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "frozen": True}))
    with pytest.raises(UsageError, match=r"run\.json is frozen.*--force"):
        record(stand_ins)
    assert verdicts(record(stand_ins, force=True)) == EXPECTED_V3


def test_live_run_writes_results_without_cassettes(workdir: Path, stand_ins: tuple[Any, Any], capsys: Any) -> None:
    results = record(stand_ins, run_dir="runs/live", progress=True)
    learn, model = stand_ins
    live = run_judge("v3", ["claims"], "runs/live2", "live", model="claude-test", learn_url=learn.url,
                     anthropic_base_url=model.url, concurrency=3, progress=True)
    assert verdicts(live) == verdicts(results)
    folder = workdir / "runs" / "live2"
    assert sorted(p.name for p in folder.iterdir()) == ["prompt.md", "results.json", "run.json"]
    m = Run(folder).manifest
    assert m.mode == "live" and m.stats.model_calls == sum(f.turns or 0 for f in live.files)
    progress_lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert len(progress_lines) == 6 and progress_lines[-1].startswith("[3/3] ")

    # a live run into a recorded run's folder would leave results nothing can replay in place of the
    # recording: refused before any call, the recording kept byte for byte; --force does it
    before = {p.name: p.read_bytes() for p in (workdir / "runs" / "live").iterdir()}
    calls = len(model.requests)
    with pytest.raises(UsageError, match=r"runs/live holds a recorded run \(3 cassette\(s\)\): --mode live keeps no"):
        run_judge("v3", ["claims"], "runs/live", "live", model="claude-test", learn_url=learn.url,
                  anthropic_base_url=model.url, progress=False)
    assert {p.name: p.read_bytes() for p in (workdir / "runs" / "live").iterdir()} == before
    assert len(model.requests) == calls  # no paid call
    run_judge("v3", ["claims"], "runs/live", "live", model="claude-test", learn_url=learn.url,
              anthropic_base_url=model.url, progress=False, force=True)
    assert not list((workdir / "runs" / "live").glob("*.yaml"))


def test_inputs_are_validated_before_any_network_call(workdir: Path) -> None:
    write_json(workdir / "claims" / "d-bad.json", {"file": "docs/bad.md", "claims": [{"id": "x", "claim": "c"}]})
    with pytest.raises(InputError, match="d-bad.json: not a valid claims file: claims.0.claim_type"):
        run_judge("v3", ["claims"], "runs/r", "record", model="m", learn_url=closed_port_url(),
                  anthropic_base_url="http://127.0.0.1:9", progress=False)
    assert not (workdir / "runs").exists()


def test_no_api_key_is_a_usage_error(workdir: Path) -> None:
    with pytest.raises(UsageError) as caught:
        run_judge("v3", ["claims"], "runs/r", "record", model="m", learn_url=closed_port_url(), progress=False)
    assert str(caught.value) == NO_KEY


def test_unreachable_learn_fails_before_any_conversation(workdir: Path) -> None:
    url = closed_port_url()
    with start_model() as model, pytest.raises(LearnError, match=f"cannot reach the Learn MCP endpoint at {url}"):
        run_judge("v3", ["claims"], "runs/r", "record", model="m", learn_url=url, anthropic_base_url=model.url,
                  progress=False)
    assert model.requests == [] and not (workdir / "runs").exists()


def test_pages_from_serves_learn_from_another_run(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    learn, model = stand_ins
    record(stand_ins)
    learn.stop()  # every Learn call must now come from run r1's cassettes
    pinned = run_judge("v1", ["claims"], "runs/pinned", "record", model="claude-test", learn_url=learn.url,
                       anthropic_base_url=model.url, pages_from="runs/r1", progress=False)
    assert [f.error for f in pinned.files] == [None, None, None]
    assert verdicts(pinned)[("docs/models.md", "m-1")] == ("grounded", "", True)  # v1 has no R1
    m = Run(workdir / "runs" / "pinned").manifest
    # the pages served were recorded from the Learn stand-in, and say so
    assert m.pages_from == "runs/r1" and m.stand_ins == ["learn", "model"]


# --------------------------------------------------------------------------- secrets and replayability

CANARY = "sk-ant-api03-canary" + "Q7x9" * 10
ORG_ID = "1b5e2c3d-aa1a-4bbb-8ccc-0123456789ab"


class _RejectingModel(BaseHTTPRequestHandler):
    """A Messages API that counts tokens for anyone, answers one verdict to most conversations and
    refuses the key in the conversation about docs/quotas.md, echoing it and the org id (as real error
    bodies can)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        request_id = f"req_{uuid.uuid4().hex}"
        status = 200
        if self.path.endswith("/count_tokens"):
            body = json.dumps({"input_tokens": 5}).encode()
        elif b"docs/quotas.md" not in raw:
            body = json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                               "content": [{"type": "text",
                                            "text": '{"results": [{"id": "m-1", "judge_verdict": "source_silent"}]}'}],
                               "stop_reason": "end_turn",
                               "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 2}}).encode()
        else:
            status = 401
            message = f"invalid key {self.headers.get('authorization')} for organization {ORG_ID}"
            body = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": message},
                               "request_id": request_id}).encode()
        self.send_response(status)
        for name, value in {"content-type": "application/json", "request-id": request_id,
                            "anthropic-organization-id": ORG_ID, "content-length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def run_folder_text(folder: Path) -> str:
    return "\n".join(p.read_text("utf-8") for p in sorted(folder.iterdir()))


def test_a_final_api_error_keeps_no_secret_and_replays_exactly(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    learn, _ = stand_ins
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _RejectingModel)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        results = run_judge("v3", ["claims/a-models.json", "claims/b-quotas.json"], "runs/denied", "record",
                            model="claude-test",
                            learn_url=learn.url, anthropic_base_url=f"http://127.0.0.1:{httpd.server_address[1]}",
                            api_key=CANARY, progress=False)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert results.files[0].error is None
    error = results.files[1].error or ""
    # as the cassette keeps the body: the key and the credential headers' values (the org id) removed
    assert error == "the Anthropic API failed: HTTP 401: authentication_error: invalid key REDACTED for organization REDACTED"
    folder = workdir / "runs" / "denied"
    text = run_folder_text(folder)
    assert CANARY not in text and ORG_ID not in text  # results.json included
    assert audit([folder]) == []
    report = verify_run(folder)  # the recorded request id is normalised in the cassette: not in the results
    assert report.problems == []


def test_secret_shaped_text_in_claims_and_urls_still_replays(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    learn, model = stand_ins
    (workdir / "pages" / "auth.md").write_text(
        f"---\nurl: {MODELS_URL}/auth\n---\n# Auth\n\nThe API supports bearer authentication with Entra ID.\n", "utf-8")
    write_json(workdir / "claims2" / "auth.json", {"file": "docs/auth.md", "claims": [
        {"id": "a-1", "claim": "The API supports bearer authentication with Entra ID.", "claim_type": "status",
         "evidence_url": f"{MODELS_URL}/auth"},
        {"id": "a-2", "claim": f"The organization {ORG_ID} may call the API.", "claim_type": "status",
         "evidence_url": f"{MODELS_URL}/auth"}]})
    key_url = learn.url + "?api_key=0123456789abcdef"
    recorded = run_judge("v3", ["claims2"], "runs/auth", "record", model="claude-test", learn_url=key_url,
                         anthropic_base_url=model.url, progress=False)
    assert recorded.files[0].results[0].evidence_quote == "The API supports bearer authentication with Entra ID."
    folder = workdir / "runs" / "auth"
    text = run_folder_text(folder)
    assert "0123456789abcdef" not in text and "bearer authentication" in text
    for server in stand_ins:
        server.stop()
    assert verify_run(folder).problems == []


def test_a_recording_fills_the_projects_page_store(workdir: Path, stand_ins: tuple[Any, Any],
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    from replay.runs.page_store import PageStore

    (workdir / "pyproject.toml").write_text("[tool.judge-replay]\n", "utf-8")
    record(stand_ins)
    elsewhere = tmp_path_factory.mktemp("scratch") / "r2"  # outside the project: not indexed
    record(stand_ins, str(elsewhere))
    with PageStore(workdir / ".judge-replay" / "pages") as store:
        (version,) = store.versions(MODELS_URL)
    assert version.runs == ("r1",) and version.sha256 == Run(workdir / "runs" / "r1").page(MODELS_URL).sha256


# --------------------------------------------------------------------------- real services: retries, refusals, models


def test_a_transient_learn_failure_is_retried_and_not_kept(workdir: Path) -> None:
    with start_learn(workdir / "pages", fail_first=1, fail_status=503) as learn, start_model() as model:
        results = record((learn, model))
    assert verdicts(results) == EXPECTED_V3
    run = Run(workdir / "runs" / "r1")
    assert run.manifest.stats.learn_retries == 1 and run.manifest.stats.retries_dropped >= 1
    assert all(" 503" not in (run.path / c.cassette).read_text() for c in run.manifest.claims)
    assert verify_run(run.path).problems == []  # replay never meets the failure, nor sleeps


def test_a_run_served_from_another_counts_the_retries_of_its_failure_again(workdir: Path) -> None:
    """A Learn failure the first run kept (its retries used up) is served again by `--pages-from`, and
    retried again: run.json counts those retries (`learn_retries`) as it counts the exchanges it dropped."""
    with start_learn(workdir / "pages", fail_first=4, fail_status=503) as learn, start_model() as model:
        record((learn, model), concurrency=1)  # the first tool call fails 4 times: its 3 retries used up
        first = Run(workdir / "runs" / "r1").manifest.stats
        assert (first.learn_retries, first.retries_dropped) == (3, 3)
        learn.stop()  # every Learn call now comes from run r1's cassettes
        record((learn, model), "runs/pinned", pages_from="runs/r1", concurrency=1)
    again = Run(workdir / "runs" / "pinned").manifest.stats
    assert (again.learn_retries, again.retries_dropped) == (3, 3)


def test_a_url_outside_learn_is_no_page(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    pricing = "https://azure.microsoft.com/pricing/details/cognitive-services/openai-service/"
    write_json(workdir / "claims2" / "p.json", {"file": "docs/pricing.md", "claims": [
        {"id": "p-1", "claim": "Hourly PTU pricing for gpt-4o is $1.", "claim_type": "sku", "evidence_url": pricing}]})
    results = run_judge("v3", ["claims2"], "runs/p", "record", model="claude-test", learn_url=stand_ins[0].url,
                        anthropic_base_url=stand_ins[1].url, progress=False)
    (call,) = [c for c in results.files[0].tool_calls or [] if c.url == pricing]
    assert call.page_sha256 is None and call.error is None
    assert results.files[0].results[0].quote_verified is not True
    run = Run(workdir / "runs" / "p")
    page = run.page(pricing)
    assert page is None or (page.sha256 is None and page.text is None)
    assert verify_run(run.path).problems == []


def test_thinking_blocks_go_back_unchanged(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    """The model stand-in answers with signed thinking blocks and refuses a conversation that alters
    or drops them: a recording that completes sent every one back as it came."""
    results = record(stand_ins)
    assert verdicts(results) == EXPECTED_V3
    run = Run(workdir / "runs" / "r1")
    sent_back = [block for it in run.interactions("docs/models.md") if it.uri.endswith("/v1/messages")
                 for message in json.loads(it.request_body or "{}")["messages"] if message["role"] == "assistant"
                 for block in message["content"] if block["type"] == "thinking"]
    assert sent_back and all(block["signature"] for block in sent_back)


def test_usage_keeps_cache_tokens_beside_input_and_output(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    results = record(stand_ins)
    usage = [f.usage for f in results.files if f.usage]
    stats = Run(workdir / "runs" / "r1").manifest.stats
    for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        assert getattr(stats, name) == sum(getattr(u, name) for u in usage)
    assert stats.output_tokens > 0


def test_a_context_window_overflow_is_a_file_error_that_says_so(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    from replay.sim.model import CONTEXT_EXCEEDED_MARKER

    write_json(workdir / "claims2" / "x.json", {"file": "docs/x.md", "claims": [
        {"id": "x-1", "claim": f"gpt-4o has a 128,000 token context window. {CONTEXT_EXCEEDED_MARKER}",
         "claim_type": "version", "evidence_url": MODELS_URL}]})
    results = run_judge("v3", ["claims/b-quotas.json", "claims2"], "runs/x", "record", model="claude-test",
                        learn_url=stand_ins[0].url, anthropic_base_url=stand_ins[1].url, progress=False)
    error = results.files[1].error or ""
    assert error.startswith("the conversation outgrew the model's context window") and "not JSON" not in error


def test_a_retired_model_is_explained_before_any_paid_call_and_no_run_is_written(
        workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    """The free token count before the first paid call meets the API's 404 for a retired model: one message
    the user understands (exit 2), no Messages call made, nothing written."""
    from replay.errors import UsageError

    _learn, model = stand_ins
    with pytest.raises(UsageError) as caught:
        record(stand_ins, model="claude-2.1")
    assert str(caught.value) == ("the model 'claude-2.1' is not available to this key (retired, or an unknown name): "
                                 "choose a current model with --model (the default is the current Sonnet)")
    assert model.app.requests == []  # no POST /v1/messages: nothing was paid for
    assert not (workdir / "runs" / "r1").exists()


def test_only_the_failed_files_are_recorded_again(workdir: Path, stand_ins: tuple[Any, Any], capsys: Any) -> None:
    """A Learn endpoint that fails every call about quotas: that file fails, the run is kept, the CLI exits
    1 and prints the command that re-records just that file; run against working Learn, the command
    records it and keeps the others byte for byte."""
    from factories import LocalServer
    from replay.cli.main import main

    learn, model = stand_ins

    def quotas_down(body: Any) -> tuple[int, dict[str, str], bytes]:
        if body is None or "id" not in body:
            return 202, {}, b""
        if "quota" in json.dumps(body).lower():
            return 502, {"content-type": "text/plain", "retry-after": "0"}, b"bad gateway"
        reply = httpx.post(learn.url, json=body, headers={"accept": "application/json, text/event-stream"})
        return reply.status_code, {"content-type": reply.headers["content-type"]}, reply.content

    broken = LocalServer(quotas_down, "/api/mcp")
    try:
        code = main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r", "--mode", "record",
                     "--learn-url", broken.url, "--anthropic-base-url", model.url, "--model", "claude-test",
                     "--no-progress"])
    finally:
        broken.stop()
    out, err = capsys.readouterr()
    assert code == 1
    run = workdir / "runs" / "r"
    assert [f.file for f in load_results(run).files if f.error] == ["docs/quotas.md"]
    assert "1 of 3 claims files failed (claims/b-quotas.json); the run keeps what was recorded." in err
    command = err.strip().splitlines()[-1].strip()
    assert command.startswith("judge-replay judge --prompt v3 --claims ") and command.endswith(" --retry-failed")
    assert f"--learn-url {broken.url}" in command  # as recorded: the endpoint the user gave
    kept = {p.name: p.read_bytes() for p in run.glob("*.yaml") if "quotas" not in p.name}
    args = command.split()[1:]
    args[args.index("--learn-url") + 1] = learn.url  # Learn is back
    assert main(args + ["--no-progress"]) == 0
    capsys.readouterr()
    assert {p.name: p.read_bytes() for p in run.glob("*.yaml") if "quotas" not in p.name} == kept
    assert verdicts(load_results(run)) == EXPECTED_V3
    assert verify_run(run).problems == []


def test_a_bad_source_date_epoch_stops_before_any_call(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with start_model() as model, pytest.raises(UsageError, match="SOURCE_DATE_EPOCH must be whole seconds"):
        run_judge("v3", ["claims"], "runs/r", "record", model="m", learn_url=closed_port_url(),
                  anthropic_base_url=model.url, progress=False)
    assert model.requests == [] and not (workdir / "runs").exists()


def test_a_refused_key_stops_before_any_paid_call(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    from factories import LocalServer

    asked: list[Any] = []

    def refuse(body: Any) -> tuple[int, dict[str, str], bytes]:
        asked.append(body)
        return 401, {"content-type": "application/json"}, json.dumps(
            {"type": "error", "error": {"type": "authentication_error", "message": f"bad key {CANARY}"}}).encode()

    api = LocalServer(refuse)
    try:
        with pytest.raises(UsageError) as caught:
            run_judge("v3", ["claims"], "runs/r", "record", model="m", learn_url=stand_ins[0].url,
                      anthropic_base_url=api.url, api_key=CANARY, progress=False)
    finally:
        api.stop()
    assert str(caught.value) == f"the Anthropic API at {api.url} refused the key (HTTP 401): check ANTHROPIC_API_KEY"
    assert len(asked) == 1 and "max_tokens" not in asked[0]  # one token count, no message
    assert not (workdir / "runs").exists()


# --------------------------------------------------------------------------- hostile or odd replies


def learn_proxy(learn_url: str, *, quotas_reply: tuple[int, dict[str, str], bytes] | None = None,
                page_insert: str = "") -> Any:
    """A Learn endpoint in front of the stand-in: every call about quotas answered with `quotas_reply`
    (when given); `page_insert` added to every page served after its first "quota"."""
    from factories import LocalServer

    def respond(body: Any) -> tuple[int, dict[str, str], bytes]:
        if body is None or "id" not in body:
            return 202, {}, b""
        if quotas_reply is not None and body.get("method") == "tools/call" and "quota" in json.dumps(body).lower():
            return quotas_reply
        reply = httpx.post(learn_url, json=body, headers={"accept": "application/json, text/event-stream"})
        data = reply.content
        if page_insert and body.get("method") == "tools/call":
            data = data.replace(b"quota", f"quota ({page_insert})".encode(), 1)
        return reply.status_code, {"content-type": reply.headers["content-type"]}, data

    return LocalServer(respond, "/api/mcp")


def test_a_json_learn_error_body_gives_the_same_error_text_in_replay(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    """The error text quotes the body in one normal form: the cassette stores the JSON re-indented."""
    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": "upstream failed"}}).encode()
    proxy = learn_proxy(stand_ins[0].url, quotas_reply=(500, {"content-type": "application/json",
                                                              "retry-after": "0"}, body))
    try:
        results = record(stand_ins, learn_url=proxy.url)
    finally:
        proxy.stop()
    (failed,) = [f for f in results.files if f.error]
    assert failed.file == "docs/quotas.md" and '{"type": "error", "error": {"type": "api_error"' in failed.error
    assert verify_run(workdir / "runs" / "r1").problems == []


@pytest.mark.parametrize("reply", [
    b'{"jsonrpc":"2.0","result":{"content":"notalist"}}',
    b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":5}]}}',
    b'{"jsonrpc":"2.0","id":2,"result":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"x"}],"n":' + b"9" * 10000 + b"}}",
    b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a\\u0000b \\ud800 lone"}]}}',
], ids=["content-not-a-list", "text-not-a-string", "nested-too-deeply", "huge-number", "lone-surrogate"])
def test_a_malformed_learn_reply_fails_its_file_and_the_run_is_kept(workdir: Path, stand_ins: tuple[Any, Any],
                                                                     reply: bytes) -> None:
    proxy = learn_proxy(stand_ins[0].url, quotas_reply=(200, {"content-type": "application/json"}, reply))
    try:
        results = record(stand_ins, learn_url=proxy.url)
    finally:
        proxy.stop()
    errors = {f.file: f.error for f in results.files}
    assert (errors["docs/quotas.md"] or "").startswith("malformed reply from http://127.0.0.1:8931/api/mcp")
    assert errors["docs/models.md"] is None and errors["docs/retired.md"] is None
    assert verify_run(workdir / "runs" / "r1").problems == []


def test_a_retry_after_of_nan_is_ignored(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    calls: list[int] = []
    proxy_reply = (503, {"content-type": "text/plain", "retry-after": "nan"}, b"busy")

    from factories import LocalServer

    def respond(body: Any) -> tuple[int, dict[str, str], bytes]:
        if body is not None and body.get("method") == "tools/call" and not calls:
            calls.append(1)
            return proxy_reply
        if body is None or "id" not in body:
            return 202, {}, b""
        reply = httpx.post(stand_ins[0].url, json=body, headers={"accept": "application/json, text/event-stream"})
        return reply.status_code, {"content-type": reply.headers["content-type"]}, reply.content

    proxy = LocalServer(respond, "/api/mcp")
    try:
        results = record(stand_ins, learn_url=proxy.url)
    finally:
        proxy.stop()
    assert calls == [1] and verdicts(results) == EXPECTED_V3


def test_our_secret_echoed_into_a_page_is_hashed_as_stored(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    """A server that echoes the request URL's `?key=` and the `Basic` header into page text: the page is
    stored with them removed, and page hashes and quote checks are computed on that text, so the run
    verifies and no secret is kept."""
    import base64

    key, user, password = "QkeyCanary55abc", "reviewer", "PassCanary9x"
    basic = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    proxy = learn_proxy(stand_ins[0].url, page_insert=f"served for /api/mcp?key={key} auth {basic}")
    try:
        url = proxy.url.replace("http://", f"http://{user}:{password}@") + f"?key={key}"
        results = record(stand_ins, learn_url=url)
    finally:
        proxy.stop()
    assert verdicts(results) == EXPECTED_V3
    folder = workdir / "runs" / "r1"
    text = run_folder_text(folder)
    assert "served for /api/mcp?key=REDACTED auth REDACTED" in text
    assert key not in text and password not in text and basic.split()[1] not in text
    assert verify_run(folder).problems == []


@pytest.mark.parametrize("epoch", ["yesterday", "99999999999999999999", "253402300800", "-1", "+5", "1_000", " 5", "١٢"])
def test_a_source_date_epoch_out_of_range_stops_before_any_call(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                                epoch: str) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    with start_model() as model, pytest.raises(UsageError, match="SOURCE_DATE_EPOCH must be whole seconds"):
        run_judge("v3", ["claims"], "runs/r", "record", model="m", learn_url=closed_port_url(),
                  anthropic_base_url=model.url, progress=False)
    assert model.requests == [] and not (workdir / "runs").exists()


class _HeaderTakingModel(BaseHTTPRequestHandler):
    """A Messages API that notes the credential headers of each request and refuses them all."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str | None]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.seen.append({name: self.headers.get(name) for name in ("authorization", "x-api-key")})
        body = json.dumps({"type": "error", "error": {"type": "authentication_error", "message": "no"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_an_auth_token_alone_is_used_as_bearer(workdir: Path, stand_ins: tuple[Any, Any],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-Canary-7731")
    _HeaderTakingModel.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _HeaderTakingModel)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        with pytest.raises(UsageError, match="refused the key .*check ANTHROPIC_AUTH_TOKEN"):
            run_judge("v3", ["claims"], "runs/r", "record", model="m", learn_url=stand_ins[0].url,
                      anthropic_base_url=f"http://127.0.0.1:{httpd.server_address[1]}", progress=False)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert _HeaderTakingModel.seen == [{"authorization": "Bearer tok-Canary-7731", "x-api-key": None}]


def test_a_model_endpoint_giving_no_verdict_at_all_writes_no_run(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    """Every claim failed one by one (the answer is not JSON): not a run, although no file failed whole."""
    from factories import LocalServer

    def answer(body: Any) -> tuple[int, dict[str, str], bytes]:
        message = {"id": "m", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                   "content": [{"type": "text", "text": "I cannot tell."}],
                   "usage": {"input_tokens": 1, "output_tokens": 1}}
        return 200, {"content-type": "application/json"}, json.dumps(message).encode()

    api = LocalServer(answer)
    try:
        with pytest.raises(RecordingFailed,
                           match="every conversation failed .* no run was written: the judge's answer is not JSON"):
            record(stand_ins, anthropic_base_url=api.url)
    finally:
        api.stop()
    assert not (workdir / "runs" / "r1").exists()


def test_a_run_inside_a_staging_folder_is_refused_before_any_call(workdir: Path) -> None:
    with start_model() as model, pytest.raises(UsageError, match="cannot be inside a .judge-replay-staging folder"):
        run_judge("v3", ["claims"], "runs/.judge-replay-staging/r", "record", model="m", learn_url=closed_port_url(),
                  anthropic_base_url=model.url, progress=False)
    assert model.requests == []


def test_retry_failed_refuses_another_endpoint(workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    proxy = learn_proxy(stand_ins[0].url, quotas_reply=(502, {"content-type": "text/plain", "retry-after": "0"},
                                                        b"bad gateway"))
    try:
        record(stand_ins, learn_url=proxy.url)
    finally:
        proxy.stop()
    before = run_folder_text(workdir / "runs" / "r1")
    # the run's endpoint as it stores it, the one given as given (its port)
    with pytest.raises(UsageError, match=r"--retry-failed keeps the cassettes .* recorded with --learn-url "
                                         r"http://127.0.0.1:8931/api/mcp; .* recorded with "
                                         + re.escape(stand_ins[0].url + "?tenant=b") + ":"):
        record(stand_ins, learn_url=stand_ins[0].url + "?tenant=b", retry_failed=True)
    assert run_folder_text(workdir / "runs" / "r1") == before
    record(stand_ins, learn_url=stand_ins[0].url, retry_failed=True)  # another port of a stand-in: the same endpoint
    assert verdicts(load_results(workdir / "runs" / "r1")) == EXPECTED_V3


def test_url_credentials_are_redacted_whole_in_an_echoed_basic_header() -> None:
    import base64

    from replay.secrets import registry as _secrets

    _secrets.remember_url("https://reviewer:PassCanary9x@learn.example/api/mcp")
    encoded = base64.b64encode(b"reviewer:PassCanary9x").decode()
    assert _secrets.redact(f"auth=Basic {encoded};") == "auth=REDACTED;"
    assert _secrets.redact(f"token {encoded}.") == "token REDACTED."
    assert _secrets.redact("sent reviewer:PassCanary9x") == "sent REDACTED"


def test_a_replay_that_finds_a_request_only_through_a_known_secret_leaves_no_receipt(
        workdir: Path, stand_ins: tuple[Any, Any]) -> None:
    """Which secrets a process knows decides whether a request stored scrubbed is found (`_as_stored`):
    such a replay is not a function of the hashed inputs alone, so it must not answer a later replay."""
    from replay.secrets import registry as _secrets
    from replay.runs.receipts import receipts_folder

    key = "sk-ant-api03-" + "Kq7" * 14
    data = {"file": "docs/models.md", "claims": [dict(CLAIMS["a-models.json"]["claims"][0],
                                                       claim=f"The sample key {key} is quoted in the docs.")]}
    (workdir / "claims3").mkdir()  # the key written as JSON escapes: no scan of the file's bytes sees it
    (workdir / "claims3" / "keyed.json").write_text(json.dumps(data).replace("api03", "\\u0061pi03"), "utf-8")
    learn, model = stand_ins
    run_judge("v3", ["claims3"], "runs/keyed", "record", model="claude-test", learn_url=learn.url,
              anthropic_base_url=model.url, api_key=key, progress=False)
    assert "REDACTED" in (workdir / "runs" / "keyed" / cassette_name("docs/models.md")).read_text("utf-8")
    _secrets.forget_all()
    _secrets.remember(key)  # the user's key, as `judge --mode replay` remembers it
    assert replay_run("runs/keyed").files[0].results
    assert not list(receipts_folder().glob("*.json"))
    _secrets.forget_all()
    _secrets.remember("sk-ant-api03-" + "Zx9" * 14)  # another key: the full replay cannot find the request
    with pytest.raises(CassetteMiss):
        replay_run("runs/keyed")
