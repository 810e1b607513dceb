"""Every claims file has its own cassette: names unique, stable and safe for any `file` value; a manifest
cannot point outside its run folder; two claims files about one `file` are refused before any call."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from factories import write_json, write_run
from replay.errors import InputError
from replay.files.inputs import load_claims
from replay.analysis.verify import verify_run
from replay.judge.runner import run_judge
from replay.runs.names import MAX_NAME_BYTES, cassette_name
from replay.runs.folder import Run
from replay.sim import start_learn, start_model
from locations import REPO

TRICKY = [
    "docs/a.md", "docs_a.md", "docs/A.md", "docs/a.MD", "docs/概要.md", "docs/設定.md", "docs/a b.md", "docs/a_b.md",
    "docs\\a.md", "docs:a.md", "C:\\docs\\a.md", "../../etc/passwd", "..", ".", "", " ", ".hidden.md", "docs/.md",
    "con", "CON.md", "nul", "com1.txt", "lpt9", "a\x00b", "a\x1bb", "a\u202eb", "\u00e9.md", "e\u0301.md",
    "x" * 300, "x" * 299 + "y", "概" * 100, "概" * 99 + "要", "a/b/c.md", "a_b/c.md", "a/b_c.md", "~", "a~b.md",
    "docs/a.md~0123456789",
]


def test_names_are_unique_even_without_case_and_unicode_form() -> None:
    names = [cassette_name(f) for f in TRICKY]
    folded = {unicodedata.normalize("NFC", n).casefold() for n in names}
    assert len(folded) == len(TRICKY)


@pytest.mark.parametrize("claims_file", TRICKY)
def test_names_are_safe_on_every_filesystem(claims_file: str) -> None:
    name = cassette_name(claims_file)
    assert name.endswith(".yaml") and not name.startswith((".", "-", " "))
    assert not any(c in name for c in '/\\:*?"<>|') and all(c.isprintable() and c != "\u202e" for c in name)
    assert name.split(".")[0].lower() not in {"con", "prn", "aux", "nul", "com1", "lpt9"}
    assert len(name.removesuffix(".yaml").encode()) <= MAX_NAME_BYTES + 11
    assert cassette_name(claims_file) == name  # stable


def test_plain_names_stay_readable_and_others_keep_their_unicode() -> None:
    assert cassette_name("docs/a.md") == "docs_a.md.yaml"
    assert cassette_name("docs/概要.md").startswith("docs_概要.md~")
    assert cassette_name("docs/概要.md") != cassette_name("docs/設定.md")
    assert cassette_name("docs_a.md") != cassette_name("docs/a.md")


def test_the_demo_cassettes_keep_their_names() -> None:
    for claims in sorted((REPO / "demo" / "claims").glob("*.json")):
        name = cassette_name(json.loads(claims.read_text())["file"])
        for run in ("v1-demo", "v2-demo", "v3-demo"):
            assert (REPO / "cassettes" / run / name).is_file()


@pytest.mark.parametrize("cassette", ["../outside.yaml", "/etc/passwd", "sub/dir.yaml", "..", "a\\..\\b.yaml", "C:x.yaml", ""])
def test_a_manifest_cannot_point_outside_its_run_folder(cassette: str, tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", results=[{"file": "docs/a.md", "results": []}])
    manifest = json.loads((run / "run.json").read_text())
    manifest["claims"][0]["cassette"] = cassette
    (run / "run.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="not a file name inside the run folder") as caught:
        Run(run).interactions("docs/a.md")
    assert str(run / "run.json") in str(caught.value)


def test_two_claims_files_about_one_file_are_refused(tmp_path: Path) -> None:
    claim = {"id": "c-1", "claim": "X is 5.", "claim_type": "tpm"}
    write_json(tmp_path / "a.json", {"file": "docs/a.md", "claims": [claim]})
    write_json(tmp_path / "b.json", {"file": "docs/a.md", "claims": [claim]})
    with pytest.raises(InputError, match="'docs/a.md' is also the subject of"):
        load_claims([tmp_path])


def test_claims_files_differing_only_in_non_ascii_get_two_cassettes_and_verify(tmp_path: Path) -> None:
    source = json.loads((REPO / "demo" / "claims" / "evaluation.json").read_text())
    for name, file in (("gaiyou.json", "docs/概要.md"), ("settei.json", "docs/設定.md")):
        write_json(tmp_path / "claims" / name, {**source, "file": file, "claims": source["claims"][:2]})
    learn, model = start_learn(REPO / "demo" / "pages" / "2026-06"), start_model()
    try:
        run_judge("v3", [tmp_path / "claims"], tmp_path / "run", "record", model="claude-test", learn_url=learn.url,
                  anthropic_base_url=model.url, progress=False)
    finally:
        learn.stop()
        model.stop()
    cassettes = sorted(p.name for p in (tmp_path / "run").glob("*.yaml"))
    assert cassettes == sorted([cassette_name("docs/概要.md"), cassette_name("docs/設定.md")])
    report = verify_run(tmp_path / "run")
    assert report.ok, report.problems
