"""`bakeoff --format html` and the cost column: one self-contained page, rendered in real headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.cli.main import main
from analysis.test_bakeoff import CLAIMS, project  # noqa: F401 - project is a fixture
from reports.test_flips_html import headless

HOSTILE = "<script>alert(1)</script> & <b>bold</b>"


def _priced(run_dir: Path, model: str, input_tokens: int, batch: bool = False) -> None:
    """Give a run's results a model and token usage, as a run recorded before costs were kept."""
    for name in ("results.json", "run.json"):
        data = json.loads((run_dir / name).read_text())
        data["model"] = model
        if name == "results.json":
            data["files"][0]["usage"] = {"input_tokens": input_tokens}
        elif batch:
            data["batch_ids"] = ["msgbatch_1"]
        (run_dir / name).write_text(json.dumps(data))


@pytest.fixture
def priced(project: Path) -> Path:  # noqa: F811 - the fixture imported above
    # v2: 100,000 input on Sonnet 5.5 at $2 = $0.20; v3: 400,000 = $0.80, through batches half: $0.40
    _priced(project / "cassettes" / "v2-demo", "claude-sonnet-5-5", 100_000)
    _priced(project / "cassettes" / "v3-demo", "claude-sonnet-5-5", 400_000, batch=True)
    return project


def test_every_format_has_a_cost_column(priced: Path, capsys: Any) -> None:
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    base, cand = json.loads(capsys.readouterr().out)["versions"]
    assert (base["cost_usd"], base["batch"]) == (pytest.approx(0.2), False)
    assert (cand["cost_usd"], cand["batch"]) == (pytest.approx(0.4), True)
    assert main(["bakeoff", "--no-replay", "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "| cost |" in text and "| $0.2000 |" in text and "| $0.4000 (batch) |" in text
    assert main(["bakeoff", "--no-replay"]) == 0
    out = capsys.readouterr().out
    assert "$0.2000" in out and "$0.4000 (batch)" in out and "replaying it is free" in out
    # the results files written carry the cost too
    written = json.loads((priced / "judge-bakeoff-results-v3.json").read_text())
    assert written["cost_usd"] == pytest.approx(0.4) and written["files"][0]["cost_usd"] == pytest.approx(0.4)
    assert main(["bakeoff", "--no-replay", "--json", "--format", "markdown"]) == 2


def test_a_model_with_no_price_shows_unknown_and_is_left_off_the_chart(priced: Path, capsys: Any) -> None:
    _priced(priced / "cassettes" / "v2-demo", "my-own-model", 100_000)
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["versions"][0]["cost_usd"] is None
    assert main(["bakeoff", "--no-replay", "--format", "html", "--out", "page.html"]) == 0
    page = (priced / "page.html").read_text()
    assert "<td>unknown</td>" in page and "Not plotted: v2 (cost unknown)." in page
    assert page.count('<g class="version"') == 1


def test_the_bakeoff_page_renders_the_chart_and_every_flip_in_chromium(priced: Path, capsys: Any) -> None:
    # a hostile reason and claim id: every data string must arrive as text
    results = json.loads((priced / "cassettes" / "v3-demo" / "results.json").read_text())
    results["files"][0]["results"][0]["reason"] = HOSTILE
    (priced / "cassettes" / "v3-demo" / "results.json").write_text(json.dumps(results))
    assert main(["bakeoff", "--no-replay", "--format", "html", "--out", "bakeoff.html"]) == 0
    page = (priced / "bakeoff.html").read_text()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<link" not in page and "src=" not in page and "@import" not in page  # no external asset
    head = page.split("<body>")[0]
    assert "http" not in head
    assert "gate: DO NOT ADOPT" in page

    dom = headless("--dump-dom", (priced / "bakeoff.html").as_uri(), cwd=priced)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # the chart: one group per version, a precision and a recall mark for v3 (P 1, R 1), v2's precision is undefined
    assert '<svg class="chart" id="cost-chart"' in html
    assert html.count('<g class="version"') == 2
    assert html.count('class="precision"') == 1 and html.count('class="recall"') == 2
    # every flip: a row linking to its evidence article, which is on the page
    for claim_id in ("a-1", "a-3"):
        assert f'<a href="#g1-flip-docs-a-md--{claim_id}">{claim_id}</a>' in html
        assert f'<article id="g1-flip-docs-a-md--{claim_id}">' in html
    assert CLAIMS["a-1"] in html and "<b>bold</b>" not in html

    shot = priced / "bakeoff.png"
    done = headless(f"--screenshot={shot}", "--window-size=1280,1600", (priced / "bakeoff.html").as_uri(), cwd=priced)
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_a_price_override_reprices_the_cost_column_and_the_results_written(priced: Path, capsys: Any) -> None:
    # stored figures are what the runs were priced at when recorded; the column prices the recorded usage with
    # the current table: Sonnet 5.5 at $4 input makes v2 100,000 x $4 = $0.40 and v3 400,000 x $4 / 2 = $0.80
    for run in ("v2-demo", "v3-demo"):
        for name in ("results.json", "run.json"):
            stored = json.loads((priced / "cassettes" / run / name).read_text())
            stored["cost_usd"] = 9.99
            for entry in stored.get("files", []) + stored.get("claims", []):
                entry["cost_usd"] = 9.99
            (priced / "cassettes" / run / name).write_text(json.dumps(stored))
    with (priced / "pyproject.toml").open("a") as settings:
        settings.write('\n[tool.judge-replay.prices]\nclaude-sonnet-5-5 = {input = 4, output = 20}\n')
    assert main(["bakeoff", "--no-replay", "--json"]) == 0
    base, cand = json.loads(capsys.readouterr().out)["versions"]
    assert (base["cost_usd"], cand["cost_usd"]) == (pytest.approx(0.4), pytest.approx(0.8))
    assert main(["bakeoff", "--no-replay"]) == 0
    out = capsys.readouterr().out
    assert "$0.4000" in out and "$0.8000 (batch)" in out and "$9.99" not in out
    assert "recorded token usage priced with the" in out and "[tool.judge-replay.prices] applied" in out
    written = json.loads((priced / "judge-bakeoff-results-v3.json").read_text())
    assert written["cost_usd"] == pytest.approx(0.8)


def test_flip_details_on_the_bakeoff_page_show_controls_and_redact_secrets(priced: Path, capsys: Any) -> None:
    # the flip report's part of the page escapes data as the rest does: terminal and bidi controls made
    # visible (printable), secrets the user gave us redacted, then HTML-escaped
    from replay.secrets import registry as _secrets

    secret = "sk-ant-api03-flipsecret0123456789"
    _secrets.remember(secret)
    results = json.loads((priced / "cassettes" / "v3-demo" / "results.json").read_text())
    for claim in results["files"][0]["results"]:
        claim["reason"] = f"RLO\u202eevil ESC\x1b[31mred key {secret} <i>x</i>"
    (priced / "cassettes" / "v3-demo" / "results.json").write_text(json.dumps(results))
    assert main(["bakeoff", "--no-replay", "--format", "html", "--out", "bakeoff.html"]) == 0
    page = (priced / "bakeoff.html").read_text()
    assert "<article id=" in page and "RLO\\u202eevil" in page and "ESC\\x1b[31mred" in page
    assert "\u202e" not in page and "\x1b" not in page and secret not in page
    assert "&lt;i&gt;x&lt;/i&gt;" in page and "<i>x</i>" not in page


def test_the_html_versions_table_has_every_column_of_the_text_one(priced: Path, capsys: Any, tmp_path: Path) -> None:
    import re

    from replay.analysis.bakeoff import run_bakeoff
    from replay.cli.bakeoff import versions_table

    report = run_bakeoff(gold_path=priced / "gold.json", baseline=priced / "cassettes" / "v2-demo",
                         candidates=[priced / "cassettes" / "v3-demo"], out_dir=tmp_path, replay=False)
    text_columns = [str(c.header) for c in versions_table(report).rich().columns]
    out = tmp_path / "b.html"
    assert main(["bakeoff", "--no-replay", "--format", "html", "--out", str(out)]) == 0
    table = out.read_text().split('id="versions"', 1)[1].split("</table>", 1)[0]
    html_columns = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    assert html_columns == text_columns


@pytest.mark.parametrize("costs", [[0.1003, 0.1239, 0.0975], [0.0363], [0.0363, 0.0452], [3.63, 3.47, 3.05],
                                   [0.2, 0.4], [0.0], [1234.5], [0.001, 250.0]])
def test_the_cost_axis_is_fitted_to_the_data_with_round_ticks_and_distinct_labels(costs: list[float]) -> None:
    from replay.reports.bakeoff_html import cost_axis, tick_label

    low, high, ticks = cost_axis(costs)
    assert (low, high) == (ticks[0], ticks[-1]) and low <= min(costs) and high >= max(costs)
    assert 4 <= len(ticks) <= 12
    step = ticks[1] - ticks[0]
    assert all(abs((b - a) - step) < step * 1e-6 for a, b in zip(ticks, ticks[1:]))  # evenly spaced
    mantissa = step / 10 ** __import__("math").floor(__import__("math").log10(step))
    assert any(abs(mantissa - m) < 1e-6 for m in (1, 2, 2.5, 5))  # a round step
    labels = [tick_label(t, ticks) for t in ticks]
    assert len(set(labels)) == len(labels)  # no two ticks read alike
    if len(set(costs)) > 1 and min(costs) > 2 * (max(costs) - min(costs)):
        assert low > 0  # the demo's costs are not crowded at the right of an axis from $0
        assert (max(costs) - min(costs)) / (high - low) >= 0.3


def test_version_labels_of_nearby_points_never_overlap() -> None:
    from replay.reports.bakeoff_html import spread_labels

    points = [(100.0, 50.0), (104.0, 55.0), (98.0, 52.0), (400.0, 50.0)]
    ys = spread_labels(points, height=14.0, width=70.0)
    assert ys[3] == 50.0  # far away: left where it was
    near = sorted(ys[:3])
    assert all(b - a >= 14.0 for a, b in zip(near, near[1:]))
