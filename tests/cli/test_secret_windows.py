"""No window of a secret in anything a command prints or writes: a message is cleaned whole before an
excerpt is cut from it, and every command registers the secrets of its environment first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import write_json
from replay.cli.main import main
from replay.sim import start_learn, start_model

CANARY = "sk-ant-api03-" + "Jq4tW8zLm2Rx7Vb9Nc3Kd6Hf1Gp5Ys0TuXeAoBiWv"
"""A key of the Anthropic shape, 53 characters: no 12 of them in a row may be printed or written."""
URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"


def windows(secret: str = CANARY, n: int = 12) -> list[str]:
    return [secret[i:i + n] for i in range(len(secret) - n + 1)]


def assert_no_window(text: str, where: str, secret: str = CANARY) -> None:
    shown = [w for w in windows(secret) if w in text]
    assert not shown, f"{where} shows {len(shown)} windows of the secret, e.g. {shown[0]!r}"


def assert_no_window_in_files(folder: Path, secret: str = CANARY) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert_no_window(path.read_bytes().decode("utf-8", "replace"), str(path), secret)


@pytest.fixture
def keyed_run(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run recorded against the stand-ins with the canary as the API key and inside a claim."""
    (workdir / "pages").mkdir()
    (workdir / "pages" / "m.md").write_text(f"---\nurl: {URL}\n---\n# Models\n\ngpt-4o has 128,000 tokens.\n", "utf-8")
    write_json(workdir / "claims" / "a.json", {"file": "docs/m.md", "claims": [
        {"id": "m-1", "claim": f"The sample key {CANARY} is quoted here.", "claim_type": "status",
         "evidence_url": URL}]})
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    with start_learn(workdir / "pages") as learn, start_model() as model:
        code = main(["judge", "--prompt", "v3", "--claims", "claims", "--run", "runs/r1", "--mode", "record",
                     "--learn-url", learn.url, "--anthropic-base-url", model.url, "--model", "claude-test",
                     "--no-progress"])
    assert code == 0
    return workdir / "runs" / "r1"


def test_a_replay_miss_shows_no_window_of_the_key(keyed_run: Path, capsys: Any) -> None:
    """The claim holds the key (stored REDACTED); an edit to the cassette a few characters before it makes
    the replay miss, and the miss line quotes the request around the edit."""
    capsys.readouterr()
    (cassette,) = keyed_run.glob("*.yaml")
    text = cassette.read_text("utf-8")
    assert "The sample key REDACTED" in text
    cassette.write_text(text.replace("The sample key", "The simple key"), "utf-8")
    code = main(["judge", "--run", str(keyed_run), "--mode", "replay"])
    out, err = capsys.readouterr()
    assert code == 1 and "differs in: messages[0].content: from character" in err
    assert "sample key REDACTED" in err  # the excerpt is still there, cleaned
    assert_no_window(out + err, "the miss line")
    assert_no_window_in_files(keyed_run.parent)
    assert_no_window_in_files(keyed_run.parent.parent / ".judge-replay")  # the caches (conftest puts them there)


# --------------------------------------------------------------------------- every command registers the key

PAGE_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/how-to/keys"


@pytest.fixture
def runs_quoting_the_key(cached_project: Path) -> Path:
    """Two runs in a project (caches on) whose cassettes fetched a page that quotes the user's key, as a
    page the user wrote may (page text is data, never rewritten)."""
    from factories import write_run

    for name, verdict, tail in (("a", "grounded", ""), ("b", "not_grounded", " Rotate it.")):
        page = f"# Keys\n\nThe key {CANARY} is the one the samples use.{tail}\n"
        write_run(cached_project / "cassettes" / name, results=[{"file": "docs/keys.md", "results": [
            {"id": "k-1", "claim": "The samples use a key.", "judge_verdict": verdict, "evidence_url": PAGE_URL,
             "evidence_quote": f"The key {CANARY} is the one the samples use."}]}],
                  pages={"docs/keys.md": {PAGE_URL: page}})
    write_json(cached_project / "gold.json", {"items": [{"file": "docs/keys.md", "id": "k-1", "label": "correct"}]})
    return cached_project


COMMANDS = [
    ("diff", "cassettes/a", "cassettes/b"),
    ("diff", "cassettes/a", "cassettes/b", "--format", "markdown"),
    ("diff", "cassettes/a", "cassettes/b", "--format", "json"),
    ("diff", "cassettes/a", "cassettes/b", "--format", "html"),
    ("drift", "cassettes/a", "--against", "cassettes/b"),
    ("drift", "cassettes/a", "--against", "cassettes/b", "--json"),
    ("grade", "cassettes/b", "--gold", "gold.json"),
    ("grade", "cassettes/b", "--gold", "gold.json", "--json"),
    ("grade", "cassettes/b", "--gold", "gold.json", "--markdown"),
    ("pages", "history", PAGE_URL, "--cassettes", "cassettes"),
    ("pages", "history", PAGE_URL, "--cassettes", "cassettes", "--json"),
    ("pages", "diff", PAGE_URL, "--cassettes", "cassettes"),
    ("cassettes", "verify", "cassettes/a"),
    ("cassettes", "list", "cassettes"),
    ("cassettes", "list", "cassettes", "--json"),
    ("export", "inspect", "cassettes/a", "cassettes/b", "--gold", "gold.json", "--out", "logs"),
    ("bakeoff", "--gold", "gold.json", "--baseline", "cassettes/a", "--candidate", "cassettes/b", "--no-replay"),
    ("bakeoff", "--gold", "gold.json", "--baseline", "cassettes/a", "--candidate", "cassettes/b", "--no-replay",
     "--json", "--out-dir", "logs"),
    ("bakeoff", "--gold", "gold.json", "--baseline", "cassettes/a", "--candidate", "cassettes/b", "--no-replay",
     "--markdown"),
    ("cassettes", "audit", "cassettes"),
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv))
def test_every_command_registers_the_key_before_it_reads(runs_quoting_the_key: Path, argv: tuple[str, ...],
                                                         monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """With the key in the environment, no command caches a cassette holding it, nor prints or writes it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    project = runs_quoting_the_key
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project / "summary.md"))
    main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    assert_no_window(out + err, " ".join(argv))
    if (project / "summary.md").exists():
        assert_no_window((project / "summary.md").read_text("utf-8"), "the job summary")
    cache = project / ".judge-replay"
    assert_no_window_in_files(cache)  # the parse cache and the page store
    if (project / "logs").exists():
        assert_no_window_in_files(project / "logs")


# --------------------------------------------------------------------------- a key as a claim's value

def test_a_key_the_claim_states_is_in_no_flip_reason_nor_value_in_any_case(
        cached_project: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """The flip explanation quotes the claim's values it finds on the changed page line (lower-cased
    tokens): a key among them is a secret in any case."""
    from factories import write_run

    claim = f"The key {CANARY} is valid for 30 days."
    for name, verdict, days in (("a", "grounded", 30), ("b", "not_grounded", 60)):
        page = f"# Keys\n\nThe key {CANARY} is valid for {days} days.\n"
        write_run(cached_project / "cassettes" / name, results=[{"file": "docs/keys.md", "results": [
            {"id": "k-1", "claim": claim, "judge_verdict": verdict, "evidence_url": PAGE_URL}]}],
                  pages={"docs/keys.md": {PAGE_URL: page}})
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    for argv in (["diff", "cassettes/a", "cassettes/b"], ["diff", "cassettes/a", "cassettes/b", "--format", "json"],
                 ["diff", "cassettes/a", "cassettes/b", "--format", "markdown"]):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert "30" in out and "60" in out  # the change itself is still explained
        assert_no_window((out + err).lower(), " ".join(argv), CANARY.lower())
