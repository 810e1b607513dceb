"""The documentation site (docs/, mkdocs.yml) builds with `mkdocs build --strict` and no warning, holds every
command and JSON Schema, fetches nothing from elsewhere, and names only files the repository has."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

from locations import REPO
from replay.cli.main import cli
from replay.files.json_text import dump_json
from replay.schema.catalog import SCHEMAS, json_schema

for _module in ("mkdocs", "material", "mkdocs_click"):  # the docs extra, which the test extra installs
    pytest.importorskip(_module, reason="the docs extra is not installed: pip install -e '.[docs]'")

DOCS = REPO / "docs"


def build(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the site in `project` into `site`. Never `-q`: it hides the warnings
    and then a broken link exits 0."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False)


def problems(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = build(REPO, out)
    assert done.returncode == 0 and not problems(done), done.stdout + done.stderr
    return out


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def test_the_site_builds_strict_without_a_warning(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "search" / "search_index.json").is_file()  # the local search index, built offline


def _command_paths(command: click.Command, ctx: click.Context, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            out += _command_paths(sub, click.Context(sub, parent=ctx, info_name=name), (*path, name))
    return out


def test_the_commands_page_documents_every_command_and_option(site: Path) -> None:
    page = _text(site / "reference" / "cli" / "index.html")
    ctx = click.Context(cli, info_name="judge-replay")
    paths = _command_paths(cli, ctx)
    assert len(paths) > 10  # the group, its commands and the subcommands of cassettes, pages, sim
    for path in paths:
        assert f'id="{"-".join(("judge-replay", *path))}"' in page, f"no section for judge-replay {' '.join(path)}"
    for option in ("--mode", "--pages-from", "--max-cost", "--baseline", "--no-discover", "--against",
                   "--strict-sessions", "--cut-off"):
        assert option in page
    assert "Sentinel.UNSET" not in page  # what mkdocs-click's table style prints under click >= 8.3
    assert "results-&lt;prompt&gt;.json" in page  # help text placeholders shown, not swallowed as HTML tags


def test_every_json_schema_has_a_page_and_its_raw_schema(site: Path) -> None:
    folder = site / "reference" / "schemas"
    for name in SCHEMAS:
        assert _text(folder / f"{name}.schema.json") == dump_json(json_schema(name))
        page = _text(folder / name / "index.html")
        for field in json_schema(name)["properties"]:
            assert f"<code>{field}</code>" in page, f"schema page {name} lacks the field {field}"
    claims = _text(folder / "claims" / "index.html")
    assert "Claim id, unique within its file" in claims  # the field's docstring, read from the code


def test_no_page_fetches_anything_from_elsewhere(site: Path) -> None:
    outside = re.compile(r"<(?:link|script|img|iframe)\b[^>]*\b(?:href|src)=\"(?:https?:)?//", re.IGNORECASE)
    for page in site.rglob("*.html"):
        text = _text(page)
        assert not outside.search(text), f"{page.relative_to(site)} loads something from another site"
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text


def test_the_sources_cite_only_what_the_repository_has() -> None:
    sources = [REPO / "mkdocs.yml", *sorted(p for p in DOCS.rglob("*") if p.is_file() and p.suffix in (".md", ".py", ".yml"))]
    repository_path = re.compile(r"`((?:replay|demo|scripts)/[^`\s]*|cassettes/v\d-demo[^`\s]*)`")
    checked = 0
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert "SPEC" not in text, f"{source.relative_to(REPO)} cites SPEC.md, which the repository does not have"
        assert "shared/" not in text, f"{source.relative_to(REPO)} cites a file outside the repository"
        for path in repository_path.findall(text):
            checked += 1
            found = list(REPO.glob(path.rstrip("/"))) if "*" in path else [REPO / path]
            assert found and all(p.exists() for p in found), f"{source.relative_to(REPO)} names {path}, which is not in the repository"
    assert checked > 10


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    """The strictness is in mkdocs.yml (`strict`, `validation`): a copy of the site with one broken link
    and one broken anchor must fail to build, with both named."""
    project = tmp_path / "project"
    shutil.copytree(DOCS, project / "docs")
    shutil.copy2(REPO / "mkdocs.yml", project / "mkdocs.yml")
    index = project / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8")
                     + "\n[gone](no-such-page.md) and [lost](explanation/gate.md#no-such-heading)\n", encoding="utf-8")
    done = build(project, tmp_path / "site")
    assert done.returncode != 0
    found = "\n".join(problems(done))
    assert "no-such-page.md" in found and "no-such-heading" in found, done.stdout + done.stderr


def test_the_docs_extra_pins_what_the_site_was_built_with() -> None:
    import tomllib

    extras = tomllib.loads(_text(REPO / "pyproject.toml"))["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~ ;\[]", requirement)[0].lower() for requirement in extras["docs"]}
    assert {"mkdocs", "mkdocs-material", "mkdocs-click"} <= names
    assert any(requirement.startswith("judge-replay[docs]") for requirement in extras["test"])  # CI builds the site


def test_nothing_in_the_repository_cites_the_contract_document() -> None:
    # every tracked text file: the code, its docstrings, the tests, the demo, the docs, the README
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    mention = "SPEC" + ".md"
    citing = []
    for name in tracked:
        path = REPO / name
        if name == "tests/test_docs.py" or path.suffix not in (".py", ".md", ".toml", ".yml", ".yaml", ".json", ".txt", ".cfg") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if mention in text or re.search(r"\bSPEC\b", text):
            citing.append(name)
    assert not citing, f"these files cite a contract document the repository does not have: {citing}"


def test_the_settings_page_has_a_row_for_every_setting() -> None:
    from replay.settings import SETTINGS

    page = (REPO / "docs" / "reference" / "settings.md").read_text("utf-8")
    rows = {line.split("|")[1].strip().strip("`") for line in page.splitlines() if line.startswith("| `")}
    assert sorted(set(SETTINGS) - rows) == []
    assert sorted(rows - set(SETTINGS)) == []
