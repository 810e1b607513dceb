"""`judge-replay init [DIR]`: scaffold a project that judges one's own documentation (claims, a gold-set
skeleton, settings, a snapshot test and a CI workflow). It never overwrites a file."""

from __future__ import annotations

import shlex
import sys
import tomllib
from pathlib import Path

import click

from replay.cli._output import examples
from replay.errors import InputError, UsageError
from replay.files.atomic import atomic_write_text
from replay.files.json_text import dump_json
from replay.core.display import printable
from replay.files.paths import display_path
from replay.files.regular import read_regular_text
from replay.reports.fit import text_width, wrap_command, wrap_words

MODELS_URL = "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/models"

EXAMPLE_CLAIMS = {
    "file": "docs/example.md",
    "claims": [
        {"id": "example-001", "claim": "`gpt-4.1` has a maximum output of 32,768 tokens.", "claim_type": "version",
         "evidence_url": MODELS_URL},
        {"id": "example-002", "claim": "GPT-4.1 offers a 200k+ token context window.", "claim_type": "version",
         "evidence_url": MODELS_URL},
        {"id": "example-003", "claim": "`gpt-4o` has a context window of 256,000 tokens.", "claim_type": "version",
         "evidence_url": MODELS_URL},
    ],
}
"""Three claims of a documentation file about Azure OpenAI models: one right, one understated (the page
states 1,047,576 tokens), one wrong (128,000). They read a real Learn page, and the demo's pages for the local stand-in."""

GOLD_SKELETON = {
    "name": "my-gold-set",
    "items": [
        {"file": "docs/example.md", "id": "example-001", "label": "correct",
         "note": "Replace these items with your own: one per claim, labelled correct, outdated, wrong or unsourced."},
        {"file": "docs/example.md", "id": "example-002", "label": "outdated",
         "note": "The models page states 1,047,576 tokens: a 200k+ bound understates it."},
        {"file": "docs/example.md", "id": "example-003", "label": "wrong",
         "note": "The models page gives gpt-4o a 128,000-token context window."},
    ],
}

SETTINGS = '''
# judge-replay (`judge-replay init` wrote this table): the runs CI replays and grades.
[tool.judge-replay]
gold = "gold-correctness-set.json"
baseline = "runs/baseline"
candidates = ["runs/candidate"]
'''

PYTEST_SETTINGS = '''
# pytest's rootdir is this folder wherever pytest starts: runs and snapshots are found from here.
[tool.pytest.ini_options]
testpaths = ["tests"]
'''

SNAPSHOT_TEST = '''"""Verdict snapshots of every recorded run under runs/ (judge-replay's pytest plugin).

Each run replays offline from its cassettes (no network, no key) and its verdicts are compared with
snapshots/<run>/; `pytest --snapshot-update` writes them. Run paths are taken from pytest's rootdir.
"""

from pathlib import Path

import pytest

from replay import replay_run

RUNS = sorted(p.name for p in (Path(__file__).resolve().parents[1] / "runs").glob("*") if (p / "run.json").is_file())


@pytest.mark.parametrize("run", RUNS)
def test_verdicts(run, verdict_snapshot):
    assert replay_run(f"runs/{run}") == verdict_snapshot
'''

WORKFLOW = '''# judge-replay (`judge-replay init` wrote this workflow): replays the recorded runs offline (no key,
# no network), checks their verdict snapshots, then grades the candidate against the baseline with the
# adoption gate. `--check` fails the job when the gate refuses the candidate; `bakeoff` writes its
# report to the job's summary page.
name: judge
on:
  push:
  pull_request:
jobs:
  judge:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install judge-replay pytest   # or however your project installs judge-replay
      - name: Every run replays as recorded (offline, free)
        run: judge-replay cassettes verify runs/*
      - name: Verdict snapshots
        run: pytest tests/test_judge_snapshots.py
      - name: Grade and gate (fails when the candidate is not adopted)
        run: judge-replay bakeoff --check
'''

EPILOG = "\n\n".join([
    "Writes, in DIR (default: the current folder): claims/example.json (three example claims), "
    "gold-correctness-set.json (their gold labels, a skeleton to replace with yours), the [tool.judge-replay] "
    "settings in pyproject.toml (created, or added to one without that table), tests/test_judge_snapshots.py "
    "and .github/workflows/judge.yml. Nothing is overwritten: a file that exists, or a pyproject.toml that "
    "already has [tool.judge-replay], stops init before it writes anything (exit 2).",
    "Then, in DIR: record runs/baseline and runs/candidate (`judge --prompt v2 --claims claims --run "
    "runs/baseline --mode record`, and v3 into runs/candidate: billed, or free against the stand-ins), "
    "`pytest --snapshot-update`, `judge-replay bakeoff --check`, and commit everything.",
    examples(
        "judge-replay init            # here",
        "judge-replay init my-docs    # in ./my-docs (created)",
    ),
])


def _files(root: Path) -> dict[Path, str]:
    return {
        root / "claims" / "example.json": dump_json(EXAMPLE_CLAIMS),
        root / "gold-correctness-set.json": dump_json(GOLD_SKELETON),
        root / "tests" / "test_judge_snapshots.py": SNAPSHOT_TEST,
        root / ".github" / "workflows" / "judge.yml": WORKFLOW,
    }


def _pyproject(root: Path) -> str:
    """pyproject.toml's text with the settings table added (a new file's text when there is none)."""
    path = root / "pyproject.toml"
    if not path.exists():
        name = root.resolve().name or "docs"
        return f'[project]\nname = "{name}-judge"\nversion = "0"\n' + SETTINGS + PYTEST_SETTINGS
    try:
        text = read_regular_text(path, "settings", "utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(path, f"cannot be read as TOML ({exc}): init adds its settings only to a valid file") from exc
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "judge-replay" in tool:
        raise InputError(path, "already has [tool.judge-replay]: init never overwrites settings; edit them there")
    pytest_table = isinstance(tool, dict) and isinstance(tool.get("pytest"), dict) and "ini_options" in tool["pytest"]
    return text + ("" if text.endswith("\n") or not text else "\n") + SETTINGS + ("" if pytest_table else PYTEST_SETTINGS)


@click.command("init", epilog=EPILOG)
@click.argument("folder", default=".", type=click.Path(file_okay=False, path_type=str), metavar="[DIR]")
def command(folder: str) -> None:
    """Scaffold a project that judges your own documentation: claims, a gold-set skeleton, settings, a
    snapshot test and a CI workflow. Never overwrites a file."""
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{folder}: not a folder")
    files = _files(root)
    existing = [display_path(p) for p in files if p.exists()]
    if existing:
        raise UsageError(f"init never overwrites a file, and these exist: {', '.join(existing)}")
    pyproject = _pyproject(root)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
    atomic_write_text(root / "pyproject.toml", pyproject)
    shown = printable(display_path(root))
    click.echo(f"judge-replay init: wrote {shown}")
    for path in [*files, root / "pyproject.toml"]:
        click.echo(f"  {printable(display_path(path))}")
    width = text_width(sys.stdout)
    steps = [*([f"cd {shlex.quote(shown)}"] if shown != "." else []),
             "judge-replay judge --help   # record a baseline and a candidate run (billed, or against the stand-ins)",
             "judge-replay bakeoff --check", "pytest --snapshot-update"]
    click.echo("next, each command on its own line:")
    for step in steps:  # a comment goes on a line of its own where the line would not fit
        command, _, comment = step.partition("   # ")
        if comment and len(step) + 2 > width:
            click.echo("\n".join(f"  # {line}" for line in wrap_words(comment, width - 4, indent=0, hang=0)))
            step = command
        click.echo("\n".join(wrap_command(step, width, indent=2)))
