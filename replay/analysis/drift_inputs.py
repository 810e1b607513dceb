"""The I/O edge of drift: reads run folders into the pure core's inputs, and records dated page snapshots."""

from __future__ import annotations

from collections.abc import Mapping

from replay.analysis.flip_inputs import claims_paths as run_claims_paths
from replay.core.commands import Endpoints
from replay.core.drift import ClaimEvidence, drift_report, evidence_url, rerecord_target
from replay.runs.folder import Run
from replay.schema.claims import Claim
from replay.schema.drift import DriftReport
from replay.settings import given_endpoints


def run_drift(old_run: Run, new_run: Run, *, run_name: str, against_name: str,
              claims: Mapping[str, list[Claim]] | None = None, claims_paths: Mapping[str, str] | None = None,
              today: str, outside_project: str | None = None, items: list[ClaimEvidence] | None = None,
              endpoints: Endpoints | None = None) -> DriftReport:
    """The drift report of `old_run` against the pages of `new_run` (both run folders, read offline);
    `items`: `drift_items(old_run, claims)`, when the caller has them. `endpoints`: what its re-record
    command records against (`drift --live`: the Learn endpoint it fetched from; None: those the user
    gave, `settings.given_endpoints`, else the old run's, with the report's note on `--pages-from`)."""
    if endpoints is None:
        endpoints = given_endpoints()
    items = items if items is not None else drift_items(old_run, claims or {})
    paths = {**run_claims_paths(old_run), **(claims_paths or {})}
    # the re-record fetches today's pages: never pinned to the pages the old run may have been served from
    recorded_as = old_run.manifest.model_copy(update={"pages_from": None})
    folder, note = rerecord_target(run_name, today, outside_project)
    return drift_report(
        run=run_name, against=against_name, items=items, old_pages=old_run.pages, new_pages=new_run.pages,
        recorded_as=recorded_as, claims_paths=paths, rerecord_run=folder, rerecord_note=note, endpoints=endpoints,
    )


def drift_items(run: Run, overrides: Mapping[str, list[Claim]]) -> list[ClaimEvidence]:
    """What every verdict of a run rests on: its result's page and quote, and the claim text."""
    items = []
    for file_result in run.compact_results().files:  # a run's thousands of verdicts, held compact and let go
        claims = {c.id: c for c in overrides.get(file_result.file) or run.claims(file_result.file) or []}
        run.forget_claims()  # what drift needs of them is in the items
        answered = set()
        for result in file_result.results:
            answered.add(result.id)
            claim = claims.get(result.id)
            url = evidence_url(result.evidence_url or None, claim.evidence_url if claim else None, run.pages)
            items.append(ClaimEvidence(file=file_result.file, id=result.id, claim=claim.claim if claim else None,
                                       evidence_url=url, verdict=result.judge_verdict, quote=result.evidence_quote))
        for claim in claims.values():
            if claim.id not in answered:
                url = evidence_url(None, claim.evidence_url, run.pages)
                items.append(ClaimEvidence(file=file_result.file, id=claim.id, claim=claim.claim, evidence_url=url))
    return items
