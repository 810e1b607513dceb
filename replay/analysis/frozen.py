"""Frozen baselines: a results file marked frozen is never overwritten with other results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.errors import InputError
from replay.files.atomic import atomic_write_text
from replay.files.inputs import read_json
from replay.files.json_text import dump_json
from replay.files.results import results_json_path
from replay.runs.folder import MANIFEST, RESULTS
from replay.runs.writer import changing

# --------------------------------------------------------------------------- frozen baselines


def is_frozen(path: Path) -> bool:
    """Whether a results file (or a run folder's results.json / run.json) says `"frozen": true`."""
    files = [path / RESULTS, path / MANIFEST] if path.is_dir() else [path]
    for p in files:
        if p.is_file():
            data = read_json(p, "run" if p.name == MANIFEST else "results")
            if isinstance(data, dict) and data.get("frozen") is True:
                return True
    return False


def _with_frozen(data: dict[str, Any], frozen: bool) -> dict[str, Any]:
    """`data` with `frozen` set, placed before `files`/`claims` as the records order it."""
    if "frozen" in data:
        return {**data, "frozen": frozen}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "files":
            out["frozen"] = frozen
        out[key] = value
    out.setdefault("frozen", frozen)
    return out


def set_frozen(path: str | Path, frozen: bool = True) -> list[Path]:
    """Mark a results file, or a run folder (its results.json and run.json), frozen or not.

    Returns the files changed. Only a results file with a `files` list can carry the mark.
    """
    path = Path(path)
    if path.is_dir() and (path / MANIFEST).is_file():  # a run: changed under its recording lock (`changing`)
        with changing(path):
            return _set_frozen([results_json_path(path), path / MANIFEST], frozen)
    return _set_frozen([results_json_path(path)], frozen)


def _set_frozen(targets: list[Path], frozen: bool) -> list[Path]:
    """The mark set in each file, results.json first: a kill between the two leaves the run refusing to be
    recorded over (the recorder reads results.json), and a second `--freeze` finishes it."""
    changed = []
    for p in targets:
        data = read_json(p, "run" if p.name == MANIFEST else "results")
        if not isinstance(data, dict) or (p.name != MANIFEST and "files" not in data):
            raise InputError(p, "cannot be frozen: only a results file with a 'files' list can carry "
                                "\"frozen\": true (a bare list of per-file outputs cannot)")
        if data.get("frozen", False) is not frozen:
            atomic_write_text(p, dump_json(_with_frozen(data, frozen)))
            changed.append(p)
    return changed
