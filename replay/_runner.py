"""A whole judge run: inputs and services checked first, one conversation per claims file in parallel, the
run folder replaced as a whole at the end (`_runfolder`)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from . import _secrets
from ._cassette import CASSETTE_SUFFIX
from ._commands import LEARN_STAND_IN_PORT, MODEL_STAND_IN_PORT, canonical_endpoint, is_loopback, judge_command
from ._config import project_prices
from ._cost import costed, total_usd
from ._errors import InputError, RecordingFailed, UsageError
from ._io import (
    atomic_write_chunks,
    atomic_write_text,
    display_path,
    dump_json_pieces,
    load_claims,
    load_claims_batch,
    load_compact_results,
    portable_path,
    read_json,
    write_model,
)
from ._learn import LearnClient, LearnSessions, shared_ssl_context
from ._mcp import STAND_IN_HEADER
from ._progress import RunProgress
from ._receipts import receipt_for
from ._prompts import Prompt, load_prompt
from ._records import (
    LEARN_MCP_URL,
    ClaimsBatch,
    ClaimsFileEntry,
    FileResult,
    HeldFiles,
    ResultsFile,
    RunManifest,
    RunMode,
    RunStats,
    held,
    restored,
)
from ._runfolder import RunFolderWriter, reading, recover
from ._runs import MANIFEST, PROMPT, RESULTS, Run, cassette_name
from ._scrub import scrub_text

if TYPE_CHECKING:
    from ._batch_runner import ModelRoute

NO_KEY = (
    "ANTHROPIC_API_KEY is not set (nor ANTHROPIC_AUTH_TOKEN): live and record modes call the Anthropic API "
    "(use --mode replay to run from cassettes)"
)
REPLAY_API_KEY = "replay-needs-no-key"
"""Replay never reaches the API; the SDK still wants a key to build its (scrubbed) headers."""
STAND_IN_API_KEY = "stand-in-accepts-any-key"
_VERSIONED = ("judge-replay", "anthropic", "httpx", "httpx2", "vcrpy")


class _Recorder(Protocol):
    """What the runner needs of `replay._recorder.HttpRecorder`."""

    stats: RunStats

    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> Any: ...
    def conversation(self, claims_file: str) -> Any: ...


class _LiveHttp:
    """Plain live mode: no interception at all, so no dependency on the recorder."""

    def __init__(self) -> None:
        self.stats = RunStats()

    def __enter__(self) -> _LiveHttp:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextmanager
    def conversation(self, claims_file: str) -> Iterator[None]:
        yield


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
    retry_failed: bool = False,
    route: ModelRoute | None = None,
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
    Memory holds one conversation per worker: each claims batch until its conversation starts and each
    file's results once it ended are held compactly (`HeldClaims`, `_records.HeldFiles`), results.json is
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
    sessions = LearnSessions(learn_url, conversations=_at_once(route, concurrency, len(batches)),
                             shown_url=stored_endpoint(learn_url, LEARN_STAND_IN_PORT), end_sessions=pages_run is None)
    # the run folder is locked, and a staging folder made (so: writable); the Learn sessions end last
    with sessions, writer or nullcontext():
        frozen = run_dir is not None and _refuse_frozen(Path(run_dir), force)
        if mode == "live" and run_dir is not None and not force:
            _refuse_to_drop_cassettes(Path(run_dir))
        kept = (_kept_from(Run(run_dir), prompt, model, batches, learn_url, anthropic_base_url)
                if retry_failed and run_dir is not None else {})
        to_judge = [(p, b) for p, b in batches if b.file not in kept]
        if route is not None:
            route.for_run(prompt.sha256, model, {b.file: _sha256_file(p) for p, b in to_judge}, part=retry_failed)

        def rerecord_command() -> str:  # with the run's --batch (--resume while its journal holds batches) etc.
            return judge_command(prompt=prompt.name, claims=[portable_path(p) for p, _ in batches],
                                 run=str(run_dir) if run_dir is not None else None, model=model, learn_url=learn_url,
                                 anthropic_base_url=anthropic_base_url,
                                 pages_from=str(pages_from) if pages_from is not None else None,
                                 **(route.command_choices() if route else {}))

        rerecord = rerecord_command()
        recorder: _Recorder
        if mode == "live" and pages_run is None:
            recorder = _LiveHttp()
        else:
            from ._recorder import HttpRecorder

            # live with --pages-from and no --run: the recorder writes nothing, any folder will do
            recorder = HttpRecorder(mode, writer.staging if writer else Path.cwd(),
                                    pages_from=pages_run.path if pages_run else None, rerecord_hint=rerecord)
        with recorder:
            judged = _judge_all(
                prompt, to_judge, recorder, sessions, model=model, base_url=anthropic_base_url, api_key=key,
                max_retries=2, concurrency=concurrency, progress=progress, max_turns=max_turns,
                stand_ins=stand_ins, route=route,
            )
        batched = route is not None and route.batch is not None
        previous_batch_ids = Run(run_dir).manifest.batch_ids if kept and run_dir is not None else None
        kept_batched = previous_batch_ids is not None
        resumable = route is not None and route.command_choices()["resume"]
        _refuse_all_failed(judged, rerecord_command(), resumable=resumable)
        recorded_at = _recorded_at()

        def files() -> Iterator[FileResult]:
            """Each claims file's results in claims order, priced (the kept ones billed as they were)."""
            judged_now = iter(judged)
            for _, b in batches:
                result = (_priced_as(kept[b.file][0], kept_batched) if b.file in kept
                          else _priced_as(next(judged_now), batched))
                yield costed(result, model, batch=batched, prices=prices)

        costs, tokens = _costs_and_tokens(files())
        results = RunResults(ResultsFile(prompt=prompt.name, prompt_sha256=prompt.sha256, model=model,
                                         recorded_at=recorded_at, files=[], frozen=frozen,
                                         stand_ins=sorted(stand_ins), cost_usd=total_usd(costs)), files)
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
                claims=[_claims_entry(p, b) for p, b in batches],
                stats=stats,
                frozen=frozen,
                batch_ids=_run_batch_ids(previous_batch_ids, route.batch_ids if route else None),
                cache=route.cache if route else False,
                max_cost_usd=route.budget.limit_usd if route and route.budget else None,
                cost_usd=results.header.cost_usd,
            )
            for entry, cost in zip(manifest.claims, costs, strict=True):
                entry.cost_usd = cost
            for file in kept:
                name = cassette_name(file)
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


def stored_endpoint(url: str, default_port: int) -> str:
    """An endpoint as a run folder keeps it: credentials removed as the cassettes' `uri:` has them
    (`_scrub.scrub_text`: userinfo and credential query values `REDACTED`, so that replay asks for the
    URL the cassette holds), a loopback endpoint in the stand-ins' canonical form."""
    return canonical_endpoint(scrub_text(url), default_port)


def failed_files(files: Iterable[FileResult]) -> list[FileResult]:
    """The claims files to record again: their conversation failed, or a claim of theirs has no verdict."""
    return [f for f in files if f.needs_recording_again]


def _remember_secrets(api_key: str | None, *urls: str | None) -> None:
    """Register every secret the user gave us before any call, so nothing we write or print holds it."""
    for value in (api_key, os.environ.get("ANTHROPIC_API_KEY"), os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        _secrets.remember(value)
    for url in (*urls, os.environ.get("ANTHROPIC_BASE_URL")):
        _secrets.remember_url(url)


def _refuse_all_failed(judged: HeldFiles, rerecord: str, *, resumable: bool = False) -> None:
    """A recording where no claim got a verdict (every file failed, as a whole or claim by claim) is not
    a run: RecordingFailed, nothing written (`resumable`: the batches it submitted are journaled)."""
    from ._judge import NO_VERDICT
    if judged and not any(r.judge_verdict is not None for f in judged for r in f.results):
        reasons = sorted({f.error or next((r.error for r in f.results if r.error), "") or NO_VERDICT for f in judged})
        raise RecordingFailed(
            f"every conversation failed ({len(judged)} of {len(judged)} claims files), so no run was written: "
            + "; ".join(_secrets.redact(r) for r in reasons[:3])
            + ("; ..." if len(reasons) > 3 else "")
            + ("\n  the batches submitted so far are kept: --batch --resume answers from them, nothing is paid twice"
               if resumable else "")
            + f"\n  to try again: {rerecord}"
        )


def _kept_from(run: Run, prompt: Prompt, model: str, batches: list[tuple[Path, HeldClaims]], learn_url: str,
               base_url: str | None) -> dict[str, tuple[FileResult, RunStats]]:
    """For --retry-failed: the files of `run` that succeeded and are kept as recorded (their results and
    counters), when the prompt, the model, the endpoints and the claims file are the ones they were
    recorded with. A changed endpoint is refused: the kept cassettes answer only for the endpoints in
    run.json, so the run would no longer replay (compared in the stored, canonical form)."""
    m = run.manifest
    if m.prompt_sha256 != prompt.sha256 or m.model != model:
        raise UsageError(f"--retry-failed keeps the verdicts already in {display_path(run.path)}, recorded with "
                         f"prompt {m.prompt} and model {m.model}: use the same prompt and model")
    endpoints = {"--learn-url": (stored_endpoint(learn_url, LEARN_STAND_IN_PORT), m.learn_url),
                 "--anthropic-base-url": (stored_endpoint(base_url, MODEL_STAND_IN_PORT) if base_url else None,
                                          m.anthropic_base_url)}
    for option, (given, recorded_with) in endpoints.items():
        if given != recorded_with:
            raise UsageError(f"--retry-failed keeps the cassettes already in {display_path(run.path)}, recorded "
                             f"with {option} {recorded_with or '(the default)'}; they would not replay beside files "
                             f"recorded with {given or '(the default)'}: use the same endpoint, or record the "
                             "whole run again without --retry-failed")
    recorded = {f.file: f for f in run.results.files}
    entries = {e.file: e for e in m.claims}
    kept: dict[str, tuple[FileResult, RunStats]] = {}
    for path, batch in batches:
        result, entry = recorded.get(batch.file), entries.get(batch.file)
        if result is None or entry is None or result.needs_recording_again or entry.sha256 != _sha256_file(path):
            continue
        if not (run.path / entry.cassette).is_file():
            continue
        kept[batch.file] = (result, _cassette_counts(run, batch.file))
    if len(kept) == len(batches):
        raise UsageError(f"no claims file failed in {display_path(run.path)}: there is nothing to record again")
    return kept


def _cassette_counts(run: Run, claims_file: str) -> RunStats:
    from ._matching import canonical_request

    kinds = [canonical_request(it.method, it.uri, it.request_body).kind for it in run.interactions(claims_file)]
    return RunStats(interactions=len(kinds), model_calls=kinds.count("model"), learn_calls=kinds.count("learn"))


def _add_counts(stats: RunStats, more: RunStats) -> None:
    stats.interactions += more.interactions
    stats.model_calls += more.model_calls
    stats.learn_calls += more.learn_calls


def _index_pages(run: Run, pages_read: Any = None) -> None:
    """Add the pages a recording read to this project's page store (`pages history`), from what the
    recorder wrote (`HttpRecorder.pages_read`) where it has it (`_pagestore.index_or_warn`). A run
    recorded outside the project (a scratch folder) is left out: the store would list a run it cannot find."""
    from ._config import project_root
    from ._pagestore import index_or_warn

    if run.path.resolve().is_relative_to(project_root().resolve()):
        index_or_warn([run], pages_read)


def replay_run(run: Run | str | Path, **options: Any) -> ResultsFile:
    """`replayed_run`'s results as one results file (every file's results held at once)."""
    return replayed_run(run, **options).whole()


def replayed_run(run: Run | str | Path, *, concurrency: int = 4, progress: bool = False,
                 use_receipt: bool = True, batched: dict[str, bool | None] | None = None) -> RunResults:
    """Replay a run folder offline from its manifest (its prompt.md, its claims files, its URLs).

    Returns the results the replay produced; writes nothing but its receipt (`_receipts`). A
    request the cassettes do not hold raises CassetteMiss. `use_receipt=False` always replays in full
    (what `cassettes verify` does); `batched`: per file, whether results.json says it was billed through
    Message Batches, when the caller has read results.json already."""
    run = run if isinstance(run, Run) else Run(run)
    with reading(run.path):  # a recording into it swaps its new run in after this replay, never during it
        return _replay(run, _run_prompt(run), _run_claims(run), concurrency=concurrency, progress=progress,
                       use_receipt=use_receipt, batched=batched)


# --------------------------------------------------------------------------- the conversations


def _replay(
    run: Run, prompt: Prompt, batches: list[tuple[Path, HeldClaims]], *, concurrency: int, progress: bool,
    use_receipt: bool = True, batched: dict[str, bool | None] | None = None,
) -> RunResults:
    """Replay `batches` from `run`'s cassettes; or, when a receipt says a full replay of exactly these
    inputs with exactly this code produced them (`_receipts`), give those results (with the progress
    lines a full replay prints) without running the SDK."""
    if batched is None:  # priced per file as it was billed; results.json read here (compact) and not kept
        batched = {f.file: f.batch for f in load_compact_results(run.path).header.files}
    receipt = receipt_for(run, prompt, batches)
    receipted = receipt.files() if receipt is not None and use_receipt else None
    if receipted is not None:
        with RunProgress(len(batches), sum(b.count for _, b in batches), enabled=progress) as bar:
            for result in receipted:
                bar.file_done(result)
        return _replayed_results(run, prompt, receipted, batched)
    files, found_by_secret = _replay_in_full(run, prompt, batches, concurrency=concurrency, progress=progress)
    # a receipt only for a replay that rested on nothing but the inputs it hashed: none whose requests were
    # found through a secret this process knows, none whose inputs changed while it ran
    if receipt is not None and not found_by_secret:
        after = receipt_for(run, prompt, batches)
        if after is not None and after.inputs_sha256 == receipt.inputs_sha256:
            receipt.write(files)
    return _replayed_results(run, prompt, files, batched)


def _replay_in_full(run: Run, prompt: Prompt, batches: list[tuple[Path, HeldClaims]], *, concurrency: int,
                    progress: bool) -> tuple[HeldFiles, bool]:
    """(the replayed results, whether a request was found only through a secret: `found_by_secret`)."""
    from ._recorder import HttpRecorder

    m = run.manifest
    rerecord = judge_command(prompt=prompt.name, claims=[portable_path(p) for p, _ in batches], run=str(run.path),
                             model=m.model, learn_url=m.learn_url, anthropic_base_url=m.anthropic_base_url,
                             pages_from=m.pages_from, batch=m.batch_ids is not None, no_cache=m.cache is False,
                             max_cost=m.max_cost_usd)
    if m.frozen:
        rerecord += " --force"
    learn = LearnSessions(m.learn_url, conversations=_at_once(None, concurrency, len(batches)),
                          shown_url=stored_endpoint(m.learn_url, LEARN_STAND_IN_PORT), max_retries=0, end_sessions=False)
    with learn, HttpRecorder("replay", run.path, pages_from=None, rerecord_hint=rerecord) as recorder:
        files = _judge_all(
            prompt, batches, recorder, learn, model=m.model, base_url=m.anthropic_base_url, api_key=REPLAY_API_KEY,
            max_retries=0, concurrency=concurrency, progress=progress, max_turns=12, stand_ins=set(),
        )
    return files, recorder.found_by_secret


def _replayed_results(run: Run, prompt: Prompt, replayed: HeldFiles, batched: dict[str, bool | None]) -> RunResults:
    """A replay's results: each file priced as it was billed (`batched`: per file, as recorded; the run's
    batch discount for a file that does not say), by the current price table."""
    m = run.manifest
    prices = project_prices()

    def files() -> Iterator[FileResult]:
        for result in replayed:
            yield costed(result.model_copy(update={"batch": batched.get(result.file)}), m.model,
                          batch=m.batch_ids is not None, prices=prices)

    costs, _ = _costs_and_tokens(files())
    return RunResults(ResultsFile(prompt=m.prompt, prompt_sha256=prompt.sha256, model=m.model,
                                  recorded_at=m.recorded_at, files=[], stand_ins=list(m.stand_ins),
                                  cost_usd=total_usd(costs)), files)


def _judge_all(
    prompt: Prompt,
    batches: list[tuple[Path, HeldClaims]],
    recorder: _Recorder,
    sessions: LearnSessions,
    *,
    model: str,
    base_url: str | None,
    api_key: str | None,
    max_retries: int,
    concurrency: int,
    progress: bool,
    max_turns: int,
    stand_ins: set[str],
    route: ModelRoute | None = None,
) -> HeldFiles:
    """One conversation per batch on a thread pool; results in batch order, each held compactly once its
    conversation ends (`_records.held`), as is the batch until it starts. The first ReplayError (or
    any unexpected error) cancels what has not started and is raised once running ones finish. A Ctrl-C
    also ends the running conversations at their next model call, unsaved: only whole conversations
    reach a cassette. Each conversation's Learn client comes from `sessions` (whose block, around the
    recorder's, ends their sessions). `max_retries` is the model's."""
    import anthropic  # ~2 s of imports: only when a conversation really runs (not a receipted replay)

    from ._judge import judge_file

    stopping = threading.Event()

    def stop_if_interrupted(request: Any) -> None:
        if stopping.is_set():
            raise KeyboardInterrupt  # a BaseException: the SDK does not wrap or retry it

    def judge_one(claims: HeldClaims) -> FileResult:
        batch = claims.batch()
        learn = sessions.client()
        with recorder.conversation(batch.file), route.conversation() if route else nullcontext():
            result = judge_with(batch, learn)
            if route is not None and result.needs_recording_again:
                route.conversation_failed(result)
            return result

    def judge_with(batch: ClaimsBatch, learn: LearnClient) -> FileResult:
        hooks = {"request": [stop_if_interrupted]}
        http = (route.http_client(batch.file, hooks) if route else
                anthropic.DefaultHttpxClient(verify=shared_ssl_context(), event_hooks=hooks))
        client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=max_retries, http_client=http)
        try:
            return judge_file(batch, prompt, anthropic_client=client, learn=learn, model=model,
                              max_turns=max_turns, stand_ins=stand_ins,
                              cache_lifetime=route.lifetime if route else None,
                              shown_model_url=stored_endpoint(base_url, MODEL_STAND_IN_PORT) if base_url else None)
        finally:
            client.close()

    results: list[bytes | FileResult | None] = [None] * len(batches)
    total_claims = sum(b.count for _, b in batches)
    rounds = route.running(len(batches), api_key=api_key, base_url=base_url) if route else nullcontext()
    with rounds, RunProgress(len(batches), total_claims, enabled=progress) as bar:
        pool = ThreadPoolExecutor(max_workers=_at_once(route, concurrency, len(batches)), thread_name_prefix="judge")
        try:
            futures: dict[Future[FileResult], int] = {pool.submit(judge_one, b): i for i, (_, b) in enumerate(batches)}
            for future in as_completed(futures):
                result = future.result()  # re-raises a ReplayError from the conversation
                results[futures.pop(future)] = held(result)
                bar.file_done(result)
        except KeyboardInterrupt:
            stopping.set()
            if route:
                route.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return HeldFiles.of_held([r for r in results if r is not None])


def _at_once(route: ModelRoute | None, concurrency: int, files: int) -> int:
    """How many conversations of a run run at once (`--concurrency`; in batch mode, as many as a round holds)."""
    return min(route.workers(concurrency) if route else concurrency, max(files, 1))


# --------------------------------------------------------------------------- checks before any network call


def _api_key(api_key: str | None, base_url: str | None) -> str | None:
    """The API key to give the SDK; None when only `ANTHROPIC_AUTH_TOKEN` is set, which the SDK then
    reads itself and sends as `Authorization: Bearer`."""
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return key
    if os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        return None
    if base_url and is_loopback(base_url):
        return STAND_IN_API_KEY
    raise UsageError(NO_KEY)


def _preflight_learn(learn_url: str, stand_ins: set[str]) -> None:
    """One `initialize` so an unreachable or wrong Learn URL fails before any conversation starts."""
    with LearnClient(learn_url, timeout=30.0) as learn:
        learn.initialize()
        if learn.stand_in:
            stand_ins.add("learn")


def _preflight_model(model: str, base_url: str | None, key: str | None, stand_ins: set[str]) -> None:
    """The model endpoint reachable, the key accepted and the model known, before the first paid call:
    one token count (free of charge) of a tiny request with the judge's tools. An endpoint that does not
    count tokens (404 naming no model) has still answered, and only counts as reachable."""
    import anthropic

    from ._judge import TOOLS, model_unavailable

    client = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=2, timeout=30.0,
                                 http_client=anthropic.DefaultHttpxClient(verify=shared_ssl_context()))
    where = scrub_text(base_url) if base_url else "https://api.anthropic.com"  # as given: no password, no fragment
    try:
        raw = client.messages.with_raw_response.count_tokens(
            model=model, messages=[{"role": "user", "content": "ping"}], tools=TOOLS  # type: ignore[arg-type]
        )
        if raw.headers.get(STAND_IN_HEADER):
            stand_ins.add("model")
    except anthropic.AuthenticationError as exc:
        raise UsageError(f"the Anthropic API at {where} refused the key (HTTP {exc.status_code}): check "
                         f"{'ANTHROPIC_API_KEY' if key else 'ANTHROPIC_AUTH_TOKEN'}") from None
    except anthropic.PermissionDeniedError as exc:
        raise UsageError(f"the Anthropic API at {where} does not let this key use {model!r} (HTTP "
                         f"{exc.status_code}): {_secrets.redact(exc.api_message or '')}") from None
    except anthropic.NotFoundError as exc:
        if exc.response.headers.get(STAND_IN_HEADER):
            stand_ins.add("model")
        if "model" in (exc.api_message or "").lower():
            raise UsageError(model_unavailable(model)) from None
    except anthropic.APIConnectionError as exc:
        raise RecordingFailed(f"cannot reach the Anthropic API at {where}: {_secrets.redact(str(exc.__cause__ or exc))}"
                              ) from None
    except anthropic.APIStatusError as exc:
        if exc.status_code >= 500 or exc.status_code == 429:
            raise RecordingFailed(f"the Anthropic API at {where} is not answering normally (HTTP {exc.status_code}"
                                  f" after retries): try again later") from None
        raise UsageError(f"the Anthropic API at {where} refused a token count for {model!r} (HTTP "
                         f"{exc.status_code}): {_secrets.redact(exc.api_message or '')}") from None
    finally:
        client.close()


def _refuse_to_drop_cassettes(run_dir: Path) -> None:
    """A live run keeps no cassettes: written over a recorded run (unless forced), it would leave results
    nothing can replay in place of a recording that was paid for."""
    held = sorted(run_dir.glob("*" + CASSETTE_SUFFIX)) if run_dir.is_dir() else []
    if held:
        raise UsageError(f"--run {display_path(run_dir)} holds a recorded run ({len(held)} cassette(s)): --mode live keeps "
                         "no cassettes, so it would replace that recording with results nothing can replay; give "
                         "another --run folder, --mode record to record it again, or --force")


def _refuse_frozen(run_dir: Path, force: bool) -> bool:
    """Whether the run folder holds a frozen run; refuses (UsageError) unless forced. A forced re-record
    keeps the run frozen."""
    for name in (MANIFEST, RESULTS):
        path = run_dir / name
        if path.is_file():
            data = read_json(path)
            if isinstance(data, dict) and data.get("frozen") is True:
                if force:
                    return True
                raise UsageError(
                    f"{path} is frozen: this run is kept as recorded; use --force to record over it, "
                    "or choose another --run folder"
                )
    return False


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


def _run_prompt(run: Run) -> Prompt:
    text = run.prompt_text
    if text is None:
        raise InputError(run.path / PROMPT, "missing: the run's prompt text is needed to replay it")
    prompt = Prompt(run.manifest.prompt, text)
    if prompt.sha256 != run.manifest.prompt_sha256:
        raise InputError(run.path / PROMPT, f"does not match prompt_sha256 in {MANIFEST}: the prompt was edited "
                         "after recording, so the recorded model requests cannot match")
    return prompt


def _run_claims(run: Run) -> list[tuple[Path, HeldClaims]]:
    """The claims files a run recorded, found where they were and unchanged (or an InputError saying not)."""
    out = []
    for entry in run.manifest.claims:
        path = run.claims_file_path(entry.file)
        if path is None:
            raise InputError(entry.path, f"claims file of run {run.path} is missing (looked relative to the "
                             "current folder and to the run's parent folders); restore it to replay the run")
        digest = _sha256_file(path)
        if digest != entry.sha256 and not _same_but_line_ends(path, entry.sha256):
            raise InputError(path, f"changed since run {run.path} was recorded (sha256 {digest[:12]}, recorded "
                             f"{entry.sha256[:12]}): replay needs the claims it recorded; restore the file or "
                             "re-record the run")
        batch = load_claims_batch(path)
        if batch.file != entry.file:
            raise InputError(path, f"is about {batch.file!r}, but run {run.path} recorded it for {entry.file!r}")
        out.append((path, HeldClaims.of(batch)))
    return out


# --------------------------------------------------------------------------- what the run folder records


def _claims_entry(path: Path, batch: HeldClaims) -> ClaimsFileEntry:
    return ClaimsFileEntry(file=batch.file, path=portable_path(path), sha256=_sha256_file(path),
                           cassette=cassette_name(batch.file))


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _same_but_line_ends(path: Path, recorded: str) -> bool:
    """Whether the file is the one recorded with its line ends converted (a checkout with Git's
    `core.autocrlf`, the default on Windows, writes CRLF): the same JSON, the same claims."""
    lf = path.read_bytes().replace(b"\r\n", b"\n")
    return recorded in (hashlib.sha256(lf).hexdigest(), hashlib.sha256(lf.replace(b"\n", b"\r\n")).hexdigest())


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


_TOKENS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
           "cache_write_1h_tokens")


def _costs_and_tokens(files: Iterable[FileResult]) -> tuple[list[float | None], dict[str, int]]:
    """Each file's `cost_usd`, and the run's token counters as the API reported them (cache writes and
    reads beside the rest): one pass over the files."""
    costs: list[float | None] = []
    tokens = dict.fromkeys(_TOKENS, 0)
    for f in files:
        costs.append(f.cost_usd)
        if f.usage:
            for name in _TOKENS:
                tokens[name] += getattr(f.usage, name)
    return costs, tokens


# --------------------------------------------------------------------------- what a run holds


@dataclass(frozen=True)
class HeldClaims:
    """A claims batch as a run holds it until its conversation starts (`batch()`): its file's name, how
    many claims it has, and the batch `held` (compact)."""

    file: str
    count: int
    kept: bytes | ClaimsBatch

    @classmethod
    def of(cls, batch: ClaimsBatch) -> HeldClaims:
        return cls(batch.file, len(batch.claims), held(batch))

    def batch(self) -> ClaimsBatch:
        return restored(self.kept, ClaimsBatch)


def _held_claims(batches: list[tuple[Path, ClaimsBatch]]) -> list[tuple[Path, HeldClaims]]:
    return [(path, HeldClaims.of(batch)) for path, batch in batches]


@dataclass(frozen=True)
class RunResults:
    """A run's results as the runner gives them: the results file's own fields (`header`, its `files`
    empty, its `cost_usd` the files' total) and its files, read one at a time (`files()`: `read_files`
    called again), so that a run's verdicts are never all objects at once. `whole()` is the results file."""

    header: ResultsFile
    read_files: Callable[[], Iterator[FileResult]]

    def files(self) -> Iterator[FileResult]:
        return self.read_files()

    def whole(self) -> ResultsFile:
        return self.header.model_copy(update={"files": list(self.files())})

    def write(self, path: str | Path) -> None:
        """Write the results file atomically, the text `write_model(path, self.whole())` writes, one
        file's results at a time."""
        atomic_write_chunks(path, results_json(self.header, self.files()))


def results_json(header: ResultsFile, files: Iterable[FileResult]) -> Iterator[str]:
    """The text `write_model` writes for `header` with these `files` (`header.files` ignored), in pieces of
    whole lines, each file's results as they come (`_io.dump_json_pieces`), where `atomic_write_chunks`
    may cut."""
    return dump_json_pieces(header.model_dump(mode="json"), "files", (f.model_dump(mode="json") for f in files))
