"""A recorded run replayed offline: its prompt and claims checked, every conversation answered from its cassette."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replay.core.commands import DEFAULT_MAX_TOKENS, LEGACY_MAX_TOKENS, judge_command
from replay.core.cost import costed, total_usd
from replay.core.prompts import Prompt
from replay.core.sample_results import combined
from replay.errors import InputError
from replay.files.inputs import load_claims_batch
from replay.files.paths import portable_path
from replay.files.regular import read_regular
from replay.files.results import load_compact_results
from replay.judge.progress import RunProgress
from replay.learn.sessions import LearnSessions
from replay.runs.folder import MANIFEST, PROMPT, Run
from replay.runs.names import sample_cassette_name
from replay.runs.receipts import receipt_for
from replay.runs.writer import reading
from replay.schema.manifest import ClaimsFileEntry
from replay.schema.results import FileResult, HeldFiles, ResultsFile
from replay.settings import given_endpoints, project_prices
from replay.urls import LEARN_STAND_IN_PORT

if TYPE_CHECKING:
    pass
from replay.judge.conversations import _at_once, _judge_all
from replay.judge.held import HeldClaims, RunResults, _costs_and_tokens
from replay.judge.preflight import REPLAY_API_KEY
from replay.urls import stored_endpoint


def replay_run(run: Run | str | Path, **options: Any) -> ResultsFile:
    """`replayed_run`'s results as one results file (every file's results held at once)."""
    return replayed_run(run, **options).whole()


def replayed_run(run: Run | str | Path, *, concurrency: int = 4, progress: bool = False,
                 use_receipt: bool = True, batched: dict[str, bool | None] | None = None) -> RunResults:
    """Replay a run folder offline from its manifest (its prompt.md, its claims files, its URLs).

    Returns the results the replay produced; writes nothing but its receipt (`runs.receipts`). A
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
    inputs with exactly this code produced them (`runs.receipts`), give those results (with the progress
    lines a full replay prints) without running the SDK."""
    if batched is None:  # priced per file as it was billed; results.json read here (compact) and not kept
        batched = {f.file: f.batch for f in load_compact_results(run.path).header.files}
    receipt = receipt_for(run, prompt, batches)
    receipted = receipt.files() if receipt is not None and use_receipt else None
    if receipted is not None:
        samples = run.manifest.sample_count
        with RunProgress(len(batches) * samples, sum(b.count for _, b in batches) * samples, enabled=progress) as bar:
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
    from replay.recording.recorder import HttpRecorder
    from replay.recording.tape import warm_replay_indexes

    m = run.manifest
    warm_replay_indexes(run.cassette_path(batch.file, sample) for _, batch in batches
                        for sample in range(1, m.sample_count + 1))
    given = given_endpoints()  # the command to re-record records against the endpoints the user gives
    rerecord = judge_command(prompt=prompt.name, claims=[portable_path(p) for p, _ in batches], run=str(run.path),
                             model=m.model, learn_url=given.learn_url or m.learn_url,
                             anthropic_base_url=given.anthropic_base_url or m.anthropic_base_url,
                             pages_from=m.pages_from, batch=m.batch_ids is not None, no_cache=m.cache is False,
                             max_cost=m.max_cost_usd, samples=m.sample_count,
                             max_tokens=(m.max_tokens or LEGACY_MAX_TOKENS) if (m.max_tokens or LEGACY_MAX_TOKENS)
                             != DEFAULT_MAX_TOKENS else None)
    if m.frozen:
        rerecord += " --force"
    learn = LearnSessions(m.learn_url, conversations=_at_once(None, concurrency, len(batches)),
                          shown_url=stored_endpoint(m.learn_url, LEARN_STAND_IN_PORT), max_retries=0, end_sessions=False)
    with learn, HttpRecorder("replay", run.path, pages_from=None, rerecord_hint=rerecord) as recorder:
        files = _judge_all(
            prompt, batches, recorder, learn, model=m.model, base_url=m.anthropic_base_url, api_key=REPLAY_API_KEY,
            max_retries=0, concurrency=concurrency, progress=progress, max_turns=12, stand_ins=set(),
            max_tokens=m.max_tokens or LEGACY_MAX_TOKENS,
            samples=range(1, m.sample_count + 1),
        )
    return files, recorder.found_by_secret


def _replayed_results(run: Run, prompt: Prompt, replayed: HeldFiles, batched: dict[str, bool | None]) -> RunResults:
    """A replay's results: each file priced as it was billed (`batched`: per file, as recorded; the run's
    batch discount for a file that does not say), by the current price table."""
    m = run.manifest
    prices = project_prices()

    def files() -> Iterator[FileResult]:
        for parts in by_file(replayed, m.sample_count):  # samples of a file: billed alike (`judge --add-samples`)
            batch = batched.get(parts[0].file)
            yield costed(combined([costed(part.model_copy(update={"batch": batch}), m.model,
                                          batch=m.batch_ids is not None, prices=prices) for part in parts]),
                         m.model, batch=m.batch_ids is not None, prices=prices)

    costs, _ = _costs_and_tokens(files())
    return RunResults(ResultsFile(prompt=m.prompt, prompt_sha256=prompt.sha256, model=m.model,
                                  recorded_at=m.recorded_at, files=[], stand_ins=list(m.stand_ins),
                                  cost_usd=total_usd(costs), samples=m.samples), files)


def by_file(units: Iterable[FileResult], samples: int) -> Iterator[list[FileResult]]:
    """The results of a run's conversations (each file's samples in turn, `_judge_all`) grouped by claims file."""
    group: list[FileResult] = []
    for result in units:
        group.append(result)
        if len(group) == samples:
            yield group
            group = []
    if group:
        yield group


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


def _claims_entry(path: Path, batch: HeldClaims, samples: int = 1) -> ClaimsFileEntry:
    return ClaimsFileEntry(file=batch.file, path=portable_path(path), sha256=_sha256_file(path),
                           cassette=sample_cassette_name(batch.file, 1),
                           sample_cassettes=[sample_cassette_name(batch.file, k) for k in range(2, samples + 1)]
                           if samples > 1 else None)


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(read_regular(path, "claims")).hexdigest()


def _same_but_line_ends(path: Path, recorded: str) -> bool:
    """Whether the file is the one recorded with its line ends converted (a checkout with Git's
    `core.autocrlf`, the default on Windows, writes CRLF): the same JSON, the same claims."""
    lf = read_regular(path, "claims").replace(b"\r\n", b"\n")
    return recorded in (hashlib.sha256(lf).hexdigest(), hashlib.sha256(lf.replace(b"\n", b"\r\n")).hexdigest())
