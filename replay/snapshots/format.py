"""The snapshot file format: one JSON document of verdicts per claims file, packed in one syrupy entry."""

from __future__ import annotations

from typing import Any

from replay.cassettes.cassette import CASSETTE_SUFFIX
from replay.core.text import normalise_ws, short_hash
from replay.errors import InputError
from replay.runs.names import cassette_name
from replay.core.samples import verdict_counts
from replay.schema.results import ClaimResult, ResultsFile, recorded_sample_verdicts
from replay.urls import normalise_learn_url

SERIALIZER_VERSION = 1
"""Bump when the snapshot document changes shape: every snapshot then fails until updated."""
SNAPSHOT_SUFFIX = ".json"
HEADER_KEYS = ("serializer_version", "prompt", "prompt_sha256", "model")
_SECTION = "=== "
"""Starts each file's section in the one string syrupy compares (indented JSON never starts a line so)."""


def snapshot_file_name(claims_file: str) -> str:
    """`docs/a.md` -> `docs_a.md.json`: the claims file's cassette name with `.json`."""
    return cassette_name(claims_file).removesuffix(CASSETTE_SUFFIX) + SNAPSHOT_SUFFIX


def verdict_documents(run_name: str, results: ResultsFile) -> dict[str, dict[str, Any]]:
    """Snapshot file name -> its document, for every claims file of the results."""
    header: dict[str, Any] = {
        "serializer_version": SERIALIZER_VERSION,
        "prompt": results.prompt,
        "prompt_sha256": results.prompt_sha256[:12] if results.prompt_sha256 else None,
        "model": results.model,
    }
    claims_by_file: dict[str, dict[str, ClaimResult]] = {}
    for file_result in results.files:
        claims_by_file.setdefault(file_result.file, {}).update({r.id: r for r in file_result.results})
    documents: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    for file in sorted(claims_by_file):
        name = snapshot_file_name(file)
        if name in owner:
            raise InputError(run_name, f"claims files {owner[name]!r} and {file!r} map to the same snapshot file {name}")
        owner[name] = file
        claims = claims_by_file[file]
        documents[name] = {**header, "file": file, "claims": [_claim_entry(claims[i]) for i in sorted(claims)]}
    return documents


def _claim_entry(result: ClaimResult) -> dict[str, Any]:
    """A claim's verdict and what it rests on; for a claim judged K >= 2 times, its majority verdict (the
    top-level record's) and `verdicts`: how many samples gave each."""
    quote = normalise_ws(result.evidence_quote)
    entry: dict[str, Any] = {
        "id": result.id,
        "verdict": result.judge_verdict,
        "rule": result.rule,
        "evidence_url": normalise_learn_url(result.evidence_url) if result.evidence_url else "",
        "quote_verified": result.quote_verified,
        "quote_hash": short_hash(quote) if quote else None,
    }
    samples = recorded_sample_verdicts(result)
    if samples is not None:
        entry["verdicts"] = verdict_counts(samples)
    return entry


def pack(files: dict[str, str]) -> str:
    """Several snapshot files as the one string syrupy compares, in file name order."""
    return "".join(f"{_SECTION}{name}\n{files[name]}" for name in sorted(files))


def unpack(data: str) -> dict[str, str]:
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in data.splitlines(keepends=True):
        if line.startswith(_SECTION):
            current = files.setdefault(line[len(_SECTION):].rstrip("\n"), [])
        elif current is not None:
            current.append(line)
    return {name: "".join(lines) for name, lines in files.items()}
