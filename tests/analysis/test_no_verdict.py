"""A claim without a verdict is never a negative: a run where conversations failed, graded, gated, shown.

The run is the demo's v3 run with two conversations failed the way the judge records a failure (the
file's `error`, and every claim of it with that `error` and no verdict), as after an API outage.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from factories import write_json
from replay.cli.main import main
from replay.core.commands import retry_failed_command
from replay.schema.manifest import RunManifest
from locations import REPO

ROOT = REPO
FAILED = {"docs/evaluation.md": "API error 529: overloaded (after 3 retries)",
          "docs/quotas-and-limits.md": "the answer was cut off (stop_reason max_tokens)"}


def _fail_files(results: dict, failed: dict[str, str]) -> dict:
    for fr in results["files"]:
        if fr["file"] in failed:
            fr["error"] = failed[fr["file"]]
            fr["results"] = [{"id": r["id"], "error": failed[fr["file"]]} for r in fr["results"]]
    return results


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with the demo gold set, v2-demo as baseline and v3-demo with two failed files."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "demo" / "gold-correctness-set.json", tmp_path / "gold.json")
    shutil.copytree(ROOT / "cassettes" / "v2-demo", tmp_path / "runs" / "v2")
    failed = shutil.copytree(ROOT / "cassettes" / "v3-demo", tmp_path / "runs" / "v3-failed")
    results = json.loads((failed / "results.json").read_text("utf-8"))
    write_json(failed / "results.json", _fail_files(results, FAILED))
    return tmp_path


def test_failed_claims_are_no_verdict_never_true_negatives(project, capsys):
    assert main(["grade", "runs/v3-failed", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # By hand, from the demo gold set: evaluation.md has 6 claims (eval-004, eval-005 wrong; 4 correct) and
    # quotas-and-limits.md 9 (quotas-002, -003 outdated, -004, -009 wrong; 4 correct, quotas-007 unsourced):
    # 15 claims without a verdict, 6 of them positive (FN), 9 negative (no outcome at all).
    # v3-demo's own counts are TP 13, FP 2, FN 1, TN 27; its verdicts on the 15 failed claims were
    # TP 5 (eval-004, eval-005, quotas-003, -004, -009), FP 1 (quotas-008), FN 1 (quotas-002), TN 8.
    # So: TP 13-5 = 8, FP 2-1 = 1, FN 1-1+6 = 6, TN 27-8 = 19 (only claims with a verdict), no verdict 15;
    # 8+1+6+19 + 9 negatives without a verdict = 43 graded.
    assert (out["tp"], out["fp"], out["fn"], out["tn"], out["no_verdict"], out["graded"]) == (8, 1, 6, 19, 15, 43)
    # P = 8/9, R = 8/14; accuracy: v3-demo's 40 right answers less the 13 right among the failed claims = 27/43
    assert out["precision"] == pytest.approx(8 / 9) and out["recall"] == pytest.approx(8 / 14)
    assert out["accuracy"] == pytest.approx(27 / 43)
    # the confusion matrix's no-verdict column holds the same 15: 6 expected not_grounded, 8 grounded, 1 silent
    assert {k: row["none"] for k, row in out["confusion"].items()} == {
        "grounded": 8, "not_grounded": 6, "source_silent": 1}
    # every claim without a verdict is listed with its error
    listed = {(e["file"], e["id"]): e for e in out["errors"] if e["kind"] == "no_verdict"}
    assert len(listed) == 15 and all(e["judge_error"] == FAILED[e["file"]] for e in listed.values())
    assert listed[("docs/evaluation.md", "eval-001")]["outcome"] is None      # correct: neither TN nor FP
    assert listed[("docs/evaluation.md", "eval-004")]["outcome"] == "FN"      # wrong: a missed flag
    assert out["stand_ins"] == ["learn", "model"] and out["baseline"]["stand_ins"] == ["learn", "model"]


def test_the_gate_refuses_a_candidate_with_claims_without_a_verdict(project, capsys):
    assert main(["grade", "runs/v3-failed", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    gate = json.loads(capsys.readouterr().out)["gate"]
    # v3-failed against v2: P 9/15 -> 8/9 and R 9/14 -> 8/14, a trade-off the gate would refuse anyway, but
    # the reason must be the missing verdicts, and how to re-record them
    assert gate["adopt"] is False and gate["within_noise"] is None
    head, fix = gate["reason"].split("; to re-record the candidate's claims without a verdict: ")
    assert head == ("do not adopt: the candidate has 15 claims without a verdict out of 43 (failed or cut-off "
                    "conversations: counted as FN where the gold flags the claim, never as a negative)")
    manifest = RunManifest.model_validate_json((project / "runs" / "v3-failed" / "run.json").read_text("utf-8"))
    # every claims file of the run with --retry-failed: only the failed ones are recorded again, the others
    # are kept as recorded (a command naming just the failed files would replace the run with a part of it)
    assert fix == retry_failed_command(manifest, "runs/v3-failed")
    assert fix.endswith(" --retry-failed") and " --claims demo/claims/azure-openai-models.json " in fix


def test_the_gate_refuses_even_when_the_candidate_would_otherwise_win(project, capsys):
    # only one claim of v3 fails (ptu-006, the one v3 got wrong against v2): v3 still beats v2 on P and R
    failed = project / "runs" / "v3-failed"
    results = json.loads((ROOT / "cassettes" / "v3-demo" / "results.json").read_text("utf-8"))
    for fr in results["files"]:
        fr["results"] = [{"id": r["id"], "error": "invalid verdict 'maybe'"} if r["id"] == "ptu-006" else r
                         for r in fr["results"]]
    write_json(failed / "results.json", results)
    assert main(["grade", "runs/v3-failed", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # ptu-006 is unsourced: without a verdict it leaves FP (2 -> 1), is no TN, and is wrong for accuracy
    assert (out["tp"], out["fp"], out["fn"], out["tn"], out["no_verdict"]) == (13, 1, 1, 27, 1)
    assert out["precision"] > out["baseline"]["precision"] and out["recall"] > out["baseline"]["recall"]
    assert out["gate"]["adopt"] is False
    assert out["gate"]["reason"].startswith("do not adopt: the candidate has 1 claim without a verdict out of 43")
    assert out["gate"]["reason"].endswith("--run runs/v3-failed --mode record --model claude-sonnet-5-5 --learn-url "
                                          "http://127.0.0.1:8931/api/mcp --anthropic-base-url http://127.0.0.1:8932 "
                                          "--retry-failed")  # the demo run kept the default max_tokens: no flag


def test_a_baseline_without_verdicts_cannot_flatter_a_candidate(project, capsys):
    assert main(["grade", "runs/v2", "--gold", "gold.json", "--baseline", "runs/v3-failed", "--json"]) == 0
    gate = json.loads(capsys.readouterr().out)["gate"]
    assert gate["adopt"] is False
    assert gate["reason"].startswith("do not adopt: the baseline has 15 claims without a verdict out of 43")
    assert "; to re-record the baseline's claims without a verdict: judge-replay judge --prompt v3 " in gate["reason"]


def test_results_outside_a_run_say_which_files_to_record_again(project, capsys):
    data = json.loads((project / "runs" / "v3-failed" / "results.json").read_text("utf-8"))
    assert data.pop("stand_ins") == ["learn", "model"]  # a results file written by a run says what it rests on
    (project / "v3-results.json").write_text(json.dumps(data), "utf-8")  # a hand-made one may not
    assert main(["grade", "v3-results.json", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gate"]["reason"].endswith(
        "; to re-record the candidate's claims without a verdict: record the claims of docs/evaluation.md, "
        "docs/quotas-and-limits.md again "
        "(v3-results.json is not a run folder that names its claims files, so the command is not known)")
    # and, with no `stand_ins` in the file and no run.json beside it, the grade says it cannot tell
    assert out["stand_ins"] is None
    assert any(n.startswith("cannot tell whether v3-results.json came from") for n in out["notes"])


def test_gold_claims_of_files_the_run_never_judged_are_named_as_such_and_the_list_is_capped(project, capsys):
    # a gold set far larger than the run: the claims of the 60 files it never judged are no verdict too,
    # but not "failed or cut-off conversations", and the run is a run folder whose command re-records
    # its own failed files; the files it never judged are named, the first 50 of them
    gold = json.loads((project / "gold.json").read_text("utf-8"))
    gold["items"] += [{"file": f"docs/extra-{i:03d}.md", "id": "x-1", "label": "correct"} for i in range(60)]
    write_json(project / "big-gold.json", gold)
    assert main(["grade", "runs/v3-failed", "--gold", "big-gold.json", "--baseline", "runs/v2", "--json"]) == 0
    reason = json.loads(capsys.readouterr().out)["gate"]["reason"]
    reason, baseline_fix = reason.split("; to re-record the baseline's claims without a verdict: ")
    head, fix = reason.split("; to re-record the candidate's claims without a verdict: ")
    assert "and the baseline has 60 claims without a verdict out of 103 (60 it never judged; counted as FN" in head
    assert baseline_fix.startswith("runs/v2 judged no claims file of docs/extra-000.md, ") and "; and " not in baseline_fix
    assert head.startswith("do not adopt: the candidate has 75 claims without a verdict out of 103 (15 in failed or "
                           "cut-off conversations, 60 it never judged; counted as FN where the gold flags the claim")
    command, never = fix.split("; and ")
    manifest = RunManifest.model_validate_json((project / "runs" / "v3-failed" / "run.json").read_text("utf-8"))
    assert command == retry_failed_command(manifest, "runs/v3-failed")
    assert never == ("runs/v3-failed judged no claims file of " + ", ".join(f"docs/extra-{i:03d}.md" for i in range(50))
                     + ", ... and 10 more: judge them into it, or grade against a gold set of the files it judged")


def test_a_gold_claim_a_judged_file_does_not_hold_gets_no_retry_command_that_would_find_nothing_to_retry(project, capsys):
    # the gold set names a claim of docs/evaluation.md that the run's claims file does not hold: the run
    # judged that file, and nothing failed in it, so `--retry-failed` would stop on "nothing to record
    # again"; the hint says what the claim is instead
    gold = json.loads((project / "gold.json").read_text("utf-8"))
    gold["items"].append({"file": "docs/evaluation.md", "id": "eval-999", "label": "correct"})
    write_json(project / "extra-gold.json", gold)
    assert main(["grade", "runs/v2", "--gold", "extra-gold.json", "--baseline", "runs/v2", "--json"]) == 0
    reason = json.loads(capsys.readouterr().out)["gate"]["reason"]
    assert "the candidate has 1 claim without a verdict out of 44 (1 it never judged; counted as FN" in reason
    assert "judge-replay judge" not in reason and "--retry-failed" not in reason, reason
    assert reason.endswith("; to re-record the baseline's claims without a verdict: the claims without a verdict in "
                           "docs/evaluation.md are not failed in runs/v2: claims it never judged (the gold set names "
                           "claims its claims files do not hold), or results that are not the run's own"), reason


def test_text_and_markdown_count_and_list_claims_without_a_verdict(project, capsys):
    assert main(["grade", "runs/v3-failed", "--gold", "gold.json", "--baseline", "runs/v2"]) == 0
    text = capsys.readouterr().out
    assert "TP 8  FP 1  FN 6  TN 19  no verdict 15  |  graded 43" in text
    assert ("15 claim(s) without a verdict (never TP, FP or TN; FN where the gold says outdated/wrong; "
            "against accuracy)") in text
    assert ("docs/evaluation.md: eval-001, eval-002, eval-003, eval-004, eval-005, eval-006 — "
            "API error 529: overloaded (after 3 retries)") in text
    assert "gate: DO NOT ADOPT" in text and "15 claims without a verdict" in text
    assert main(["grade", "runs/v3-failed", "--gold", "gold.json", "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| not_grounded | 0 | 8 | 0 | 6 |" in md  # confusion row: 8 flagged right (TP), 6 without a verdict
    assert "- docs/quotas-and-limits.md: quotas-001" in md
    assert md.count("> **runs used the local stand-in judge (test equipment), not Claude: runs/v3-failed**") == 1


def test_bakeoff_counts_no_verdict_in_every_format(project, capsys):
    args = ["bakeoff", "--no-replay", "--gold", "gold.json", "--baseline", "runs/v2", "--candidate", "runs/v3-failed",
            "--out-dir", "out"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    base, cand = out["versions"]
    assert (cand["scores"]["tn"], cand["scores"]["no_verdict"]) == (19, 15) and base["scores"]["no_verdict"] == 0
    assert cand["stand_ins"] == ["learn", "model"]
    gate = out["gates"][0]
    assert gate["adopt"] is False and "the candidate has 15 claims without a verdict" in gate["reason"]
    # the results file the bake-off writes carries the stand-ins, so grading it alone still says so
    written = json.loads((project / "out" / "judge-bakeoff-results-v3.json").read_text())
    assert written["stand_ins"] == ["learn", "model"]
    assert main(["grade", "out/judge-bakeoff-results-v3.json", "--gold", "gold.json", "--json"]) == 0
    graded = json.loads(capsys.readouterr().out)
    assert graded["stand_ins"] == ["learn", "model"] and graded["notes"][0].startswith("runs used the local stand-in")
    assert main(args) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if "v3 (candidate)" in line)
    # columns: … TP FP FN TN, no verdict, unverified quotes
    assert [c.strip() for c in row.strip("│").split("│")][7:12] == ["8", "1", "6", "19", "15"]
    assert "v3 (runs/v3-failed): 15 claim(s) without a verdict" in text
    assert main([*args, "--markdown"]) == 0
    md = capsys.readouterr().out
    assert "| v3 (candidate) | runs/v3-failed | claude-sonnet-5-5 | 0.889 | 0.571 |" in md
    assert "| 8 | 1 | 6 | 19 | 15 |" in md
