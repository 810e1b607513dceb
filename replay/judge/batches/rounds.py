"""How a run's model requests travel: direct with prompt caching, or (`judge --batch`) through Message Batches rounds.

`ModelRoute` is what the runner hands each conversation: the cache lifetime of its next request
(`core.cache_control`), the HTTP client its anthropic client is built on, and a `conversation()` block
around it.

With batches, every conversation still runs `judge_file` unchanged in its own thread; its anthropic
client's transport (`_RoundsTransport`, wrapped in the conversation's recording transport) does not send a `POST /v1/messages` but hands the request's JSON body to `BatchRounds` and blocks. When
every running conversation waits for the model, the rounds thread submits their requests as one batch
(`custom_id`: the claims file and the turn), polls it with a progress line, reads the results and
answers each waiting request with the result's `message` as a 200 JSON response. The recording
transport around it keeps each model exchange exactly as a direct call: request body = the entry's
`params`, response = its `message`; `--mode replay` replays the run with no batch at all. The batch
traffic itself (create, polls, results) goes through a plain transport no recorder wraps, so no cassette
and no counter holds it and replay never depends on how many polls a batch took; `run.json` keeps the
batch ids (`batch_ids`).

Errored and expired entries are resubmitted in the next round, up to `attempts` submissions in all;
then (and at once for an error resubmitting cannot cure: `answers.CURABLE`) the request gets the entry's
error as an HTTP error response of its real status, marked not to be retried, and becomes that file's error.
Every batch API call survives a 429 or a 5xx (waiting what `retry-after` asks). A batch archived before
its results were read (`archived_at` set, no `results_url`) stops the run and says so; with
`--resubmit-archived` its unanswered requests are priced, said, and submitted again.

Resume: the batch ids and, per entry, a digest of its params (without `cache_control`, which never
changes an answer) are kept in a journal beside the run folder (`.judge-replay-staging/<run>.batches.json`,
the run's staging area) from the moment a batch is created until the run folder is written, with what
the run was (prompt sha256, model, claims files and their sha256) and the measured round times (the
cache lifetime rests on them). With `--resume`, a run that is not the journaled one is refused before
anything is submitted; a request whose digest a journaled batch holds is answered from that batch
(waited for if it is still in progress), never submitted again; only new requests are submitted.
`run.json`'s `batch_ids` lists the batches whose results the run read.

`--max-cost` (`core.budget.CostBudget`): in batch mode each round's new requests are checked before their batch
is created (`BatchRounds._within_budget`); in direct mode each model call, in its conversation's transport
(`_BudgetTransport`). A refused request is answered with a `max_cost_reached` error, its file's error.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx2

from replay.core.budget import CostBudget, request_estimate_usd, usage_from_response
from replay.core.cost import format_usd
from replay.core.display import printable
from replay.core.http_status import is_transient
from replay.errors import RecordingFailed, ReplayError, SystemFailed, debugging
from replay.files.paths import os_error_about, system_error_text
from replay.judge.batches.answers import (Answer, STATUS_OF_ERROR, api_failure, budget_answer, curable, entry_error,
                                          error_answer, retry_after, succeeded)
from replay.judge.batches.cancels import cancel_unkept
from replay.judge.batches.journal import BatchJournal, custom_id, request_digest
from replay.learn.wire import STAND_IN_HEADER

MAX_CONVERSATIONS = 500
"""Conversations that take part in the rounds at once (each waits in a thread of its own)."""
DEFAULT_ATTEMPTS = 3
"""Submissions of one request in all before its error is final."""
MAX_BATCH_REQUESTS = 100_000
MAX_BATCH_BYTES = 200 * 1024 * 1024
"""Below the API's 256 MB limit per batch: a bigger round is split into several batches."""
POLL_SCHEDULE = (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds between two polls of a batch: quick at first (small batches end fast), then every 30 s."""
MAX_POLL_FAILURES = 20
"""Polls in a row that may fail (network, 5xx after the SDK's own retries) before the round fails."""
_WAIT_STEP = 0.2
_CREATE_ATTEMPTS = 8
"""Sends of one batch create, or reads of one batch's results, in all, `_backoff` apart (about 90 s: an
API overloaded for a minute does not fail the round). Not the SDK's retries: they cannot look for a
batch made by a create whose answer was lost before they send it again."""


def _backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt number `attempt`: 1, 2, 4, 8, 16, then 30."""
    return min(30.0, 2.0 ** (attempt - 1))


_CLOCK_SKEW_SECONDS = 120.0
_CREATE_SECONDS = 900.0
"""How long after its create began an interrupted batch may have been created (`_find_unjournaled`)."""


# --------------------------------------------------------------------------- the rounds


@dataclass
class _Waiting:
    """One conversation's request waiting for its round."""

    custom_id: str
    params: dict[str, Any]
    digest: str
    claims_file: str = ""
    attempts: int = 0
    reserved_usd: float = 0.0
    """What `--max-cost` reserved for this request's submission (released when its result is booked)."""
    answer: Answer | None = None
    done: threading.Event = field(default_factory=threading.Event)


def _failure_of_rounds(error: BaseException) -> Exception:
    """What a conversation waiting for the model raises when the rounds stopped on `error`: a system
    error as one that stops the run, naming its file (a full disk while writing the journal), anything
    else as a bug that says what it was (its traceback printed with JUDGE_REPLAY_DEBUG=1)."""
    if isinstance(error, OSError):
        return SystemFailed(system_error_text(error))
    if isinstance(error, SystemFailed):  # the journal could not be written (`_journal_failed`)
        return SystemFailed(str(error))
    return RuntimeError(f"the batch rounds stopped on an unexpected error: {type(error).__name__}: {error}")


class BatchRounds:
    """Collects the waiting conversations' requests and runs one batch round at a time (a thread of its own)."""

    def __init__(self, client: anthropic.Anthropic, journal: BatchJournal, *, conversations: int, workers: int,
                 attempts: int = DEFAULT_ATTEMPTS, progress: bool = True, budget: CostBudget | None = None,
                 resubmit_archived: bool = False) -> None:
        self._client = client
        self._budget = budget
        self.journal = journal
        self._conversations = conversations
        self._workers = max(1, min(workers, conversations))
        self._attempts = attempts
        self._resubmit_archived = resubmit_archived
        """`--resubmit-archived`: the user agreed to pay again for requests whose batch was archived."""
        self._progress = progress
        self._cond = threading.Condition()
        self._waiting: dict[str, _Waiting] = {}
        self._finished = 0
        self._stopping = False
        self._error: BaseException | None = None
        self._results: dict[str, dict[str, dict[str, Any]]] = {}
        """Batch id -> custom_id -> result, for every batch whose results were read."""
        self._in_flight: set[str] = set()
        """Batches created whose results are not read yet."""
        self.round_seconds = journal.round_seconds
        self.rounds = 0
        self.stand_in = False
        self._thread = threading.Thread(target=self._run, name="batch rounds", daemon=True)

    def __enter__(self) -> BatchRounds:
        self._find_unjournaled()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.stop()
        self._thread.join()
        if isinstance(self._error, SystemFailed) and (kind is None or not issubclass(kind, SystemFailed)):
            # the run ends another way (Ctrl-C): what the rounds stopped on names a batch, say it still
            print(f"judge-replay: {printable(str(self._error))}", file=sys.stderr)
        if self.journal.path is None:  # no journal (a live run without --run): nothing could resume these
            for batch_id in sorted(self._in_flight):
                print(f"judge-replay: batch {batch_id} had not ended when the run stopped, and a run without --run "
                      f"keeps no journal to resume it from, {cancel_unkept(self._client, batch_id)}", file=sys.stderr)

    def stop(self) -> None:
        """End the rounds (Ctrl-C, or the run is over); waiting conversations are interrupted."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    @contextmanager
    def member(self) -> Iterator[None]:
        """One conversation's part in the rounds: a round waits for every running conversation."""
        try:
            yield
        finally:
            with self._cond:
                self._finished += 1
                self._cond.notify_all()

    def ask(self, claims_file: str, params: dict[str, Any]) -> Answer:
        """Queue a Messages request for the next round and wait for its answer (a KeyboardInterrupt
        when the run stops first)."""
        turn = 1 + sum(1 for m in params.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")
        digest = request_digest(params)
        waiting = _Waiting(custom_id(claims_file, turn, digest), params, digest, claims_file)
        with self._cond:
            self._waiting[waiting.custom_id] = waiting
            self._cond.notify_all()
        while not waiting.done.wait(_WAIT_STEP):
            with self._cond:
                if self._error is not None:
                    raise _failure_of_rounds(self._error) from self._error
                if self._stopping:
                    raise KeyboardInterrupt
        assert waiting.answer is not None
        self.journal.last_asked[claims_file] = (waiting.custom_id, waiting.answer[0] == 200)
        return waiting.answer

    def _find_unjournaled(self) -> None:
        """Resume: the batch an interrupted run was creating when it stopped (`BatchJournal.submitting`),
        whose id it never learnt, is looked for among the workspace's batches (newest first): one of as
        many requests, created from 2 minutes before that create began (clocks differ) to 15 minutes
        after. Each found is journaled with the requests it was to hold, so that their results are used,
        not paid for again; its results answer a request only under that request's custom_id, which ends
        in the request's digest (`custom_id`), so a batch of someone else's taken by mistake answers
        nothing (its requests are then submitted in the next round). None found: the create never
        reached the API, and its requests are submitted as new."""
        pending = self.journal.submitting
        if pending is None:
            return
        requests = {str(k): str(v) for k, v in pending["requests"].items()}
        since = float(pending["since"])
        until = float(pending["until"]) if isinstance(pending.get("until"), (int, float)) else since
        try:
            found = self._created_batches(len(requests), since, until)
        except anthropic.APIError as exc:
            said = api_failure(exc, self.journal.path is not None)[2]
            raise RecordingFailed(f"cannot resume yet: the run stopped while it was submitting a batch, which is "
                                  f"looked for among the workspace's batches, and {said}; resume again when the "
                                  "API answers") from exc
        for batch_id in found:
            print(f"judge-replay: batch {batch_id} may be the one being submitted when the run stopped: its results "
                  "answer the requests it holds, not paid for again", file=sys.stderr)
        if found:
            self._journal_found(found, requests)
            return
        try:
            self.journal.not_created()
        except (OSError, ReplayError) as exc:
            raise self._journal_failed(exc) from exc

    def _created_batches(self, requests: int, since: float, until: float) -> list[str]:
        """The workspace's batches, not journaled, of `requests` requests, created from `_CLOCK_SKEW_SECONDS`
        before `since` (epoch seconds: when the first create of them began) to `_CREATE_SECONDS` after
        `until` (when the last one began), in the order they were created: the first is the likeliest to be
        the run's (another client's, of the same size, comes later as often as not). What a create whose
        answer never came may have made. Raises the API's error."""
        journaled = {str(b["id"]) for b in self.journal.batches}
        found: list[str] = []
        for batch in self._client.messages.batches.list(limit=100):  # newest first, page after page
            created = batch.created_at.timestamp()
            if created < since - _CLOCK_SKEW_SECONDS:
                break
            counts = batch.request_counts
            held = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if batch.id not in journaled and created <= until + _CREATE_SECONDS and held == requests:
                found.append(batch.id)
        return found[::-1]

    def _journal_found(self, found: list[str], requests: dict[str, str]) -> None:
        """Journal batches found (`_created_batches`) with the requests they may hold, so that their results
        answer those requests, the first found first (`BatchJournal.holders` gives the newest journaled
        first): a request is answered only under its own custom_id, so a batch of someone else's answers
        nothing, and the next holder is read in the next round before the request is submitted again."""
        self._journal_added(found[::-1], requests)

    # ------------------------------------------------------------------ the rounds thread

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and not self._round_due():
                    self._cond.wait(_WAIT_STEP)
                if self._stopping:
                    return
                round_ = [w for w in self._waiting.values() if not w.done.is_set()]
            try:
                self._one_round(round_)
            except _Stopped:
                return
            except anthropic.APIError as exc:
                for w in round_:
                    if not w.done.is_set():
                        self._answer(w, error_answer(*api_failure(exc, self.journal.path is not None)))
            except BaseException as exc:  # end every waiting conversation rather than leave it hanging: each
                if debugging():            # raises what it was (`ask`), in the failure the conversation reports
                    traceback.print_exception(exc)
                with self._cond:
                    self._error = exc
                self.stop()
                return

    def _round_due(self) -> bool:
        """Every running conversation is waiting for the model."""
        running = min(self._workers, self._conversations - self._finished)
        pending = sum(1 for w in self._waiting.values() if not w.done.is_set())
        return pending > 0 and pending >= running

    def _one_round(self, round_: list[_Waiting]) -> None:
        self.rounds += 1
        started = time.monotonic()
        new: list[_Waiting] = []
        from_journal: dict[str, list[_Waiting]] = {}
        for w in round_:  # a journaled batch not read yet, or one that answered it, before a new submission
            held = [h for h in self.journal.holders(w.digest) if h[0] not in self._results
                    or succeeded(self._results[h[0]].get(h[1]))]
            held.sort(key=lambda h: h[1] != w.custom_id)  # its own entry first: samples of a file ask alike
            if held:
                from_journal.setdefault(held[0][0], []).append(w)
                w.custom_id = held[0][1]
            else:
                new.append(w)
        submitted = self._submit(self._within_budget(new))
        batches = {**from_journal, **submitted}
        for batch_id in batches:
            self._wait_for(batch_id, batches[batch_id])
            if any(w.custom_id in self._results[batch_id] for w in batches[batch_id]):  # it answered the run
                self.journal.used.add(batch_id)
        if submitted:
            try:
                self.journal.measured(time.monotonic() - started)
            except (OSError, ReplayError) as exc:
                raise self._journal_failed(exc) from exc
        for batch_id, ws in batches.items():
            results = self._results[batch_id]
            for w in ws:
                self._settle(w, batch_id, results.get(w.custom_id))

    def _within_budget(self, new: list[_Waiting]) -> list[_Waiting]:
        """`--max-cost`: the round's new requests if their estimated cost fits, else none (each is answered
        with the reason, and becomes its file's error; batches already submitted stay journaled)."""
        if self._budget is None or not new:
            return new
        for w in new:
            body = json.dumps(w.params).encode("utf-8")
            w.reserved_usd = self._budget.estimate(len(body), int(w.params.get("max_tokens") or 0),
                                                   cache=b'"cache_control"' in body, batch=True)
        plural = "s" if len(new) != 1 else ""
        if self._budget.admit(sum(w.reserved_usd for w in new), f"a batch of {len(new)} request{plural}"):
            return new
        for w in new:
            w.reserved_usd = 0.0
            self._answer(w, budget_answer(self._budget))
        return []

    def _submit(self, new: list[_Waiting]) -> dict[str, list[_Waiting]]:
        """Create the batches of this round's new requests (split by the API's limits); journal each."""
        out: dict[str, list[_Waiting]] = {}
        chunk: list[_Waiting] = []
        size = 0
        for w in [*new, None]:
            entry_size = len(json.dumps(w.params)) if w is not None else 0
            if chunk and (w is None or len(chunk) >= MAX_BATCH_REQUESTS or size + entry_size > MAX_BATCH_BYTES):
                batch_id = self._create(chunk)
                for c in chunk:
                    c.attempts += 1
                out[batch_id] = chunk
                chunk, size = [], 0
            if w is not None:
                chunk.append(w)
                size += entry_size
        return out

    def _create(self, chunk: list[_Waiting]) -> str:
        """Create one batch of these requests and journal its id; returns it. The requests are journaled
        first (`BatchJournal.creating`). A create whose answer is lost (a connection error, a timeout) may
        have made the batch: it is looked for (`_created_batches`) before the create is sent again, and
        never sent again until a look-up has answered, so that a retry never pays twice; a refusal that is
        worth retrying (408, 409, 429, 5xx) is retried as the SDK would, `_CREATE_ATTEMPTS` times in all.
        A run that cannot look stops its round with the requests journaled: a resume looks for the batch."""
        requests = {c.custom_id: c.digest for c in chunk}
        try:
            since = self.journal.creating(requests)
        except (OSError, ReplayError) as exc:
            raise self._journal_failed(exc) from exc
        client = self._client.with_options(max_retries=0)
        for attempt in range(1, _CREATE_ATTEMPTS + 1):
            if attempt > 1:
                try:
                    self.journal.sending_again()
                except (OSError, ReplayError) as exc:
                    raise self._journal_failed(exc) from exc
            try:
                raw = client.messages.batches.with_raw_response.create(
                    requests=[{"custom_id": c.custom_id, "params": c.params} for c in chunk]  # type: ignore[typeddict-item]
                )
            except anthropic.APIConnectionError:  # the create may have reached the API: look before sending it again
                if attempt == _CREATE_ATTEMPTS:
                    raise  # the journal keeps the requests: a resume looks for the batch
                found = self._look_for(len(chunk), since)
                if found:
                    self._journal_found(found, requests)
                    return found[0]  # not in `_in_flight`: a batch found may be another client's, never ours to cancel
                continue
            except anthropic.APIStatusError as exc:  # refused: no batch was made
                if attempt < _CREATE_ATTEMPTS and is_transient(exc.status_code):
                    self._pause(retry_after(exc, _backoff(attempt)))
                    continue
                try:
                    self.journal.not_created()
                except (OSError, ReplayError):
                    pass  # a resume looks for the batch, and finds none
                raise
            self.stand_in = self.stand_in or bool(raw.headers.get(STAND_IN_HEADER))
            batch_id = raw.parse().id
            self._in_flight.add(batch_id)
            self._journal_added([batch_id], requests)
            return batch_id
        raise AssertionError("unreachable")  # pragma: no cover

    def _look_for(self, requests: int, since: float) -> list[str]:
        """`_created_batches` after a create whose answer was lost, asked until the list answers (`_backoff`
        apart, `_CREATE_ATTEMPTS` times); the API's last error when it never does (the round stops, the
        requests journaled for a resume to look)."""
        for attempt in range(1, _CREATE_ATTEMPTS + 1):
            self._pause(_backoff(attempt))
            try:
                return self._created_batches(requests, since, time.time())
            except (anthropic.APIConnectionError, anthropic.InternalServerError, anthropic.RateLimitError):
                if attempt == _CREATE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _journal_added(self, batch_ids: list[str], requests: dict[str, str]) -> None:
        """Journal batches of these requests; one it cannot keep is canceled, and the run stops."""
        for batch_id in batch_ids:
            try:
                self.journal.add(batch_id, requests)
            except (OSError, ReplayError) as exc:
                raise self._journal_failed(exc, unkept=batch_id) from exc

    def _journal_failed(self, exc: OSError | ReplayError, unkept: str | None = None) -> SystemFailed:
        """The error that stops the run when the journal cannot be written (a full disk): the journal and
        why, what became of the batch `unkept` it could not keep (`cancels.cancel_unkept`), and that the batches
        it holds are kept for `--resume`."""
        if isinstance(exc, OSError):
            named = exc if exc.filename or self.journal.path is None else os_error_about(exc, self.journal.path)
            said = [system_error_text(named)]
        else:
            said = [str(exc)]  # an InputError names its file
        if unkept is not None:
            said.append(f"batch {unkept} was submitted but could not be kept in this journal, {cancel_unkept(self._client, unkept)}")
        if self.journal.batches:
            said.append(f"the {len(self.journal.batches)} batch(es) the journal holds are kept for --resume")
        return SystemFailed("; ".join(said))

    def _wait_for(self, batch_id: str, waiting: list[_Waiting]) -> None:
        """Poll a batch until it has ended (showing its progress), then read its results; a refusal worth
        retrying (429, 5xx) or a lost connection is polled again after what it asks (`retry-after`)."""
        requests = len(waiting)
        if batch_id in self._results:
            return
        started = time.monotonic()
        shown = ""
        failures = 0
        for poll in itertools.count():
            try:
                raw = self._client.messages.batches.with_raw_response.retrieve(batch_id)
                failures = 0
            except anthropic.NotFoundError:
                return self._gone(batch_id)
            except (anthropic.APIConnectionError, anthropic.APIStatusError) as exc:
                if isinstance(exc, anthropic.APIStatusError) and not is_transient(exc.status_code):
                    raise
                failures += 1  # the batch goes on processing on Anthropic's side: poll again, a while
                if failures >= MAX_POLL_FAILURES:
                    raise
                wait = POLL_SCHEDULE[-1]
                if isinstance(exc, anthropic.APIStatusError):  # 429, 5xx: as long as it asks, else the schedule
                    wait = retry_after(exc, POLL_SCHEDULE[min(poll, len(POLL_SCHEDULE) - 1)])
                self._pause(wait)
                continue
            self.stand_in = self.stand_in or bool(raw.headers.get(STAND_IN_HEADER))
            batch = raw.parse()
            counts = batch.request_counts
            line = (f"round {self.rounds}: batch {batch_id} ({requests} request{'s' if requests != 1 else ''}) "
                    f"{batch.processing_status}: "
                    f"processing {counts.processing} · succeeded {counts.succeeded} · errored {counts.errored} · "
                    f"expired {counts.expired} · canceled {counts.canceled}")
            if self._progress and line != shown:
                print(f"{line} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
                shown = line
            if batch.processing_status == "ended":
                break
            self._pause(POLL_SCHEDULE[min(poll, len(POLL_SCHEDULE) - 1)])
        if batch.archived_at is not None and not batch.results_url:
            return self._archived(batch_id, batch.archived_at.isoformat(timespec="seconds"), waiting)
        try:
            self._results[batch_id] = self._read_results(batch_id)
        except anthropic.NotFoundError:
            self._gone(batch_id)
        self._in_flight.discard(batch_id)

    def _archived(self, batch_id: str, when: str, waiting: list[_Waiting]) -> None:
        """A batch archived (its results past retention, `results_url` gone) before this run read them: its
        requests can only be answered by paying for them again. With `--resubmit-archived` they are
        submitted in the next round (priced first, and within `--max-cost`); without, the run stops and
        says so, its journal kept."""
        from replay.settings import project_prices

        unanswered = [w for w in waiting if not w.done.is_set()]
        estimates = [request_estimate_usd(str(w.params.get("model")), len(json.dumps(w.params).encode("utf-8")),
                                          int(w.params.get("max_tokens") or 0), batch=True, prices=project_prices(),
                                          cache='"cache_control"' in json.dumps(w.params)) for w in unanswered]
        priced = (f"estimated at up to {format_usd(sum(e for e in estimates if e is not None))} at batch prices"
                  if all(e is not None for e in estimates) else "at a price the price table does not have")
        said = (f"batch {batch_id} was archived at {when}: its results are past retention and can no longer be "
                f"downloaded, so its {len(unanswered)} unanswered request(s) can only be paid for again ({priced})")
        if not self._resubmit_archived:
            raise SystemFailed(f"{said}; resume with --batch --resume --resubmit-archived to submit them again")
        self._results[batch_id] = {}
        print(f"judge-replay: {said}: submitted again (--resubmit-archived)", file=sys.stderr)

    def _gone(self, batch_id: str) -> None:
        """A journaled batch the API does not know, or whose results it no longer has (deleted, older than
        29 days, another workspace's): it answers nothing, so its requests are submitted again in the next
        round (a resume that only waited for it would fail the same way every time)."""
        self._results[batch_id] = {}
        print(f"judge-replay: batch {batch_id} is not known to the API, or its results are gone (deleted, older than "
              "29 days, or of another workspace): its requests are submitted again", file=sys.stderr)

    def _read_results(self, batch_id: str) -> dict[str, dict[str, Any]]:
        """An ended batch's results (custom_id -> result), read again from the start when the download
        fails on the way (results are kept 29 days): `_CREATE_ATTEMPTS` reads in all, `_backoff` apart."""
        client = self._client.with_options(max_retries=0)
        for attempt in itertools.count(1):
            results: dict[str, dict[str, Any]] = {}
            try:
                with client.messages.batches.with_streaming_response.results(batch_id) as response:
                    for text in response.iter_lines():
                        if text.strip():
                            line_ = json.loads(text)
                            results[str(line_.get("custom_id"))] = line_.get("result") or {}
                return results
            except (anthropic.APIConnectionError, httpx2.TransportError, json.JSONDecodeError) as exc:
                failed: Exception = exc  # a download cut on the way: a connection error, or half a line
            except anthropic.APIStatusError as exc:
                if not is_transient(exc.status_code):
                    raise
                failed = exc
            wait = retry_after(failed, _backoff(attempt)) if isinstance(failed, anthropic.APIStatusError) else _backoff(attempt)
            if attempt >= _CREATE_ATTEMPTS:
                if isinstance(failed, anthropic.APIError):
                    raise failed
                raise anthropic.APIConnectionError(  # said as the API failing, as for the other calls of a round
                    message=f"the results of batch {batch_id} could not be read ({type(failed).__name__}: {failed})",
                    request=httpx2.Request("GET", f"{client.base_url}v1/messages/batches/{batch_id}/results")) from failed
            self._pause(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _pause(self, seconds: float) -> None:
        """Wait between two polls; `_Stopped` when the run stops meanwhile."""
        with self._cond:
            if not self._stopping:
                self._cond.wait(seconds)
            if self._stopping:
                raise _Stopped

    def _settle(self, w: _Waiting, batch_id: str, result: dict[str, Any] | None) -> None:
        """Answer a request from its entry's result, or leave it waiting for a resubmission."""
        if self._budget is not None:  # book what the entry was billed (an entry without a result: nothing)
            if result is not None and succeeded(result):
                self._budget.charge(usage_from_response(result["message"].get("usage")), w.reserved_usd, batch=True)
            else:
                self._budget.release(w.reserved_usd)
            w.reserved_usd = 0.0
        if succeeded(result):
            assert result is not None
            headers = {"content-type": "application/json"}
            if self.stand_in:
                headers[STAND_IN_HEADER] = "model"
            body = json.dumps(result["message"], ensure_ascii=False).encode("utf-8")
            return self._answer(w, (200, headers, body))
        self.journal.unanswered.setdefault(w.claims_file, set()).add((batch_id, w.custom_id))
        kind, error_type, said = entry_error(result)
        if curable(error_type) and w.attempts < self._attempts:
            # every journaled submission counts, those of an interrupted run too: the bound holds across resumes
            w.attempts = max(w.attempts, len(self.journal.holders(w.digest)), 1)
            return  # stays waiting: resubmitted in the next round
        what = {"expired": "expired", "canceled": "was canceled", "missing": "had no result"}.get(kind, "errored")
        status = STATUS_OF_ERROR.get(error_type, 500)
        cure = "" if curable(error_type) else "; resubmitting the same request cannot cure that error"
        message = f"the Message Batches entry {w.custom_id} {what} ({w.attempts} submission(s){cure})"
        if error_type:
            message += f": {error_type} (HTTP {status})"
        if said:
            message += f": {said}"
        self._answer(w, error_answer(status, error_type or "api_error", message))

    def _answer(self, w: _Waiting, answer: Answer) -> None:
        if self._budget is not None and w.reserved_usd:  # answered without a result (a failed round)
            self._budget.release(w.reserved_usd)
            w.reserved_usd = 0.0
        w.answer = answer
        with self._cond:
            self._waiting = {key: other for key, other in self._waiting.items() if other is not w}
        w.done.set()


class _Stopped(Exception):
    """The run stopped (Ctrl-C) while the rounds thread was waiting for a batch."""
