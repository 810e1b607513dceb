"""`judge-replay schema`: JSON Schemas generated from the one records module."""

import json

import pytest

from replay.cli.main import main


def test_the_claims_schema_is_the_spec_format(capsys):
    assert main(["schema", "claims"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "ClaimsBatch" and set(schema["required"]) == {"file", "claims"}
    claim = schema["$defs"]["Claim"]
    assert set(claim["required"]) == {"id", "claim", "claim_type"}
    assert claim["properties"]["claim_type"]["enum"] == ["version", "tpm", "sku", "region", "status", "taxonomy"]


@pytest.mark.parametrize("name", ["gold", "results", "run", "grade", "diff", "drift"])
def test_every_schema_prints_as_json(name, capsys):
    assert main(["schema", name]) == 0
    assert json.loads(capsys.readouterr().out)["type"] == "object"


def test_an_unknown_name_is_bad_usage(capsys):
    assert main(["schema", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
