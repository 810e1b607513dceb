"""Checks before a run pays for anything: the API key, the services, the run folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from replay.cassettes.cassette import CASSETTE_SUFFIX
from replay.errors import RecordingFailed, UsageError
from replay.files.inputs import read_json
from replay.files.paths import display_path
from replay.learn.client import LearnClient, shared_ssl_context
from replay.core.display import printable
from replay.learn.wire import STAND_IN_HEADER, STAND_IN_NOTE_HEADER
from replay.runs.folder import MANIFEST, RESULTS
from replay.secrets import registry as _secrets
from replay.secrets.in_urls import scrub_text
from replay.urls import is_loopback
from replay.secrets.excerpts import excerpt

if TYPE_CHECKING:
    pass


NO_KEY = (
    "ANTHROPIC_API_KEY is not set (nor ANTHROPIC_AUTH_TOKEN): live and record modes call the Anthropic API "
    "(use --mode replay to run from cassettes)"
)
REPLAY_API_KEY = "replay-needs-no-key"
"""Replay never reaches the API; the SDK still wants a key to build its (scrubbed) headers."""
STAND_IN_API_KEY = "stand-in-accepts-any-key"


# --------------------------------------------------------------------------- checks before any network call


def _api_key(api_key: str | None, base_url: str | None) -> str | None:
    """The API key to give the SDK; None when only `ANTHROPIC_AUTH_TOKEN` is set, which the SDK then
    reads itself and sends as `Authorization: Bearer`."""
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return key
    if os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        return None
    if base_url and is_loopback(base_url):
        return STAND_IN_API_KEY
    raise UsageError(NO_KEY)


def _preflight_learn(learn_url: str, stand_ins: set[str]) -> None:
    """One `initialize` so an unreachable or wrong Learn URL fails before any conversation starts."""
    with LearnClient(learn_url, timeout=30.0) as learn:
        learn.initialize()
        if learn.stand_in:
            stand_ins.add("learn")


def _preflight_model(model: str, base_url: str | None, key: str | None, stand_ins: set[str]) -> None:
    """The model endpoint reachable, the key accepted and the model known, before the first paid call:
    one token count (free of charge) of a tiny request with the judge's tools. An endpoint that does not
    count tokens (404 naming no model) has still answered, and only counts as reachable."""
    import anthropic

    from replay.judge.conversation import TOOLS, model_unavailable

    client = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=2, timeout=30.0,
                                 http_client=anthropic.DefaultHttpxClient(verify=shared_ssl_context()))
    where = scrub_text(base_url) if base_url else "https://api.anthropic.com"  # as given: no password, no fragment
    try:
        raw = client.messages.with_raw_response.count_tokens(
            model=model, messages=[{"role": "user", "content": "ping"}], tools=TOOLS  # type: ignore[arg-type]
        )
        if raw.headers.get(STAND_IN_HEADER):
            stand_ins.add("model")
            note = raw.headers.get(STAND_IN_NOTE_HEADER)
            if note:  # e.g. "model noise 0.15, seed 7": simulated noise, said in every output of the run
                stand_ins.add(excerpt(printable(note), 80, mark=""))
    except anthropic.AuthenticationError as exc:
        raise UsageError(f"the Anthropic API at {where} refused the key (HTTP {exc.status_code}): check "
                         f"{'ANTHROPIC_API_KEY' if key else 'ANTHROPIC_AUTH_TOKEN'}") from None
    except anthropic.PermissionDeniedError as exc:
        raise UsageError(f"the Anthropic API at {where} does not let this key use {model!r} (HTTP "
                         f"{exc.status_code}): {_secrets.redact(exc.api_message or '')}") from None
    except anthropic.NotFoundError as exc:
        if exc.response.headers.get(STAND_IN_HEADER):
            stand_ins.add("model")
        if "model" in (exc.api_message or "").lower():
            raise UsageError(model_unavailable(model)) from None
    except anthropic.APIConnectionError as exc:
        raise RecordingFailed(f"cannot reach the Anthropic API at {where}: {_secrets.redact(str(exc.__cause__ or exc))}"
                              ) from None
    except anthropic.APIStatusError as exc:
        if exc.status_code >= 500 or exc.status_code == 429:
            raise RecordingFailed(f"the Anthropic API at {where} is not answering normally (HTTP {exc.status_code}"
                                  f" after retries): try again later") from None
        raise UsageError(f"the Anthropic API at {where} refused a token count for {model!r} (HTTP "
                         f"{exc.status_code}): {_secrets.redact(exc.api_message or '')}") from None
    finally:
        client.close()


def _refuse_to_drop_cassettes(run_dir: Path) -> None:
    """A live run keeps no cassettes: written over a recorded run (unless forced), it would leave results
    nothing can replay in place of a recording that was paid for."""
    held = sorted(run_dir.glob("*" + CASSETTE_SUFFIX)) if run_dir.is_dir() else []
    if held:
        raise UsageError(f"--run {display_path(run_dir)} holds a recorded run ({len(held)} cassette(s)): --mode live keeps "
                         "no cassettes, so it would replace that recording with results nothing can replay; give "
                         "another --run folder, --mode record to record it again, or --force")


def _refuse_frozen(run_dir: Path, force: bool) -> bool:
    """Whether the run folder holds a frozen run; refuses (UsageError) unless forced. A forced re-record
    keeps the run frozen."""
    for name in (MANIFEST, RESULTS):
        path = run_dir / name
        if path.is_file():
            data = read_json(path, "run" if name == MANIFEST else "results")
            if isinstance(data, dict) and data.get("frozen") is True:
                if force:
                    return True
                raise UsageError(
                    f"{path} is frozen: this run is kept as recorded; use --force to record over it, "
                    "or choose another --run folder"
                )
    return False
