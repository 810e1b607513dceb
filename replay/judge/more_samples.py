"""`judge --add-samples N`: N more samples recorded into a recorded run, the recorded ones kept byte for byte.

The run's own prompt (prompt.md), claims files (unchanged since recording), model, endpoints and
settings are used; anything given that differs is refused before anything is paid for. The new samples
read the page versions the recorded ones read (every page in the recorded cassettes is pinned:
`HttpRecorder.pin_pages`); a page none of them fetched is fetched once for all new samples. The whole
run folder is written anew in a staging folder (the recorded files copied, the new cassettes, results.json
and run.json) and swapped in at once (`runs.writer`): a crash or a kill leaves the run as it was."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from replay.cassettes.cassette import load_cassette
from replay.core.commands import LEGACY_MAX_TOKENS, Endpoints, add_samples_command
from replay.core.cost import costed, total_usd
from replay.core.sample_results import combined, split
from replay.errors import UsageError
from replay.files.atomic import atomic_write_text, write_model
from replay.files.inputs import load_claims
from replay.files.paths import display_path, portable_path
from replay.learn.sessions import LearnSessions
from replay.prompts import load_prompt
from replay.runs.folder import MANIFEST, PROMPT, RESULTS, Run
from replay.runs.writer import RunFolderWriter, recover
from replay.schema.manifest import RunManifest
from replay.schema.results import FileResult, ResultsFile
from replay.settings import project_prices
from replay.urls import LEARN_STAND_IN_PORT, MODEL_STAND_IN_PORT, as_given, stored_endpoint

if TYPE_CHECKING:
    from replay.judge.model_route import ModelRoute
from replay.judge.conversations import _at_once, _judge_all
from replay.judge.held import RunResults, _costs_and_tokens
from replay.judge.preflight import _api_key, _preflight_learn, _preflight_model, _refuse_frozen
from replay.judge.replaying import _claims_entry, _run_claims, _run_prompt, _sha256_file
from replay.judge.runner import _add_counts, _priced_as, _refuse_all_failed, _remember_secrets, _stats


@dataclass(frozen=True)
class Given:
    """What the command line gave besides `--add-samples N --run DIR` (None: not given, the run's own)."""

    prompt: str | None = None
    claims: tuple[str, ...] = ()
    model: str | None = None
    learn_url: str | None = None
    anthropic_base_url: str | None = None
    pages_from: str | None = None


def refusal(run: Run, given: Given, *, batch: bool | None = None, cache: bool | None = None) -> str | None:
    """Why N more samples cannot be recorded into `run` as asked (None: they can): anything given that is
    not what the run was recorded with (prompt, claims, model, endpoints, pages, `--batch`, `--no-cache`)."""
    m = run.manifest
    where = display_path(run.path)
    if m.mode != "record":
        return f"{where} was not recorded (mode {m.mode}): only a recorded run holds samples to add to"
    if given.prompt is not None and load_prompt(given.prompt).sha256 != m.prompt_sha256:
        return f"--prompt {given.prompt} is not the prompt {where} was recorded with ({m.prompt}): samples of one run share one prompt"
    if given.claims:
        now = {b.file: _sha256_file(p) for p, b in load_claims(list(given.claims))}
        recorded = {e.file: e.sha256 for e in m.claims}
        if now != recorded:
            return f"--claims are not the claims files {where} was recorded with: samples of one run judge the same claims"
    if given.model is not None and given.model != m.model:
        return f"--model {given.model} is not the model {where} was recorded with ({m.model})"
    for option, url, port, recorded_with in (
            ("--learn-url", given.learn_url, LEARN_STAND_IN_PORT, m.learn_url),
            ("--anthropic-base-url", given.anthropic_base_url, MODEL_STAND_IN_PORT, m.anthropic_base_url)):
        if url is not None and stored_endpoint(url, port) != recorded_with:
            return f"{option} is not the endpoint {where} was recorded with ({recorded_with or 'the default'})"
    if given.pages_from is not None and portable_path(Path(given.pages_from)) != m.pages_from:
        return f"--pages-from {given.pages_from} is not how {where} was recorded ({m.pages_from or 'pages fetched live'})"
    if batch is True and m.batch_ids is None:
        return f"{where} was recorded with direct calls: its samples are added the same way (leave out --batch)"
    if cache is False and m.cache is not False:
        return f"{where} was recorded with prompt caching: its samples are added the same way (leave out --no-cache)"
    missing = run.missing_cassettes()
    if missing:
        return f"{where} lacks cassettes of {', '.join(missing[:3])}: its recorded samples would not replay"
    return None


def added_samples(run_dir: str | Path, more: int, given: Given, *, route: ModelRoute | None, concurrency: int = 4,
                  progress: bool = True, force: bool = False, api_key: str | None = None,
                  max_turns: int = 12) -> RunResults:
    """Record `more` samples of every claims file into the run in `run_dir` (module docstring); the run's
    results with every sample, as written."""
    if more < 1:
        raise UsageError(f"--add-samples must be at least 1, not {more}")
    path = Path(run_dir)
    recover(path)
    if not (path / MANIFEST).is_file():
        raise UsageError(f"--add-samples adds samples to a recorded run: {display_path(path)} holds none ({MANIFEST} "
                         "is missing); record one with --mode record --samples K")
    run = Run(path)
    why = refusal(run, given, batch=route is not None and route.batch is not None, cache=route is None or route.cache)
    if why:
        raise UsageError(why)
    m = run.manifest
    prompt = _run_prompt(run)
    batches = _run_claims(run)
    learn_url = given.learn_url or m.learn_url
    base_url = given.anthropic_base_url or m.anthropic_base_url
    pages_from = given.pages_from or m.pages_from
    pages_run = Run(pages_from) if pages_from else None
    _remember_secrets(api_key, learn_url, base_url)
    prices = project_prices()
    key = _api_key(api_key, base_url)
    recorded = m.sample_count
    new = range(recorded + 1, recorded + more + 1)
    hint = add_samples_command(str(run_dir), more, endpoints=Endpoints(given.learn_url, given.anthropic_base_url))

    stand_ins: set[str] = set()
    if pages_run is None:
        _preflight_learn(learn_url, stand_ins)
    _preflight_model(m.model, base_url, key, stand_ins)
    sessions = LearnSessions(learn_url, conversations=_at_once(route, concurrency, len(batches) * more),
                             shown_url=stored_endpoint(learn_url, LEARN_STAND_IN_PORT), end_sessions=pages_run is None)
    writer = RunFolderWriter(path)
    with sessions, writer:
        frozen = _refuse_frozen(path, force)
        run = Run(path)  # as it is now that no other recording can change it
        if run.manifest.model_dump() != m.model_dump():
            raise UsageError(f"{display_path(path)} was recorded again while this command started: run it again")
        if route is not None:
            route.for_run(prompt.sha256, m.model, {b.file: _sha256_file(p) for p, b in batches})
        from replay.recording.recorder import HttpRecorder

        recorder = HttpRecorder("record", writer.staging, pages_from=pages_run.path if pages_run else None,
                                rerecord_hint=hint)
        for entry in m.claims:
            for name in entry.cassettes:
                recorder.pin_pages(load_cassette(path / name))
        with recorder:
            judged = _judge_all(prompt, batches, recorder, sessions, model=m.model, base_url=base_url, api_key=key,
                                max_retries=2, concurrency=concurrency, progress=progress, max_turns=max_turns,
                                max_tokens=m.max_tokens or LEGACY_MAX_TOKENS, stand_ins=stand_ins, route=route,
                                samples=new)
        resumable = route is not None and route.command_choices()["resume"]
        _refuse_all_failed(judged, hint, resumable=resumable, shown=lambda text: as_given(text, learn_url, base_url))
        batched = route is not None and route.batch is not None
        old = {f.file: f for f in run.results.files}
        samples = recorded + more

        def files() -> Iterator[FileResult]:
            judged_now = iter(judged)
            for _, b in batches:
                parts = [*split(old[b.file]),
                         *(costed(_priced_as(next(judged_now), batched), m.model, batch=batched, prices=prices)
                           for _ in new)]
                yield costed(combined(parts), m.model, batch=batched, prices=prices)

        costs, tokens = _costs_and_tokens(files())
        all_stand_ins = sorted(set(m.stand_ins) | stand_ins)
        header = ResultsFile(prompt=m.prompt, prompt_sha256=m.prompt_sha256, model=m.model, recorded_at=m.recorded_at,
                             files=[], frozen=frozen, stand_ins=all_stand_ins, cost_usd=total_usd(costs),
                             samples=samples)
        results = RunResults(header, files)
        stats = m.stats.model_copy()
        _add_counts(stats, _stats(recorder, judged, counted_by_recorder=True))
        stats.page_cache_hits += recorder.stats.page_cache_hits
        stats.retries_dropped += recorder.stats.retries_dropped
        stats.learn_retries += sessions.retries
        for name, count in tokens.items():
            setattr(stats, name, count)
        claims = [_claims_entry(p, b, samples).model_copy(update={"path": e.path, "cost_usd": cost})
                  for (p, b), e, cost in zip(batches, m.claims, costs, strict=True)]
        batch_ids = [*(m.batch_ids or []), *(route.batch_ids or [])] if route and route.batch else m.batch_ids
        manifest = m.model_copy(update={"claims": claims, "stats": stats, "stand_ins": all_stand_ins, "frozen": frozen,
                                        "batch_ids": batch_ids, "cost_usd": header.cost_usd, "samples": samples})
        RunManifest.model_validate(manifest.model_dump())
        for entry in m.claims:
            for name in entry.cassettes:
                shutil.copy2(path / name, writer.staging / name)
        atomic_write_text(writer.staging / PROMPT, prompt.text)
        results.write(writer.staging / RESULTS)
        write_model(writer.staging / MANIFEST, manifest)  # last: a staging folder with run.json is whole
        writer.commit()
    from replay.judge.runner import _index_pages

    _index_pages(Run(writer.run), getattr(recorder, "pages_read", None))
    return results

