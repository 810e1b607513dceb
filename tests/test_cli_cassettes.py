"""`judge-replay cassettes audit|verify|list`, end to end (runs recorded against the local stand-ins)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from factories import write_run
from replay._cassette import load_cassette, save_cassette
from replay._cli.main import main
from replay._runner import run_judge
from replay._runs import cassette_name
from replay._sim import start_learn, start_model

REPO = Path(__file__).resolve().parents[1]
REAL = Path(__file__).resolve().parent / "data" / "real-cassettes"
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
    assert out.strip() == "no secrets found in 11 cassettes (16 interactions)"


def test_audit_reports_a_planted_key_masked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load((REAL / "langchain" / "test_agent_loop.v1.yaml").read_text())
    data["interactions"][0]["request"]["headers"]["Authorization"] = [f"Bearer {KEY}"]
    (tmp_path / "leak.yaml").write_text(yaml.safe_dump(data))
    code, out, err = run_cli(capsys, "cassettes", "audit", str(tmp_path))
    assert code == 1
    assert "leak.yaml: interaction 0, request.headers.Authorization: authorization header Bearer…" in out
    assert KEY not in out + err and KEY[13:40] not in out + err
    assert "1 secret(s) found in 1 of 1 file(s)" in err


def test_audit_of_a_missing_path_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "cassettes", "audit", str(tmp_path / "nope"))
    assert code == 2 and "nope: no such file or folder" in err and "Traceback" not in err


def test_verify_a_faithful_run(recorded_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "cassettes", "verify", str(recorded_run))
    assert code == 0, out
    assert "ok (" in out and "results reproduced" in out


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


def test_list_shows_one_row_per_run(recorded_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "runs"
    copy_run(recorded_run, root / "v3-test")
    write_run(root / "a-synthetic", results=[{"file": "docs/x.md", "results": []}], pages={"docs/x.md": {"https://learn.microsoft.com/a": "text"}})
    code, out, _ = run_cli(capsys, "cassettes", "list", str(root))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["run", "prompt", "model", "recorded", "files", "interactions", "tokens", "in/out", "stand-ins"]
    assert lines[1].split()[:6] == ["a-synthetic", "v3", "claude-test", "2026-11-30T10:00:00Z", "1", "1"]
    row = lines[2].split()
    manifest = json.loads((recorded_run / "run.json").read_text())
    assert row[:5] == ["v3-test", "v3", "claude-test", manifest["recorded_at"], "2"]
    assert int(row[5]) == manifest["stats"]["interactions"]
    assert row[6] == f'{manifest["stats"]["input_tokens"]}/{manifest["stats"]["output_tokens"]}'
    assert row[7:] == ["learn,", "model"]
    code, out, _ = run_cli(capsys, "cassettes", "list", str(root), "--json")
    assert [r["run"] for r in json.loads(out)] == ["a-synthetic", "v3-test"]


def test_list_of_a_missing_root_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "cassettes", "list", str(tmp_path / "none"))
    assert code == 2 and "no such folder of runs" in err
