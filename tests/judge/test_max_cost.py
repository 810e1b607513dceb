"""`judge --max-cost` end to end against the stand-ins, and every run's cost in run.json and results.json."""

from __future__ import annotations

import json
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from replay.runs.writer import journal_path
from factories import judge_demo
from replay.cli.main import main
from replay.core.commands import rerecord_command, retry_failed_command
from replay.core.cost import TokenUsage, cost_usd
from replay.runs.folder import Run
from replay.sim import start_model
from replay.sim.batches import BatchSettings
from locations import REPO

CLAIMS = REPO / "demo" / "claims"
MAX_COST_REACHED = "max_cost_reached"


def usage_cost(run: Path, *, batch: bool = False) -> float:
    """The run's cost worked out here from the usage in its results.json (not from its cost_usd fields)."""
    results = json.loads((run / "results.json").read_text("utf-8"))
    total = 0.0
    for f in results["files"]:
        u = f.get("usage") or {}
        tokens = TokenUsage(u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cache_creation_input_tokens", 0),
                            u.get("cache_read_input_tokens", 0), u.get("cache_write_1h_tokens", 0))
        total += cost_usd(results["model"], tokens, batch=batch) or 0.0
    return total


def test_a_run_carries_its_cost_per_file_and_in_total(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model() as model:
        assert judge_demo(demo_learn, model, "direct") == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    results = json.loads((workdir / "direct" / "results.json").read_text("utf-8"))
    manifest = json.loads((workdir / "direct" / "run.json").read_text("utf-8"))
    expected = usage_cost(workdir / "direct")
    assert expected > 0
    assert results["cost_usd"] == pytest.approx(expected, abs=1e-5) == manifest["cost_usd"]
    assert sum(f["cost_usd"] for f in results["files"]) == pytest.approx(expected, abs=1e-5)
    assert [e["cost_usd"] for e in manifest["claims"]] == [f["cost_usd"] for f in results["files"]]
    assert f"cost: ${expected:,.4f} (priced from the stand-in's token counts)" in out
    # `cassettes list` shows it too, and prices a run recorded before costs were kept from its usage
    assert main(["cassettes", "list", ".", "--json"]) == 0
    assert [(r["run"], r["cost_usd"]) for r in json.loads(capsys.readouterr().out)] == [("direct", manifest["cost_usd"])]
    del manifest["cost_usd"]
    (workdir / "direct" / "run.json").write_text(json.dumps(manifest))
    assert main(["cassettes", "list", "."]) == 0
    assert f"${expected:,.4f}" in capsys.readouterr().out


def test_max_cost_stops_before_the_call_that_could_pass_it_and_keeps_what_was_judged(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model() as model:
        # one conversation at a time: which call is refused does not depend on thread timing
        # answers of at most 8192 tokens: a call's estimate (max_tokens of output) leaves room under $0.2
        assert judge_demo(demo_learn, model, "capped", "--max-cost", "0.2", "--concurrency", "1",
                          "--max-tokens", "8192") == 1
        err = capsys.readouterr().err
        results = json.loads((workdir / "capped" / "results.json").read_text("utf-8"))
        stopped = [f for f in results["files"] if f["error"]]
        judged = [f for f in results["files"] if not f["error"]]
        assert judged and stopped  # some files finished within the limit, the others were stopped
        assert all(MAX_COST_REACHED in f["error"] and "--max-cost $0.2000 reached" in f["error"] for f in stopped)
        assert "--max-cost $0.2000 reached" in err and "--retry-failed" in err
        assert "--retry-failed --max-cost 0.2 --max-tokens 8192" in err  # the printed command keeps the run's choices
        assert usage_cost(workdir / "capped") <= 0.2
        assert results["cost_usd"] == pytest.approx(usage_cost(workdir / "capped"), abs=1e-5)

        # the stopped run replays as recorded (the refusal is in the cassette), and nothing judged is lost:
        # --retry-failed records only the stopped files
        assert main(["cassettes", "verify", "capped"]) == 0, capsys.readouterr().out
        requests_before = len(model.requests)
        assert judge_demo(demo_learn, model, "capped", "--retry-failed", "--max-cost", "5",
                          "--max-tokens", "8192") == 0, capsys.readouterr().err
    after = json.loads((workdir / "capped" / "results.json").read_text("utf-8"))
    assert not [f for f in after["files"] if f["error"]]
    assert {f["file"]: f for f in after["files"] if f["file"] in {j["file"] for j in judged}} == {
        f["file"]: f for f in judged}
    assert len(model.requests) > requests_before


def test_max_cost_in_batch_mode_stops_before_a_batch_and_resume_pays_for_nothing_twice(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model(fetch_per_turn=1, batch_settings=BatchSettings(delay=0.05)) as model:
        # the first round (5 requests, estimated at $0.2528 at batch prices) fits, the second (larger) does not
        assert judge_demo(demo_learn, model, "batch", "--batch", "--max-cost", "0.26", "--max-tokens", "8192") == 1
        err = capsys.readouterr().err
        assert "--max-cost $0.2600 reached: a batch of" in err and "every conversation failed" in err
        first = list(model.app.batches.log)
        assert len({s.batch_id for s in first}) == 1  # one batch submitted, the next one never was
        assert not (workdir / "batch" / "run.json").exists()
        assert journal_path(workdir / "batch").is_file()  # the submitted batch is kept for --resume

        # the command printed to try again continues from that batch (raise the limit to go further)
        printed = shlex.split(err.split("to try again: ", 1)[1].splitlines()[0])
        assert printed[:2] == ["judge-replay", "judge"]
        assert "--batch --resume --max-cost 0.26" in shlex.join(printed)
        at = printed.index("--max-cost")
        assert main([*printed[1:at], "--max-cost", "5", *printed[at + 2:], "--no-progress"]) == 0, \
            capsys.readouterr().err
        log = list(model.app.batches.log)
    submitted = Counter((s.custom_id, s.params_sha256) for s in log)
    assert [entry for entry, n in submitted.items() if n > 1] == []
    assert len(log) > len(first)
    manifest = Run(workdir / "batch").manifest
    assert manifest.batch_ids and manifest.batch_ids[0] == first[0].batch_id
    # commands printed later from the run (bakeoff's retry, drift's re-record) keep how it was paid for
    assert manifest.max_cost_usd == 5 and manifest.cache is True
    assert "--retry-failed --batch --max-cost 5" in retry_failed_command(manifest, "batch")
    assert rerecord_command(manifest.model_copy(update={"cache": False}), ["c.json"], "again").endswith(
        "--batch --no-cache --max-cost 5 --max-tokens 8192")
    assert manifest.cost_usd == pytest.approx(usage_cost(workdir / "batch", batch=True), abs=1e-5)


def test_a_retry_in_batch_mode_prices_each_file_as_it_was_billed(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    with start_model(batch_settings=BatchSettings(delay=0.05)) as model:
        assert judge_demo(demo_learn, model, "mixed", "--max-cost", "0.2", "--concurrency", "1", "--max-tokens", "8192") == 1
        err = capsys.readouterr().err
        retry = shlex.split(err.split("To record just those again:\n", 1)[1].splitlines()[0].strip())
        assert "--batch" not in retry  # the run called the model directly
        assert judge_demo(demo_learn, model, "mixed", "--retry-failed", "--batch", "--max-tokens", "8192") == 0, capsys.readouterr().err
    results = json.loads((workdir / "mixed" / "results.json").read_text("utf-8"))
    by_batch = Counter(f["batch"] for f in results["files"])
    assert by_batch[True] and by_batch[False]  # kept files were direct calls, the retried ones batch entries
    for f in results["files"]:
        u = f["usage"]
        tokens = TokenUsage(u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cache_creation_input_tokens", 0),
                            u.get("cache_read_input_tokens", 0), u.get("cache_write_1h_tokens", 0))
        assert f["cost_usd"] == pytest.approx(cost_usd(results["model"], tokens, batch=f["batch"]), abs=1e-6)
    manifest = Run(workdir / "mixed").manifest
    assert manifest.batch_ids and manifest.cost_usd == pytest.approx(sum(f["cost_usd"] for f in results["files"]))
    # a replay prices each file as the recording was billed
    assert main(["judge", "--mode", "replay", "--run", "mixed", "--no-progress", "--out", "replayed.json"]) == 0
    replayed = json.loads((workdir / "replayed.json").read_text("utf-8"))
    assert replayed["cost_usd"] == pytest.approx(results["cost_usd"], abs=1e-6)


def test_max_cost_refuses_bad_amounts_and_models_without_a_price(workdir: Path, capsys: Any) -> None:
    args = ["judge", "--prompt", "v3", "--claims", str(CLAIMS), "--run", "r", "--mode", "record"]
    assert main([*args, "--max-cost", "0"]) == 2
    assert "positive USD amount" in capsys.readouterr().err
    assert main([*args, "--max-cost", "1", "--model", "my-own-model"]) == 2
    err = capsys.readouterr().err
    assert "'my-own-model'" in err and "[tool.judge-replay.prices]" in err and "Traceback" not in err
    assert main(["judge", "--mode", "replay", "--run", "r", "--max-cost", "1"]) == 2
    assert "replay calls nothing" in capsys.readouterr().err


class _SpendingProxy:
    """A real HTTP proxy on 127.0.0.1 in front of the model stand-in, for two requests in flight at once.

    Each Messages request is held until a second one arrives (or `hold` seconds pass), so that two direct
    calls the budget lets through together are in flight together; each answer is rewritten to bill its
    whole `max_tokens` of output (a model that spends all it may: the case `--max-cost` has to hold for).
    It counts the most requests it held at once."""

    def __init__(self, upstream: str, hold: float = 1.0) -> None:
        import http.client
        import threading
        from urllib.parse import urlsplit

        from factories import LocalServer

        target = urlsplit(upstream)
        self.in_flight = 0
        self.most_in_flight = 0
        self.billed: list[dict[str, Any]] = []
        """The `usage` of every answer passed on (as rewritten)."""
        self._arrived = threading.Condition()
        proxy = self

        def unused(body: Any) -> tuple[int, dict[str, str], bytes]:
            raise AssertionError("every POST is proxied by do_post below")

        self._server = LocalServer(unused)
        handler = self._server.RequestHandlerClass  # a class of this server's own: its POST is replaced here

        def do_post(handler_self: Any) -> None:
            raw = handler_self.rfile.read(int(handler_self.headers.get("content-length", 0)))
            asked = json.loads(raw) if raw else {}
            messages = handler_self.path.split("?")[0].endswith("/v1/messages") and "max_tokens" in asked
            with proxy._arrived:
                proxy.in_flight += 1
                proxy.most_in_flight = max(proxy.most_in_flight, proxy.in_flight)
                proxy._arrived.notify_all()
                if messages:
                    proxy._arrived.wait_for(lambda: proxy.in_flight >= 2, timeout=hold)
            try:
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {k: v for k, v in handler_self.headers.items() if k.lower() not in {"host", "content-length"}}
                conn.request("POST", handler_self.path, body=raw, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                status = answer.status
                content_type = answer.getheader("content-type", "application/json")
                conn.close()
                if status == 200 and messages:
                    message = json.loads(data)
                    message["usage"]["output_tokens"] = asked["max_tokens"]
                    proxy.billed.append(message["usage"])
                    data = json.dumps(message).encode()
            finally:
                with proxy._arrived:
                    proxy.in_flight -= 1
            handler_self.send_response(status)
            handler_self.send_header("content-type", content_type)
            handler_self.send_header("content-length", str(len(data)))
            handler_self.end_headers()
            handler_self.wfile.write(data)

        handler.do_POST = do_post  # type: ignore[attr-defined]
        self.url = self._server.url

    def stop(self) -> None:
        self._server.stop()

    def billed_usd(self) -> float:
        from replay.core.budget import usage_from_response

        return sum(cost_usd("claude-sonnet-5-5", usage_from_response(u), batch=False) or 0.0 for u in self.billed)


def _one_answer_usd(max_tokens: int) -> float:
    """What an answer of `max_tokens` output tokens bills on the demo's model (its output alone)."""
    return cost_usd("claude-sonnet-5-5", TokenUsage(output_tokens=max_tokens), batch=False) or 0.0


def test_two_direct_calls_are_in_flight_together_when_the_limit_has_room_for_both(
        workdir: Path, demo_learn: Any, capsys: Any) -> None:
    """The equipment of the next test, shown to work: with room for many answers, two conversations'
    calls are held by the proxy at once."""
    with start_model() as model:
        proxy = _SpendingProxy(model.url)
        try:
            code = judge_demo(demo_learn, proxy, "roomy", "--concurrency", "2", "--max-tokens", "4000",
                              "--max-cost", "50")
        finally:
            proxy.stop()
    assert code == 0, capsys.readouterr().err
    assert proxy.most_in_flight == 2


def test_max_cost_holds_with_two_direct_calls_in_flight(workdir: Path, demo_learn: Any, capsys: Any) -> None:
    """Two conversations at once, a model that bills every answer its whole `max_tokens`, and a limit with
    room for one such answer but not two: the second call must wait for the first one's bill (and is then
    refused), not go out beside it — else both are billed and the run passes its limit."""
    limit = round(_one_answer_usd(20_000) * 1.5, 4)
    with start_model() as model:
        proxy = _SpendingProxy(model.url)
        try:
            code = judge_demo(demo_learn, proxy, "tight", "--concurrency", "2", "--max-tokens", "20000",
                              "--max-cost", str(limit))
        finally:
            proxy.stop()
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"--max-cost ${limit:,.4f} reached" in err
    assert proxy.most_in_flight == 1
    assert 0 < proxy.billed_usd() <= limit
