"""The pytest record mode: a test marked `@pytest.mark.judge_run(prompt=..., claims=..., run=...)` gets
the run's verdicts, replayed offline; `--record-mode once` records a run that is missing first, and
`--record-mode rewrite` records every marked run again (once per session), against the endpoints given
by the options, the environment or the settings (billed, unless they are the local stand-ins)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from replay.snapshots.verdicts import RunVerdicts, replay_run

RECORD_MODES = ("none", "once", "rewrite")
RECORD_MODE_VARIABLE = "JUDGE_REPLAY_RECORD_MODE"
RECORDED = pytest.StashKey[set[Path]]()
"""The runs recorded in this session: `rewrite` records each once, however many tests use it."""


def record_mode(config: pytest.Config) -> str:
    """`--record-mode` (or `--judge-record-mode`), else JUDGE_REPLAY_RECORD_MODE, else `none`."""
    chosen = config.getoption("judge_record_mode", default=None) or os.environ.get(RECORD_MODE_VARIABLE) or "none"
    if chosen not in RECORD_MODES:
        raise pytest.UsageError(f"{RECORD_MODE_VARIABLE} must be one of {', '.join(RECORD_MODES)}, not {chosen!r}")
    return chosen


def _marked(marker: pytest.Mark) -> tuple[str, list[str], str, str | None]:
    """(prompt, claims paths, run path, model) from the marker, or a UsageError saying what is missing."""
    prompt, claims, run = marker.kwargs.get("prompt"), marker.kwargs.get("claims"), marker.kwargs.get("run")
    if isinstance(claims, str):
        claims = [claims]
    if not isinstance(prompt, str) or not isinstance(run, str) or not isinstance(claims, Sequence) or not claims \
            or not all(isinstance(c, str) for c in claims):
        raise pytest.UsageError("@pytest.mark.judge_run needs prompt=\"v3\" (or a prompt file), claims=[paths] "
                                "and run=\"runs/NAME\" (paths are taken from pytest's rootdir)")
    model = marker.kwargs.get("model")
    return prompt, list(claims), run, model if isinstance(model, str) else None


def marked_run(request: pytest.FixtureRequest) -> RunVerdicts:
    """The verdicts of the run the test's `judge_run` marker names, recording it first as the record
    mode says; replayed offline from its cassettes (a request they do not hold fails the test)."""
    marker = request.node.get_closest_marker("judge_run")
    if marker is None:
        raise pytest.UsageError("the judge_run fixture needs @pytest.mark.judge_run(prompt=..., claims=..., run=...)")
    prompt, claims, run, model = _marked(marker)
    config = request.config
    root = config.rootpath
    folder = (root / run).resolve()
    mode = record_mode(config)
    recorded = config.stash.setdefault(RECORDED, set())
    exists = (folder / "run.json").is_file()
    if (mode == "once" and not exists) or (mode == "rewrite" and folder not in recorded):
        _record(config, prompt, claims, run, model)
        recorded.add(folder)
    elif not exists:
        pytest.fail(f"run {run} is not recorded: `pytest --record-mode once` records it (billed, unless "
                    "JUDGE_REPLAY_LEARN_URL and JUDGE_REPLAY_ANTHROPIC_BASE_URL name the local stand-ins)",
                    pytrace=False)
    return replay_run(folder)


def _record(config: pytest.Config, prompt: str, claims: list[str], run: str, model: str | None) -> None:
    """Record the run with the project's settings and endpoints, from the rootdir (so run.json keeps the
    paths as the marker gives them)."""
    from replay.judge.model_route import ModelRoute
    from replay.judge.runner import judged_run
    from replay.schema.manifest import LEARN_MCP_URL
    from replay.settings import check_endpoint, setting

    learn = config.getoption("judge_learn_url", default=None)
    base = config.getoption("judge_anthropic_base_url", default=None)
    for flag, url in (("--judge-learn-url", learn), ("--judge-anthropic-base-url", base)):
        if url:
            check_endpoint(url, flag)
    with contextlib.chdir(config.rootpath):
        judged_run(prompt, list(claims), run, "record",
                   model=str(setting("model", model, "claude-sonnet-5-5")),
                   learn_url=str(setting("learn_url", learn, LEARN_MCP_URL)),
                   anthropic_base_url=setting("anthropic_base_url", base, None),
                   progress=False, force=True, route=ModelRoute(cache=True))
