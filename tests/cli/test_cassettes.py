"""`judge-replay cassettes audit|verify|list`, end to end (runs recorded against the local stand-ins)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from factories import write_run
from replay.cassettes.cassette import load_cassette, save_cassette
from replay.cli.main import main
from replay.judge.runner import run_judge
from replay.runs.folder import Run
from replay.runs.names import cassette_name
from replay.sim import start_learn, start_model
from locations import DATA, REPO

REAL = DATA / "real-cassettes"
KEY = "sk-ant-api03-" + "Zq9" * 27


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def recorded_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run: two demo claims files judged by the runner against the stand-ins, recorded."""
    run = tmp_path_factory.mktemp("runs") / "v3-test"
    claims = sorted((REPO / "demo" / "claims").glob("*.json"))[:2]
    learn, model = start_learn(REPO / "demo" / "pages" / "2026-06"), start_model()
    try:
        run_judge("v3", list(claims), run, "record", model="claude-test", learn_url=learn.url,
                  anthropic_base_url=model.url, progress=False)
    finally:
        learn.stop()
        model.stop()
    return run


def copy_run(run: Path, to: Path) -> Path:
    to.mkdir(parents=True)
    for f in run.iterdir():
        (to / f.name).write_bytes(f.read_bytes())
    return to


def test_audit_real_cassettes_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert REAL.is_dir(), f"{REAL} is missing"
    code, out, _ = run_cli(capsys, "cassettes", "audit", str(REAL))
    assert code == 0
    assert out.strip() == "no secrets found in 15 files: 11 cassettes (16 interactions), 0 other JSON or YAML files, 4 read as text"


def test_audit_reports_a_planted_key_masked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load((REAL / "langchain" / "test_agent_loop.v1.yaml").read_text())
    data["interactions"][0]["request"]["headers"]["Authorization"] = [f"Bearer {KEY}"]
    (tmp_path / "leak.yaml").write_text(yaml.safe_dump(data))
    code, out, err = run_cli(capsys, "cassettes", "audit", str(tmp_path))
    assert code == 1
    assert "leak.yaml: interaction 0, request.headers.Authorization: authorization header Bearer…" in out
    assert KEY not in out + err and KEY[13:40] not in out + err
    assert "1 secret(s) found in 1 of 1 file(s)" in err


def test_audit_scans_every_value_of_a_key_given_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a parser keeps a repeated key's last value: a secret in another went unread ("no secrets found"),
    # and a JSON file stopped the audit. Each value is scanned under its own name (a header or field
    # known by its name only), after a merge key, in a JSON body, in a `headers` or `interactions`
    # given twice; a key given thousands of times costs no more than thousands of keys
    token = "k7Qw9zX2mN4pL8rT1vB6yH3jF5dS0aGe"  # known as a secret by its header or field name only
    request = "    method: GET\n    uri: https://example.com/\n  response: {status: {code: 200}}\n"
    (tmp_path / "first.yaml").write_text(
        f"interactions:\n- request:\n    headers:\n      Authorization: [Bearer {KEY}]\n"
        f"      Authorization: [REDACTED]\n{request}version: 1\n", "utf-8")
    (tmp_path / "second.yaml").write_text(
        f"interactions:\n- request:\n    headers:\n      x-api-key: [REDACTED]\n      x-api-key: [{token}A1]\n"
        f"    body: '{{\"api_key\": \"{token}B2\", \"api_key\": \"none\"}}'\n{request}version: 1\n", "utf-8")
    (tmp_path / "merged.yaml").write_text(
        f"interactions:\n- request:\n    headers: {{<<: {{x-api-key: [REDACTED]}}, x-api-key: [{token}C3]}}\n"
        f"{request}version: 1\n", "utf-8")
    (tmp_path / "twice.yaml").write_text(
        f"interactions: []\ninteractions:\n- request:\n    headers: {{}}\n    headers: {{x-api-key: [{token}D4]}}\n"
        f"{request}version: 1\n", "utf-8")
    (tmp_path / "dup.json").write_text(f'{{"interactions": [], "api_key": "REDACTED", "api_key": "{token}E5"}}', "utf-8")
    (tmp_path / "many.json").write_text("{" + ",".join(['"a": 1'] * 5000) + "}", "utf-8")
    (tmp_path / "many.yaml").write_text("a: 1\n" * 5000, "utf-8")
    code, out, err = run_cli(capsys, "cassettes", "audit", str(tmp_path))
    assert code == 1, out + err
    lines = set(out.splitlines())
    assert f"{tmp_path / 'first.yaml'}: interaction 0, request.headers.Authorization: authorization header Bearer…" in out
    for name, where, kind, end in (("second.yaml", "request.headers.x-api-key", "x-api-key header", "A1"),
                                   ("second.yaml", "request.body.api_key", "secret field", "B2"),
                                   ("merged.yaml", "request.headers.x-api-key", "x-api-key header", "C3"),
                                   ("twice.yaml", "request.headers.x-api-key", "x-api-key header", "D4")):
        assert f"{tmp_path / name}: interaction 0, {where}: {kind} k7Qw9z…Ge{end}" in lines, out
    assert f"{tmp_path / 'dup.json'}: file, api_key: secret field k7Qw9z…GeE5" in lines, out
    assert "6 secret(s) found in 5 of 7 file(s)" in err and KEY not in out + err and token not in out + err


def test_audit_of_a_missing_path_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "cassettes", "audit", str(tmp_path / "nope"))
    assert code == 2 and "nope: no such file or folder" in err and "Traceback" not in err


def test_verify_a_faithful_run(recorded_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(recorded_run))
    assert code == 0, out
    assert "ok (" in out and "results reproduced" in out


def test_verify_skips_a_page_snapshot_among_the_runs_and_says_so(recorded_run: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # `cassettes verify cassettes/*` with a drift --live page snapshot among the runs: it stopped there
    # ("prompt.md: missing") and verified nothing else
    snapshot = tmp_path / "pages-20261201-082703"
    snapshot.mkdir()
    manifest = json.loads((recorded_run / "run.json").read_text("utf-8"))
    (snapshot / "run.json").write_text(json.dumps({**manifest, "prompt": "pages-snapshot", "model": "none", "stats": {**manifest["stats"], "model_calls": 0}}), "utf-8")
    code, out, err = run_cli(capsys, "cassettes", "verify", str(snapshot), str(recorded_run))
    assert code == 0, out + err
    assert out.splitlines()[0] == f"{snapshot}: skipped (a page snapshot drift --live wrote: it called no model, nothing to replay)"
    assert f"{recorded_run}: ok (" in out
    code, _, err = run_cli(capsys, "cassettes", "verify", str(snapshot))
    assert code == 2 and err.strip().endswith("holds only page snapshots, no run to verify"), err
    # a run of a prompt file named like a snapshot is verified: it called the model
    named = tmp_path / "named"
    shutil.copytree(recorded_run, named)
    (named / "run.json").write_text(json.dumps({**manifest, "prompt": "pages-snapshot"}), "utf-8")
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(named))
    assert "skipped" not in out and f"{named}: " in out, out


def test_verify_explains_a_changed_result(recorded_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = copy_run(recorded_run, tmp_path / "run")
    results = json.loads((run / "results.json").read_text())
    first = results["files"][0]
    claim = first["results"][0]
    was = claim["judge_verdict"]
    claim["judge_verdict"] = "source_silent" if was != "source_silent" else "grounded"
    (run / "results.json").write_text(json.dumps(results))
    code, out, err = run_cli(capsys, "cassettes", "verify", str(run))
    assert code == 1
    assert f'{first["file"]}: claim {claim["id"]}: judge_verdict: "{was}" in the replay, "{claim["judge_verdict"]}" recorded' in out
    assert "did not reproduce" in err


def test_verify_reports_unused_and_missing_interactions(recorded_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = json.loads((recorded_run / "run.json").read_text())
    name = manifest["claims"][0]["file"]
    extra = copy_run(recorded_run, tmp_path / "extra")
    path = extra / cassette_name(name)
    interactions = load_cassette(path)
    save_cassette(path, interactions + [interactions[-1]])
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(extra))
    assert code == 1
    assert f"{name}: recorded interaction {len(interactions)} (model turn" in out and "was never used by the replay" in out

    short = copy_run(recorded_run, tmp_path / "short")
    save_cassette(short / cassette_name(name), interactions[:-1])
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(short))
    assert code == 1
    assert f"{name}: the replay stopped:" in out and "request:  model turn" in out


def test_verify_fails_on_a_cassette_the_manifest_does_not_name(recorded_run: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # a cassette no claims file of run.json names ships with the run but is read by no replay (a killed
    # recording's staging folder, reused, would leave its old cassettes so): the run does not verify
    run = copy_run(recorded_run, tmp_path / "run")
    stale = run / cassette_name("docs/from-a-killed-recording.md")
    shutil.copyfile(next(run.glob("*.yaml")), stale)
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(run))
    assert code == 1
    assert out.splitlines()[1:] == [f"  {stale.name}: a cassette run.json names for no claims file (no replay reads it)"]


def test_list_shows_one_row_per_run(recorded_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    copy_run(recorded_run, root / "v3-test")
    write_run(root / "a-synthetic", results=[{"file": "docs/x.md", "results": []}], pages={"docs/x.md": {"https://learn.microsoft.com/a": "text"}})
    code, out, _ = run_cli(capsys, "cassettes", "list", str(root))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["run", "prompt", "model", "recorded", "files", "interactions", "tokens", "in+cached/out",
                                "cost", "stand-ins"]
    assert lines[1].split()[:6] == ["a-synthetic", "v3", "claude-test", "2026-11-30T10:00:00Z", "1", "1"]
    row = lines[2].split()
    manifest = json.loads((recorded_run / "run.json").read_text())
    assert row[:5] == ["v3-test", "v3", "claude-test", manifest["recorded_at"], "2"]
    assert int(row[5]) == manifest["stats"]["interactions"]
    stats = manifest["stats"]
    every_input = stats["input_tokens"] + stats["cache_creation_input_tokens"] + stats["cache_read_input_tokens"]
    assert row[6] == f'{every_input}/{stats["output_tokens"]}'
    assert row[7] == "unknown"  # claude-test has no price: never shown as 0
    assert row[8:] == ["learn,", "model"]
    code, out, _ = run_cli(capsys, "cassettes", "list", str(root), "--json")
    assert [r["run"] for r in json.loads(out)] == ["a-synthetic", "v3-test"]


def test_list_of_a_missing_root_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "cassettes", "list", str(tmp_path / "none"))
    assert code == 2 and "no such folder of runs" in err


def test_list_names_a_garbage_run_in_one_line_and_still_lists_the_others(recorded_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    copy_run(recorded_run, root / "good")
    binary = copy_run(recorded_run, root / "binary-cassettes")
    for cassette in binary.glob("*.yaml"):
        cassette.write_bytes(bytes(range(256)) * 8)
    (root / "garbage").mkdir()
    (root / "garbage" / "run.json").write_bytes(b"\x00\xff\xfe garbage")
    code, out, err = run_cli(capsys, "cassettes", "list", str(root))
    assert code == 2 and "Traceback" not in out + err
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["binary-cassettes", "good"]
    problems = [line for line in err.splitlines() if "/garbage/run.json" in line]
    assert len(problems) == 1 and str(root / "garbage" / "run.json") in problems[0]
    assert err.splitlines()[-1].endswith("1 run folder(s) could not be read (named above)")


def test_audit_lists_page_text_findings_apart_and_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from factories import fetch_interaction

    page = "Use a SAS URL such as https://acct.blob.core.windows.net/c?sv=2024-11-04&sig=Zx81kLm0PqR5tUv9wXy2Ab3Cd4%3D here."
    save_cassette(tmp_path / "c.yaml", [fetch_interaction("https://learn.microsoft.com/azure/storage/sas", page)])
    code, out, _ = run_cli(capsys, "cassettes", "audit", str(tmp_path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("in public Learn page text (1;")
    assert "credential in URL" in lines[1] and "https://learn.microsoft.com/azure/storage/sas" in lines[1]
    assert lines[-1] == "no secrets found in 1 file: 1 cassette (1 interaction), 0 other JSON or YAML files, 0 read as text"


def test_a_page_quoting_example_credentials_is_stored_exactly_and_the_run_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sas = "https://contoso.blob.core.windows.net/c/b.txt?sv=2024-11-04&sr=b&sp=r&sig=a1B2%2Bc3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ%3D"
    jwt = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    example = f"\n\nFor example, a SAS URL `{sas}` and a header `Authorization: Bearer {jwt}` (C:\\\\temp\\\\\"x\").\n"
    pages = tmp_path / "pages"
    pages.mkdir()
    for page in (REPO / "demo" / "pages" / "2026-06").glob("*.md"):
        (pages / page.name).write_text(page.read_text() + (example if page.name == "observability.md" else ""))
    claims = json.loads((REPO / "demo" / "claims" / "evaluation.json").read_text())
    (tmp_path / "evaluation.json").write_text(json.dumps({**claims, "claims": claims["claims"][:2]}))
    learn, model = start_learn(pages), start_model()
    try:
        run_judge("v3", [tmp_path / "evaluation.json"], tmp_path / "run", "record", model="claude-test",
                  learn_url=learn.url, anthropic_base_url=model.url, progress=False)
    finally:
        learn.stop()
        model.stop()
    url = "https://learn.microsoft.com/azure/ai-foundry/concepts/observability"
    stored = Run(tmp_path / "run").page(url)
    assert stored is not None and stored.text is not None and example.strip() in stored.text
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(tmp_path / "run"))
    assert code == 0, out
    code, out, _ = run_cli(capsys, "cassettes", "audit", str(tmp_path / "run"))
    assert code == 0 and "in public Learn page text" in out and url in out


def test_a_canary_key_and_learn_url_credentials_are_in_no_file_of_a_recorded_run(tmp_path: Path) -> None:
    import base64
    from urllib.parse import quote

    canary = "Kx7" + "".join(chr(ord("a") + (i * 5) % 26) + str(i % 9) for i in range(18)) + "q"  # 40, no key shape
    password, query_key = "pw" + canary[:18], "qk" + canary[18:]
    claims = json.loads((REPO / "demo" / "claims" / "evaluation.json").read_text())
    (tmp_path / "evaluation.json").write_text(json.dumps({**claims, "claims": claims["claims"][:1]}))
    learn, model = start_learn(REPO / "demo" / "pages" / "2026-06"), start_model()
    learn_url = learn.url.replace("http://", f"http://judge:{password}@") + f"?key={query_key}"
    try:
        run_judge("v3", [tmp_path / "evaluation.json"], tmp_path / "run", "record", model="claude-test",
                  learn_url=learn_url, anthropic_base_url=model.url, api_key=canary, progress=False)
    finally:
        learn.stop()
        model.stop()
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert len(files) >= 4
    for value in (canary, password, query_key):
        forms = [value, quote(value, safe=""), json.dumps(value)[1:-1]]
        forms += [base64.b64encode((p + value).encode()).decode()[len(p) * 2 + 4:-4] for p in ("", "u:", "us:")]
        for path in files:
            data = path.read_bytes().decode("utf-8", "replace")
            assert not any(form in data for form in forms), f"{path.name} holds a secret"


def test_list_counts_cached_input_tokens_as_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run recorded with prompt caching has almost no uncached input: "tokens in" is every input token."""
    run = write_run(tmp_path / "runs" / "cached", results=[{"file": "docs/x.md", "results": []}])
    manifest = json.loads((run / "run.json").read_text())
    manifest["stats"].update(input_tokens=0, cache_creation_input_tokens=1200, cache_read_input_tokens=34000,
                             output_tokens=500)
    (run / "run.json").write_text(json.dumps(manifest))
    code, out, _ = run_cli(capsys, "cassettes", "list", str(tmp_path / "runs"))
    assert code == 0 and out.splitlines()[1].split()[6] == "35200/500"
    code, out, _ = run_cli(capsys, "cassettes", "list", str(tmp_path / "runs"), "--json")
    assert json.loads(out)[0]["total_input_tokens"] == 35200


def test_list_reads_the_cassettes_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path / "recorded" / "r1", results=[{"file": "docs/x.md", "results": []}])
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    (tmp_path / "pyproject.toml").write_text('[tool.judge-replay]\ncassettes = "recorded"\n', "utf-8")
    code, out, err = run_cli(capsys, "cassettes", "list")
    assert code == 0, err
    assert [line.split()[0] for line in out.splitlines()] == ["run", "r1"]
    (tmp_path / "pyproject.toml").write_text('[tool.judge-replay\ncassettes = "recorded"\n', "utf-8")
    code, _, err = run_cli(capsys, "cassettes", "list")
    assert code == 2 and "pyproject.toml" in err and len(err.strip().splitlines()) == 1


def test_verify_shows_the_run_path_without_controls(recorded_run: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run = copy_run(recorded_run, tmp_path / "x\x1b]0;t\x07")
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(run))
    assert code == 0, out
    assert "\x1b" not in out and "\x07" not in out and "x\\x1b]0;t\\x07: ok" in out


def _forge_document_entries(run: Path, document: object) -> int:
    """Rewrite the parsed-cassette entry of every cassette of `run` to hold `document`, with every check
    of its header recomputed (as whoever can write the cache folder could): how many were forged."""
    import zlib

    from replay.cassettes.cache import entry_path
    from replay.cassettes.entry_format import encode

    forged = 0
    for cassette in sorted(run.glob("*.yaml")):
        load_cassette(cassette)  # the entry is written
        entry = entry_path(cassette)
        assert entry is not None and entry.is_file()
        line = json.loads(entry.read_bytes().partition(b"\n")[0])
        payload = encode(document)
        assert payload is not None
        line.update(payload_length=len(payload), payload_crc32=zlib.crc32(payload))
        entry.write_bytes(json.dumps(line).encode() + b"\n" + payload)
        for derived in entry.parent.glob(entry.stem + ".*.bin"):
            derived.unlink()  # what is derived from the document is derived again, from the forged one
        forged += 1
    return forged


def test_verify_reads_no_cache_entry_a_forged_one_changes_nothing(recorded_run: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 26, finding 2: verify trusted forged parse-cache entries (header checks recomputed)."""
    from replay.cassettes.cache import OFF_VARIABLE

    monkeypatch.delenv(OFF_VARIABLE, raising=False)
    run = copy_run(recorded_run, tmp_path / "run")
    assert _forge_document_entries(run, {"interactions": []}) > 0
    code, out, err = run_cli(capsys, "cassettes", "verify", str(run))
    assert code == 0 and "ok" in out, out + err


def test_a_hostile_marshal_or_code_payload_in_the_cache_is_ignored_and_rebuilt(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26, finding 3: a crafted marshal payload with a valid header crashed the interpreter; one
    holding a code object was read as a document. Neither is read now: the YAML is parsed again."""
    import marshal
    import subprocess
    import sys
    import zlib

    from replay.cassettes.cache import OFF_VARIABLE, entry_path

    monkeypatch.delenv(OFF_VARIABLE, raising=False)
    cassette = tmp_path / "docs_a.md.yaml"
    shutil.copy(sorted(REAL.rglob("*.yaml"))[0], cassette)
    expected = load_cassette(cassette)
    entry = entry_path(cassette)
    assert entry is not None and entry.is_file()
    line = json.loads(entry.read_bytes().partition(b"\n")[0])
    code_object = marshal.dumps(compile("open('x', 'w')", "f", "exec"))
    for payload in (code_object, (code_object * 4)[:132]):  # the second: a torn code object, 132 bytes
        line.update(payload_length=len(payload), payload_crc32=zlib.crc32(payload))
        entry.write_bytes(json.dumps(line).encode() + b"\n" + payload)
        assert load_cassette(cassette) == expected
        done = subprocess.run([sys.executable, "-c", "import sys; from replay.cassettes.cassette import load_cassette;"
                               f" print(len(load_cassette(sys.argv[1])))", str(cassette)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == str(len(expected)), done.stderr
