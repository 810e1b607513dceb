"""`run.json`: what a run was recorded with (prompt, model, versions, endpoints, claims files)."""

from __future__ import annotations

import re
from datetime import datetime

from typing import Any

from pydantic import BaseModel, SerializerFunctionWrapHandler, field_validator, model_serializer

from replay.schema.common import RunMode
from replay.urls import split_url
from replay.secrets.excerpts import excerpt

LEARN_MCP_URL = "https://learn.microsoft.com/api/mcp"
"""The public Learn MCP endpoint, the default `--learn-url`."""


def endpoint_problem(url: str) -> str | None:
    """What makes `url` unusable as an endpoint (`--learn-url`, `--anthropic-base-url`, their settings and
    run.json fields), or None: the one rule. An http(s) scheme, a host, a port that parses, and no
    whitespace or control character (NUL included). The message never shows the URL: it may hold a
    password that did not parse."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return "not an http(s) URL: it holds whitespace or a control character"
    parts = split_url(url)
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL (http:// or https://, a host, then an optional :port and path)"
    try:
        parts.port  # reading it parses it
    except ValueError:
        return ("not an http(s) URL: what stands for its port is no number from 0 to 65535 (a password with "
                "/, ? or # in it must be percent-encoded)")
    return None


# --------------------------------------------------------------------------- runs


def _without_none(data: dict[str, Any], name: str) -> dict[str, Any]:
    """A serialised record without the key `name` when it is None (written as before it was kept)."""
    if isinstance(data, dict) and name in data and data[name] is None:
        del data[name]
    return data


class ClaimsFileEntry(BaseModel):
    """One claims file of a run."""

    file: str
    """The batch's `file` field."""
    path: str
    """Where the claims file was read from (as given)."""
    sha256: str
    """sha256 of the claims file bytes."""
    cassette: str
    """The cassette file name inside the run folder."""
    cost_usd: float | None = None
    """USD this file's conversation was billed (None: the model has no price); with samples, all of them."""
    sample_cassettes: list[str] | None = None
    """In a run of K >= 2 samples: the cassettes of samples 2..K, in order (sample 1's is `cassette`);
    absent for one sample."""

    @model_serializer(mode="wrap")
    def _samples_absent_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), "sample_cassettes")

    @property
    def cassettes(self) -> list[str]:
        """Every cassette of this claims file, in sample order."""
        return [self.cassette, *(self.sample_cassettes or [])]


class RunStats(BaseModel):
    """Counters of one recording."""

    interactions: int = 0
    model_calls: int = 0
    learn_calls: int = 0
    page_cache_hits: int = 0
    """Learn fetches served from pages already fetched earlier in the same recording."""
    retries_dropped: int = 0
    """Transient failures (408/409/429/5xx) that were retried and are not kept in the cassette."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_write_1h_tokens: int = 0
    learn_retries: int = 0
    """Learn requests our client retried after a transient failure (408, 429, 5xx, a reset, a timeout)."""


MANIFEST_VERSIONS = (1,)
"""The `run.json` versions this judge-replay reads."""
_ISO_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|\+00:00)")


class RunManifest(BaseModel):
    """`run.json`: everything needed to say what a run was."""

    version: int = 1
    run_id: str
    prompt: str
    """Bundled prompt name (`v1`, `v2`, `v3`) or the prompt file's path."""
    prompt_sha256: str
    model: str
    mode: RunMode = "record"
    recorded_at: str
    """UTC, ISO 8601 with `Z`."""
    learn_url: str = LEARN_MCP_URL
    anthropic_base_url: str | None = None
    pages_from: str | None = None
    """Run whose cassettes served every Learn call (page-pinned comparison), if any."""
    stand_ins: list[str] = []
    """Which services were the local stand-ins (`learn`, `model`): test equipment, not the real thing."""
    versions: dict[str, str] = {}
    """Versions of Python, judge-replay, anthropic, httpx, httpx2, vcrpy."""
    claims: list[ClaimsFileEntry] = []
    stats: RunStats = RunStats()
    frozen: bool = False
    batch_ids: list[str] | None = None
    """The Message Batches the model requests went through (`judge --batch`); None: direct calls."""
    cache: bool | None = None
    """Whether the model requests carried prompt-caching breakpoints (False: `--no-cache`; None: not kept)."""
    max_cost_usd: float | None = None
    """The run's `--max-cost` (None: no limit): the re-record commands we print keep it."""
    max_tokens: int | None = None
    """The `max_tokens` of every model request (`--max-tokens`); None: a run recorded before it was kept,
    whose requests asked for 8,192."""
    cost_usd: float | None = None
    """USD the run was billed: the price table (`replay.core.cost`, `[tool.judge-replay.prices]`) applied to the
    recorded usage, with the batch discount when `batch_ids` is set; None when the model has no price."""
    samples: int | None = None
    """How many samples (independent conversations) each claims file was judged with, when more than one
    (`judge --samples K`, `judge --add-samples N`); absent for one."""

    @model_serializer(mode="wrap")
    def _samples_absent_when_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _without_none(handler(self), "samples")

    @property
    def sample_count(self) -> int:
        """K: the samples of each claims file (1 for a run recorded without samples)."""
        return self.samples or 1

    @field_validator("version")
    @classmethod
    def _a_version_we_read(cls, version: int) -> int:
        if version not in MANIFEST_VERSIONS:
            known = ", ".join(str(v) for v in MANIFEST_VERSIONS)
            raise ValueError(f"version {version} is not one this judge-replay reads (it reads version {known})")
        return version

    @field_validator("recorded_at")
    @classmethod
    def _iso_8601_utc(cls, recorded_at: str) -> str:
        problem = ValueError(f"{excerpt(recorded_at, 40, mark='')!r} is not an ISO 8601 UTC time like 2026-06-15T09:00:00Z")
        if not _ISO_UTC.fullmatch(recorded_at):
            raise problem
        try:
            datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))  # a real date: no month 13
        except ValueError:
            raise problem from None
        return recorded_at

    @field_validator("learn_url", "anthropic_base_url")
    @classmethod
    def _an_endpoint(cls, url: str | None) -> str | None:
        problem = None if url is None else endpoint_problem(url)
        if problem:
            raise ValueError(problem)
        return url
