"""One judge conversation: a claims batch, the Claude tool loop over the Learn tools, and its checked verdicts."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic

from replay.cassettes.scrub import header_secrets
from replay.core.commands import DEFAULT_MAX_TOKENS
from replay.core.cache_control import Lifetime, with_breakpoints
from replay.core.prompts import Prompt
from replay.core.text import sha256_text
from replay.errors import LearnError, ReplayError
from replay.judge.answers import _quote_verified, _snippet, extract_json_object, verdicts_from_answer
from replay.learn.client import LearnClient, LearnToolError
from replay.learn.wire import FETCH_TOOL, SEARCH_TOOL, STAND_IN_HEADER
from replay.schema.claims import ClaimsBatch
from replay.schema.results import ClaimResult, FileResult, ToolCall, Usage
from replay.secrets.in_urls import scrub_text
from replay.secrets.registry import redact, registry
from replay.urls import normalise_learn_url

TOOLS: list[dict[str, Any]] = [
    {
        "name": SEARCH_TOOL,
        "description": (
            "Search official Microsoft/Azure documentation to find the most relevant and trustworthy content "
            "for a query. Returns up to 10 content chunks from Microsoft Learn, each with the article title, "
            "its URL (contentUrl) and a self-contained excerpt."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "A query or topic about Microsoft/Azure products."}},
            "required": ["query"],
        },
    },
    {
        "name": FETCH_TOOL,
        "description": (
            "Fetch a Microsoft Learn documentation page and return its complete current content as markdown "
            "(headings, code blocks, tables and links preserved). Use it to read a page in full, for example a "
            "page found by microsoft_docs_search or cited as evidence."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The URL of a Microsoft documentation page."}},
            "required": ["url"],
        },
    },
]
"""The two Learn tools as the judge sees them, described as the real Learn MCP server describes them."""


@dataclass
class _Conversation:
    """What one conversation gathered: Learn calls, pages read, tokens, turns."""

    tool_calls: list[ToolCall] = field(default_factory=list)
    pages: dict[str, list[str]] = field(default_factory=dict)
    """Normalised URL -> every text fetched from it in this conversation."""
    usage: Usage = field(default_factory=Usage)
    turns: int = 0


def judge_file(
    batch: ClaimsBatch,
    prompt: Prompt,
    *,
    anthropic_client: anthropic.Anthropic,
    learn: LearnClient,
    model: str,
    max_turns: int = 12,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    stand_ins: set[str] | None = None,
    cache_lifetime: Callable[[], Lifetime | None] | None = None,
    shown_model_url: str | None = None,
) -> FileResult:
    """Judge one claims batch in one conversation; every claim of the batch gets a result.

    A ReplayError (a cassette miss...) propagates and stops the run; any other failure of this file (an
    API error after the SDK's retries, a Learn failure) becomes `FileResult.error` and per-claim errors.
    Services that answered with the stand-in header are added to `stand_ins` (`"model"`, `"learn"`).
    `cache_lifetime` gives each request's prompt-caching lifetime (`core.cache_control`; None: no breakpoints).
    `shown_model_url`: the model endpoint as error texts name it (the form run.json stores, so that a
    replay reproduces them; default: the client's base URL).
    """
    convo = _Conversation()
    try:
        answer = _converse(batch, prompt, anthropic_client, learn, model, max_turns, max_tokens, convo, stand_ins,
                           cache_lifetime, shown_model_url)
    except anthropic.APIError as exc:
        _raise_replay_cause(exc)
        return _failed(batch, convo, f"the Anthropic API failed: {_api_error_text(exc, model)}")
    except LearnError as exc:  # tool-level errors were already handed to the judge
        return _failed(batch, convo, redact(str(exc)))
    except _MalformedReply as exc:
        return _failed(batch, convo, redact(str(exc)), on_answer=True)
    finally:
        if stand_ins is not None and learn.stand_in:
            stand_ins.add("learn")
    if isinstance(answer, _Failure):
        return _failed(batch, convo, answer.reason, on_answer=True)
    results, warnings = verdicts_from_answer(redact(answer), batch)  # as the cassette stores the answer
    for result in results:
        result.quote_verified = _quote_verified(result, convo.pages)
    return FileResult(
        file=batch.file,
        results=results,
        usage=convo.usage,
        tool_calls=convo.tool_calls,
        turns=convo.turns,
        warnings=warnings or None,
    )


@dataclass(frozen=True)
class _Failure:
    reason: str


def _converse(
    batch: ClaimsBatch,
    prompt: Prompt,
    client: anthropic.Anthropic,
    learn: LearnClient,
    model: str,
    max_turns: int,
    max_tokens: int,
    convo: _Conversation,
    stand_ins: set[str] | None,
    cache_lifetime: Callable[[], Lifetime | None] | None = None,
    shown_model_url: str | None = None,
) -> str | _Failure:
    """Run the tool loop; the final answer text, or why there is none.

    Every assistant turn goes back exactly as the API sent it (the response's JSON `content`, not a
    re-serialisation): current models return `thinking` blocks between tool calls, signed and bound to
    the conversation, which must come back unchanged. Tool use is never forced (`tool_choice` left to
    the model's default), which thinking models refuse."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt.render(batch)}]
    while convo.turns < max_turns:
        params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages, "tools": TOOLS}
        lifetime = cache_lifetime() if cache_lifetime else None
        raw = client.messages.with_raw_response.create(**(with_breakpoints(params, lifetime) if lifetime else params),
                                                       timeout=answer_timeout(max_tokens))
        if stand_ins is not None and raw.headers.get(STAND_IN_HEADER):
            stand_ins.add("model")
        data = _message_data(raw.http_response.content, shown_model_url or str(client.base_url))
        convo.turns += 1
        convo.usage.add(data.get("usage"))
        content: list[dict[str, Any]] = [b for b in data.get("content") or [] if isinstance(b, dict)]
        uses = [b for b in content if b.get("type") == "tool_use"]
        stop = data.get("stop_reason")
        if stop == "tool_use" and uses:
            messages.append({"role": "assistant", "content": content})
            messages.append({"role": "user", "content": [_run_tool(b, learn, convo) for b in uses]})
            continue
        if stop == "pause_turn":
            messages.append({"role": "assistant", "content": content})
            continue
        text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
        if stop == "refusal":
            return _Failure(f"the model refused to answer{': ' + text.strip() if text.strip() else ''}")
        if stop == "model_context_window_exceeded":
            return _Failure(f"the conversation outgrew the model's context window after {convo.turns} turns "
                            f"({convo.usage.total_input:,} input tokens): split the claims file into smaller ones")
        answer = extract_json_object(text) if stop == "max_tokens" else None
        if stop == "max_tokens" and not (isinstance(answer, dict) and isinstance(answer.get("results"), list)):
            # cut off: a JSON object found in the text may be one of its results, not the whole answer
            return _Failure(f"the answer for {batch.file} was cut off at max_tokens ({max_tokens:,}) before its JSON "
                            f"was complete (thinking counts toward it): raise --max-tokens (or the max-tokens "
                            f"setting) above {max_tokens}, or split the claims file")
        return text
    return _Failure(f"the judge did not give its answer within {max_turns} model turns")


def answer_timeout(max_tokens: int) -> float:
    """Seconds one model answer may take: the SDK's own estimate for `max_tokens` (an hour per 128K
    tokens), at least its 10-minute default. Given explicitly: without it the SDK refuses a non-streaming
    request whose estimate passes 10 minutes (over about 21K tokens), which `--max-tokens` may ask for."""
    return max(600.0, 3600.0 * max_tokens / 128_000)


class _MalformedReply(Exception):
    """A model reply that is not a message we can read: the file fails, saying so."""


def _message_data(body: bytes, endpoint: str) -> dict[str, Any]:
    """The JSON of a Messages API reply, once its shape is checked: the one place a model reply from the
    network is validated before anything reads it (the SDK's own parse trusts it)."""
    try:
        data = json.loads(body)
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # no lone surrogate escape
    except UnicodeEncodeError:
        raise _MalformedReply(f"malformed reply from {endpoint}: a lone surrogate escape (not Unicode text)") from None
    except (ValueError, RecursionError) as exc:
        reason = "JSON nested too deeply" if isinstance(exc, RecursionError) else f"not JSON ({exc})"
        raise _MalformedReply(f"malformed reply from {endpoint}: {reason}") from None
    content = data.get("content") if isinstance(data, dict) else None
    if not (isinstance(data, dict) and isinstance(content, list) and all(isinstance(b, dict) for b in content)
            and isinstance(data.get("stop_reason"), (str, type(None)))
            and isinstance(data.get("usage"), (dict, type(None)))):
        raise _MalformedReply(f"malformed reply from {endpoint}: not a message (content must be a list of "
                              "blocks, usage an object, stop_reason a string)")
    return data


def _run_tool(block: dict[str, Any], learn: LearnClient, convo: _Conversation) -> dict[str, Any]:
    """Execute one tool_use block through the Learn client; the tool_result block to send back."""
    name = block.get("name", "")
    raw_input = block.get("input")
    arguments: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    reply: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.get("id", "")}
    call: ToolCall | None = None
    try:
        if name == FETCH_TOOL:
            url = arguments.get("url")
            if not isinstance(url, str) or not url.strip():
                raise LearnToolError(f"{FETCH_TOOL} needs a 'url' string argument")
            call = ToolCall(tool=name, arguments=arguments, url=url)
            convo.tool_calls.append(call)
            page = learn.fetch(url)
            if page.text is not None:
                # hashed and searched as the cassette stores it (our secrets removed), so that live,
                # record and replay agree when a server echoes one of them into a page
                stored = redact(page.text)
                call.page_sha256 = sha256_text(stored)
                convo.pages.setdefault(normalise_learn_url(url), []).append(stored)
            reply["content"] = page.raw
        elif name == SEARCH_TOOL:
            query = arguments.get("query")
            if not isinstance(query, str) or not query.strip():
                raise LearnToolError(f"{SEARCH_TOOL} needs a 'query' string argument")
            call = ToolCall(tool=name, arguments=arguments)
            convo.tool_calls.append(call)
            found = learn.search(query)
            call.result_urls = found.urls
            reply["content"] = found.text
        else:
            raise LearnToolError(f"there is no tool named {name!r}; use {SEARCH_TOOL} or {FETCH_TOOL}")
    except LearnToolError as exc:
        if call is not None:
            call.error = str(exc)
        reply["content"] = str(exc)
        reply["is_error"] = True
    return reply


# --------------------------------------------------------------------------- failures


def _failed(batch: ClaimsBatch, convo: _Conversation, reason: str, *, on_answer: bool = False) -> FileResult:
    """The file's result when its conversation failed (`on_answer`: on a model answer, `FileResult.failed_on_answer`)."""
    result = FileResult(
        file=batch.file,
        results=[ClaimResult(id=c.id, error=reason) for c in batch.claims],
        usage=convo.usage,
        tool_calls=convo.tool_calls,
        turns=convo.turns,
        error=reason,
    )
    result._failed_on_answer = on_answer
    return result


def _raise_replay_cause(exc: BaseException) -> None:
    """The SDK wraps transport exceptions (a cassette miss...) as APIConnectionError: re-raise ours."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ReplayError):
            raise cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__


def _api_error_text(exc: anthropic.APIError, model: str = "") -> str:
    """What went wrong, as the results keep it: the error body's type and message, scrubbed as the
    cassette stores it, without the request id (normalised in the cassette), so a replay reproduces it."""
    if isinstance(exc, anthropic.APIStatusError):
        detail = ": ".join(part for part in (exc.type, exc.api_message) if part) or _snippet(exc.response.text)
        text = f"HTTP {exc.status_code}: {detail}" if detail else f"HTTP {exc.status_code}"
        if exc.status_code == 404 and exc.type == "not_found_error" and "model" in (exc.api_message or "").lower():
            text = f"{model_unavailable(model)} ({text})"
        # as the cassette stores the body: the user's secrets and the values of credential headers removed
        secrets = [*header_secrets(_header_lists(exc.response.request.headers)),
                   *header_secrets(_header_lists(exc.response.headers))]
        return scrub_text(registry().extended(secrets).redact(text))
    if exc.__cause__ is not None:
        return redact(f"{exc.message} ({type(exc.__cause__).__name__}: {exc.__cause__})")
    return redact(exc.message)


def _header_lists(headers: Any) -> dict[str, list[str]]:
    return {str(name).lower(): [str(value)] for name, value in headers.items()}


def model_unavailable(model: str) -> str:
    """What a 404 naming the model means to the user."""
    return (f"the model {model!r} is not available to this key (retired, or an unknown name): choose a current "
            "model with --model (the default is the current Sonnet)")
