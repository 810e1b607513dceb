"""A run as one Inspect AI eval log: its header (task, model, prompt, stats, scores) and samples, written atomically."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSpec, EvalStats, write_eval_log
from inspect_ai.model import ModelUsage

from replay.export.samples import run_samples
from replay.export.scoring import gold_by_key, run_score
from replay.runs.folder import Run
from replay.schema.gold import CompactGold

TASK = "judge-replay"


def _recorded_at(run: Run) -> datetime:
    """When the run was recorded (run.json holds an ISO 8601 UTC time): every time in the log is this one,
    since a cassette keeps no timings."""
    return datetime.fromisoformat(run.manifest.recorded_at.replace("Z", "+00:00")).astimezone(UTC)


def eval_log(run: Run, gold: CompactGold | None, gold_name: str | None) -> EvalLog:
    """The eval log of `run`: one sample per claim; scored when a gold set is given."""
    m = run.manifest
    at = _recorded_at(run)
    model = m.model
    samples = run_samples(run, model, at, gold_by_key(gold) if gold is not None else None)
    stats = m.stats
    usage = ModelUsage(input_tokens=stats.input_tokens, output_tokens=stats.output_tokens,
                       input_tokens_cache_write=stats.cache_creation_input_tokens,
                       input_tokens_cache_read=stats.cache_read_input_tokens,
                       total_tokens=stats.input_tokens + stats.output_tokens + stats.cache_creation_input_tokens
                       + stats.cache_read_input_tokens, total_cost=m.cost_usd)
    spec = EvalSpec(
        eval_id=run.name, run_id=m.run_id, created=at.isoformat(), task=TASK,
        task_id=run.name, task_version=m.prompt or 0, task_display_name=f"{run.name} (prompt {m.prompt})",
        dataset=EvalDataset(name=gold_name or "claims", samples=len(samples),
                            sample_ids=[s.id for s in samples]),
        model=model, model_base_url=m.anthropic_base_url, config=EvalConfig(),
        packages=dict(m.versions),
        metadata={"run": str(run.path), "prompt": m.prompt, "prompt_sha256": m.prompt_sha256, "mode": m.mode,
                  "learn_url": m.learn_url, "stand_ins": m.stand_ins, "frozen": m.frozen,
                  "claims_files": [{"file": e.file, "sha256": e.sha256, "cassette": e.cassette} for e in m.claims],
                  "cost_usd": m.cost_usd})
    results = EvalResults(total_samples=len(samples), completed_samples=len(samples),
                          scores=[run_score(run.compact_results(), gold)] if gold is not None else [])
    return EvalLog(status="success", eval=spec, results=results,
                   stats=EvalStats(started_at=at.isoformat(), completed_at=at.isoformat(), model_usage={model: usage}),
                   samples=samples)


def write_log(log: EvalLog, path: Path) -> None:
    """Write `log` to `path` (an `.eval` file) whole or not at all: a temporary file beside it, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}.partial.eval")
    try:
        write_eval_log(log, str(partial), format="eval")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
