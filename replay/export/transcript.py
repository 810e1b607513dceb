"""One claims file's conversation, read from its cassette, as Inspect AI messages and transcript events."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.model import (
    ChatMessage,
    ChatMessageTool,
    GenerateConfig,
    ModelCall,
    ModelOutput,
    messages_from_anthropic,
    model_output_from_anthropic,
)
from inspect_ai.tool import ToolInfo, ToolParams

from replay.cassettes.interaction import Interaction
from replay.cassettes.matching import is_model_uri
from replay.errors import InputError
from replay.runs.folder import Run
from replay.secrets.excerpts import excerpt


@dataclass(frozen=True)
class Transcript:
    """What one conversation said: the messages as the judge's last request and answer hold them, one event
    per model call and per tool call, and the pages it read (URL, sha256, or why there was no page)."""

    messages: list[ChatMessage]
    events: list[ModelEvent | ToolEvent]
    pages: list[dict[str, Any]]
    model_calls: int
    error: str | None
    """Why the conversation has no answer (a model call that failed), else None."""


def _tools(request: dict[str, Any]) -> list[ToolInfo]:
    out = []
    for tool in request.get("tools") or []:
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            schema = tool.get("input_schema") or {}
            out.append(ToolInfo(name=tool["name"], description=str(tool.get("description", "")),
                                parameters=ToolParams.model_validate({k: v for k, v in schema.items() if k != "type"})))
    return out


def _response(it: Interaction) -> dict[str, Any] | None:
    try:
        data = json.loads(it.response_body)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and data.get("type") == "message" else None


async def _converted(exchanges: list[tuple[dict[str, Any], dict[str, Any] | None, Interaction]],
                     model: str, at: datetime) -> tuple[list[ChatMessage], list[ModelEvent | ToolEvent], str | None]:
    events: list[ModelEvent | ToolEvent] = []
    messages: list[ChatMessage] = []
    error = None
    for request, response, it in exchanges:
        system = request.get("system")
        messages = await messages_from_anthropic(request.get("messages") or [],
                                                 system if isinstance(system, str) else None)
        # the tool results this request carries answer the calls of the previous model event
        _tool_events(events, messages, at)
        if response is None:
            error = f"model call failed: HTTP {it.status} {excerpt(it.response_body, 200, mark='')}"
            output = ModelOutput.from_content(model, "", stop_reason="unknown", error=error)
        else:
            output = await model_output_from_anthropic(response)
        events.append(ModelEvent(
            timestamp=at, working_start=0.0, model=model, input=messages, tools=_tools(request), tool_choice="auto",
            config=GenerateConfig(max_tokens=request.get("max_tokens")), output=output, error=error,
            call=ModelCall(request=request, response=response)))
        if response is not None:
            messages = [*messages, output.message]
    return messages, events, error


def _tool_events(events: list[ModelEvent | ToolEvent], messages: list[ChatMessage], at: datetime) -> None:
    """A ToolEvent for each call the last model event made, with its result from `messages`."""
    last = next((e for e in reversed(events) if isinstance(e, ModelEvent)), None)
    if last is None or last.output.message is None:
        return
    results = {m.tool_call_id: m for m in messages if isinstance(m, ChatMessageTool)}
    for call in last.output.message.tool_calls or []:
        result = results.get(call.id)
        events.append(ToolEvent(timestamp=at, working_start=0.0, id=call.id, function=call.function,
                                arguments=call.arguments, result=result.text if result else "",
                                error=result.error if result else None))


def transcript(run: Run, claims_file: str, model: str, at: datetime) -> Transcript:
    """The conversation of `claims_file` in `run`, from its cassette (an empty one when it has none)."""
    exchanges = []
    for it in run.interactions(claims_file):
        if not is_model_uri(it.uri):
            continue
        request = it.request_json()
        if not isinstance(request, dict):
            raise InputError(run.cassette_path(claims_file), "a model request whose body is not a JSON object")
        exchanges.append((request, _response(it) if it.status == 200 else None, it))
    try:
        messages, events, error = asyncio.run(_converted(exchanges, model, at))
    except ValueError as exc:  # a request or reply Inspect cannot read as the Messages API's (pydantic's error)
        raise InputError(run.cassette_path(claims_file), f"not a Messages API exchange: {str(exc).splitlines()[0]}") from None
    pages = [{"url": v.url, "sha256": v.sha256, "chars": len(v.text) if v.text is not None else None,
              **({"no_page": v.no_page} if v.sha256 is None else {})} for v in run.fetched(claims_file)]
    return Transcript(messages, events, pages, len(exchanges), error)
