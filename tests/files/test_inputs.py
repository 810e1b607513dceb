"""The shared foundation: records, loaders, prompts, cassette format."""

import json

import pytest
import yaml

from factories import write_json, write_run
from replay.cassettes.cassette import load_cassette
from replay.errors import InputError
from replay.files.inputs import load_claims
from replay.files.results import load_results
from replay.urls import normalise_learn_url
from replay.core.prompts import calibration_rules, parse_rendered_batch
from replay.prompts import load_prompt
from replay.schema.claims import ClaimsBatch
from replay.runs.folder import Run
from replay.core.text import parse_number, subject_words, tokens, value_tokens


def test_tokens_follow_spec():
    assert tokens("GPT-4.1 offers a **200k+** (token) `context` | window.") == [
        "gpt-4.1", "offers", "a", "200k+", "token", "context", "window"]
    assert value_tokens("1,047,576 tokens on 2025-04-14") == ["1047576", "2025-04-14"]
    assert subject_words("GPT-4.1 offers a 200k+ token context window") == ["offers", "token", "context", "window"]
    assert parse_number("200k") == 200_000 and parse_number("1.5M") == 1_500_000
    assert parse_number("1,047,576") == 1_047_576 and parse_number("2025-04-14") is None
    assert parse_number("gpt-4.1") is None


def test_url_normalisation():
    assert normalise_learn_url("HTTPS://Learn.Microsoft.com/en-us/azure/x/y/#frag") == "https://learn.microsoft.com/azure/x/y"
    assert normalise_learn_url(" https://[learn.microsoft.com/x ") == "https://[learn.microsoft.com/x"  # no URL: itself


def test_prompts_only_v3_defines_rules():
    assert sorted(calibration_rules(load_prompt("v3").text)) == [f"R{i}" for i in range(1, 8)]
    for name in ("v1", "v2"):
        text = load_prompt(name).text
        assert all(f"R{i} —" not in text for i in range(1, 8))
    assert "EXACT-VALUE RULE" in load_prompt("v2").text and "EXACT-VALUE RULE" not in load_prompt("v1").text


def test_render_roundtrip():
    batch = ClaimsBatch(file="docs/a.md", claims=[{"id": "a-1", "claim": "X is 5.", "claim_type": "tpm"}])
    text = load_prompt("v3").render(batch)
    assert "`docs/a.md`" in text and "{{" not in text
    assert parse_rendered_batch(text) == [{"id": "a-1", "claim": "X is 5.", "claim_type": "tpm", "evidence_url": None}]


def test_malformed_claims_name_the_file(tmp_path):
    bad = write_json(tmp_path / "c" / "bad.json", {"file": "x.md", "claims": [{"id": "1", "claim": "c", "claim_type": "price"}]})
    with pytest.raises(InputError) as err:
        load_claims([tmp_path / "c"])
    assert str(bad) in str(err.value) and "claim_type" in str(err.value)
    (tmp_path / "c" / "bad.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_claims([bad])


def test_results_accept_three_shapes(tmp_path):
    one = {"file": "a.md", "results": [{"id": "1", "judge_verdict": "grounded"}]}
    for data in (one, [one], {"files": [one]}):
        assert load_results(write_json(tmp_path / "r.json", data)).files[0].results[0].judge_verdict == "grounded"


def test_synthetic_run_is_stock_vcrpy_loadable(tmp_path):
    run = write_run(tmp_path / "r1", results=[{"file": "docs/a.md", "results": []}],
                    pages={"docs/a.md": {"https://learn.microsoft.com/en-us/azure/p": "# P\n\n| a | 1 |\n", "https://learn.microsoft.com/azure/gone": None}})
    r = Run(run)
    assert r.page("https://learn.microsoft.com/azure/p").text == "# P\n\n| a | 1 |\n"
    assert r.page("https://learn.microsoft.com/azure/gone").sha256 is None
    cassette_file = run / "docs_a.md.yaml"
    assert len(load_cassette(cassette_file)) == 2
    # stock vcrpy loads it
    from vcr.persisters.filesystem import FilesystemPersister
    from vcr.serializers import yamlserializer
    requests, responses = FilesystemPersister.load_cassette(str(cassette_file), yamlserializer)
    assert len(requests) == 2 and json.loads(requests[0].body)["method"] == "tools/call"
    assert "interactions" in yaml.safe_load(cassette_file.read_text())


def test_an_empty_gold_set_is_bad_input(tmp_path):
    from replay.files.inputs import load_gold

    path = write_json(tmp_path / "gold.json", {"name": "x", "items": []})
    with pytest.raises(InputError, match="no items"):
        load_gold(path)


def test_our_writes_go_through_a_symlink_keep_permissions_and_take_the_longest_names(tmp_path):
    """`--out` on a symlink replaces the file it points to (the link stays); a file replaced keeps its
    mode (a 0600 report stays private); a name of 255 bytes, which the file system allows, can be written
    although the temporary file beside it has a longer name of its own."""
    import os
    import stat

    from replay.files.atomic import atomic_write_text

    real, link = tmp_path / "real.json", tmp_path / "link.json"
    real.write_text("old")
    os.chmod(real, 0o600)
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    longest = tmp_path / ("é" * 125 + ".json")  # 255 bytes in UTF-8
    atomic_write_text(longest, "x")
    assert longest.read_text() == "x" and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_claims_file_with_no_claims_is_refused_before_anything_is_paid(tmp_path):
    """An empty claims list would cost a model call and then fail as if the judge had answered nothing."""
    path = write_json(tmp_path / "x.json", {"file": "docs/x.md", "claims": []}) or tmp_path / "x.json"
    with pytest.raises(InputError, match="claims: List should have at least 1 item"):
        load_claims([path])


def test_a_line_break_in_a_file_name_keeps_the_message_on_one_line(tmp_path):
    assert str(InputError(tmp_path / "a\nb.json", "no such file")) == f"{tmp_path}/a\\nb.json: no such file"
    with pytest.raises(InputError, match="is not a file .a folder, or a pipe"):
        load_prompt(str(tmp_path))


def test_a_claims_folder_with_a_dangling_link_is_refused_not_judged_short(tmp_path):
    from replay.files.inputs import claims_paths

    write_json(tmp_path / "claims" / "a.json", {"file": "docs/a.md", "claims": [
        {"id": "a-1", "claim": "x", "claim_type": "version"}]})
    (tmp_path / "claims" / "b.json").symlink_to(tmp_path / "gone.json")
    with pytest.raises(InputError, match="b.json: is a symbolic link to nothing"):
        claims_paths([tmp_path / "claims"])
