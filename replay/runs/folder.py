"""A recorded run folder (run.json, results.json, prompt.md, one cassette per claims file), read back."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Container, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from replay.cassettes.cache import Cassette, cached, source_sha256
from replay.cassettes.cassette import load_cassette
from replay.cassettes.interaction import Interaction
from replay.cassettes.learn_calls import LearnCall, learn_calls
from replay.cassettes.parallel import warm
from replay.core.prompts import parse_rendered_batch
from replay.core.text import sha256_text
from replay.errors import InputError, ReplayError
from replay.files.inputs import load_claims_batch, read_json, reading_error, validate
from replay.files.regular import read_regular_text
from replay.files.results import load_compact_results, load_results
from replay.learn.wire import FETCH_TOOL, no_page_reason
from replay.runs.names import _check_cassette_names, in_folder, sample_cassette_name
from replay.schema.claims import Claim, as_judged
from replay.schema.manifest import ClaimsFileEntry, RunManifest
from replay.schema.pages import PageVersion
from replay.schema.results import CompactResults, ResultsFile
from replay.urls import normalise_learn_url

MANIFEST = "run.json"
RESULTS = "results.json"
PROMPT = "prompt.md"


class Run:
    """A run folder, loaded lazily."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_dir():
            from replay.runs.writer import recover

            recover(self.path)  # a recording killed halfway through replacing this run (`runs.writer`)
        if not self.path.is_dir():
            raise InputError(self.path, "no such run folder")
        if not holds_manifest(self.path):
            raise InputError(self.path, f"not a run folder: it has no {MANIFEST}")

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def manifest(self) -> RunManifest:
        p = self.path / MANIFEST
        manifest = validate(p, RunManifest, read_json(p, "run"), "run manifest")
        _check_cassette_names(manifest, p)
        return manifest

    @property
    def is_page_snapshot(self) -> bool:
        """A page snapshot `drift --live` wrote (`SNAPSHOT_PROMPT`, model `none`, no model call): a run of a
        prompt file that happens to be named so is not one. False also for a run.json that cannot be read."""
        try:
            m = self.manifest
        except (ReplayError, OSError):
            return False
        return m.prompt == SNAPSHOT_PROMPT and m.model == "none" and m.stats.model_calls == 0

    @cached_property
    def results(self) -> ResultsFile:
        return load_results(self.path)

    @cached_property
    def prompt_text(self) -> str | None:
        p = self.path / PROMPT
        if not p.exists():
            return None
        try:
            return read_regular_text(p, "prompt", "utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise reading_error(p, exc) from exc

    @cached_property
    def _entries(self) -> dict[str, list[ClaimsFileEntry]]:
        """claims file -> the manifest's entries for it, in order (looked up once per file by every
        command that reads the run, so not searched for in the list each time)."""
        out: dict[str, list[ClaimsFileEntry]] = {}
        for entry in self.manifest.claims:
            out.setdefault(entry.file, []).append(entry)
        return out

    def cassette_path(self, claims_file: str, sample: int = 1) -> Path:
        """The cassette of a claims file's conversation (with samples: of sample `sample`, 1 to K)."""
        for entry in self._entries.get(claims_file, ()):
            names = entry.cassettes
            return in_folder(self.path, names[sample - 1] if sample <= len(names) else
                             sample_cassette_name(claims_file, sample))
        return in_folder(self.path, sample_cassette_name(claims_file, sample))

    def missing_cassettes(self) -> list[str]:
        """The claims files of the manifest with a cassette (of any sample) not in the run folder."""
        return [entry.file for entry in self.manifest.claims
                if not all(in_folder(self.path, name).is_file() for name in entry.cassettes)]

    @cached_property
    def _batches(self) -> dict[str, tuple[Claim, ...] | None]:
        """claims file -> the claims batch its conversation rendered, kept once read for its claims."""
        return {}

    @cached_property
    def _fetches(self) -> dict[str, tuple[tuple[str, PageVersion], ...]]:
        """claims file -> the pages its conversation fetched, in order, as (normalised URL, version), kept
        once read. The rest of a conversation is not kept (its search replies alone are ~10 KB each):
        `conversation` reads it again when asked."""
        return {}

    @cached_property
    def _page_texts(self) -> dict[str, tuple[str, str]]:
        """Every page text read so far -> (that text, its sha256), kept once: many conversations fetch the
        same pages."""
        return {}

    @cached_property
    def _versions(self) -> dict[PageVersion, PageVersion]:
        """Every page version read so far, kept once."""
        return {}

    def _kept(self, text: str) -> tuple[str, str]:
        """(the one copy of this page text, its sha256)."""
        kept = self._page_texts.get(text)
        if kept is None:
            kept = self._page_texts[text] = (text, sha256_text(text))
        return kept

    _last: tuple[str, Conversation] | None = None
    """The conversation read last (callers ask for one file's several times in a row)."""

    def interactions(self, claims_file: str) -> list[Interaction]:
        """The interactions of one claims file's cassette (empty when there is none). Not kept: the
        commands that read a run keep what `conversation` derives, one conversation at a time."""
        path = self.cassette_path(claims_file)
        return load_cassette(path) if path.exists() else []  # a pipe or a device: refused, not missing

    def conversation(self, claims_file: str) -> Conversation:
        """What the commands that read the run (diff, drift, pages) need of one claims file's cassette:
        derived once per cassette change (`cassettes.cache.cached`). Held one at a time: of the others,
        only their claims and the pages they fetched are kept (`_batches`, `_fetches`)."""
        if self._last is not None and self._last[0] == claims_file:
            return self._last[1]
        path = self.cassette_path(claims_file)
        found = _conversation_of(path) if path.exists() else ([], None)  # a pipe or a device: refused
        calls = tuple(LearnCall(str(tool), dict(args), self._kept(text)[0] if tool == FETCH_TOOL else text,
                                bool(is_error)) for tool, args, text, is_error in found[0])
        conversation = Conversation(calls, _validated(found[1]))
        self._batches[claims_file] = conversation.batch
        self._fetches[claims_file] = tuple(self._pages_fetched(calls))
        self._last = (claims_file, conversation)
        return conversation

    def _pages_fetched(self, calls: tuple[LearnCall, ...]) -> Iterator[tuple[str, PageVersion]]:
        """(normalised URL, the version read) of every page fetch among `calls`, in order."""
        for call in calls:
            if call.tool != FETCH_TOOL or "url" not in call.arguments:
                continue
            url = sys.intern(str(call.arguments["url"]))
            if call.page_missing:
                version = PageVersion(url, None, None, no_page_reason(call.text, call.is_error))
            else:
                version = PageVersion(url, self._kept(call.text)[1], call.text)
            # held once, however many conversations fetched it (a run's thousands of fetches read a few pages)
            yield sys.intern(normalise_learn_url(url)), self._versions.setdefault(version, version)

    def forget_claims(self) -> None:
        """Let go of the claims kept of the conversations read (`claims` reads them again if asked): for a
        command done with them, such as drift once it knows what every verdict rests on."""
        self._batches.clear()

    def learn_calls(self, claims_file: str) -> list[LearnCall]:
        return list(self.conversation(claims_file).learn_calls)

    def fetched(self, claims_file: str) -> list[PageVersion]:
        """The pages one claims file's conversation fetched, in order (a fetch that got no page included)."""
        if claims_file not in self._fetches:
            self.conversation(claims_file)
        return [version for _, version in self._fetches[claims_file]]

    def compact_results(self) -> CompactResults:
        """The run's results as the commands that only read them hold them (`CompactResults`): read again
        at each call, and not kept (`results` is)."""
        return load_compact_results(self.path)

    @cached_property
    def pages(self) -> dict[str, PageVersion]:
        """Every page fetched anywhere in the run, keyed by normalised URL (last fetch wins)."""
        out: dict[str, PageVersion] = {}
        for entry in self.manifest.claims:
            if entry.file not in self._fetches:
                self.conversation(entry.file)
                self._batches.pop(entry.file, None)  # read for its pages alone (drift's later run): no claims kept
            out.update(self._fetches[entry.file])
        return out

    def page(self, url: str) -> PageVersion | None:
        return self.pages.get(normalise_learn_url(url))

    def claims_file_path(self, claims_file: str) -> Path | None:
        """Where the claims file the manifest names for `claims_file` is now: its recorded path taken as
        given, then against the current folder, the run folder and each folder above it (the project root among them)."""
        for entry in self._entries.get(claims_file, ()):
            recorded = Path(entry.path)
            if recorded.is_absolute():
                return recorded if recorded.is_file() else None
            for base in self._bases():
                if (base / recorded).is_file():
                    return base / recorded
        return None

    def _bases(self) -> Iterator[Path]:
        """What a relative claims path is tried against: the current folder, the run folder and each
        folder above it (each worked out only when the ones before did not hold the file)."""
        yield Path.cwd()
        resolved = self.path.resolve()
        yield resolved
        yield from resolved.parents

    def claims(self, claims_file: str) -> list[Claim] | None:
        """The claims of one claims file as the judge saw them: the batch rendered into the first model
        request of its cassette, else the claims file the manifest names, else None."""
        batch = self._batches[claims_file] if claims_file in self._batches else self.conversation(claims_file).batch
        if batch is not None:
            return list(batch) if batch else None
        path = self.claims_file_path(claims_file)
        if path is None:
            return None
        try:
            loaded = load_claims_batch(path)
        except InputError:
            return None
        return loaded.claims if loaded.file == claims_file else None

    def claims_differing_from(self, other: Run, graded: Container[tuple[str, str]]) -> list[str]:
        """The claims files both runs judged where a claim of the gold set (`graded`: its (file, id) keys)
        differs between them (its text, type or cited page, or one run judged it and the other did not):
        the two runs' scores do not rest on the same
        claims. Claims files the manifests give the same sha256 are the same; claims outside the gold set
        (added since, say) do not count; a run that cannot say what it judged is not counted."""
        ours = {e.file: e.sha256 for e in self.manifest.claims}
        differ = []
        for entry in other.manifest.claims:
            if ours.get(entry.file, entry.sha256) == entry.sha256:
                continue
            mine, theirs = self.claims(entry.file), other.claims(entry.file)
            if mine is None or theirs is None:
                continue
            a, b = _as_judged(mine), _as_judged(theirs)
            if any(a.get(i) != b.get(i) for i in a.keys() | b.keys() if (entry.file, i) in graded):
                differ.append(entry.file)  # a gold claim edited, or judged by one run only
        return sorted(differ)

    def all_claims(self) -> dict[tuple[str, str], Claim]:
        """Every claim the run judged, keyed by (file, id)."""
        return {
            (entry.file, claim.id): claim
            for entry in self.manifest.claims
            for claim in self.claims(entry.file) or []
        }


def _as_judged(claims: list[Claim]) -> dict[str, tuple[str, str, str | None]]:
    return {c.id: as_judged(c) for c in claims}


def prompt_texts(request: object) -> list[str]:
    """The system prompt and first user turn of a Messages API request body (where the batch is)."""
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        return []
    messages = request["messages"]
    parts = [request.get("system")]
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "user":
        parts.append(messages[0].get("content"))
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, list):
            texts.extend(b["text"] for b in part if isinstance(b, dict) and isinstance(b.get("text"), str))
    return texts


@dataclass(frozen=True, slots=True)
class Conversation:
    """What one cassette says besides its exchanges: its Learn calls, in order, and the claims batch its
    first model request rendered (None when none carries one; empty when it does not read as claims)."""

    learn_calls: tuple[LearnCall, ...]
    batch: tuple[Claim, ...] | None


def _validated(rows: list[dict[str, Any]] | None) -> tuple[Claim, ...] | None:
    """The claims of a rendered batch; their ids, texts and page URLs held once however many runs and
    batches hold them (`sys.intern`: diff reads the same claims in two runs)."""
    if rows is None:
        return None
    for row in rows:
        for field in ("id", "claim", "evidence_url") if isinstance(row, dict) else ():
            if type(row.get(field)) is str:
                row[field] = sys.intern(row[field])
    try:
        return tuple(Claim.model_validate(row) for row in rows)
    except ValidationError:
        return ()




def warm_conversations(*runs: Run) -> int:
    """What `Run.conversation` reads of each claims file's cassette of `runs`, made on every core where
    the parsed-cassette cache does not hold it yet (`cassettes.parallel.warm`): the commands that read
    runs (grade, diff, drift) call it first, then read the conversations one at a time, as without it.
    Returns how many cassettes the workers parsed."""
    paths = [run.cassette_path(claims_file) for run in runs for claims_file in run._entries]
    return warm(paths, _conversation_of, tag=_CONVERSATION_TAG, parser=_conversation_parser)


_CONVERSATION_TAG = "conversation"


def _conversation_parser() -> str:
    return f"conversation 2; {source_sha256()}"


def _conversation_of(path: Path) -> tuple[list[list[Any]], list[dict[str, Any]] | None]:
    """(Learn calls as [tool, arguments, text, is_error], the rendered batch's rows) of the cassette at
    `path`, from the parsed-cassette cache when it holds them. The entry keeps each call's text as UTF-8
    bytes (a raw blob of the entry: read back without parsing a JSON string of a whole page); an entry
    of any other shape, or whose texts are not UTF-8, is not used (the cassette is parsed again)."""
    source = Cassette(path)

    def derive() -> tuple[list[list[Any]], list[dict[str, Any]] | None]:
        interactions = load_cassette(source)
        calls = [[c.tool, c.arguments, c.text.encode("utf-8", "surrogatepass"), c.is_error]
                 for c in learn_calls(interactions)]
        return calls, _rendered_rows(interactions)

    try:
        found = _read_back(cached(source, _CONVERSATION_TAG, derive, parser=_conversation_parser()))
        if found is None:  # not what `derive` makes (a forged entry): the cassette is the truth
            kept, rows = derive()
            found = [[tool, args, text.decode("utf-8", "surrogatepass"), is_error] for tool, args, text, is_error in kept], rows
    except OSError as exc:
        raise reading_error(path, exc) from exc
    return found


def _read_back(value: Any) -> tuple[list[list[Any]], list[dict[str, Any]] | None] | None:
    """A conversation entry's value with its texts as text; None for anything but what `derive` makes of
    a cassette with Learn calls as we record them (then the cassette is read, as without a cache)."""
    if (type(value) is not tuple or len(value) != 2 or type(value[0]) is not list
            or not (value[1] is None or type(value[1]) is list)):
        return None
    calls = []
    for call in value[0]:
        if type(call) is not list or len(call) != 4:
            return None
        tool, args, text, is_error = call
        if type(tool) is not str or type(args) is not dict or type(text) is not bytes or type(is_error) is not bool:
            return None
        try:
            calls.append([tool, args, text.decode("utf-8", "surrogatepass"), is_error])
        except UnicodeDecodeError:
            return None
    return calls, value[1]


def _rendered_rows(interactions: list[Interaction]) -> list[dict[str, Any]] | None:
    """The claims batch rows of the first model request that carries one."""
    for it in interactions:
        for text in prompt_texts(it.request_json()):
            rows = parse_rendered_batch(text)
            if rows is not None:
                return rows
    return None


SNAPSHOT_PROMPT = "pages-snapshot"
"""The `prompt` of a page snapshot folder (`drift --live`): it holds Learn fetches only, no judge
conversation, so it has no verdicts to replay or snapshot."""


def holds_manifest(folder: Path) -> bool:
    """Whether `folder` holds a run.json (of any kind but a folder: a pipe or a device there is a run its
    reader refuses, not a folder that is no run)."""
    manifest = folder / MANIFEST
    return manifest.exists() and not manifest.is_dir()


def find_runs(root: str | Path, *, page_snapshots: bool = True) -> list[Run]:
    """Every run folder directly under `root` (folders holding run.json), sorted by name; without
    `page_snapshots`, only the judge's runs (a run.json that cannot be read counts as one: its reader
    says what is wrong with it)."""
    root = Path(root)
    if not root.is_dir():
        return []
    runs = [Run(p) for p in sorted(root.iterdir()) if holds_manifest(p)]
    return runs if page_snapshots else [run for run in runs if not run.is_page_snapshot]


BUNDLED_CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
"""The cassettes folder of the judge-replay checkout this code runs from (the bundled demo runs)."""


def new_runs_folder(run: Run) -> str | None:
    """Where a suggested new run beside `run` should be recorded: a temporary folder when `run` is in the
    judge-replay checkout's own `cassettes/` (the project's test data: graded by the bake-off, snapshot-
    tested, and a sibling `diff` would pick up), else None (beside the run, where a project keeps its runs)."""
    bundled = BUNDLED_CASSETTES.is_dir() and run.path.resolve().is_relative_to(BUNDLED_CASSETTES)
    return tempfile.gettempdir() if bundled else None
