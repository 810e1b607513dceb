"""A run's inputs and results held compactly while it runs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from replay.files.atomic import atomic_write_chunks
from replay.files.json_text import dump_json_pieces
from replay.schema.claims import ClaimsBatch
from replay.schema.common import held, restored
from replay.schema.results import FileResult, ResultsFile

if TYPE_CHECKING:
    pass


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
    whole lines, each file's results as they come (`files.json_text.dump_json_pieces`), where `atomic_write_chunks`
    may cut."""
    return dump_json_pieces(header.model_dump(mode="json"), "files", (f.model_dump(mode="json") for f in files))
