"""Progress of a judge run: a rich bar on a terminal, plain lines on stderr otherwise, or nothing."""

from __future__ import annotations

import os
import sys
import textwrap
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from replay.core.display import printable
from replay.schema.results import FileResult


class RunProgress:
    """Reports files done, claims judged and tokens used; call `file_done` from one thread only."""

    def __init__(self, total_files: int, total_claims: int, *, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.total_files = total_files
        self.total_claims = total_claims
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.files_done = 0
        self.claims_done = 0
        self.tokens = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        if self.enabled and self.stream.isatty():
            self._bar = Progress(
                TextColumn("judging"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("files · {task.fields[claims]} claims · {task.fields[tokens]:,} tokens"),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("judge", total=self.total_files, claims=0, tokens=0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def file_done(self, result: FileResult) -> None:
        self.files_done += 1
        self.claims_done += len(result.results)
        if result.usage:
            self.tokens += result.usage.total_input + result.usage.output_tokens
        if not self.enabled:
            return
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.files_done, claims=self.claims_done, tokens=self.tokens)
            return
        status = f"failed: {printable(result.error)}" if result.error else f"{len(result.results)} claims"
        line = (f"[{self.files_done}/{self.total_files}] {printable(result.file)}: {status} "
                f"({self.claims_done}/{self.total_claims} claims, {self.tokens:,} tokens)")
        # wrapped at spaces to the width (COLUMNS, else 80 as any piped output), no word or number cut
        print("\n".join(textwrap.wrap(line, _width(), subsequent_indent="    ", break_long_words=False,
                                       break_on_hyphens=False)), file=self.stream, flush=True)


def _width() -> int:
    """The columns progress lines are wrapped at: COLUMNS when a whole number (at least 30), else 80."""
    columns = os.environ.get("COLUMNS", "").strip()
    return max(30, int(columns)) if columns.isdigit() else 80
