"""The model stand-in's request checks: what the API refuses with a 400, refused the same way here.

A Messages request (direct, or a batch entry's `params`) must validate as the `anthropic` SDK's own
request type (`MessageCreateParamsNonStreaming`), and also pass the API's own rules that the type does not
carry: no top-level field the API does not know; no `temperature` / `top_p` / `top_k` on a 5.x model; no
`cache_control` on a `thinking` or `redacted_thinking` block; at most 4 breakpoints, every 1-hour one
before every 5-minute one (tools, system, then messages); a thinking budget below `max_tokens`. Each
refusal is the API's `invalid_request_error` with the message shape it uses.

The SDK's types are checked with pydantic under one lock: validation runs on the server's threads, and
pydantic-core has been seen to panic when one validator runs on several threads at once.
"""

from __future__ import annotations

import re
import threading
import typing
from collections.abc import Iterator
from typing import Any

from replay.sim.api_errors import ApiError, invalid

MAX_BREAKPOINTS = 4
SAMPLING = ("temperature", "top_p", "top_k")
_FIVE_X = re.compile(r"^(claude-(opus|sonnet|haiku)-|fable-|mythos-)5(-|$)")
_UNCACHEABLE = ("thinking", "redacted_thinking")
_lock = threading.Lock()
_adapters: dict[str, Any] = {}


def is_five_x(model: str) -> bool:
    """A model of the 5.x generation (`claude-sonnet-5-5`, `fable-5-2`...), whose sampling is fixed."""
    return bool(_FIVE_X.match(model))


def _adapter(kind: str) -> Any:
    """The pydantic TypeAdapter of an SDK request type (built once, under the lock)."""
    if kind not in _adapters:
        import pydantic
        from anthropic.types import message_create_params
        from anthropic.types.messages import batch_create_params

        typed = {"message": message_create_params.MessageCreateParamsNonStreaming,
                 "entry": batch_create_params.Request}[kind]
        _adapters[kind] = pydantic.TypeAdapter(typed)
    return _adapters[kind]


def known_fields() -> frozenset[str]:
    """The top-level fields of a Messages request, as the SDK's type lists them."""
    from anthropic.types import message_create_params

    return frozenset(typing.get_type_hints(message_create_params.MessageCreateParamsNonStreaming))


def _drain(value: Any, path: tuple[Any, ...]) -> None:
    """Run the lazy parts of a validated value (pydantic checks an `Iterable` field as it is iterated);
    a failure there is told with the path to it."""
    import pydantic

    if isinstance(value, dict):
        for key, item in value.items():
            _drain(item, (*path, key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _drain(item, (*path, i))
    elif isinstance(value, Iterator):
        i = 0
        while True:
            try:
                item = next(value)
            except StopIteration:
                return
            except pydantic.ValidationError as exc:
                raise _Refused(path, exc) from None
            _drain(item, (*path, i))
            i += 1


class _Refused(Exception):
    def __init__(self, path: tuple[Any, ...], error: Any) -> None:
        super().__init__(str(error))
        self.path = path
        self.error = error


def _said(where: str, path: tuple[Any, ...], error: Any) -> ApiError:
    """The API's words for a validation error: the path to the value, then what is wrong with it."""
    first = error.errors()[0]
    loc = [*path, *first["loc"]]
    shown = ".".join(str(p) for p in loc if not (isinstance(p, str) and (p[:1].isupper() or "[" in p)))
    return invalid(f"{where}{shown}: {first['msg']}")


def _as_sdk_type(value: Any, kind: str, where: str = "") -> None:
    import pydantic

    with _lock:
        try:
            _drain(_adapter(kind).validate_python(value), ())
        except pydantic.ValidationError as exc:
            raise _said(where, (), exc) from None
        except _Refused as refused:
            raise _said(where, refused.path, refused.error) from None


def check_message_request(request: Any, *, batch: bool = False) -> dict[str, Any]:
    """`request` if the API would take it, else the API's error (the module docstring lists the rules)."""
    if not isinstance(request, dict):
        raise invalid("The request body is not a JSON object")
    if request.get("stream"):
        if batch:
            raise invalid("stream: Extra inputs are not permitted")
        raise invalid("judge-replay model stand-in (test equipment): streaming is not supported; call without stream")
    model = request.get("model")
    for name in SAMPLING:
        if name in request and isinstance(model, str) and is_five_x(model):
            raise invalid(f"{name}: is not supported on {model}; this model samples with fixed settings")
    extra = [k for k in request if k not in known_fields() and k not in SAMPLING]
    if extra:
        raise invalid(f"{extra[0]}: Extra inputs are not permitted")
    _as_sdk_type(request, "message")
    if not isinstance(request["max_tokens"], int) or request["max_tokens"] < 1:
        raise invalid("max_tokens: Input should be greater than or equal to 1")
    if not request["messages"]:
        raise invalid("messages: List should have at least 1 item after validation, not 0")
    _check_breakpoints(request)
    _check_thinking_budget(request)
    return request


def check_batch_entry(entry: Any, i: int) -> None:
    """One entry of a batch create, as the SDK's `batch_create_params.Request` (its params are checked
    when the entry is processed: a bad one is an errored entry, as the API does)."""
    _as_sdk_type(entry, "entry", f"requests.{i}.")


def _blocks(request: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every block that may carry `cache_control`, with its path, in the API's order."""
    for i, tool in enumerate(request.get("tools") or []):
        if isinstance(tool, dict):
            yield f"tools.{i}", tool
    system = request.get("system")
    for i, block in enumerate(system if isinstance(system, list) else []):
        if isinstance(block, dict):
            yield f"system.{i}", block
    for m, message in enumerate(request.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for b, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, dict):
                yield f"messages.{m}.content.{b}", block


def _check_breakpoints(request: dict[str, Any]) -> None:
    lifetimes: list[str] = []
    for path, block in _blocks(request):
        if "cache_control" not in block:
            continue
        if block.get("type") in _UNCACHEABLE:
            raise invalid(f"{path}.{block['type']}.cache_control: Extra inputs are not permitted")
        marker = block["cache_control"]
        lifetimes.append(str(marker.get("ttl") or "5m") if isinstance(marker, dict) else "5m")
    if len(lifetimes) > MAX_BREAKPOINTS:
        raise invalid(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                      f"Found {len(lifetimes)}.")
    if "1h" in lifetimes and "5m" in lifetimes[: len(lifetimes) - lifetimes[::-1].index("1h") - 1]:
        raise invalid("a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. "
                      "Note that blocks are processed in the following order: `tools`, `system`, `messages`.")


def _check_thinking_budget(request: dict[str, Any]) -> None:
    thinking = request.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and budget >= request["max_tokens"]:
            raise invalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                          "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                          "#max-tokens-and-context-window-size")


__all__ = ["ApiError", "check_batch_entry", "check_message_request", "is_five_x"]
