"""A whole judge run: inputs and services checked first, one conversation per claims file in parallel, the
run folder replaced as a whole at the end (`runs.writer`)."""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replay.core.commands import DEFAULT_MAX_TOKENS, LEGACY_MAX_TOKENS, judge_command
from replay.core.cost import costed, total_usd
from replay.core.prompts import Prompt
from replay.core.sample_results import combined
from replay.errors import RecordingFailed, UsageError
from replay.files.atomic import atomic_write_text, write_model
from replay.files.inputs import load_claims
from replay.files.paths import display_path, portable_path
from replay.learn.sessions import LearnSessions
from replay.prompts import load_prompt
from replay.runs.folder import MANIFEST, PROMPT, RESULTS, Run
from replay.runs.names import sample_cassette_name
from replay.runs.writer import RunFolderWriter, reading, recover
from replay.schema.common import RunMode
from replay.schema.manifest import LEARN_MCP_URL, RunManifest, RunStats
from replay.schema.results import FileResult, HeldFiles, ResultsFile
from replay.secrets import registry as _secrets
from replay.secrets.environment import remember_environment
from replay.secrets.in_urls import scrub_url
from replay.settings import project_prices
from replay.urls import LEARN_STAND_IN_PORT, MODEL_STAND_IN_PORT

if TYPE_CHECKING:
    from replay.judge.model_route import ModelRoute
from replay.judge.conversations import _at_once, _judge_all, _LiveHttp, _Recorder
from replay.judge.held import HeldClaims, RunResults, _costs_and_tokens, _held_claims
from replay.judge.preflight import (
    _api_key,
    _preflight_learn,
    _preflight_model,
    _refuse_frozen,
    _refuse_to_drop_cassettes,
)
from replay.judge.replaying import _claims_entry, _replay, _run_claims, _run_prompt, _sha256_file, replayed_run
from replay.urls import as_given, stored_endpoint

_VERSIONED = ("judge-replay", "anthropic", "httpx", "httpx2", "vcrpy")


# --------------------------------------------------------------------------- public entry points


def run_judge(prompt_name_or_path: str | None, claims_paths: list[str | Path], run_dir: str | Path | None,
              mode: RunMode, **options: Any) -> ResultsFile:
    """`judged_run`'s results as one results file (every file's results held at once)."""
    return judged_run(prompt_name_or_path, claims_paths, run_dir, mode, **options).whole()


def judged_run(
    prompt_name_or_path: str | None,
    claims_paths: list[str | Path],
    run_dir: str | Path | None,
    mode: RunMode,
    *,
    model: str,
    learn_url: str = LEARN_MCP_URL,
    anthropic_base_url: str | None = None,
    pages_from: str | Path | None = None,
    concurrency: int = 4,
    api_key: str | None = None,
    progress: bool = True,
    force: bool = False,
    max_turns: int = 12,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    retry_failed: bool = False,
    route: ModelRoute | None = None,
    samples: int = 1,
) -> RunResults:
    """Run the judge over every claims batch: live, recording into `run_dir`, or replaying `run_dir`.

    Live and record write `prompt.md`, `results.json` and `run.json` (record also one cassette per
    claims file) into a staging folder, which replaces `run_dir` as a whole once every conversation has
    finished; an interrupted or failed recording leaves `run_dir` as it was. Replay writes nothing.
    Before the first paid call: settings, the run folder (locked against a second recording), the Learn
    endpoint and the model endpoint with the key are checked. A run where every conversation failed
    raises RecordingFailed and writes nothing. `retry_failed`: record only the files that failed in
    `run_dir` (and files new to it), keeping the others as they were recorded. `route`: how model
    requests travel (`ModelRoute`: prompt caching, `--batch`); None: direct, without cache breakpoints.
    `samples`: K independent conversations per claims file (each its own cassette, every page fetched once
    for all of them: `HttpRecorder`), combined per file by `core.sample_results.combined`.
    Memory holds one conversation per worker: each claims batch until its conversation starts and each
    file's results once it ended are held compactly (`HeldClaims`, `schema.results.HeldFiles`), results.json is
    written one file's results at a time, and the results come back the same way (`RunResults`).
    """
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, not {concurrency}")
    _remember_secrets(api_key, learn_url, anthropic_base_url)
    if mode == "replay":
        if run_dir is None:
            raise UsageError("--mode replay needs --run DIR: the run whose cassettes answer every request")
        recover(Path(run_dir))
        with reading(run_dir):  # a recording into it swaps its new run in after this replay, never during it
            run = Run(run_dir)
            if prompt_name_or_path is None and not claims_paths:
                return replayed_run(run, concurrency=concurrency, progress=progress)
            prompt = load_prompt(prompt_name_or_path) if prompt_name_or_path else _run_prompt(run)
            batches = _held_claims(load_claims(list(claims_paths))) if claims_paths else _run_claims(run)
            return _replay(run, prompt, batches, concurrency=concurrency, progress=progress)

    if prompt_name_or_path is None:
        raise UsageError(f"--mode {mode} needs --prompt (a bundled name or a prompt file)")
    if not claims_paths:
        raise UsageError(f"--mode {mode} needs --claims (claims files or folders)")
    if mode == "record" and run_dir is None:
        raise UsageError("--mode record needs --run DIR: the folder the run is recorded into")
    if retry_failed and (mode != "record" or run_dir is None):
        raise UsageError("--retry-failed re-records the failed files of a run: it needs --mode record and --run DIR")
    if samples < 1:
        raise UsageError(f"--samples must be at least 1, not {samples}")
    _recorded_at()  # a bad SOURCE_DATE_EPOCH stops the run now, not after it was paid for
    prices = project_prices()  # and so does a bad [tool.judge-replay.prices]
    prompt = load_prompt(prompt_name_or_path)
    batches = _held_claims(load_claims(list(claims_paths)))
    pages_run = Run(pages_from) if pages_from is not None else None
    key = _api_key(api_key, anthropic_base_url)

    writer = RunFolderWriter(Path(run_dir)) if run_dir is not None else None  # refuses a bad --run now

    stand_ins: set[str] = set()
    if pages_run is None:
        _preflight_learn(learn_url, stand_ins)
    _preflight_model(model, anthropic_base_url, key, stand_ins)
    sessions = LearnSessions(learn_url, conversations=_at_once(route, concurrency, len(batches) * samples),
                             shown_url=stored_endpoint(learn_url, LEARN_STAND_IN_PORT), end_sessions=pages_run is None)
    # the run folder is locked, and a staging folder made (so: writable); the Learn sessions end last
    with sessions, writer or nullcontext():
        frozen = run_dir is not None and _refuse_frozen(Path(run_dir), force)
        if mode == "live" and run_dir is not None and not force:
            _refuse_to_drop_cassettes(Path(run_dir))
        kept = (_kept_from(Run(run_dir), prompt, model, batches, learn_url, anthropic_base_url, max_tokens, samples)
                if retry_failed and run_dir is not None else {})
        to_judge = [(p, b) for p, b in batches if b.file not in kept]
        if route is not None:
            route.for_run(prompt.sha256, model, {b.file: _sha256_file(p) for p, b in to_judge}, part=retry_failed)

        def rerecord_command() -> str:  # with the run's --batch (--resume while its journal holds batches) etc.
            return judge_command(prompt=prompt.name, claims=[portable_path(p) for p, _ in batches],
                                 run=str(run_dir) if run_dir is not None else None, model=model, learn_url=learn_url,
                                 anthropic_base_url=anthropic_base_url,
                                 pages_from=str(pages_from) if pages_from is not None else None,
                                 max_tokens=max_tokens if max_tokens != DEFAULT_MAX_TOKENS else None,
                                 samples=samples, **(route.command_choices() if route else {}))

        rerecord = rerecord_command()
        recorder: _Recorder
        if mode == "live" and pages_run is None:
            recorder = _LiveHttp()
        else:
            from replay.recording.recorder import HttpRecorder

            # live with --pages-from and no --run: the recorder writes nothing, any folder will do
            recorder = HttpRecorder(mode, writer.staging if writer else Path.cwd(),
                                    pages_from=pages_run.path if pages_run else None, rerecord_hint=rerecord)
        with recorder:
            judged = _judge_all(
                prompt, to_judge, recorder, sessions, model=model, base_url=anthropic_base_url, api_key=key,
                max_retries=2, concurrency=concurrency, progress=progress, max_turns=max_turns, max_tokens=max_tokens,
                stand_ins=stand_ins, route=route, samples=range(1, samples + 1),
            )
        batched = route is not None and route.batch is not None
        previous_batch_ids = Run(run_dir).manifest.batch_ids if kept and run_dir is not None else None
        kept_batched = previous_batch_ids is not None
        resumable = route is not None and route.command_choices()["resume"]
        _refuse_all_failed(judged, rerecord_command(), resumable=resumable,
                           shown=lambda text: as_given(text, learn_url, anthropic_base_url))
        recorded_at = _recorded_at()

        def files() -> Iterator[FileResult]:
            """Each claims file's results in claims order (its samples combined), priced (the kept ones billed
            as they were)."""
            judged_now = iter(judged)
            for _, b in batches:
                result = (_priced_as(kept[b.file][0], kept_batched) if b.file in kept else combined(
                    [costed(_priced_as(next(judged_now), batched), model, batch=batched, prices=prices)
                     for _ in range(samples)]))
                yield costed(result, model, batch=batched, prices=prices)

        costs, tokens = _costs_and_tokens(files())
        results = RunResults(ResultsFile(prompt=prompt.name, prompt_sha256=prompt.sha256, model=model,
                                         recorded_at=recorded_at, files=[], frozen=frozen,
                                         stand_ins=sorted(stand_ins), cost_usd=total_usd(costs),
                                         samples=samples if samples > 1 else None), files)
        if writer is not None:
            stats = _stats(recorder, judged, counted_by_recorder=not isinstance(recorder, _LiveHttp))
            stats.learn_retries = sessions.retries
            for _, (_, kept_stats) in kept.items():
                _add_counts(stats, kept_stats)
            for name, count in tokens.items():
                setattr(stats, name, count)
            manifest = RunManifest(
                run_id=writer.run.name,
                prompt=prompt.name,
                prompt_sha256=prompt.sha256,
                model=model,
                mode=mode,
                recorded_at=recorded_at,
                learn_url=stored_endpoint(learn_url, LEARN_STAND_IN_PORT),
                anthropic_base_url=stored_endpoint(anthropic_base_url, MODEL_STAND_IN_PORT) if anthropic_base_url else None,
                pages_from=portable_path(pages_run.path) if pages_run else None,
                stand_ins=sorted(stand_ins),
                versions=_versions(),
                claims=[_claims_entry(p, b, samples) for p, b in batches],
                stats=stats,
                frozen=frozen,
                batch_ids=_run_batch_ids(previous_batch_ids, route.batch_ids if route else None),
                cache=route.cache if route else False,
                max_cost_usd=route.budget.limit_usd if route and route.budget else None,
                max_tokens=max_tokens,
                cost_usd=results.header.cost_usd,
                samples=samples if samples > 1 else None,
            )
            for entry, cost in zip(manifest.claims, costs, strict=True):
                entry.cost_usd = cost
            for file in kept:
                for k in range(1, samples + 1):
                    name = sample_cassette_name(file, k)
                    shutil.copy2(writer.run / name, writer.staging / name)
            atomic_write_text(writer.staging / PROMPT, prompt.text)
            results.write(writer.staging / RESULTS)
            write_model(writer.staging / MANIFEST, manifest)  # last: a staging folder with run.json is whole
            writer.commit()
    if writer is not None and mode == "record":
        _index_pages(Run(writer.run), getattr(recorder, "pages_read", None))
    return results


def _priced_as(result: FileResult, batch: bool) -> FileResult:
    """A claims file's result saying whether its model calls went through batches (kept if it says)."""
    return result if result.batch is not None else result.model_copy(update={"batch": batch})


def _run_batch_ids(kept: list[str] | None, new: list[str] | None) -> list[str] | None:
    """The batches a run's files used: those of the files kept by --retry-failed, then the new ones."""
    if kept is None and new is None:
        return None
    return [*(kept or []), *(i for i in new or [] if i not in (kept or []))]


def failed_files(files: Iterable[FileResult]) -> list[FileResult]:
    """The claims files to record again: their conversation failed, or a claim of theirs has no verdict."""
    return [f for f in files if f.needs_recording_again]


def _remember_secrets(api_key: str | None, *urls: str | None) -> None:
    """Register every secret the user gave us before any call, so nothing we write or print holds it."""
    remember_environment()
    _secrets.remember(api_key)
    for url in urls:
        _secrets.remember_url(url)


def _refuse_all_failed(judged: HeldFiles, rerecord: str, *, resumable: bool = False,
                       shown: Callable[[str], str] = str) -> None:
    """A recording where no claim got a verdict (every file failed, as a whole or claim by claim) is not
    a run: RecordingFailed, nothing written (`resumable`: the batches it submitted are journaled; `shown`:
    the failures' texts as the user reads them, `urls.as_given`)."""
    from replay.judge.answers import NO_VERDICT
    if judged and not any(r.judge_verdict is not None for f in judged for r in f.results):
        reasons = sorted({f.error or next((r.error for r in f.results if r.error), "") or NO_VERDICT for f in judged})
        raise RecordingFailed(
            f"every conversation failed ({len(judged)} of {len(judged)} claims files), so no run was written: "
            + "; ".join(shown(_secrets.redact(r)) for r in reasons[:3])
            + ("; ..." if len(reasons) > 3 else ""),
            *(["  the batches submitted so far are kept: --batch --resume answers from them, nothing is paid twice"]
              if resumable else []),
            f"  to try again: {rerecord}",
        )


def _kept_from(run: Run, prompt: Prompt, model: str, batches: list[tuple[Path, HeldClaims]], learn_url: str,
               base_url: str | None, max_tokens: int, samples: int = 1) -> dict[str, tuple[FileResult, RunStats]]:
    """For --retry-failed: the files of `run` that succeeded and are kept as recorded (their results and
    counters), when the prompt, the model, the endpoints and the claims file are the ones they were
    recorded with. A changed endpoint is refused: the kept cassettes answer only for the endpoints in
    run.json, so the run would no longer replay (compared in the stored, canonical form)."""
    m = run.manifest
    if m.prompt_sha256 != prompt.sha256 or m.model != model:
        raise UsageError(f"--retry-failed keeps the verdicts already in {display_path(run.path)}, recorded with "
                         f"prompt {m.prompt} and model {m.model}: use the same prompt and model")
    if (m.max_tokens or LEGACY_MAX_TOKENS) != max_tokens:
        raise UsageError(f"--retry-failed keeps the cassettes already in {display_path(run.path)}, whose model "
                         f"requests asked for --max-tokens {m.max_tokens or LEGACY_MAX_TOKENS}: use the same, or record "
                         f"the whole run again with --max-tokens {max_tokens} without --retry-failed")
    if m.sample_count != samples:
        raise UsageError(f"--retry-failed keeps the verdicts already in {display_path(run.path)}, recorded with "
                         f"--samples {m.sample_count}: use the same --samples")
    endpoints = {"--learn-url": (learn_url, LEARN_STAND_IN_PORT, m.learn_url),
                 "--anthropic-base-url": (base_url, MODEL_STAND_IN_PORT, m.anthropic_base_url)}
    for option, (given, port, recorded_with) in endpoints.items():
        if (stored_endpoint(given, port) if given else None) != recorded_with:  # compared as stored, said as given
            raise UsageError(f"--retry-failed keeps the cassettes already in {display_path(run.path)}, recorded "
                             f"with {option} {recorded_with or '(the default)'}; they would not replay beside files "
                             f"recorded with {scrub_url(given) if given else '(the default)'}: use the same endpoint, "
                             "or record the whole run again without --retry-failed")
    recorded = {f.file: f for f in run.results.files}
    entries = {e.file: e for e in m.claims}
    kept: dict[str, tuple[FileResult, RunStats]] = {}
    for path, batch in batches:
        result, entry = recorded.get(batch.file), entries.get(batch.file)
        if result is None or entry is None or result.needs_recording_again or entry.sha256 != _sha256_file(path):
            continue
        if not all((run.path / name).is_file() for name in entry.cassettes):
            continue
        kept[batch.file] = (result, _cassette_counts(run, batch.file, samples))
    if len(kept) == len(batches):
        raise UsageError(f"no claims file failed in {display_path(run.path)}: there is nothing to record again")
    return kept


def _cassette_counts(run: Run, claims_file: str, samples: int = 1) -> RunStats:
    from replay.cassettes.cassette import load_cassette
    from replay.cassettes.matching import canonical_request

    interactions = [it for k in range(1, samples + 1) if (path := run.cassette_path(claims_file, k)).is_file()
                    for it in load_cassette(path)]
    kinds = [canonical_request(it.method, it.uri, it.request_body).kind for it in interactions]
    return RunStats(interactions=len(kinds), model_calls=kinds.count("model"), learn_calls=kinds.count("learn"))


def _add_counts(stats: RunStats, more: RunStats) -> None:
    stats.interactions += more.interactions
    stats.model_calls += more.model_calls
    stats.learn_calls += more.learn_calls


def _index_pages(run: Run, pages_read: Any = None) -> None:
    """Add the pages a recording read to this project's page store (`pages history`), from what the
    recorder wrote (`HttpRecorder.pages_read`) where it has it (`runs.page_store.index_or_warn`). A run
    recorded outside the project (a scratch folder) is left out: the store would list a run it cannot find."""
    from replay.runs.page_store import index_or_warn
    from replay.settings import project_root

    if run.path.resolve().is_relative_to(project_root().resolve()):
        index_or_warn([run], pages_read)


# --------------------------------------------------------------------------- reading a run back


def _recorded_at() -> str:
    """Now, in UTC; or `SOURCE_DATE_EPOCH` when set (the reproducible-builds convention), so that a
    re-recorded run folder can be byte-identical, manifest included."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    try:
        if epoch and not (epoch.isascii() and epoch.isdigit()):  # as `date +%s` writes it: not -1, +5, 1_000, " 5"
            raise ValueError(epoch)
        when = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch else datetime.now(timezone.utc)
    except (ValueError, OverflowError, OSError):  # not a number; a year the calendar cannot hold
        raise UsageError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970 (up to year 9999), not {epoch!r}"
                         ) from None
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _stats(recorder: _Recorder, files: HeldFiles, *, counted_by_recorder: bool) -> RunStats:
    """The counters of what was judged now: the recorder's, or (plain live mode) counted from the results."""
    if counted_by_recorder:
        return recorder.stats.model_copy()
    stats = RunStats()
    for f in files:
        stats.model_calls += f.turns or 0
        stats.learn_calls += len(f.tool_calls or [])
    return stats
