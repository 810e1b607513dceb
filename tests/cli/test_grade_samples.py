"""`grade` and `bakeoff` of runs judged K times per claim, through the real entry point, in every format."""

import json

import pytest

from factories import sampled_claim, write_json, write_run
from replay.cli.main import main

G, NG = "grounded", "not_grounded"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """v2 judged once; v3 judged 3 times, unsure of a-2 (ng, g, g) and of b-1 (g, g, no verdict... then ng)."""
    monkeypatch.chdir(tmp_path)
    priced = {"model": "claude-sonnet-5-5"}
    write_run(tmp_path / "runs" / "v2", prompt="v2", **priced, results=[{"file": "docs/a.md", "usage": {"input_tokens": 100_000}, "results": [
        sampled_claim("a-1", NG), sampled_claim("a-2", G), sampled_claim("a-3", G), sampled_claim("a-4", G)]}])
    write_run(tmp_path / "runs" / "v3", prompt="v3", samples=3, **priced, results=[{"file": "docs/a.md", "usage": {"input_tokens": 300_000}, "results": [
        sampled_claim("a-1", NG, NG, NG), sampled_claim("a-2", NG, G, NG), sampled_claim("a-3", G, G, G),
        sampled_claim("a-4", G, G, G)]}])
    write_json(tmp_path / "gold.json", {"name": "g", "items": [
        {"file": "docs/a.md", "id": "a-1", "label": "outdated"}, {"file": "docs/a.md", "id": "a-2", "label": "wrong"},
        {"file": "docs/a.md", "id": "a-3", "label": "correct"}, {"file": "docs/a.md", "id": "a-4", "label": "correct"}]})
    return tmp_path


def test_grade_json_of_a_run_with_samples(project, capsys):
    # v3: sample 1 and 3 catch a-1 and a-2 (R 1), sample 2 only a-1 (R 1/2): mean R 5/6, range [0.5, 1]; P 1 in
    # every sample. v2: P 1, R 1/2. The rule adopts; but on four claims, one of which flipped, the runs cannot
    # tell a decided judge from a noisy one, so a re-run may flip the agreeing claims too (and v2 was judged
    # once): the decision holds in little more than half of the simulated re-runs, and is not adopted.
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == 3 and out["unstable"] == 1
    assert out["recall"] == pytest.approx(5 / 6) and out["recall_range"] == [0.5, 1.0]
    assert out["precision_range"] == [1.0, 1.0]
    a2 = next(c for c in out["claims"] if c["id"] == "a-2")
    assert a2 == {"file": "docs/a.md", "id": "a-2", "verdict": NG, "stable": False,
                  "verdicts": {"grounded": 1, "not_grounded": 2, "source_silent": 0, "none": 0}}
    assert out["baseline"]["samples"] == 1 and out["baseline"]["precision_range"] == [1.0, 1.0]
    noise = out["gate"]["model_noise"]
    assert noise["measured"] and noise["samples"] == {"baseline": 1, "candidate": 3}
    assert 0.5 < noise["stability"] < 0.7 and noise["required"] == 0.95
    assert out["gate"]["adopt"] is False
    assert noise["settle"][0].startswith("judge-replay judge --mode record --add-samples ")
    assert "--run runs/v2" in noise["settle"][0]
    # cost per sample: each run's priced usage / its K (v2: 100K input tokens once, v3: 300K over 3 samples)
    assert noise["settle_cost_usd"] > 0


def test_grade_text_and_markdown_list_unstable_claims_and_the_ranges(project, capsys):
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "runs/v2"]) == 0
    text = capsys.readouterr().out
    assert "R 0.833 [0.500–1.000]" in text and "3 samples per claim" in text
    assert "1 unstable claim(s)" in text and "docs/a.md:a-2 — majority not_grounded; grounded 1, not_grounded 2" in text
    assert "model noise: the decision holds in" in text and "simulated re-runs of the judge" in text
    assert "to settle it (" in text and "judge-replay judge --mode record --add-samples" in text
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "unstable claim(s)" in markdown and "a-2" in markdown


def test_a_looser_gate_stability_setting_adopts_what_the_default_refuses(project, capsys):
    (project / "pyproject.toml").write_text("[tool.judge-replay]\ngate-stability = 0.5\n")
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "runs/v2", "--json"]) == 0
    gate = json.loads(capsys.readouterr().out)["gate"]
    assert gate["adopt"] is True and gate["model_noise"]["required"] == 0.5
    assert gate["model_noise"]["settle"] == []


def test_a_bad_gate_stability_setting_is_one_line(project, capsys):
    (project / "pyproject.toml").write_text("[tool.judge-replay]\ngate-stability = 2\n")
    assert main(["grade", "runs/v3", "--gold", "gold.json", "--baseline", "runs/v2"]) == 2
    err = capsys.readouterr().err
    assert "gate-stability must be a number from 0 to 1" in err and "Traceback" not in err


def test_bakeoff_every_format_shows_samples_and_the_chart_draws_ranges(project, capsys):
    args = ["bakeoff", "--gold", "gold.json", "--baseline", "runs/v2", "--candidate", "runs/v3", "--no-replay"]
    assert main([*args, "--format", "html", "--out", "b.html"]) == 0
    html = (project / "b.html").read_text()
    assert 'class="recall range"' in html and 'class="precision range"' in html  # bars, not dots, for v3
    assert 'class="recall" x=' in html  # v2, judged once, keeps its square
    assert 'id="samples"' in html and "a-2" in html
    capsys.readouterr()
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "v3 (runs/v3): 3 samples per claim" in text and "docs/a.md:a-2 — majority not_grounded" in text
    assert main([*args, "--markdown"]) == 0
    assert "3 samples per claim" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    versions = json.loads(capsys.readouterr().out)["versions"]
    assert [v["scores"]["samples"] for v in versions] == [1, 3]
