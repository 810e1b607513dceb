"""`judge-replay drift`: --against (offline) and --live against the Learn stand-in only; no model anywhere."""

import json
from pathlib import Path

import pytest

from factories import damage_page_store, parse_printed_command, write_json, write_run
from replay.cassettes.cassette import load_cassette
from replay.cli.main import main
from replay.learn.client import LearnClient
from replay.runs.folder import Run
from replay.sim import start_learn
from locations import DATA, REPO

MODELS = "https://learn.microsoft.com/azure/test/models"
QUOTAS = "https://learn.microsoft.com/azure/test/quotas"
OLD = "https://learn.microsoft.com/azure/test/old"
LEARN_PAGES = DATA / "learn-pages"

MODELS_V1 = """# Test models

Context windows of the test models.

| Model | Context window | Max output |
|---|---|---|
| `alpha-1` (2025-01-01) | 128,000 | 4,096 |
| `beta-2` (2025-02-01) | 200,000 | 8,192 |
"""
QUOTAS_V1 = """# Test quotas

Quotas apply per subscription and region.

The default quota is 30 requests per minute.
"""
OLD_V1 = """# Old page

The legacy tier allows 5 deployments.
"""

CLAIMS = {
    "docs/models.md": [
        {"id": "m-1", "claim": "alpha-1 has a 128,000 token context window.", "claim_type": "tpm", "evidence_url": MODELS,
         "quote": "| `alpha-1` (2025-01-01) | 128,000 | 4,096 |"},
        {"id": "m-2", "claim": "beta-2 has a 200,000 token context window.", "claim_type": "tpm", "evidence_url": MODELS,
         "quote": "| `beta-2` (2025-02-01) | 200,000 | 8,192 |"},
        {"id": "m-3", "claim": "beta-2 writes at most 8,192 tokens.", "claim_type": "tpm", "evidence_url": MODELS,
         "quote": "8,192 |"},
    ],
    "docs/quotas.md": [
        {"id": "q-1", "claim": "The default quota is 30 requests per minute.", "claim_type": "tpm", "evidence_url": QUOTAS,
         "quote": "The default quota is 30 requests per minute."},
    ],
    "docs/old.md": [
        {"id": "o-1", "claim": "The legacy tier allows 5 deployments.", "claim_type": "sku", "evidence_url": OLD,
         "quote": "The legacy tier allows 5 deployments."},
    ],
}
PAGE_OF = {"docs/models.md": MODELS, "docs/quotas.md": QUOTAS, "docs/old.md": OLD}


def write_pages(folder: Path, pages: dict[str, str]) -> Path:
    for n, (url, body) in enumerate(pages.items()):
        (folder / f"page{n}.md").parent.mkdir(parents=True, exist_ok=True)
        (folder / f"page{n}.md").write_text(f"---\nurl: {url}\ntitle: page {n}\n---\n{body}", "utf-8")
    return folder


def second_snapshot(tmp_path: Path) -> Path:
    """The number in beta-2's row changes, the quotas page is edited elsewhere, the old page is removed."""
    return write_pages(tmp_path / "pages-v2", {
        MODELS: MODELS_V1.replace("| 200,000 |", "| 400,000 |"),
        QUOTAS: QUOTAS_V1.replace("per subscription and region", "per subscription, per region"),
    })


def write_claims(folder: Path) -> Path:
    for file, claims in CLAIMS.items():
        rows = [{k: v for k, v in c.items() if k != "quote"} for c in claims]
        write_json(folder / f"{Path(file).stem}.json", {"file": file, "claims": rows})
    return folder


def write_recorded_run(folder: Path, texts: dict[str, str | None], recorded_at: str = "2026-11-01T09:00:00Z") -> Path:
    results = [{"file": file, "results": [
        {"id": c["id"], "judge_verdict": "grounded", "rule": "", "evidence_url": c["evidence_url"],
         "evidence_quote": c["quote"], "reason": "stated"} for c in claims]} for file, claims in CLAIMS.items()]
    pages = {file: {PAGE_OF[file]: texts.get(PAGE_OF[file])} for file in CLAIMS}
    return write_run(folder, results=results, pages=pages, recorded_at=recorded_at)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def statuses(report: dict) -> dict[str, str]:
    return {c["id"]: c["status"] for c in report["claims"]}


EXPECTED = {"m-1": "changed-quote-intact", "m-2": "value-changed", "m-3": "changed-quote-intact",
            "q-1": "changed-quote-intact", "o-1": "page-gone"}


def test_against_another_runs_cassettes_offline(tmp_path, capsys):
    claims = write_claims(tmp_path / "claims")
    old = write_recorded_run(tmp_path / "cassettes" / "v3-old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    new = write_recorded_run(tmp_path / "cassettes" / "v3-new",
                             {MODELS: MODELS_V1.replace("| 200,000 |", "| 400,000 |"),
                              QUOTAS: QUOTAS_V1.replace("region", "Azure region"), OLD: None})
    code, out, err = run_cli(capsys, "drift", old, "--against", new, "--claims", claims, "--json")
    assert code == 1, err  # something is at risk
    report = json.loads(out)
    assert set(report) >= {"run", "against", "claims", "at_risk", "rerecord_commands", "pages"}
    assert statuses(report) == EXPECTED
    m2 = next(c for c in report["claims"] if c["id"] == "m-2")
    assert (m2["old"], m2["new"]) == ("| `beta-2` (2025-02-01) | 200,000 | 8,192 |", "| `beta-2` (2025-02-01) | 400,000 | 8,192 |")
    assert set(m2) >= {"file", "id", "evidence_url", "status", "old", "new"}
    assert report["at_risk"] == [{"file": "docs/models.md", "id": "m-2"}, {"file": "docs/old.md", "id": "o-1"}]
    command = report["rerecord_commands"][0]
    assert command.startswith("judge-replay judge --prompt v3 --claims ")
    assert str(claims / "models.json") in command and str(claims / "old.json") in command
    assert str(claims / "quotas.json") not in command and f"--run {old}-" in command
    assert command.endswith("--mode record --model claude-test --max-tokens 8192")  # what it asked
    params = parse_printed_command(command)  # parses with the real CLI, names files that are there
    assert params["prompt"] == "v3" and all(Path(p).is_file() for p in params["claims"])
    assert parse_printed_command(report["rerecord_commands"][1])["run_b"] == params["run_dir"]
    assert "drift:" in err and "2 claim(s)" in err

    code, out, _ = run_cli(capsys, "drift", old, "--against", new, "--claims", claims)
    assert code == 1
    flat = " ".join(out.replace("│", " ").split())
    assert "| `beta-2` (2025-02-01) | 200,000 | 8,192 | → | `beta-2` (2025-02-01) | 400,000 | 8,192 |" in flat
    assert "judge-replay judge --prompt v3" in out


def test_against_itself_nothing_at_risk_exit_0(tmp_path, capsys):
    old = write_recorded_run(tmp_path / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    code, out, err = run_cli(capsys, "drift", old, "--against", old, "--claims", write_claims(tmp_path / "c"), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert set(statuses(report).values()) == {"unchanged"} and report["at_risk"] == [] and report["rerecord_commands"] == []


def test_claims_read_from_the_manifest_paths(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_claims(tmp_path / "claims")
    old = write_recorded_run(tmp_path / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    manifest = json.loads((old / "run.json").read_text())
    for entry in manifest["claims"]:
        entry["path"] = f"claims/{Path(entry['file']).stem}.json"
    (old / "run.json").write_text(json.dumps(manifest))
    write_recorded_run(tmp_path / "r2", {MODELS: MODELS_V1.replace("| 200,000 |", "| 400,000 |"),
                                               QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    code, out, _ = run_cli(capsys, "drift", "r1", "--against", "r2", "--json")
    report = json.loads(out)
    assert code == 1 and report["at_risk"] == [{"file": "docs/models.md", "id": "m-2"}]
    assert report["rerecord_commands"][0].startswith("judge-replay judge --prompt v3 --claims claims/models.json --run r1-")


@pytest.mark.parametrize("argv, message", [
    (["--against", "nowhere"], "nowhere: no such run folder"),
    ([], "exactly one of --against"),
    (["--live", "--against", "X"], "exactly one of --against"),
    (["--against", "SELF", "--learn-url", "http://127.0.0.1:9"], "--learn-url only applies with --live"),
])
def test_bad_input_exit_2_with_one_line(tmp_path, capsys, argv, message):
    old = write_recorded_run(tmp_path / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    code, out, err = run_cli(capsys, "drift", old, *[str(old) if a == "SELF" else a for a in argv])
    assert code == 2 and message in err and "Traceback" not in err


def test_live_against_the_learn_stand_in_records_a_reproducible_snapshot(tmp_path, capsys):
    learn = start_learn(write_pages(tmp_path / "pages-v1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1}))
    try:
        with LearnClient(learn.url) as client:  # what the run's judge read: the first snapshot, as served
            served = {url: client.fetch(url).text for url in (MODELS, QUOTAS, OLD)}
        cassettes = tmp_path / "cassettes"
        old = write_recorded_run(cassettes / "v3-old", served)
        claims = write_claims(tmp_path / "claims")
        store = tmp_path / "store"

        code, out, err = run_cli(capsys, "drift", old, "--live", "--learn-url", learn.url, "--claims", claims,
                                 "--cassettes", cassettes, "--store", store, "--json")
        assert code == 0, err  # the stand-in still serves the pages the run read
        report = json.loads(out)
        assert set(statuses(report).values()) == {"unchanged"}

        learn.set_pages(second_snapshot(tmp_path))
        code, out, err = run_cli(capsys, "drift", old, "--live", "--learn-url", learn.url, "--claims", claims,
                                 "--cassettes", cassettes, "--store", store, "--json")
    finally:
        learn.stop()
    assert code == 1, err
    report = json.loads(out)
    assert statuses(report) == EXPECTED
    assert report["at_risk"] == [{"file": "docs/models.md", "id": "m-2"}, {"file": "docs/old.md", "id": "o-1"}]
    snapshot = Path(report["snapshot"])
    assert snapshot.parent == cassettes and snapshot.name.startswith("pages-") and report["against"] == str(snapshot)
    manifest = json.loads((snapshot / "run.json").read_text())
    assert (manifest["prompt"], manifest["model"], manifest["mode"]) == ("pages-snapshot", "none", "record")
    assert manifest["stand_ins"] == ["learn"] and len(manifest["claims"]) == 3
    assert Run(snapshot).page(OLD).sha256 is None  # "could not be retrieved" was recorded as such
    code, out, err = run_cli(capsys, "cassettes", "verify", snapshot)  # a snapshot is not a run to replay
    assert code == 2 and "skipped (a page snapshot" in out and "no run to verify" in err, out + err

    # reproducible: the same comparison offline, with the stand-in gone
    code, out, _ = run_cli(capsys, "drift", old, "--against", snapshot, "--claims", claims, "--json")
    assert code == 1 and statuses(json.loads(out)) == EXPECTED

    # the fetches went into the page store: the models page now has two versions
    code, out, _ = run_cli(capsys, "pages", "history", MODELS, "--store", store, "--cassettes", cassettes, "--json")
    assert code == 0 and len(json.loads(out)["versions"]) == 2


def test_a_live_snapshot_ends_its_sessions_after_recording_and_records_no_ending(tmp_path, capsys):
    learn = start_learn(write_pages(tmp_path / "pages-v1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1}),
                        strict_sessions=True)
    try:
        cassettes = tmp_path / "cassettes"
        old = write_recorded_run(cassettes / "v3-old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
        code, out, err = run_cli(capsys, "drift", old, "--live", "--learn-url", learn.url, "--claims",
                                 write_claims(tmp_path / "claims"), "--cassettes", cassettes, "--store", tmp_path / "store", "--json")
        calls, still_open = list(learn.calls), set(learn.app.sessions)
    finally:
        learn.stop()
    assert code in (0, 1), err
    assert calls.count("initialize") == 3 and calls[-3:] == ["DELETE"] * 3 and not still_open  # one session a file, each ended last
    snapshot = Path(json.loads(out)["snapshot"])
    recorded = [it for cassette in sorted(snapshot.glob("*.yaml")) for it in load_cassette(cassette)]
    assert recorded and {it.method for it in recorded} == {"POST"}  # the endings are not in the snapshot
    assert json.loads((snapshot / "run.json").read_text())["stats"]["interactions"] == len(recorded)


def test_a_live_snapshot_with_a_damaged_page_store_still_reports_and_warns(tmp_path, capsys):
    """The store is derived from the cassettes: one that cannot be written costs a warning, not the
    snapshot just fetched nor its report."""
    learn = start_learn(write_pages(tmp_path / "pages-v1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1}))
    try:
        cassettes, store = tmp_path / "cassettes", tmp_path / "store"
        old = write_recorded_run(cassettes / "v3-old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
        claims = write_claims(tmp_path / "claims")
        code, _, err = run_cli(capsys, "drift", old, "--live", "--learn-url", learn.url, "--claims", claims,
                               "--cassettes", cassettes, "--store", store, "--json")
        assert code == 0, err
        damage_page_store(store)
        code, out, err = run_cli(capsys, "drift", old, "--live", "--learn-url", learn.url, "--claims", claims,
                                 "--cassettes", cassettes, "--store", store, "--json")
    finally:
        learn.stop()
    assert code == 0, err
    assert (Path(json.loads(out)["snapshot"]) / "run.json").is_file()
    assert err.count("\n") == 1 and "warning: page store not updated (" in err and "a damaged one" in err


def test_a_live_snapshot_keeps_the_credentials_of_the_learn_url_nowhere(tmp_path, capsys):
    token = "tokCANARY" + "x9Y" * 8
    learn = start_learn(write_pages(tmp_path / "pages-v1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1}))
    try:
        cassettes = tmp_path / "cassettes"
        old = write_recorded_run(cassettes / "v3-old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
        code, out, err = run_cli(capsys, "drift", old, "--live", "--learn-url", f"{learn.url}?token={token}", "--claims",
                                 write_claims(tmp_path / "claims"), "--cassettes", cassettes, "--store", tmp_path / "store", "--json")
    finally:
        learn.stop()
    assert code in (0, 1), err
    snapshot = Path(json.loads(out)["snapshot"])
    assert json.loads((snapshot / "run.json").read_text())["learn_url"] == "http://127.0.0.1:8931/api/mcp?token=REDACTED"
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not [p for p in written if token.encode() in p.read_bytes()]
    assert token not in out + err


def test_live_with_a_tool_error_for_one_page_keeps_the_snapshot_and_leaves_its_claims_unchecked(tmp_path, capsys):
    """A real Learn endpoint may answer one fetch with a tool error (`isError`): that says nothing about the
    page, so its claims are unchecked (exit 1), and the other pages are still compared and kept."""
    from factories import LocalServer

    served = {MODELS: MODELS_V1, OLD: OLD_V1}

    def respond(request: dict) -> tuple[int, dict[str, str], bytes]:
        if "id" not in request:  # notifications/initialized
            return 202, {}, b""
        if request["method"] == "initialize":
            result: dict = {"protocolVersion": "2025-03-26", "serverInfo": {"name": "scripted"}, "capabilities": {}}
        else:
            url = request["params"]["arguments"]["url"]
            text = served.get(url, "upstream failure")
            result = {"content": [{"type": "text", "text": text}], "isError": url not in served}
        return 200, {"content-type": "application/json"}, json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                                                     "result": result}).encode()

    server = LocalServer(respond, "/api/mcp")
    try:
        old = write_recorded_run(tmp_path / "cassettes" / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
        code, out, err = run_cli(capsys, "drift", old, "--live", "--learn-url", server.url, "--cassettes",
                                 tmp_path / "cassettes", "--store", tmp_path / "store", "--claims",
                                 write_claims(tmp_path / "claims"), "--json")
    finally:
        server.stop()
    assert code == 1 and "Traceback" not in err and "could not be checked" in err
    found = statuses(json.loads(out))
    assert found == {"m-1": "unchanged", "m-2": "unchanged", "m-3": "unchanged", "q-1": "unchecked", "o-1": "unchanged"}
    (snapshot,) = [p for p in (tmp_path / "cassettes").iterdir() if p.name.startswith("pages-")]
    assert (snapshot / "run.json").is_file()  # the snapshot landed, its failed fetch recorded as answered
    assert sorted(p.name for p in (tmp_path / "cassettes").iterdir()) == sorted(["r1", snapshot.name])  # staged, moved in


def test_live_with_learn_unreachable_exits_1(tmp_path, capsys):
    learn = start_learn(write_pages(tmp_path / "pages", {MODELS: MODELS_V1}))
    url = learn.url
    learn.stop()
    old = write_recorded_run(tmp_path / "cassettes" / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    code, _, err = run_cli(capsys, "drift", old, "--live", "--learn-url", url, "--cassettes", tmp_path / "cassettes",
                           "--store", tmp_path / "store", "--claims", write_claims(tmp_path / "claims"))
    assert code == 1 and "cannot reach the Learn MCP endpoint" in err and "Traceback" not in err
    assert [p.name for p in (tmp_path / "cassettes").iterdir()] == ["r1"]  # no half snapshot left behind


def test_real_learn_pages_served_in_turn(tmp_path, capsys):
    """The real before/after pages through the stand-in: a changed retirement date flips exactly its claim."""
    changes = json.loads((LEARN_PAGES / "changes.json").read_text("utf-8"))
    date, same = changes[9], "| `o1` | 2024-12-17 | No earlier than December 17, 2025 |"
    url = date["page_url"]
    learn = start_learn(LEARN_PAGES / "before")
    try:
        with LearnClient(learn.url) as client:
            before = client.fetch(url).text
        results = [{"file": "docs/r.md", "results": [
            {"id": "r-1", "judge_verdict": "grounded", "evidence_url": url, "evidence_quote": date["before"].strip()},
            {"id": "r-2", "judge_verdict": "grounded", "evidence_url": url, "evidence_quote": same}]}]
        old = write_run(tmp_path / "cassettes" / "r-old", results=results, pages={"docs/r.md": {url: before}})
        claims = write_json(tmp_path / "claims" / "r.json", {"file": "docs/r.md", "claims": [
            {"id": "r-1", "claim": "gpt-4o-mini 2024-07-18 retires no earlier than July 18, 2025.", "claim_type": "status"},
            {"id": "r-2", "claim": "o1 2024-12-17 retires no earlier than December 17, 2025.", "claim_type": "status"}]})
        learn.set_pages(LEARN_PAGES / "after")
        code, out, err = run_cli(capsys, "drift", old, "--live", "--learn-url", learn.url, "--claims", claims,
                                 "--cassettes", tmp_path / "cassettes", "--store", tmp_path / "store", "--json")
    finally:
        learn.stop()
    assert code == 1, err
    report = json.loads(out)
    assert statuses(report) == {"r-1": "value-changed", "r-2": "changed-quote-intact"}
    r1 = report["claims"][0]
    assert "July 18, 2025" in r1["old"] and "September 15, 2025" in r1["new"]


def test_without_claims_text_the_quotes_alone_are_checked_and_the_user_is_told(tmp_path, capsys):
    old = write_recorded_run(tmp_path / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    new = write_recorded_run(tmp_path / "r2", {MODELS: MODELS_V1.replace("| 200,000 |", "| 400,000 |"),
                                               QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    code, out, err = run_cli(capsys, "drift", old, "--against", new)
    assert code == 1 and "were not found" in err and "--claims" in err
    assert "value-changed" in out and "docs/models.md:m-2" in out and "2 claim(s) unchanged" in out


def test_a_quote_gone_claim_is_listed_at_risk_and_drift_exits_1(tmp_path, capsys):
    """Change #6 of the real pages removes the `gpt-4` 1106-Preview row: the quote on it is gone."""
    from replay.sim.learn import load_page

    change = json.loads((LEARN_PAGES / "changes.json").read_text("utf-8"))[6]
    before, after = (load_page(LEARN_PAGES / s / change["file"]).body for s in ("before", "after"))
    url, quote = change["page_url"], change["before"].strip()
    results = [{"file": "docs/m.md", "results": [
        {"id": "m-1", "judge_verdict": "grounded", "evidence_url": url, "evidence_quote": quote}]}]
    old = write_run(tmp_path / "old", results=results, pages={"docs/m.md": {url: before}})
    new = write_run(tmp_path / "new", results=results, pages={"docs/m.md": {url: after}})
    claims = write_json(tmp_path / "claims" / "m.json", {"file": "docs/m.md", "claims": [
        {"id": "m-1", "claim": "gpt-4 1106-Preview accepts 128,000 input tokens.", "claim_type": "tpm"}]})

    code, out, err = run_cli(capsys, "drift", old, "--against", new, "--claims", claims, "--json")
    report = json.loads(out)
    assert code == 1 and statuses(report) == {"m-1": "quote-gone"}
    assert report["at_risk"] == [{"file": "docs/m.md", "id": "m-1"}] and "1 claim(s)" in err
    code, out, _ = run_cli(capsys, "drift", old, "--against", new, "--claims", claims)
    assert code == 1 and "at risk (1): docs/m.md:m-1" in out


def _as_stand_in_run(folder: Path) -> Path:
    """Mark a run folder as recorded against the two stand-ins, with endpoints stored canonically."""
    manifest = json.loads((folder / "run.json").read_text())
    manifest.update(stand_ins=["learn", "model"], learn_url="http://127.0.0.1:8931/api/mcp",
                    anthropic_base_url="http://127.0.0.1:8932")
    (folder / "run.json").write_text(json.dumps(manifest))
    return folder


def test_stand_in_runs_are_marked_and_the_re_record_command_targets_the_stand_ins(tmp_path, capsys):
    claims = write_claims(tmp_path / "claims")
    old = _as_stand_in_run(write_recorded_run(tmp_path / "old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1}))
    new = write_recorded_run(tmp_path / "new", {MODELS: MODELS_V1.replace("| 200,000 |", "| 400,000 |"),
                                                QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    code, out, _ = run_cli(capsys, "drift", old, "--against", new, "--claims", claims, "--json")
    report = json.loads(out)
    assert code == 1 and report["stand_ins"] == {"run": ["learn", "model"], "against": []}
    assert [n.split(":")[0] for n in report["notes"]] == [
        "runs used the local stand-in judge (test equipment), not Claude",
        "pages came from the local Learn stand-in (test equipment), not learn.microsoft.com"]
    params = parse_printed_command(report["rerecord_commands"][0])
    assert (params["learn_url"], params["anthropic_base_url"]) == ("http://127.0.0.1:8931/api/mcp", "http://127.0.0.1:8932")

    code, out, _ = run_cli(capsys, "drift", old, "--against", new, "--claims", claims)
    assert code == 1 and out.startswith("runs used the local stand-in judge (test equipment), not Claude: ")
    assert "--anthropic-base-url http://127.0.0.1:8932" in out


def test_terminal_output_shows_planted_escape_sequences_as_text(tmp_path, capsys):
    planted = "\x1b]0;owned\x07\x1b[2J"
    old = write_recorded_run(tmp_path / "old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    new = write_recorded_run(tmp_path / "new", {
        MODELS: MODELS_V1.replace("| 200,000 |", f"| 400,000 {planted}|"), QUOTAS: QUOTAS_V1, OLD: None})
    results = json.loads((old / "results.json").read_text())
    results["files"][0]["results"][1]["id"] = f"m-2{planted}"
    (old / "results.json").write_text(json.dumps(results))
    code, out, err = run_cli(capsys, "drift", old, "--against", new)
    assert code == 1 and "value-changed" in out
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;owned\\x07" in out  # shown, not obeyed


def test_json_output_escapes_c1_controls_and_bidi_overrides_and_keeps_ordinary_text(tmp_path, capsys):
    planted = "\u202eevil \x9b31m \x90 \x1b[2J"
    old = write_recorded_run(tmp_path / "old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    new = write_recorded_run(tmp_path / "new", {
        MODELS: MODELS_V1.replace("| 200,000 |", f"| 400,000 {planted} modèle 概要 |"), QUOTAS: QUOTAS_V1, OLD: None})
    code, out, _ = run_cli(capsys, "drift", old, "--against", new, "--json")
    assert code == 1
    for raw in ("\u202e", "\x9b", "\x90", "\x1b"):
        assert raw not in out
    assert "\\u202eevil \\u009b31m \\u0090 \\u001b[2J modèle 概要" in out  # escaped, ordinary text as is
    m2 = next(c for c in json.loads(out)["claims"] if c["id"] == "m-2")
    assert planted in m2["new"]  # the same JSON: the escapes decode to the page's characters


PRICING = "https://azure.microsoft.com/en-us/pricing/details/cognitive-services/openai-service/"


def run_citing(folder: Path, pages: dict[str, str | None], outage: str | None = None) -> Path:
    """A run whose two claims cite QUOTAS and the Azure pricing page (outside Learn); `outage`: a URL
    whose fetch got an HTTP 500 (a Learn outage) instead of a reply."""
    from dataclasses import replace

    from factories import fetch_interaction
    from replay.cassettes.cassette import load_cassette, save_cassette
    from replay.runs.names import cassette_name

    results = [{"file": "docs/p.md", "results": [
        {"id": "q-1", "judge_verdict": "grounded", "rule": "", "evidence_url": QUOTAS,
         "evidence_quote": "The default quota is 30 requests per minute.", "reason": "stated"},
        {"id": "p-1", "judge_verdict": "source_silent", "rule": "", "evidence_url": PRICING, "evidence_quote": "",
         "reason": "not a Learn page"}]}]
    write_run(folder, results=results, pages={"docs/p.md": pages})
    if outage:
        cassette = folder / cassette_name("docs/p.md")
        failed = replace(fetch_interaction(outage, "", rpc_id=9), status=500, reason="Internal Server Error",
                         response_body="upstream error", response_headers={"content-type": ["text/plain"]})
        save_cassette(cassette, [*load_cassette(cassette), failed])
    return folder


def test_a_refused_url_is_no_page_and_a_later_outage_is_not_checked_rather_than_gone(tmp_path, capsys):
    from replay.learn.wire import NOT_LEARN_REFUSAL

    old = run_citing(tmp_path / "old", {QUOTAS: QUOTAS_V1, PRICING: NOT_LEARN_REFUSAL})
    same = run_citing(tmp_path / "same", {QUOTAS: QUOTAS_V1, PRICING: NOT_LEARN_REFUSAL})
    code, out, err = run_cli(capsys, "drift", old, "--against", same)
    flat = " ".join(out.split())
    assert code == 0, err
    assert "1 claim(s) on azure.microsoft.com/en-us/pricing/details/cognitive-services/openai-service/: no page to " \
           "compare, not at risk (not a Learn page: the server refused the URL as outside Microsoft Learn" in flat
    assert "1 claim(s) unchanged: their page is byte-for-byte the same" in flat  # the quotas claim alone
    assert "nothing at risk" in flat
    code, out, _ = run_cli(capsys, "drift", old, "--against", same, "--json")
    report = json.loads(out)
    assert statuses(report) == {"q-1": "unchanged", "p-1": "no-page"}
    assert {p["url"]: p["state"] for p in report["pages"]}[PRICING] == "no-page"

    down = run_citing(tmp_path / "down", {PRICING: NOT_LEARN_REFUSAL}, outage=QUOTAS)
    code, out, err = run_cli(capsys, "drift", old, "--against", down)
    flat = " ".join(out.replace("│", " ").split())
    assert code == 1 and "page-gone" not in out and "unchecked" in out and "\nat risk (" not in out
    assert "1 claim(s) not checked: the later run has no version of their page (its fetch failed, or it did not read " \
           "the page); compare with a run that read it, or --live" in flat
    assert "could not be checked" in err

    # a later run that never read the quotas page (its claims cite the pricing page only): unchecked, never page-gone
    other = run_citing(tmp_path / "other", {PRICING: NOT_LEARN_REFUSAL})
    code, out, err = run_cli(capsys, "drift", old, "--against", other, "--json")
    assert code == 1 and statuses(json.loads(out))["q-1"] == "unchecked"
    assert "did not read the page" in err


ROOT = REPO


def test_a_bundled_demo_runs_re_record_goes_outside_the_project_and_says_why(capsys, monkeypatch):
    # recording beside cassettes/v3-demo would add a run without a snapshot (tests/test_snapshots.py fails)
    # and a new sibling that `diff` may pick: the suggestion records outside the project
    monkeypatch.chdir(ROOT)
    code, out, _ = run_cli(capsys, "drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09", "--json")
    report = json.loads(out)
    assert code == 1 and report["at_risk"]
    params = parse_printed_command(report["rerecord_commands"][0])
    target = Path(params["run_dir"]).resolve()
    assert not target.is_relative_to(ROOT), target
    assert parse_printed_command(report["rerecord_commands"][1])["run_b"] == params["run_dir"]
    assert report["rerecord_note"].startswith(f"{params['run_dir']} is outside the project: a run folder in "
                                              "cassettes/ is part of it")
    assert "pytest tests/test_snapshots.py --snapshot-update" in report["rerecord_note"]
    code, out, _ = run_cli(capsys, "drift", "cassettes/v3-demo", "--against", "cassettes/v3-demo-2026-09")
    assert f"({params['run_dir']} is outside the project: " in " ".join(out.split())


def test_a_users_run_is_re_recorded_beside_it_saying_what_that_adds(tmp_path, capsys):
    old = write_recorded_run(tmp_path / "cassettes" / "v3-old", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    new = write_recorded_run(tmp_path / "cassettes" / "v3-new",
                             {MODELS: MODELS_V1.replace("| 200,000 |", "| 400,000 |"), QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    code, out, _ = run_cli(capsys, "drift", old, "--against", new, "--claims", write_claims(tmp_path / "c"), "--json")
    report = json.loads(out)
    folder = parse_printed_command(report["rerecord_commands"][0])["run_dir"]
    assert code == 1 and Path(folder).parent == old.parent and Path(folder).name.startswith("v3-old-")
    assert report["rerecord_note"] == (
        f"{folder} is a new run folder beside {old}: `diff` may use it as a controlled run of its siblings, and a "
        "project whose tests snapshot every run needs its snapshot written (pytest --snapshot-update)")


def test_a_run_whose_cassettes_are_missing_is_refused_not_reported_as_changed(tmp_path, capsys):
    """Without its cassettes a run holds none of the pages its judge read: every claim would look changed."""
    old = write_recorded_run(tmp_path / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    later = write_recorded_run(tmp_path / "r2", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1})
    assert run_cli(capsys, "drift", old, "--against", later)[0] == 0
    (old / Run(old).cassette_path("docs/quotas.md").name).rename(old / "renamed.yaml")
    code, out, err = run_cli(capsys, "drift", old, "--against", later)
    assert code == 2 and out == "" and "Traceback" not in err
    assert "the cassette of 1 claims file(s) is missing (docs/quotas.md)" in err and str(old) in err


def test_cassettes_whose_names_a_copy_decomposed_are_found(tmp_path, capsys):
    """A run copied through macOS keeps `docs_modèles.md~….yaml` spelt NFD: the same cassette."""
    import shutil
    import unicodedata

    from factories import write_run

    file = "docs/modèles.md"
    results = [{"file": file, "results": [{"id": "m-1", "judge_verdict": "grounded", "rule": "", "evidence_url": MODELS,
                                           "evidence_quote": CLAIMS["docs/models.md"][0]["quote"], "reason": "stated"}]}]
    old = write_run(tmp_path / "r1", results=results, pages={file: {MODELS: MODELS_V1}})
    later = write_run(tmp_path / "r2", results=results, pages={file: {MODELS: MODELS_V1}})
    cassette = Run(old).cassette_path(file)
    shutil.move(cassette, cassette.with_name(unicodedata.normalize("NFD", cassette.name)))
    assert not cassette.exists()
    code, out, err = run_cli(capsys, "drift", old, "--against", later, "--json")
    assert code == 0, err
    assert statuses(json.loads(out)) == {"m-1": "unchanged"}


def test_live_snapshots_of_one_second_get_names_of_their_own_and_killed_ones_are_swept(tmp_path):
    """Two snapshots taken in the same second: the second is `-2`, and says so in its run.json; a folder a
    killed `drift --live` left in the staging area (no process holds it) is removed by the next one."""
    from datetime import datetime, timezone

    from replay.judge.page_snapshot import record_page_snapshot

    learn = start_learn(write_pages(tmp_path / "pages", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1}))
    try:
        old = Run(write_recorded_run(tmp_path / "cassettes" / "r1", {MODELS: MODELS_V1, QUOTAS: QUOTAS_V1, OLD: OLD_V1}))
        dead = tmp_path / "cassettes" / ".judge-replay-staging" / "pages-20261201-000000.drift-live-dead0001"
        dead.mkdir(parents=True)
        (dead / "docs_models.md.yaml").write_text("half")
        now = datetime(2026, 12, 1, 6, 0, 0, tzinfo=timezone.utc)
        first = record_page_snapshot(old, learn.url, tmp_path / "cassettes", now)
        second = record_page_snapshot(old, learn.url, tmp_path / "cassettes", now)
    finally:
        learn.stop()
    assert (first.name, second.name) == ("pages-20261201-060000", "pages-20261201-060000-2")
    assert Run(second).manifest.run_id == "pages-20261201-060000-2"
    assert sorted(p.name for p in (tmp_path / "cassettes").iterdir()) == ["pages-20261201-060000",
                                                                        "pages-20261201-060000-2", "r1"]
