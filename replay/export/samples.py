"""One Inspect AI sample per claim of a run: the claim, its conversation, its verdict, its score."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from inspect_ai.log import EvalError, EvalSample
from inspect_ai.model import ModelOutput

from replay.core.grading import ClaimKey
from replay.export.scoring import SCORER, claim_score
from replay.export.transcript import transcript
from replay.runs.folder import Run
from replay.schema.gold import GoldRow
from replay.schema.results import ClaimResult


def sample_id(file: str, claim_id: str) -> str:
    """A claim's sample id: its claims file and id (ids are unique only within a file)."""
    return f"{file}#{claim_id}"


def run_samples(run: Run, model: str, at: datetime, gold: dict[ClaimKey, GoldRow] | None) -> list[EvalSample]:
    """Every claim the run judged (its claims batches, and any result beyond them), in the run's order."""
    samples = []
    for entry in run.results.files:
        convo = transcript(run, entry.file, model, at)
        claims = {c.id: c for c in run.claims(entry.file) or []}
        results = {r.id: r for r in entry.results}
        for claim_id in [*claims, *(i for i in results if i not in claims)]:
            claim, result = claims.get(claim_id), results.get(claim_id)
            gold_row = gold.get((entry.file, claim_id)) if gold is not None else None
            record = result.model_dump(mode="json") if result else {"id": claim_id, "error": "no result for this claim"}
            metadata: dict[str, Any] = {
                "claims_file": entry.file, "claim_id": claim_id,
                "claim_type": claim.claim_type if claim else None,
                "cited_url": claim.evidence_url if claim else None,
                "verdict": record, "pages_read": convo.pages, "model_calls": convo.model_calls,
                "conversation_error": entry.error, "cassette": run.cassette_path(entry.file).name,
                "claims_in_conversation": len(claims) or len(results)}
            samples.append(EvalSample(
                id=sample_id(entry.file, claim_id), epoch=1,
                input=_claim_text(claim.claim if claim else None, result, claim_id),
                target=gold_row.label if gold_row else "",
                messages=convo.messages, events=list(convo.events),
                output=ModelOutput.from_content(model, json.dumps(record, ensure_ascii=False, indent=2)),
                scores={SCORER: claim_score(gold_row, _verdict(result))} if gold_row else None,
                metadata=metadata, started_at=at.isoformat(), completed_at=at.isoformat(), total_time=0.0, working_time=0.0,
                error=_no_verdict(result, entry.error)))
    return samples


def _no_verdict(result: ClaimResult | None, file_error: str | None) -> EvalError | None:
    """The sample's error when the claim has no verdict (the viewer lists such samples as failed), else None."""
    if result is not None and result.judge_verdict is not None:
        return None
    reason = (result.error if result else None) or file_error or "no result for this claim"
    return EvalError(message=reason, traceback=reason, traceback_ansi=reason)


def _verdict(result: ClaimResult | None) -> Any:
    return result.judge_verdict if result else None


def _claim_text(text: str | None, result: ClaimResult | None, claim_id: str) -> str:
    """The claim as the judge saw it; else the text a results file may carry beside a verdict; else its id."""
    carried = (result.model_extra or {}).get("claim") if result else None
    return text or (carried if isinstance(carried, str) else claim_id)
