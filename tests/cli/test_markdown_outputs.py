"""Data stays data in markdown: the reports people paste into a pull request or a job summary (`diff
--format markdown`, `grade --markdown`, `bakeoff --markdown`, GITHUB_STEP_SUMMARY), rendered by GitHub's
own renderer (cmark-gfm, with GitHub's extensions), hold no link, image, HTML element, heading, emphasis
or table cell that comes from a claim, a gold note, a model's reason or quote, a file or folder name."""

from __future__ import annotations

import hashlib
import json
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm  # type: ignore[import-untyped]
import pytest
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]

from factories import write_json, write_run
from replay.cli.main import main
from replay.runs.names import cassette_name

EVIL = ("![t](https://evil.example/x.png) [click](https://evil.example) <img src=x onerror=alert(1)> "
        "https://evil.example/raw www.evil.example <https://evil.example/auto> user@evil.example | pipe | "
        "**BOLDMARK** _EMMARK_ *EMMARK* ~~DELMARK~~ <b>TAGMARK</b> &lt;script&gt; `tick` [ref]: https://evil.example")
"""Everything a markdown renderer might turn into markup: images, links, raw HTML, bare URLs (GitHub's
autolinks), e-mail addresses, table pipes, emphasis, strikethrough, entities, code ticks."""
LEADING = "# HEADMARK " + EVIL
"""The same, where a line could start with it (a heading)."""
URL = "https://learn.microsoft.com/en-us/azure/models"
FILE = "docs/[click](https://evil.example)|x.md"
RUN = "[click](javascript:alert(1)) **BOLDMARK** <b>TAGMARK</b>"
"""A run folder name (no slash: it is one folder)."""
MARKS = {"BOLDMARK": "strong", "EMMARK": "em", "DELMARK": "del", "HEADMARK": "h1", "TAGMARK": "b"}
"""A word of the data -> the element it would be inside, were its markup rendered (our own headings are
h2 to h4; our own <b> holds none of these)."""
OURS = {"p", "h2", "h3", "h4", "ul", "li", "strong", "em", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "b",
        "blockquote", "details", "summary", "br"}
"""The elements our reports make on purpose; anything else (a, img, b, script, h1...) came from data."""


def _results(verdict: str) -> list[dict[str, object]]:
    return [{"file": FILE, "results": [{"id": "a-1", "judge_verdict": verdict, "evidence_url": URL,
                                        "evidence_quote": LEADING, "reason": LEADING}]}]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two runs that disagree on one claim whose every string is hostile, a gold set whose note is."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n", "utf-8")
    claims = write_json(tmp_path / "claims" / f"{cassette_name(FILE)}.json", {"file": FILE, "claims": [
        {"id": "a-1", "claim": LEADING, "claim_type": "version", "evidence_url": URL}]})
    page = f"# Models\n\n{EVIL}\n"
    for name, verdict in (("a", "grounded"), (RUN, "not_grounded")):
        run = write_run(tmp_path / "runs" / name, prompt="v3", results=_results(verdict), pages={FILE: {URL: page}})
        manifest = json.loads((run / "run.json").read_text("utf-8"))
        manifest["claims"][0]["sha256"] = hashlib.sha256(claims.read_bytes()).hexdigest()
        (run / "run.json").write_text(json.dumps(manifest), "utf-8")
    write_json(tmp_path / "gold.json", {"name": LEADING, "items": [
        {"file": FILE, "id": "a-1", "label": "correct", "note": LEADING}]})
    return tmp_path


class _Elements(HTMLParser):
    """Every element of rendered HTML, and the elements each piece of text is inside."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[str] = []
        self.texts: list[tuple[str, tuple[str, ...]]] = []
        self.rows: list[tuple[int, int]] = []
        """(table number, cells) of each table row."""
        self._tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self._tables += 1
        if tag == "tr":
            self.rows.append((self._tables, 0))
        if tag in ("td", "th"):
            table, cells = self.rows[-1]
            self.rows[-1] = (table, cells + 1)
        if tag not in ("br", "img", "hr", "input"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            while self.open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        self.texts.append((data, tuple(self.open)))


def render(markdown: str) -> _Elements:
    """The markdown as GitHub renders it: cmark-gfm with its extensions, raw HTML kept (so that any shows)."""
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    parsed = _Elements()
    parsed.feed(html)
    return parsed


def assert_data_stays_data(markdown: str) -> None:
    parsed = render(markdown)
    made = [(tag, attrs) for tag, attrs in parsed.tags if tag not in OURS]
    assert not made, f"elements from data: {made}\n{markdown}"
    for text, inside in parsed.texts:
        rendered = {mark for mark, element in MARKS.items() if mark in text and {element, "a"} & set(inside)
                    and not {"code", "pre"} & set(inside)}  # code shows its text as it is
        assert not rendered, f"{rendered} rendered inside {inside}\n{markdown}"
    assert any("evil.example" in text for text, _ in parsed.texts), "the data is not in the report at all"
    assert any("HEADMARK" in text for text, _ in parsed.texts)
    for table in {t for t, _ in parsed.rows}:
        cells = {n for t, n in parsed.rows if t == table}
        assert len(cells) == 1, f"a table whose rows have {sorted(cells)} cells: a pipe in data split one\n{markdown}"


def test_diff_markdown(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "runs/a", f"runs/{RUN}", "--format", "markdown", "--gold", "gold.json"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "a-1" in out
    assert_data_stays_data(out)


def test_grade_markdown_and_the_job_summary(project: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    summary = project / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["grade", f"runs/{RUN}", "--gold", "gold.json", "--markdown", "--baseline", "runs/a"]) in (0, 1)
    out = capsys.readouterr().out
    assert "Disagreements" in out
    assert_data_stays_data(out)
    assert_data_stays_data(summary.read_text("utf-8"))


def test_bakeoff_markdown(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bakeoff", "--gold", "gold.json", "--baseline", "runs/a", "--candidate", f"runs/{RUN}", "--no-replay",
                 "--markdown"]) in (0, 1), capsys.readouterr().err
    out = capsys.readouterr().out
    assert "Gate" in out
    assert_data_stays_data(out)
