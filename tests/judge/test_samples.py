"""`judge --samples K` and `--add-samples N`: the run layout, the majority, pinned pages, replay and verify,
batches, refusals, and a kill while samples are added."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factories import judge_demo
from locations import REPO
from replay.cli.main import main
from replay.core.sample_results import combined, split
from replay.schema.results import ClaimResult, FileResult, Usage
from replay.sim import start_model
from replay.sim.noise import ModelNoise

FILES = ("docs_azure-openai-models.md", "docs_evaluation.md", "docs_provisioned-throughput.md",
         "docs_quotas-and-limits.md", "docs_regions-and-lifecycle.md")


def snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir())}


def test_three_samples_one_run_pages_fetched_once(tmp_path: Path, demo_learn, capsys) -> None:
    with start_model() as model:
        assert judge_demo(demo_learn, model, str(tmp_path / "k1")) == 0
        one = len(demo_learn.fetches)
        assert judge_demo(demo_learn, model, str(tmp_path / "k3"), "--samples", "3") == 0
    assert len(demo_learn.fetches) - one == one  # the unique pages, not three times them
    run = tmp_path / "k3"
    names = {p.name for p in run.glob("*.yaml")}
    assert names == {f"{f}{s}.yaml" for f in FILES for s in ("", ".sample-2", ".sample-3")}
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["samples"] == 3
    assert manifest["claims"][0]["sample_cassettes"] == [f"{FILES[0]}.sample-2.yaml", f"{FILES[0]}.sample-3.yaml"]
    results = json.loads((run / "results.json").read_text())
    assert results["samples"] == 3
    claim = results["files"][0]["results"][0]
    assert [s["id"] for s in claim["samples"]] == [claim["id"]] * 3
    assert "samples" not in json.loads((tmp_path / "k1" / "results.json").read_text())
    assert "samples" not in json.loads((tmp_path / "k1" / "run.json").read_text())
    # the model calls of every sample are counted and priced
    k1 = json.loads((tmp_path / "k1" / "run.json").read_text())
    assert manifest["stats"]["model_calls"] == 3 * k1["stats"]["model_calls"]
    out = capsys.readouterr().out
    assert "the 2 sample(s) beyond the first cost $" in out
    assert main(["cassettes", "verify", str(run)]) == 0
    assert main(["judge", "--mode", "replay", "--run", str(run), "--no-progress", "--out", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["files"] == results["files"]


def test_verify_fails_when_a_sample_is_missing_or_not_reproduced(tmp_path: Path, demo_learn, capsys) -> None:
    with start_model(noise=ModelNoise(1.0, seed=3)) as model:
        assert judge_demo(demo_learn, model, str(tmp_path / "run"), "--samples", "2") == 0
    run = tmp_path / "run"
    (run / f"{FILES[1]}.sample-2.yaml").unlink()
    assert main(["cassettes", "verify", str(run)]) == 1
    capsys.readouterr()
    results = json.loads((run / "results.json").read_text())
    results["files"][0]["results"][0]["samples"][1]["judge_verdict"] = "source_silent"
    with start_model(noise=ModelNoise(1.0, seed=3)) as model:
        assert judge_demo(demo_learn, model, str(tmp_path / "run2"), "--samples", "2") == 0
    run2 = tmp_path / "run2"
    data = json.loads((run2 / "results.json").read_text())
    data["files"][0]["results"][0]["samples"][1]["reason"] = "edited"
    (run2 / "results.json").write_text(json.dumps(data, indent=2))
    assert main(["cassettes", "verify", str(run2)]) == 1


def test_noise_makes_samples_differ_and_the_run_says_so(tmp_path: Path, demo_learn, capsys) -> None:
    with start_model(noise=ModelNoise(0.5, seed=11)) as model:
        assert judge_demo(demo_learn, model, str(tmp_path / "run"), "--samples", "5", "--concurrency", "1") == 0
    run = tmp_path / "run"
    manifest = json.loads((run / "run.json").read_text())
    assert "model noise 0.5, seed 11" in manifest["stand_ins"]
    results = json.loads((run / "results.json").read_text())
    split_claims = [r for f in results["files"] for r in f["results"]
                    if len({s["judge_verdict"] for s in r["samples"]}) > 1]
    assert split_claims
    for r in split_claims:  # the top level is the majority, from the earliest sample giving it
        verdicts = [s["judge_verdict"] for s in r["samples"]]
        top = max(set(verdicts), key=lambda v: (verdicts.count(v), -verdicts.index(v)))
        assert r["judge_verdict"] == top
        assert {k: r[k] for k in r if k != "samples"} == r["samples"][verdicts.index(top)]
    capsys.readouterr()
    assert main(["grade", str(run), "--gold", str(REPO / "demo" / "gold-correctness-set.json")]) == 0
    assert "simulated model noise" in capsys.readouterr().out


def test_samples_go_into_the_same_batch_rounds(tmp_path: Path, demo_learn) -> None:
    with start_model() as model:
        assert judge_demo(demo_learn, model, str(tmp_path / "k1"), "--batch") == 0
        one = json.loads((tmp_path / "k1" / "run.json").read_text())["batch_ids"]
        assert judge_demo(demo_learn, model, str(tmp_path / "k2"), "--batch", "--samples", "2") == 0
    manifest = json.loads((tmp_path / "k2" / "run.json").read_text())
    assert len(manifest["batch_ids"]) == len(one)  # the same rounds, twice the entries
    assert manifest["stats"]["cache_read_input_tokens"] > 2 * json.loads(
        (tmp_path / "k1" / "run.json").read_text())["stats"]["cache_read_input_tokens"]
    assert main(["cassettes", "verify", str(tmp_path / "k2")]) == 0


def test_add_samples_keeps_the_recorded_ones_and_reads_their_pages(tmp_path: Path, demo_learn, capsys) -> None:
    run = tmp_path / "run"
    with start_model() as model:
        assert judge_demo(demo_learn, model, str(run)) == 0
        before = snapshot(run)
        fetched = len(demo_learn.fetches)
        common = ["--mode", "record", "--learn-url", demo_learn.url, "--anthropic-base-url", model.url, "--no-progress"]
        assert main(["judge", "--add-samples", "2", "--run", str(run), *common]) == 0
        assert len(demo_learn.fetches) == fetched  # every page served from the recorded sample
        after = snapshot(run)
        assert all(after[name] == data for name, data in before.items() if name.endswith((".yaml", ".md")))
        assert json.loads(after["run.json"])["samples"] == 3
        assert "added: samples 2 to 3" in capsys.readouterr().out
        assert main(["cassettes", "verify", str(run)]) == 0
        # refused, one line, exit 2: another prompt, --samples, replay mode
        for extra in (["--prompt", "v2"], ["--samples", "2"], ["--mode", "replay"], ["--batch"]):
            capsys.readouterr()
            assert main(["judge", "--add-samples", "1", "--run", str(run), *common, *extra]) == 2
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and "Traceback" not in err
        # adding samples is billed: without --mode record it is refused, nothing sent
        capsys.readouterr()
        assert main(["judge", "--add-samples", "1", "--run", str(run), *common[2:]]) == 2
        assert "give --mode record" in capsys.readouterr().err
        assert snapshot(run) == after


def test_a_kill_while_samples_are_added_leaves_the_run_as_it_was(tmp_path: Path, demo_learn) -> None:
    run = tmp_path / "run"
    with start_model() as model:
        assert judge_demo(demo_learn, model, str(run)) == 0
        before = snapshot(run)
        staging = tmp_path / ".judge-replay-staging" / "staging" / "run"
        command = [sys.executable, "-m", "replay.cli.main", "judge", "--mode", "record", "--add-samples", "3", "--run", str(run),
                   "--learn-url", demo_learn.url, "--anthropic-base-url", model.url, "--no-progress",
                   "--concurrency", "1"]
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while not list(staging.glob("*.sample-2.yaml")):
                assert proc.poll() is None, f"the command ended before a new sample was written: {proc.stderr.read()!r}"
                assert time.monotonic() < deadline
                time.sleep(0.005)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        assert snapshot(run) == before  # killed mid-way: as it was
        common = ["--mode", "record", "--learn-url", demo_learn.url, "--anthropic-base-url", model.url, "--no-progress"]
        assert main(["judge", "--add-samples", "1", "--run", str(run), *common]) == 0
    assert json.loads((run / "run.json").read_text())["samples"] == 2
    assert main(["cassettes", "verify", str(run)]) == 0


# --------------------------------------------------------------------------- combining samples (by hand)


def result(*verdicts: str | None, error: str | None = None, tokens: int = 10) -> FileResult:
    return FileResult(file="docs/a.md", results=[ClaimResult(id=f"c{i}", judge_verdict=v, error=None if v else "none")
                                                 for i, v in enumerate(verdicts)],
                      usage=Usage(input_tokens=tokens, output_tokens=1), turns=2, error=error)


def test_combined_takes_the_majority_counts_every_sample_and_splits_back() -> None:
    samples = [result("grounded", None, "grounded"), result("not_grounded", None, "source_silent", tokens=20),
               result("not_grounded", None, "grounded", error="boom", tokens=30)]
    both = combined(samples)
    assert [r.judge_verdict for r in both.results] == ["not_grounded", None, "grounded"]
    assert both.results[0].samples is not None and both.results[0] == both.results[0].samples[1].model_copy(
        update={"samples": both.results[0].samples})
    assert both.usage is not None and both.usage.input_tokens == 60 and both.turns == 6
    assert both.error == "sample 3: boom"
    assert both.needs_recording_again  # a sample left claim c1 without a verdict
    assert [s.model_dump() for s in split(both)] == [s.model_dump() for s in samples]
    assert combined([samples[0]]) is samples[0]
