"""The bake-off's results files (`judge-bakeoff-results-<prompt>.json`), planned and written."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from replay.analysis.frozen import is_frozen
from replay.core.cost import with_costs
from replay.core.prices import Price
from replay.errors import UsageError
from replay.files.atomic import atomic_write_text
from replay.files.json_text import dump_json
from replay.files.paths import display_path
from replay.runs.folder import Run
from replay.schema.results import ResultsFile

RESULTS_PREFIX = "judge-bakeoff-results-"

Warn = Callable[[str], None]


def results_file_name(prompt: str) -> str:
    """`judge-bakeoff-results-<prompt>.json`; a prompt given as a file path is named by its stem."""
    name = Path(prompt).stem if ("/" in prompt or prompt.endswith(".md")) else prompt
    return f"{RESULTS_PREFIX}{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}.json"


def _results_to_write(run: Run, results: ResultsFile, prices: Mapping[str, Price]) -> ResultsFile:
    """The run's results with its metadata and what it cost; a frozen run's results file is frozen too."""
    m = run.manifest
    # which services were stand-ins travels with the results, so grading the file alone still says it
    out = ResultsFile(prompt=m.prompt, prompt_sha256=m.prompt_sha256, model=m.model, recorded_at=m.recorded_at,
                      frozen=is_frozen(run.path), stand_ins=list(m.stand_ins), files=results.files)
    return with_costs(out, batch=m.batch_ids is not None, prices=prices)


def _plan_writes(versions: list[tuple[Run, ResultsFile]], out_dir: Path) -> list[Path]:
    """The results file of each version; two versions of the same prompt get their run name appended, and
    two that would still share a name (runs of one folder name in two places, or names that differ only
    in characters a file name here leaves out) a short hash of the run's path: no version's file is
    written over another's."""
    names = [results_file_name(run.manifest.prompt) for run, _ in versions]
    names = [name.removesuffix(".json") + f"-{re.sub(r'[^A-Za-z0-9._-]+', '_', run.name)}.json"
             if names.count(name) > 1 else name for (run, _), name in zip(versions, names, strict=True)]
    runs = [run.path.resolve() for run, _ in versions]
    return [out_dir / (name.removesuffix(".json") + f"-{hashlib.sha256(str(path).encode()).hexdigest()[:8]}.json"
                       if len({p for p, n in zip(runs, names) if n == name}) > 1 else name)
            for path, name in zip(runs, names, strict=True)]


def _changes_content(existing: str, new: str) -> bool:
    """Whether writing `new` over `existing` changes or drops anything it holds (adding a field an older
    file lacks, such as `stand_ins`, changes nothing it holds)."""
    try:
        old_data, new_data = json.loads(existing), json.loads(new)
    except json.JSONDecodeError:
        return True
    return _drops_or_changes(old_data, new_data)


def _drops_or_changes(old: Any, new: Any) -> bool:
    """`_changes_content` on parsed JSON, at every depth (a file's `cost_usd`, a usage's new counter: added
    fields, changing nothing the old value held)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return any(key not in new or _drops_or_changes(value, new[key]) for key, value in old.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) != len(new) or any(_drops_or_changes(a, b) for a, b in zip(old, new))
    return bool(old != new)


def _write_results(targets: list[tuple[Path, ResultsFile]], force: bool, warn: Warn) -> list[Path]:
    """Write each results file; a frozen one is never rewritten (not even to add a field an older file
    lacks), and one the new results would change is refused (before writing any) unless forced."""
    texts = []
    refused = []
    for path, results in targets:
        frozen = path.is_file() and is_frozen(path)
        text = dump_json(results.model_copy(update={"frozen": frozen or results.frozen}).model_dump(mode="json"))
        existing = path.read_text("utf-8") if path.is_file() else None
        changed = existing is not None and existing != text and _changes_content(existing, text)
        if frozen and changed and not force:
            refused.append(path)
        if frozen and not (changed and force):
            continue  # as it was frozen: the results it holds already
        texts.append((path, text, existing, frozen and changed))
    if refused:
        raise UsageError(
            "refusing to overwrite frozen results with different results: "
            + ", ".join(display_path(p) for p in refused)
            + " (a frozen baseline stays as it is; pass --force to overwrite it)"
        )
    written = []
    for path, text, existing, frozen_changed in texts:
        if existing == text:
            continue
        if frozen_changed:
            warn(f"overwriting frozen {display_path(path)} (--force); it stays frozen")
        atomic_write_text(path, text)
        written.append(path)
    return written
