"""How a run's model requests travel: direct with prompt caching, or through Message Batches rounds."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2

from replay.core.budget import CostBudget
from replay.core.cache_control import Lifetime, lifetime_for
from replay.core.display import printable
from replay.errors import ReplayError
from replay.judge.batches.journal import BatchJournal
from replay.judge.batches.rounds import DEFAULT_ATTEMPTS, MAX_CONVERSATIONS, BatchRounds
from replay.judge.batches.transports import SdkNetwork, _BudgetTransport, _RoundsTransport
from replay.learn.client import shared_ssl_context
from replay.schema.results import FileResult

Through = Callable[[httpx2.BaseTransport], httpx2.BaseTransport]
"""What a conversation wraps its model transport in (`replay.recording.transport.Seam.transport`)."""


def direct_http_client(event_hooks: dict[str, list[Any]], through: Through | None = None) -> httpx2.Client:
    """The HTTP client of an anthropic client that calls the API directly: the SDK's own, or, wrapped in
    `through`, one whose transport sends through the client the SDK would have built (`SdkNetwork`)."""
    if through is None:
        return anthropic.DefaultHttpxClient(verify=shared_ssl_context(), event_hooks=event_hooks)
    return anthropic.DefaultHttpxClient(event_hooks=event_hooks,
                                        transport=through(SdkNetwork(verify=shared_ssl_context())))


# --------------------------------------------------------------------------- what the runner uses


@dataclass(frozen=True)
class BatchOptions:
    """`judge --batch` settings: where the journal lives, whether to resume, retries, progress."""

    journal: BatchJournal
    attempts: int = DEFAULT_ATTEMPTS
    progress: bool = True
    resubmit_archived: bool = False


class ModelRoute:
    """How the model requests of a run travel: direct (the SDK's transport) or in batch rounds; with
    prompt-caching breakpoints unless `cache` is off. The runner enters `running(...)` around its
    conversations, each conversation `conversation()`, and builds its client on `http_client(...)`."""

    def __init__(self, *, cache: bool = True, batch: BatchOptions | None = None,
                 budget: CostBudget | None = None) -> None:
        self.cache = cache
        self.batch = batch
        self.budget = budget
        """`--max-cost`: checked before each model call (direct) or each batch (batch mode)."""
        self.rounds: BatchRounds | None = None

    @classmethod
    def batched(cls, run_dir: str | Path | None, *, resume: bool, cache: bool = True,
                attempts: int = DEFAULT_ATTEMPTS, progress: bool = True, budget: CostBudget | None = None,
                resubmit_archived: bool = False) -> ModelRoute:
        """Batch mode; refuses (UsageError) a `--resume` with nothing to resume, or a new run over an
        interrupted one, before anything is paid for."""
        return cls(cache=cache, batch=BatchOptions(BatchJournal.open(run_dir, resume=resume), attempts, progress,
                                                        resubmit_archived),
                   budget=budget)

    def workers(self, concurrency: int) -> int:
        """Conversations at once: in batch mode as many as take part in a round."""
        return MAX_CONVERSATIONS if self.batch else concurrency

    @contextmanager
    def running(self, conversations: int, *, api_key: str | None, base_url: str | None) -> Iterator[None]:
        """The rounds of a batch run over `conversations` conversations (nothing in direct mode)."""
        if self.batch is None:
            yield
            return
        # a plain transport, wrapped by no recorder: no cassette and no counter holds the batch traffic
        http = anthropic.DefaultHttpxClient(transport=httpx2.HTTPTransport(verify=shared_ssl_context()))
        client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=2, http_client=http)
        try:
            with BatchRounds(client, self.batch.journal, conversations=conversations,
                             workers=self.workers(conversations), attempts=self.batch.attempts,
                             progress=self.batch.progress, budget=self.budget,
                             resubmit_archived=self.batch.resubmit_archived) as rounds:
                self.rounds = rounds
                yield
        finally:
            self.rounds = None
            client.close()
            try:
                self.batch.journal.drop_forgotten()
            except (OSError, ReplayError) as exc:  # kept as they are: a retry takes them, and fails once more
                print(f"judge-replay: the batch journal could not be updated ({printable(str(exc))}): a retry of the "
                      "failed files takes what they failed on from it once more", file=sys.stderr)

    def lifetime(self) -> Lifetime | None:
        """The cache lifetime for the next request (None: no breakpoints)."""
        if not self.cache:
            return None
        return lifetime_for(self.batch.journal.round_seconds if self.batch else [])

    def http_client(self, claims_file: str, event_hooks: dict[str, list[Any]],
                    through: Through | None = None) -> httpx2.Client:
        """The HTTP client of this conversation's anthropic client: the SDK's own, one under the budget, or
        in batch mode one whose requests wait for their round; its transport wrapped in `through` (the
        conversation's recording transport) when given."""
        inner: httpx2.BaseTransport
        if self.rounds is not None:
            inner = _RoundsTransport(self.rounds, claims_file)
        elif self.budget is not None:
            inner = _BudgetTransport(self.budget, httpx2.HTTPTransport(verify=shared_ssl_context()))
        else:
            return direct_http_client(event_hooks, through)
        return anthropic.DefaultHttpxClient(event_hooks=event_hooks, transport=through(inner) if through else inner)

    @contextmanager
    def conversation(self) -> Iterator[None]:
        if self.rounds is None:
            yield
            return
        with self.rounds.member():
            yield

    def for_run(self, prompt_sha256: str, model: str, claims: dict[str, str], *, part: bool = False) -> None:
        """The run about to start (claims file -> sha256 of the files to judge; `part`: some files of the
        run again, `--retry-failed`): in batch mode, a `--resume` of another run is refused (UsageError)
        before anything is submitted."""
        if self.batch is not None:
            self.batch.journal.for_run(prompt_sha256, model, claims, part=part)

    def command_choices(self) -> dict[str, Any]:
        """How this run pays for its model calls, as `core.commands.judge_command` arguments (`resume` while
        its journal holds submitted batches: a command run after this one pays for none of them again)."""
        journal = self.batch.journal if self.batch else None
        return {"batch": self.batch is not None, "no_cache": not self.cache,
                "max_cost": self.budget.limit_usd if self.budget else None,
                "resume": journal is not None and journal.path is not None and journal.path.is_file()}

    def stop(self) -> None:
        """Ctrl-C: conversations waiting for a round stop at once (their batches stay journaled)."""
        if self.rounds is not None:
            self.rounds.stop()

    @property
    def batch_ids(self) -> list[str] | None:
        """The batches the run used (None: no batches)."""
        return self.batch.journal.ids if self.batch else None

    def conversation_failed(self, result: FileResult, conversation: str | None = None) -> None:
        """A claims file's conversation (`conversation`: as `http_client` named it, default the file) just
        failed: its journal entries a retry must not take are dropped when the rounds end
        (`BatchJournal.forget_failure`)."""
        if self.batch is not None:
            self.batch.journal.forget_failure(result, conversation)

    def finished(self, failed: list[str]) -> None:
        """The run folder is written: forget the journal, unless claims files `failed`: their turns already
        answered are then answered from it by `--retry-failed --batch --resume`, not paid for again
        (except what `conversation_failed` dropped)."""
        if self.batch is not None and not failed:
            self.batch.journal.remove()
