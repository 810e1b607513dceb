"""judge live / record / replay hold a finished conversation's results compactly (`schema.common.held`), a claims
batch until its conversation starts, and write results.json one claims file at a time: each compact form
reads back equal, and every file written is the text the whole-run form wrote."""

from __future__ import annotations

import json
import math
import random
import shutil
import string
from pathlib import Path
from typing import Any

import pytest

from factories import write_json
from replay.secrets import registry as _secrets
from replay.files.atomic import atomic_write_chunks, write_model
from replay.files.json_text import dump_json
from replay.files.inputs import load_claims
from replay.runs.receipts import PIECE, receipt_for
from replay.schema.results import ClaimResult, FileResult, HeldFiles, ResultsFile, ToolCall, Usage
from replay.schema.claims import ClaimsBatch
from replay.schema.common import held, restored
from replay.judge.held import HeldClaims, RunResults, results_json
from replay.judge.replaying import _replay_in_full, _run_claims, _run_prompt, replay_run, replayed_run
from replay.judge.runner import judged_run, run_judge
from replay.runs.folder import Run
from replay.sim import start_learn, start_model
from locations import REPO

ROOT = REPO
DEMO = ROOT / "demo"
CASSETTES = ROOT / "cassettes"


def _text(rng: random.Random) -> str:
    """Text with what JSON writers treat apart: quotes, backslashes, line breaks, controls, bidi, non-ASCII."""
    pool = string.ascii_letters + ' "\\\n\t\x1b\x07\u202e\u00e9\u4e2d\U0001f600/<>&'
    return "".join(rng.choice(pool) for _ in range(rng.randrange(0, 40)))


def _file_result(rng: random.Random, n: int) -> FileResult:
    results = [ClaimResult(id=f"c{n}-{i}", judge_verdict=rng.choice(["grounded", "not_grounded", None]),
                           rule=rng.choice(["", "R1"]), evidence_url=_text(rng), evidence_quote=_text(rng),
                           reason=_text(rng), quote_verified=rng.choice([True, False, None]),
                           error=rng.choice([None, _text(rng)]))
               for i in range(rng.randrange(0, 4))]
    calls = [ToolCall(tool="microsoft_docs_fetch", arguments={"url": _text(rng), "n": rng.choice([1, 2.5, 1e-05, -0.0])},
                      url=_text(rng), result_urls=[_text(rng) for _ in range(rng.randrange(0, 3))])
             for _ in range(rng.randrange(0, 3))]
    return FileResult(file=f"docs/{n}-{_text(rng)}.md", results=results,
                      usage=rng.choice([None, Usage(input_tokens=rng.randrange(10**6), output_tokens=7)]),
                      tool_calls=rng.choice([None, calls]), turns=rng.choice([None, 3]),
                      warnings=rng.choice([None, [], [_text(rng)]]), cost_usd=rng.choice([None, 0.1, 1.25e-05, 3.0]),
                      batch=rng.choice([None, True, False]), **rng.choice([{}, {"extra": {"x": [1, _text(rng)]}}]))


def _results_file(rng: random.Random, files: int) -> ResultsFile:
    return ResultsFile(prompt=_text(rng), prompt_sha256="ab" * 32, model="claude-x", recorded_at="2026-01-01T00:00:00Z",
                       stand_ins=rng.choice([[], ["learn", "model"]]), cost_usd=rng.choice([None, 0.5, 2e-06]),
                       frozen=rng.choice([True, False]), files=[_file_result(rng, n) for n in range(files)],
                       **rng.choice([{}, {"note": _text(rng)}]))


# --------------------------------------------------------------------------- results.json one file at a time


@pytest.mark.parametrize("seed", range(40))
def test_results_json_in_pieces_is_the_text_write_model_writes(seed: int) -> None:
    rng = random.Random(seed)
    whole = _results_file(rng, rng.choice([0, 1, 2, 5]))
    expected = dump_json(whole.model_dump(mode="json", exclude_none=False))
    pieces = list(results_json(whole.model_copy(update={"files": []}), whole.files))
    assert "".join(pieces) == expected
    assert len(pieces) == (len(whole.files) + 2 if whole.files else 1)  # the header, one per claims file, the end
    assert all(piece.endswith("\n") for piece in pieces)  # whole lines: where a secret cannot be cut


@pytest.mark.parametrize("name", ["v1-demo", "v3-demo", "v3-demo-2026-09"])
def test_a_recorded_results_file_is_written_again_byte_for_byte(name: str, tmp_path: Path) -> None:
    recorded = ResultsFile.model_validate_json((CASSETTES / name / "results.json").read_bytes())
    results = RunResults(recorded.model_copy(update={"files": []}), lambda: iter(recorded.files))
    results.write(tmp_path / "results.json")
    write_model(tmp_path / "whole.json", recorded)
    assert (tmp_path / "results.json").read_bytes() == (tmp_path / "whole.json").read_bytes() == (
        CASSETTES / name / "results.json").read_bytes()
    assert results.whole() == recorded


def test_a_write_that_fails_part_way_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("before\n", "utf-8")

    def pieces() -> Any:
        yield "one\n"
        raise RuntimeError("the run stopped")

    with pytest.raises(RuntimeError):
        atomic_write_chunks(path, pieces())
    assert path.read_text("utf-8") == "before\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left


# --------------------------------------------------------------------------- compact forms read back equal


@pytest.mark.parametrize("seed", range(20))
def test_held_results_read_back_equal_and_are_compact(seed: int) -> None:
    rng = random.Random(seed)
    results = [_file_result(rng, n) for n in range(6)]
    kept = HeldFiles(results)
    assert len(kept) == 6 and list(kept) == results and list(kept) == results  # read as often as needed
    for result in results:
        compact = held(result)
        assert isinstance(compact, bytes) and len(compact) < len(result.model_dump_json())
        assert restored(compact, FileResult) == result


def test_a_result_whose_json_would_not_read_back_equal_is_held_as_it_is() -> None:
    odd = FileResult(file="a", results=[], tool_calls=[ToolCall(tool="t", arguments={"x": math.nan})])
    assert held(odd) is odd
    surrogate = FileResult(file="b\ud800", results=[])
    assert held(surrogate) is surrogate
    assert [r is given for r, given in zip(HeldFiles([odd, surrogate]), [odd, surrogate])] == [True, True]


def test_held_claims_give_back_the_batch(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", {"file": "docs/a.md", "note": {"kept": [1, 2.5]}, "claims": [
        {"id": "1", "claim": "Caf\u00e9 \u202e", "claim_type": "sku", "evidence_url": "https://x", "extra": None},
        {"id": "2", "claim": "two", "claim_type": "tpm"}]})
    [(path, batch)] = load_claims([tmp_path / "a.json"])
    claims = HeldClaims.of(batch)
    assert isinstance(claims.kept, bytes) and (claims.file, claims.count) == ("docs/a.md", 2)
    assert claims.batch() == batch and claims.batch().model_dump() == batch.model_dump()
    assert isinstance(claims.batch(), ClaimsBatch)


# --------------------------------------------------------------------------- a run, held


def test_a_recorded_run_is_held_compactly_and_written_as_the_whole_run_form(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    options = dict(model="claude-sonnet-4-6", concurrency=3, progress=False)  # a model with a price
    with start_learn(DEMO / "pages" / "2026-06") as learn, start_model() as model:
        options.update(learn_url=learn.url, anthropic_base_url=model.url)
        recorded = judged_run("v3", [DEMO / "claims"], "runs/r", "record", **options)  # type: ignore[arg-type]
        live = run_judge("v3", [DEMO / "claims"], None, "live", **options)  # type: ignore[arg-type]
    assert recorded.header.files == [] and recorded.header.cost_usd is not None
    whole = recorded.whole()
    assert len(whole.files) > 1 and list(recorded.files()) == whole.files  # read again, the same
    on_disk = (tmp_path / "runs" / "r" / "results.json").read_bytes()
    assert on_disk == dump_json(whole.model_dump(mode="json", exclude_none=False)).encode("utf-8")
    assert live.model_dump(exclude={"recorded_at"}) == whole.model_dump(exclude={"recorded_at"})
    run = Run("runs/r")
    in_full, _ = _replay_in_full(run, _run_prompt(run), _run_claims(run), concurrency=2, progress=False)
    assert len(in_full) == len(whole.files) and all(isinstance(kept, bytes) for kept in in_full._held)
    replayed = replayed_run("runs/r", use_receipt=False)
    assert replayed.header.files == [] and replayed.whole() == replay_run("runs/r")
    assert [f.model_dump(exclude={"cost_usd"}) for f in replayed.files()] == [
        f.model_dump(exclude={"cost_usd"}) for f in whole.files]
    replayed.write(tmp_path / "out.json")
    write_model(tmp_path / "whole.json", replayed.whole())
    assert (tmp_path / "out.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
    assert json.loads(on_disk)["cost_usd"] == whole.cost_usd


# --------------------------------------------------------------------------- a receipt's inputs, read in pieces


@pytest.mark.parametrize("before", [b"", "\u00e9".encode("utf-8")])
def test_a_secret_across_two_pieces_of_a_large_input_is_found(cached_project: Path, before: bytes) -> None:
    """results.json is hashed and searched in pieces (`PIECE` bytes): a secret cut by a piece's end (after a
    character whose bytes the cut splits, too) still stops the receipt, as a search of the whole does."""
    shutil.copytree(CASSETTES / "v3-demo", cached_project / "run")
    shutil.copytree(DEMO / "claims", cached_project / "demo" / "claims")
    run = Run("run")
    prompt, batches = _run_prompt(run), _run_claims(run)
    secret = "sk-ant-a-secret-cut-in-two-0123456789"
    _secrets.remember(secret)
    assert receipt_for(run, prompt, batches) is not None  # it occurs in no input yet
    results = cached_project / "run" / "results.json"
    head = results.read_bytes() + b" " * (3 * PIECE - results.stat().st_size - 10 - len(before)) + before
    results.write_bytes(head + secret.encode("utf-8") + b"\n")
    assert len(head) + len(secret) // 2 > 3 * PIECE > len(head)
    assert receipt_for(run, prompt, batches) is None
    results.write_bytes(head + secret[:-1].encode("utf-8") + b"\n")  # not the secret: a receipt again
    assert receipt_for(run, prompt, batches) is not None
