"""Builders of small synthetic run folders for tests of the pure core (diff, drift, grade, snapshots).

The folders have the exact layout the recorder writes; the cassettes hold only Learn fetches, shaped as
the Learn endpoint sends them (SSE, JSON-RPC). End-to-end tests record real runs against the stand-ins.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from replay.cassettes.interaction import Interaction
from replay.cassettes.cassette import save_cassette
from replay.files.json_text import dump_json
from replay.files.atomic import write_model
from replay.learn.wire import FETCH_TOOL, missing_page_text, sse_message
from replay.schema.manifest import ClaimsFileEntry, RunManifest
from replay.core.majority import majority_index
from replay.schema.gold import GoldSet
from replay.schema.results import FileResult, ResultsFile
from replay.runs.folder import MANIFEST, PROMPT, RESULTS
from replay.runs.names import cassette_name
from replay.core.text import sha256_text

LEARN = "https://learn.microsoft.com/api/mcp"


def fetch_interaction(url: str, text: str | None, rpc_id: int = 1) -> Interaction:
    """A `microsoft_docs_fetch` exchange; `text=None` means the page could not be retrieved."""
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": "tools/call",
            "params": {"name": FETCH_TOOL, "arguments": {"url": url}}}
    reply = {"result": {"content": [{"type": "text", "text": text if text is not None else missing_page_text(url)}]},
             "jsonrpc": "2.0", "id": rpc_id}
    return Interaction(
        method="POST", uri=LEARN, request_body=json.dumps(body), status=200, reason="OK",
        response_body=sse_message(reply),
        request_headers={"content-type": ["application/json"]},
        response_headers={"content-type": ["text/event-stream"]},
    )


def write_run(
    folder: Path,
    *,
    prompt: str = "v3",
    prompt_text: str = "prompt text",
    model: str = "claude-test",
    results: list[dict[str, Any]],
    pages: dict[str, dict[str, str | None]] | None = None,
    recorded_at: str = "2026-11-30T10:00:00Z",
    samples: int | None = None,
) -> Path:
    """A run folder: `results` are per-file outputs; `pages[claims_file][url]` is the text each file's
    conversation fetched (None: could not be retrieved). `samples`: K of a run judged K times per claim
    (its claims' results carry their `samples` records: `sampled_claim`), written as run.json's and
    results.json's `samples`."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = pages or {}
    entries = []
    files = [FileResult.model_validate(r) for r in results]
    for fr in files:
        name = cassette_name(fr.file)
        entries.append(ClaimsFileEntry(file=fr.file, path=f"claims/{name}.json", sha256="0" * 64, cassette=name))
        interactions = [fetch_interaction(u, t, i + 1) for i, (u, t) in enumerate(pages.get(fr.file, {}).items())]
        save_cassette(folder / name, interactions)
    manifest = RunManifest(
        run_id=folder.name, prompt=prompt, prompt_sha256=sha256_text(prompt_text), model=model,
        recorded_at=recorded_at, claims=entries,
    )
    write_model(folder / MANIFEST, manifest)
    (folder / PROMPT).write_text(prompt_text, "utf-8")
    extra = {"samples": samples} if samples else {}
    write_model(folder / RESULTS, ResultsFile(prompt=prompt, prompt_sha256=manifest.prompt_sha256, model=model,
                                               recorded_at=recorded_at, files=files, **extra))
    if samples:
        data = json.loads((folder / MANIFEST).read_text("utf-8"))
        (folder / MANIFEST).write_text(dump_json({**data, "samples": samples}), "utf-8")
    return folder


def sampled_claim(id_: str, *verdicts: str | None, **fields: Any) -> dict[str, Any]:
    """A claim result judged once per verdict given (None: that sample gave none, with an error), as a run
    with samples holds it: the majority sample's record at the top level, every record under `samples`.
    One verdict: a claim judged once (no `samples`)."""
    records = [{"id": id_, "judge_verdict": v, **fields, **({} if v else {"error": "cut off"})} for v in verdicts]
    if len(records) == 1:
        return records[0]
    return {**records[majority_index(list(verdicts))], "samples": records}  # type: ignore[arg-type]


def sampled_results(*claims: dict[str, Any], file: str = "a.md") -> ResultsFile:
    """A results file of one claims file holding `claims` (from `sampled_claim`), with its `samples` K."""
    k = max(len(c.get("samples", [c])) for c in claims)
    return ResultsFile.model_validate({**({"samples": k} if k > 1 else {}), "files": [{"file": file, "results": list(claims)}]})


def gold_of(file: str = "a.md", **labels: str) -> GoldSet:
    """A gold set of one claims file: claim id -> label."""
    return GoldSet.model_validate({"items": [{"file": file, "id": i, "label": label} for i, label in labels.items()]})


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_json(data), "utf-8")
    return path


def closed_port_url() -> str:
    """A Learn URL on 127.0.0.1 where nothing listens (the port was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/api/mcp"


Respond = Callable[[Any], tuple[int, dict[str, str], bytes]]
"""Given the parsed JSON body of a POST (None when empty): status, headers, body bytes."""


class LocalServer(ThreadingHTTPServer):
    """A real HTTP server on 127.0.0.1, in a daemon thread, whose POST replies come from `respond`."""

    def __init__(self, respond: Respond, path: str = "") -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, headers, data = respond(json.loads(raw) if raw else None)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server_address[1]}{path}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def parse_printed_command(line: str) -> dict[str, Any]:
    """A `judge-replay ...` command line we printed, parsed by the real CLI's click parser (nothing runs):
    the subcommand's parameters. Raises click's UsageError when the CLI would refuse the line."""
    import shlex

    import click

    from replay.cli.main import cli

    argv = shlex.split(line)
    assert argv[0] == "judge-replay", line
    command: click.Command = cli
    words = argv[1:]
    while isinstance(command, click.Group):  # `pages history URL`: down to the command that runs
        found = command.get_command(click.Context(command), words[0])
        assert found is not None, f"no such subcommand {words[0]!r} in: {line}"
        command, words = found, words[1:]
    with command.make_context(command.name or "", words) as ctx:
        return dict(ctx.params)


def judge_demo(learn: Any, model: Any, run: str, *extra: str) -> int:
    """`judge-replay judge` recording prompt v3 over the demo claims into `run`, against the given stand-ins."""
    from replay.cli.main import main

    claims = Path(__file__).resolve().parents[1] / "demo" / "claims"
    return main(["judge", "--prompt", "v3", "--claims", str(claims), "--run", run, "--mode", "record",
                 "--learn-url", learn.url, "--anthropic-base-url", model.url, "--no-progress", *extra])


def damage_page_store(store: Path, part: str = "pages") -> None:
    """Damage the page store as a disk error or a half-copied folder would. `pages`: overwrite the root
    pages of its `Cache` table and indexes (found in the database's schema) with junk, leaving its schema
    and `Settings` whole, so the store opens and the damage shows when its pages are read or written
    ("database disk image is malformed"). `values`: cut every value short (sqlite reads them well;
    their JSON does not read, their texts are not the texts recorded)."""
    import sqlite3

    db = store / "cache.db"
    con = sqlite3.connect(db)
    try:
        if part == "values":
            with con:
                con.execute("UPDATE Cache SET value = substr(value, 1, 4) WHERE mode = 1")  # diskcache's MODE_RAW
            return
        roots = [page for name, page in con.execute("SELECT name, rootpage FROM sqlite_master") if name.startswith("Cache")]
    finally:
        con.close()
    data = bytearray(db.read_bytes())
    size = int.from_bytes(data[16:18], "big")  # the page size, from the file's header
    for page in roots:
        data[(page - 1) * size:page * size] = b"\xa5" * size
    db.write_bytes(bytes(data))
