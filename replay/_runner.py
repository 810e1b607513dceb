"""A whole judge run: inputs checked first, one conversation per claims file in parallel, the run folder written last."""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import anthropic

from ._errors import InputError, ReplayError, UsageError
from ._io import atomic_write_text, load_claims, load_claims_batch, portable_path, read_json, write_model
from ._judge import judge_file
from ._learn import LearnClient, shared_ssl_context
from ._progress import RunProgress
from ._prompts import Prompt, load_prompt
from ._records import (
    LEARN_MCP_URL,
    ClaimsBatch,
    ClaimsFileEntry,
    FileResult,
    ResultsFile,
    RunManifest,
    RunMode,
    RunStats,
)
from ._runs import MANIFEST, PROMPT, RESULTS, Run, cassette_name
from ._scrub import scrub_text

NO_KEY = (
    "ANTHROPIC_API_KEY is not set: live and record modes call the Anthropic API "
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

    stats = RunStats()

    def __enter__(self) -> _LiveHttp:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextmanager
    def conversation(self, claims_file: str) -> Iterator[None]:
        yield


# --------------------------------------------------------------------------- public entry points


def run_judge(
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
) -> ResultsFile:
    """Run the judge over every claims batch: live, recording into `run_dir`, or replaying `run_dir`.

    Live and record write `prompt.md`, `results.json` and `run.json` into `run_dir` (record also one
    cassette per claims file) once every conversation has finished. Replay writes nothing.
    """
    if concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, not {concurrency}")
    if mode == "replay":
        if run_dir is None:
            raise UsageError("--mode replay needs --run DIR: the run whose cassettes answer every request")
        run = Run(run_dir)
        if prompt_name_or_path is None and not claims_paths:
            return replay_run(run, concurrency=concurrency, progress=progress)
        prompt = load_prompt(prompt_name_or_path) if prompt_name_or_path else _run_prompt(run)
        batches = load_claims(list(claims_paths)) if claims_paths else _run_claims(run)
        return _replay(run, prompt, batches, concurrency=concurrency, progress=progress)

    if prompt_name_or_path is None:
        raise UsageError(f"--mode {mode} needs --prompt (a bundled name or a prompt file)")
    if not claims_paths:
        raise UsageError(f"--mode {mode} needs --claims (claims files or folders)")
    if mode == "record" and run_dir is None:
        raise UsageError("--mode record needs --run DIR: the folder the run is recorded into")
    prompt = load_prompt(prompt_name_or_path)
    batches = load_claims(list(claims_paths))
    pages_run = Run(pages_from) if pages_from is not None else None
    frozen = run_dir is not None and _refuse_frozen(Path(run_dir), force)
    key = _api_key(api_key, anthropic_base_url)

    stand_ins: set[str] = set()
    if pages_run is None:
        _preflight(learn_url, stand_ins)
    rerecord = _judge_command(prompt.name, [portable_path(p) for p, _ in batches], run_dir, model, learn_url,
                              anthropic_base_url, pages_from)
    recorder: _Recorder
    if mode == "live" and pages_run is None:
        recorder = _LiveHttp()
    else:
        from ._recorder import HttpRecorder

        # live with --pages-from and no --run: the recorder writes nothing, any folder will do
        recorder = HttpRecorder(mode, run_dir if run_dir is not None else Path.cwd(),
                                pages_from=pages_run.path if pages_run else None, rerecord_hint=rerecord)
    with recorder:
        files = _judge_all(
            prompt, batches, recorder, model=model, learn_url=learn_url, base_url=anthropic_base_url,
            api_key=key, max_retries=2, concurrency=concurrency, progress=progress, max_turns=max_turns,
            stand_ins=stand_ins,
        )
    recorded_at = _recorded_at()
    results = ResultsFile(prompt=prompt.name, prompt_sha256=prompt.sha256, model=model, recorded_at=recorded_at,
                          files=files, frozen=frozen)
    if run_dir is not None:
        run_path = Path(run_dir)
        manifest = RunManifest(
            run_id=run_path.resolve().name,
            prompt=prompt.name,
            prompt_sha256=prompt.sha256,
            model=model,
            mode=mode,
            recorded_at=recorded_at,
            learn_url=scrub_text(learn_url),  # a run folder is committed: no key from a URL's query in it
            anthropic_base_url=scrub_text(anthropic_base_url) if anthropic_base_url else None,
            pages_from=portable_path(pages_run.path) if pages_run else None,
            stand_ins=sorted(stand_ins),
            versions=_versions(),
            claims=[_claims_entry(p, b) for p, b in batches],
            stats=_stats(recorder, files, counted_by_recorder=not isinstance(recorder, _LiveHttp)),
            frozen=frozen,
        )
        atomic_write_text(run_path / PROMPT, prompt.text)
        write_model(run_path / RESULTS, results)
        write_model(run_path / MANIFEST, manifest)
        if mode == "record":
            _index_pages(Run(run_path))
    return results


def _index_pages(run: Run) -> None:
    """Add the pages a recording read to this project's page store (`pages history`). A run recorded
    outside the project (a scratch folder) is left out: the store would list a run it cannot find. The
    cassettes stay the source of truth, so a store that cannot be written only costs a warning."""
    from ._config import project_root
    from ._pagestore import PageStore, store_folder

    if not run.path.resolve().is_relative_to(project_root().resolve()):
        return
    try:
        with PageStore(store_folder(None)) as store:
            store.index_run(run)
    except (OSError, ReplayError) as exc:
        print(f"judge-replay: warning: page store not updated ({exc})", file=sys.stderr)


def replay_run(run: Run | str | Path, *, concurrency: int = 4, progress: bool = False) -> ResultsFile:
    """Replay a run folder offline from its manifest (its prompt.md, its claims files, its URLs).

    Returns the ResultsFile the replay produced; writes nothing. A request the cassettes do not hold
    raises CassetteMiss.
    """
    run = run if isinstance(run, Run) else Run(run)
    return _replay(run, _run_prompt(run), _run_claims(run), concurrency=concurrency, progress=progress)


# --------------------------------------------------------------------------- the conversations


def _replay(
    run: Run, prompt: Prompt, batches: list[tuple[Path, ClaimsBatch]], *, concurrency: int, progress: bool
) -> ResultsFile:
    from ._recorder import HttpRecorder

    m = run.manifest
    rerecord = _judge_command(prompt.name, [portable_path(p) for p, _ in batches], run.path, m.model,
                              m.learn_url, m.anthropic_base_url, m.pages_from)
    if m.frozen:
        rerecord += " --force"
    with HttpRecorder("replay", run.path, pages_from=None, rerecord_hint=rerecord) as recorder:
        files = _judge_all(
            prompt, batches, recorder, model=m.model, learn_url=m.learn_url, base_url=m.anthropic_base_url,
            api_key=REPLAY_API_KEY, max_retries=0, concurrency=concurrency, progress=progress, max_turns=12,
            stand_ins=set(),
        )
    return ResultsFile(prompt=m.prompt, prompt_sha256=prompt.sha256, model=m.model, recorded_at=m.recorded_at,
                       files=files)


def _judge_all(
    prompt: Prompt,
    batches: list[tuple[Path, ClaimsBatch]],
    recorder: _Recorder,
    *,
    model: str,
    learn_url: str,
    base_url: str | None,
    api_key: str,
    max_retries: int,
    concurrency: int,
    progress: bool,
    max_turns: int,
    stand_ins: set[str],
) -> list[FileResult]:
    """One conversation per batch on a thread pool; results in batch order. The first ReplayError (or
    any unexpected error) cancels what has not started and is raised once running ones finish. A Ctrl-C
    also ends the running conversations at their next model call, unsaved: only whole conversations
    reach a cassette."""
    stopping = threading.Event()

    def stop_if_interrupted(request: Any) -> None:
        if stopping.is_set():
            raise KeyboardInterrupt  # a BaseException: the SDK does not wrap or retry it

    def judge_one(batch: ClaimsBatch) -> FileResult:
        with recorder.conversation(batch.file):
            http = anthropic.DefaultHttpxClient(verify=shared_ssl_context(),
                                                event_hooks={"request": [stop_if_interrupted]})
            client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=max_retries,
                                         http_client=http)
            try:
                with LearnClient(learn_url) as learn:
                    return judge_file(batch, prompt, anthropic_client=client, learn=learn, model=model,
                                      max_turns=max_turns, stand_ins=stand_ins)
            finally:
                client.close()

    results: list[FileResult | None] = [None] * len(batches)
    total_claims = sum(len(b.claims) for _, b in batches)
    with RunProgress(len(batches), total_claims, enabled=progress) as bar:
        pool = ThreadPoolExecutor(max_workers=min(concurrency, max(len(batches), 1)),
                                  thread_name_prefix="judge")
        try:
            futures: dict[Future[FileResult], int] = {pool.submit(judge_one, b): i for i, (_, b) in enumerate(batches)}
            for future in as_completed(futures):
                result = future.result()  # re-raises a ReplayError from the conversation
                results[futures[future]] = result
                bar.file_done(result)
        except KeyboardInterrupt:
            stopping.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return [r for r in results if r is not None]


# --------------------------------------------------------------------------- checks before any network call


def _api_key(api_key: str | None, base_url: str | None) -> str:
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return key
    if base_url and _is_loopback(base_url):
        return STAND_IN_API_KEY
    raise UsageError(NO_KEY)


def _is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


def _preflight(learn_url: str, stand_ins: set[str]) -> None:
    """One `initialize` so an unreachable or wrong Learn URL fails before any conversation starts."""
    with LearnClient(learn_url, timeout=30.0) as learn:
        learn.initialize()
        if learn.stand_in:
            stand_ins.add("learn")


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
        when = datetime.fromtimestamp(int(epoch), timezone.utc) if epoch else datetime.now(timezone.utc)
    except ValueError as exc:
        raise UsageError(f"SOURCE_DATE_EPOCH must be whole seconds since 1970, not {epoch!r}") from exc
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


def _run_claims(run: Run) -> list[tuple[Path, ClaimsBatch]]:
    """The claims files a run recorded, found where they were and unchanged (or an InputError saying not)."""
    out = []
    for entry in run.manifest.claims:
        path = run.claims_file_path(entry.file)
        if path is None:
            raise InputError(entry.path, f"claims file of run {run.path} is missing (looked relative to the "
                             "current folder and to the run's parent folders); restore it to replay the run")
        digest = _sha256_file(path)
        if digest != entry.sha256:
            raise InputError(path, f"changed since run {run.path} was recorded (sha256 {digest[:12]}, recorded "
                             f"{entry.sha256[:12]}): replay needs the claims it recorded; restore the file or "
                             "re-record the run")
        batch = load_claims_batch(path)
        if batch.file != entry.file:
            raise InputError(path, f"is about {batch.file!r}, but run {run.path} recorded it for {entry.file!r}")
        out.append((path, batch))
    return out


# --------------------------------------------------------------------------- what the run folder records


def _claims_entry(path: Path, batch: ClaimsBatch) -> ClaimsFileEntry:
    return ClaimsFileEntry(file=batch.file, path=portable_path(path), sha256=_sha256_file(path),
                           cassette=cassette_name(batch.file))


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _stats(recorder: _Recorder, files: list[FileResult], *, counted_by_recorder: bool) -> RunStats:
    stats = recorder.stats.model_copy() if counted_by_recorder else RunStats(
        model_calls=sum(f.turns or 0 for f in files),
        learn_calls=sum(len(f.tool_calls or []) for f in files),
    )
    stats.input_tokens = sum(f.usage.input_tokens for f in files if f.usage)
    stats.output_tokens = sum(f.usage.output_tokens for f in files if f.usage)
    return stats


def _judge_command(
    prompt: str,
    claims: list[str],
    run_dir: str | Path | None,
    model: str,
    learn_url: str,
    base_url: str | None,
    pages_from: str | Path | None,
) -> str:
    """The command that (re-)records this run."""
    args = ["judge-replay", "judge", "--prompt", prompt, "--claims", *claims]
    args += ["--run", str(run_dir) if run_dir is not None else "DIR", "--mode", "record", "--model", model]
    if learn_url != LEARN_MCP_URL:
        args += ["--learn-url", learn_url]
    if base_url:
        args += ["--anthropic-base-url", base_url]
    if pages_from:
        args += ["--pages-from", str(pages_from)]
    return shlex.join(args)
