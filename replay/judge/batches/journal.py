"""The batch journal: the batches a run submitted, kept in the run folder while it is in flight."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

from replay.core.cache_control import without_breakpoints
from replay.errors import UsageError
from replay.files.atomic import atomic_write_text
from replay.files.inputs import read_json
from replay.files.paths import display_path
from replay.runs.writer import journal_path
from replay.schema.results import FileResult


def custom_id(claims_file: str, turn: int, digest: str) -> str:
    """The batch `custom_id` of a conversation's turn whose request has `digest` (`request_digest`):
    readable, unique per claims file, within the API's pattern `^[a-zA-Z0-9_-]{1,64}$`, and ending in the
    request's digest, so that a result says which request it answers (what lets a resume use a batch it
    found, not journaled: `BatchRounds._find_unjournaled`)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", claims_file).strip("-")[:28] or "file"
    return f"{slug}-{_file_tag(claims_file)}-t{turn}-{digest[:12]}"


def _file_tag(claims_file: str) -> str:
    """The part of a `custom_id` that tells its claims file from every other (the slug may not)."""
    return hashlib.sha256(claims_file.encode("utf-8")).hexdigest()[:8]


def request_digest(params: dict[str, Any]) -> str:
    """What makes two Messages requests the same request for resume: their params without breakpoints."""
    text = json.dumps(without_breakpoints(params), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()



# --------------------------------------------------------------------------- the journal


class BatchJournal:
    """The batches a run submitted: id, and per entry custom_id -> request digest; saved after each change."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.batches: list[dict[str, Any]] = []
        self.run: dict[str, Any] | None = None
        """What the run is (prompt sha256, model, claims file -> sha256): a resume must be the same run."""
        self.round_seconds: list[float] = []
        """How long each round with new batches took, across resumes (`core.cache_control.lifetime_for`)."""
        self.used: set[str] = set()
        """The batches whose results this run read."""
        self.submitting: dict[str, Any] | None = None
        """A batch being created (`{"since": epoch seconds, "requests": {custom_id: digest}}`), from just
        before its create request until its id is journaled: a run killed meanwhile may have paid for a
        batch whose id it never learnt, which a resume looks for (`BatchRounds._find_unjournaled`)."""
        self.last_asked: dict[str, tuple[str, bool]] = {}
        """Claims file -> the custom_id of its conversation's last request this run, and whether it was
        answered (`forget_failure`)."""
        self.unanswered: dict[str, set[tuple[str, str]]] = {}
        """Claims file -> (batch id, custom_id) of each of its entries whose result this run read and that
        was not an answer (errored, expired, canceled, missing)."""
        self._forgotten: set[tuple[str, str]] = set()
        """(batch id, custom_id) of the entries `forget_failure` set aside, dropped by `drop_forgotten`."""
        self._by_digest: dict[str, list[tuple[str, str]]] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, run_dir: str | Path | None, *, resume: bool) -> BatchJournal:
        """The run's journal: a new one, or (`resume`) the one an interrupted run left; refuses to start
        over a journal without `--resume` (its batches would be paid for twice)."""
        if run_dir is None:
            if resume:
                raise UsageError("--resume needs --run DIR: the run folder of the interrupted batch run")
            return cls(None)
        journal = cls(journal_path(run_dir))
        assert journal.path is not None
        exists = journal.path.is_file()
        if resume and not exists:
            raise UsageError(f"nothing to resume: no batch run into {display_path(Path(run_dir))} was interrupted "
                             f"({display_path(journal.path)} does not exist); run without --resume")
        if exists and not resume:
            raise UsageError(f"a batch run into {display_path(Path(run_dir))} was interrupted, or left claims files "
                             f"failed, and its batches are kept in {display_path(journal.path)}: add --resume to "
                             "continue it without paying for them again, or delete that file to start over")
        if exists:
            data = read_json(journal.path, "journal")
            batches = data.get("batches") if isinstance(data, dict) else None
            if not isinstance(batches, list) or not all(
                    isinstance(b, dict) and isinstance(b.get("id"), str) and isinstance(b.get("requests"), dict)
                    for b in batches):
                raise UsageError(f"{display_path(journal.path)}: not a batch journal of judge-replay; delete it to "
                                 "start over")
            for batch in batches:
                journal._index(batch)
            submitting = data.get("submitting")
            if isinstance(submitting, dict) and isinstance(submitting.get("since"), (int, float)) and isinstance(
                    submitting.get("requests"), dict) and submitting["requests"]:
                journal.submitting = submitting
            run, rounds = data.get("run"), data.get("round_seconds") or []
            journal.run = run if isinstance(run, dict) else None
            journal.round_seconds = [float(r) for r in rounds if isinstance(r, (int, float))] \
                if isinstance(rounds, list) else []
        return journal

    def for_run(self, prompt_sha256: str, model: str, claims: dict[str, str], *, part: bool = False) -> None:
        """Bind the journal to the run about to start; a resumed journal written for another prompt, model
        or claims set is refused (UsageError) before anything is submitted. `part`: the run judges some of
        the journaled run's claims files again (`--retry-failed`), unchanged."""
        run = {"prompt_sha256": prompt_sha256, "model": model, "claims": dict(sorted(claims.items()))}
        if part and self.run is not None and {k: self.run.get(k) for k in ("prompt_sha256", "model")} == {
                "prompt_sha256": prompt_sha256, "model": model} and isinstance(self.run.get("claims"), dict) and all(
                self.run["claims"].get(file) == sha for file, sha in claims.items()):
            return  # the journaled run's binding stays: a later resume of the whole run is still that run
        if self.run is not None and self.run != run:
            assert self.path is not None
            what = [name for name, key in (("prompt", "prompt_sha256"), ("model", "model"),
                                                   ("set of claims files", "claims"))
                    if self.run.get(key) != run[key]]
            raise UsageError(f"{display_path(self.path)}: the interrupted batch run had another "
                             f"{' and '.join(what)}; resume it with the same --prompt, --model and --claims "
                             "(its batches are paid for), or delete that file to start over")
        self.run = run

    @property
    def ids(self) -> list[str]:
        """The batches whose results the run read, in the order they were submitted."""
        return [str(b["id"]) for b in self.batches if b["id"] in self.used]

    def creating(self, requests: dict[str, str]) -> float:
        """A batch of these requests (custom_id -> digest) is about to be created (see `submitting`);
        returns when (epoch seconds: where a look-up for it starts)."""
        since = time.time()
        self.submitting = {"since": since, "requests": requests}
        self._save()
        return since

    def sending_again(self) -> None:
        """The batch being created is sent again (after a look-up found no batch): when, for a resume to
        look from (`submitting["until"]`)."""
        if self.submitting is not None:
            self.submitting = {**self.submitting, "until": time.time()}
            self._save()

    def not_created(self) -> None:
        """The batch being created was refused: nothing to look for."""
        self.submitting = None
        self._save()

    def add(self, batch_id: str, requests: dict[str, str]) -> None:
        """Journal a batch just submitted (or found: `BatchRounds._find_unjournaled`); one that could not be
        saved is not held either."""
        batch = {"id": batch_id, "requests": requests}
        was, self.submitting = self.submitting, None
        try:
            self._save([*self.batches, batch])
        except BaseException:
            self.submitting = was
            raise
        self._index(batch)

    def measured(self, seconds: float) -> None:
        """A round with new batches took `seconds`."""
        self.round_seconds.append(seconds)
        self._save()

    def _save(self, batches: list[dict[str, Any]] | None = None) -> None:
        """Write the journal, holding `batches` (default: those it holds)."""
        if self.path is not None:
            data = {"version": 1, "run": self.run, "round_seconds": self.round_seconds,
                    "batches": self.batches if batches is None else batches}
            if self.submitting is not None:
                data["submitting"] = self.submitting
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(self.path, json.dumps(data, indent=1) + "\n")

    def forget_failure(self, result: FileResult, conversation: str | None = None) -> None:
        """A claims file's conversation just failed (`result`): set aside what a `--retry-failed --resume`
        (or a resume) must not take from the journal, dropped when the rounds have ended (`drop_forgotten`).
        Its entries read as no answer (errored...): taken, they would only count as submissions, and the
        retry would stop at once on the bound. And when it failed on a model answer
        (`FileResult.failed_on_answer`: a refusal, a cut-off or unreadable answer, the turn limit), that
        answer's entry: taken, it would fail the same way forever; it is asked again. A file that failed
        on a service after an answer (Learn, `--max-cost`, a failed round) keeps every answer, and a batch
        whose results were never read stays: none is paid for twice."""
        key = conversation or result.file  # with samples, the conversation of one sample (`runs.names.conversation_label`)
        self._forgotten |= self.unanswered.pop(key, set())
        last = self.last_asked.pop(key, None)
        if last is not None and last[1] and result.failed_on_answer:
            self._forgotten |= {(str(b["id"]), last[0]) for b in self.batches if last[0] in b["requests"]}

    def drop_forgotten(self) -> None:
        """Drop the entries `forget_failure` set aside (once the rounds have ended: nothing else changes
        the journal then)."""
        if not self._forgotten:
            return
        for batch in self.batches:
            batch["requests"] = {cid: d for cid, d in batch["requests"].items() if (str(batch["id"]), cid) not in self._forgotten}
        self._forgotten = set()
        self._by_digest = {}
        batches, self.batches = self.batches, []
        for batch in batches:
            self._index(batch)
        self._save()

    def holders(self, digest: str) -> list[tuple[str, str]]:
        """(batch id, custom_id) of every journaled entry with this request digest, newest first."""
        return list(reversed(self._by_digest.get(digest, [])))

    def _index(self, batch: dict[str, Any]) -> None:
        self.batches.append(batch)
        for cid, digest in batch["requests"].items():
            self._by_digest.setdefault(str(digest), []).append((str(batch["id"]), str(cid)))

    def remove(self) -> None:
        """The run folder is written: the journal has done its job."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            try:
                self.path.parent.rmdir()
            except OSError:
                pass
