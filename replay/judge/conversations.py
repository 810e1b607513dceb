"""A run's conversations run in parallel, each with its own cassette."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from replay.core.commands import DEFAULT_MAX_TOKENS
from replay.core.prompts import Prompt
from replay.judge.progress import RunProgress
from replay.learn.client import LearnClient
from replay.learn.sessions import LearnSessions
from replay.schema.claims import ClaimsBatch
from replay.schema.common import held
from replay.schema.manifest import RunStats
from replay.schema.results import FileResult, HeldFiles
from replay.urls import MODEL_STAND_IN_PORT

if TYPE_CHECKING:
    from replay.judge.model_route import ModelRoute
    from replay.recording.transport import Seam
from replay.judge.held import HeldClaims
from replay.runs.names import conversation_label
from replay.urls import stored_endpoint


class _Recorder(Protocol):
    """What the runner needs of `replay.recording.recorder.HttpRecorder`."""

    stats: RunStats

    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> Any: ...
    def conversation(self, claims_file: str, sample: int = 1) -> Any:
        """A block yielding the conversation's seam (`replay.recording.transport.Seam`), or None: nothing to
        wrap the clients' transports in."""


class _LiveHttp:
    """Plain live mode: no interception at all, so no dependency on the recorder."""

    def __init__(self) -> None:
        self.stats = RunStats()

    def __enter__(self) -> _LiveHttp:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextmanager
    def conversation(self, claims_file: str, sample: int = 1) -> Iterator[None]:
        yield None


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
    max_tokens: int = DEFAULT_MAX_TOKENS,
    stand_ins: set[str],
    route: ModelRoute | None = None,
    samples: Sequence[int] = (1,),
) -> HeldFiles:
    """One conversation per batch and sample (`samples`: which, 1 to K) on a thread pool; results in batch
    order, each batch's samples in order (batch 1 sample 1, batch 1 sample 2, ...), each held compactly once its
    conversation ends (`schema.common.held`), as is the batch until it starts. The first ReplayError (or
    any unexpected error) cancels what has not started and is raised once running ones finish. A Ctrl-C
    also ends the running conversations at their next model call, unsaved: only whole conversations
    reach a cassette. Each conversation's Learn client comes from `sessions` (whose block, around the
    recorder's, ends their sessions). `max_retries` is the model's."""
    import anthropic  # ~2 s of imports: only when a conversation really runs (not a receipted replay)

    from replay.judge.conversation import judge_file
    from replay.judge.model_route import direct_http_client

    stopping = threading.Event()

    def stop_if_interrupted(request: Any) -> None:
        if stopping.is_set():
            raise KeyboardInterrupt  # a BaseException: the SDK does not wrap or retry it

    def judge_one(claims: HeldClaims, sample: int) -> FileResult:
        batch = claims.batch()
        label = conversation_label(batch.file, sample)
        with recorder.conversation(batch.file, sample) as seam, route.conversation() if route else nullcontext():
            result = judge_with(batch, sessions.client(seam.transport if seam else None), label, seam)
            if route is not None and result.needs_recording_again:
                route.conversation_failed(result, label)
            return result

    def judge_with(batch: ClaimsBatch, learn: LearnClient, label: str, seam: Seam | None) -> FileResult:
        hooks = {"request": [stop_if_interrupted]}
        through = seam.transport if seam else None
        http = route.http_client(label, hooks, through) if route else direct_http_client(hooks, through)
        client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=max_retries, http_client=http)
        try:
            return judge_file(batch, prompt, anthropic_client=client, learn=learn, model=model,
                              max_turns=max_turns, max_tokens=max_tokens, stand_ins=stand_ins,
                              cache_lifetime=route.lifetime if route else None,
                              shown_model_url=stored_endpoint(base_url, MODEL_STAND_IN_PORT) if base_url else None)
        finally:
            client.close()

    units = [(b, sample) for _, b in batches for sample in samples]
    results: list[bytes | FileResult | None] = [None] * len(units)
    total_claims = sum(b.count for b, _ in units)
    rounds = route.running(len(units), api_key=api_key, base_url=base_url) if route else nullcontext()
    with rounds, RunProgress(len(units), total_claims, enabled=progress) as bar:
        pool = ThreadPoolExecutor(max_workers=_at_once(route, concurrency, len(units)), thread_name_prefix="judge")
        try:
            futures: dict[Future[FileResult], int] = {pool.submit(judge_one, b, sample): i
                                                      for i, (b, sample) in enumerate(units)}
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
