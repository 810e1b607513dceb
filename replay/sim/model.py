"""The Messages API stand-in: `POST /v1/messages` answered by the deterministic judge policy.

Stateless: where a conversation stands is read from its message history. Turn 1 fetches every
distinct `evidence_url` and searches the text of each claim without one (all in one assistant turn);
turn 2, if there were searches, fetches each search's first `contentUrl` not fetched yet; the last
turn is the prompt's strict JSON. Every id is derived from a sha256 of the request body, so identical
runs give byte-identical traffic.

Like current models (Claude Sonnet 5.x), each answer starts with a `thinking` block whose `signature`
binds it to the model and the conversation (its first turn); the assistant turns sent back must carry
those blocks unchanged: a changed one gets the API's 400 "Invalid `signature` in `thinking` block", and
a tool-use turn sent back without its thinking block the 400 that asks for it. Forced tool use
(`tool_choice` any/tool) is the API's 400 for thinking models. `thinking=False` answers in the older
models' shape (no thinking blocks; only the signatures of blocks sent anyway are checked).

Every request is checked as strictly as the API checks it (`sim.strict`: the SDK's own request type, no
unknown field, the caching rules) and accounted by the stand-in's prompt cache (`sim.caching`: a 20-block
lookback, a per-model minimum length). With `BatchSettings.rate_limited` N, the first N direct calls are
answered 429 with `retry-after` too.

Switches for tests, in the request: a model name containing "flaky" fails the first attempt of each
distinct request body with 529 `overloaded_error`; a retired model (`RETIRED_MODELS`, or a name
containing "retired") gets the API's 404 `not_found_error` naming it; a claim whose text contains
`CONTEXT_EXCEEDED_MARKER` makes the final answer stop with `model_context_window_exceeded`, its JSON cut
in half; so does `sim model --cut-off FILE` for the conversation of that claims file (its claims unchanged).
A final answer longer than the request's `max_tokens` (thinking included, four characters a token) is cut
there and stops with `max_tokens`.

Model noise (`sim model --noise P --seed S`, `sim.noise.ModelNoise`): a current model thinks adaptively and no
longer takes a temperature, so two conversations over the same pages may differ on close calls. With
noise on, each close call of a final answer (`policy.runner_up`: a lower bound, an equivalence, an
illustrative number, an existence check) gets its runner-up verdict with probability P, drawn from
one random stream seeded with S in the order the final answers are made (so a run at concurrency 1,
or the same batch, draws the same); every other claim keeps the deterministic verdict. The stand-in
says so in the `x-judge-replay-stand-in-note` header of its token counts ("model noise 0.15, seed 7"),
which a recording keeps among the run's stand-in notes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from replay.sim.api_errors import ApiError, digest, invalid
from replay.sim.batches import BATCHES_PATH, BatchApp, BatchSettings, serve_batches
from replay.sim.caching import CacheLedger
from replay.sim.http_server import Log, StandIn, StandInHandler, StandInServer
from replay.sim.noise import STAND_IN_NOTE_HEADER, ModelNoise
from replay.sim.policy import judge_claim, runner_up
from replay.sim.reading import FETCH_TOOL, SEARCH_TOOL, claims_in, no_page, plain_request, search_urls
from replay.sim.strict import check_message_request
from replay.urls import normalise_learn_url

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
FLAKY_MARKER = "flaky"
RETIRED_MARKER = "retired"
RETIRED_MODELS = frozenset({
    "claude-2.0", "claude-2.1", "claude-instant-1.2", "claude-3-sonnet-20240229", "claude-3-opus-20240229",
    "claude-3-5-sonnet-20240620", "claude-3-5-sonnet-20241022",
})
"""Model ids the API no longer serves (it answers them 404 `not_found_error`, "model: <id>")."""
CONTEXT_EXCEEDED_MARKER = "[stand-in: context window exceeded]"
FORCED_TOOL_USE = "Thinking may not be enabled when tool_choice forces tool use."
_THINKING_TYPES = ("thinking", "redacted_thinking")
_FILE_HEADING = re.compile(r"## Batch to judge \(from `([^`]*)`\)")
_FILE_IN_SCHEMA = re.compile(r'\{"file":"([^"{}]*)"')


def _digest(body: bytes, salt: str) -> str:
    return digest(body, salt)


def _text_of(content: Any) -> str:
    """The text of a message content: a string, or the text blocks of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _tool_key(name: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """What makes two tool calls the same call: the tool and its URL (normalised) or query."""
    if name == FETCH_TOOL:
        return name, normalise_learn_url(str(arguments.get("url") or ""))
    return name, str(arguments.get("query") or "")


@dataclass
class Conversation:
    """What a request's history says: the prompt, the batch, and the tool calls made and answered."""

    prompt_text: str
    file: str
    claims: list[dict[str, Any]]
    issued: set[tuple[str, str]] = field(default_factory=set)
    pages: dict[str, str | None] = field(default_factory=dict)
    """Normalised URL -> fetched page text (None: could not be retrieved)."""
    searches: dict[str, list[str]] = field(default_factory=dict)
    """Query -> the result `contentUrl`s in rank order."""

    @classmethod
    def read(cls, request: dict[str, Any]) -> Conversation:
        system = _text_of(request.get("system"))
        messages = request["messages"]
        first_user = next((_text_of(m.get("content")) for m in messages if m.get("role") == "user"), "")
        claims = claims_in(system)
        if claims is None:
            claims = claims_in(first_user)
        if claims is None:
            raise ApiError(400, "invalid_request_error", "judge-replay model stand-in (test equipment): no claims "
                           "batch (a '## Batch to judge' JSON block) in the system prompt or the first user turn")
        prompt_text = f"{system}\n\n{first_user}" if system else first_user
        heading = _FILE_HEADING.search(prompt_text) or _FILE_IN_SCHEMA.search(prompt_text)
        conversation = cls(prompt_text, heading.group(1) if heading else "", claims)
        conversation._read_tools(messages)
        return conversation

    def _read_tools(self, messages: list[dict[str, Any]]) -> None:
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for message in messages:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if not isinstance(block, dict):
                    continue
                if message.get("role") == "assistant" and block.get("type") == "tool_use":
                    input_ = block.get("input")
                    arguments: dict[str, Any] = input_ if isinstance(input_, dict) else {}
                    calls[str(block.get("id"))] = (str(block.get("name")), arguments)
                    self.issued.add(_tool_key(str(block.get("name")), arguments))
                elif message.get("role") == "user" and block.get("type") == "tool_result":
                    call = calls.get(str(block.get("tool_use_id")))
                    if call is not None:
                        self._record_result(*call, _text_of(block.get("content")), bool(block.get("is_error")))

    def _record_result(self, name: str, arguments: dict[str, Any], text: str, is_error: bool) -> None:
        _, key = _tool_key(name, arguments)
        if name == FETCH_TOOL:
            self.pages[key] = None if no_page(text, is_error) else text
        elif name == SEARCH_TOOL:
            self.searches[key] = [] if is_error else search_urls(text)

    def searched_url(self, claim: dict[str, Any]) -> str | None:
        """For a claim without `evidence_url`: the first result of its search, if any."""
        urls = self.searches.get(str(claim.get("claim") or ""), [])
        return urls[0] if urls else None

    def next_calls(self) -> list[tuple[str, dict[str, str]]]:
        """The tool calls still to make, or [] when every page the policy needs is in."""
        first_turn: list[tuple[str, dict[str, str]]] = []
        for claim in self.claims:
            url = claim.get("evidence_url")
            call = (FETCH_TOOL, {"url": url}) if url else (SEARCH_TOOL, {"query": str(claim.get("claim") or "")})
            first_turn.append(call)
        pending = self._not_issued(first_turn)
        if pending:
            return pending
        second_turn = []
        for claim in self.claims:
            if not claim.get("evidence_url") and (found := self.searched_url(claim)):
                second_turn.append((FETCH_TOOL, {"url": found}))
        return self._not_issued(second_turn)

    def _not_issued(self, calls: list[tuple[str, dict[str, str]]]) -> list[tuple[str, dict[str, str]]]:
        seen = set(self.issued)
        out = []
        for name, arguments in calls:
            key = _tool_key(name, arguments)
            if key not in seen:
                seen.add(key)
                out.append((name, arguments))
        return out

    def verdicts(self, noise: ModelNoise | None = None) -> dict[str, Any]:
        """The final answer: the prompt's JSON, one result per claim in batch order (`noise`: close calls
        may get their runner-up verdict)."""
        results = []
        for claim in self.claims:
            url = claim.get("evidence_url") or self.searched_url(claim) or ""
            page = self.pages.get(normalise_learn_url(url)) if url else None
            verdict = judge_claim(claim, page, self.prompt_text)
            if noise is not None and noise.probability > 0:
                other = runner_up(claim, page, self.prompt_text)
                if other is not None and noise.flips():
                    verdict = other
            results.append({
                "id": claim.get("id"),
                "judge_verdict": verdict["judge_verdict"],
                "rule": verdict["rule"],
                "evidence_url": url,
                "evidence_quote": verdict["evidence_quote"],
                "reason": verdict["reason"],
            })
        return {"file": self.file, "results": results}


def thinking_signature(request: dict[str, Any], thinking: str) -> str:
    """The signature of a thinking block: binds its text to the model and the conversation (the system
    prompt and first user turn), as the API's signatures do; deterministic, so identical runs agree.
    Prompt-caching breakpoints are left out: adding one, or changing its lifetime, changes no answer."""
    request = plain_request(request)
    first_user = next((m.get("content") for m in request["messages"] if m.get("role") == "user"), "")
    conversation = json.dumps([request.get("system"), first_user], sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256("\0".join(["judge-replay stand-in", str(request["model"]), conversation, thinking]).encode())
    return base64.b64encode(b"stand-in:" + digest.digest()).decode("ascii")


def _check_thinking(request: dict[str, Any], required: bool) -> None:
    """The API's checks of the thinking blocks sent back (module docstring)."""
    messages = request["messages"]
    for i, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "thinking":
                text, signature = block.get("thinking"), block.get("signature")
                if not isinstance(text, str) or signature != thinking_signature(request, text):
                    raise ApiError(400, "invalid_request_error", f"messages.{i}.content.{j}: Invalid `signature` in "
                                   "`thinking` block")
    if not required:
        return
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=None)
    if last is None:
        return
    content = messages[last].get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    first = blocks[0].get("type") if blocks else "text"
    if any(b.get("type") == "tool_use" for b in blocks) and first not in _THINKING_TYPES:
        raise ApiError(400, "invalid_request_error", f"messages.{last}.content.0.type: Expected `thinking` or "
                       f"`redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` "
                       "message must start with a thinking block (preceeding the lastmost set of `tool_use` and "
                       "`tool_result` blocks). We recommend you include thinking blocks from previous turns. To "
                       "avoid this requirement, disable `thinking`. Please consult our documentation at "
                       "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


def _check_model(model: str) -> None:
    if model in RETIRED_MODELS or RETIRED_MARKER in model:
        raise ApiError(404, "not_found_error", f"model: {model}")


def _forces_tool_use(request: dict[str, Any]) -> bool:
    choice = request.get("tool_choice")
    return isinstance(choice, dict) and choice.get("type") in ("any", "tool")


def respond(request: dict[str, Any], body: bytes, *, fetch_per_turn: int = 0, thinking: bool = True,
            cut_off: frozenset[str] = frozenset(), noise: ModelNoise | None = None) -> dict[str, Any]:
    """The Messages API response to a valid request (`thinking`: answer as current models do, module
    docstring; `cut_off`: claims files whose final answer stops with `model_context_window_exceeded`;
    `noise`: simulated model noise on close calls)."""
    _check_model(request["model"])
    if thinking and _forces_tool_use(request):
        raise ApiError(400, "invalid_request_error", FORCED_TOOL_USE)
    _check_thinking(request, required=thinking)
    conversation = Conversation.read(request)
    calls = conversation.next_calls()[: fetch_per_turn or None]  # 0: every pending call in one turn
    if calls:
        content: list[dict[str, Any]] = [
            {"type": "tool_use", "id": f"toolu_{_digest(body, f'tool_use {i}')}", "name": name, "input": arguments}
            for i, (name, arguments) in enumerate(calls)
        ]
        stop_reason = "tool_use"
        output = json.dumps([c["input"] for c in content], ensure_ascii=False)
        thought = f"{len(conversation.claims)} claims to judge; {len(calls)} Learn call(s) to make before I decide."
    else:
        output = json.dumps(conversation.verdicts(noise), ensure_ascii=False, separators=(",", ":"))
        stop_reason = "end_turn"
        if conversation.file in cut_off or any(CONTEXT_EXCEEDED_MARKER in str(c.get("claim") or "")
                                               for c in conversation.claims):
            output, stop_reason = output[: len(output) // 2], "model_context_window_exceeded"
        content = [{"type": "text", "text": output}]
        thought = f"Every page the {len(conversation.claims)} claims need is in; applying the rules claim by claim."
    if thinking:
        content.insert(0, {"type": "thinking", "thinking": thought, "signature": thinking_signature(request, thought)})
        output = thought + output
    room = request["max_tokens"] * 4 - (len(thought) if thinking else 0)  # thinking counts toward max_tokens
    if stop_reason == "end_turn" and len(output) // 4 > request["max_tokens"]:
        content[-1]["text"] = content[-1]["text"][: max(0, room)]
        output, stop_reason = output[: request["max_tokens"] * 4], "max_tokens"
    prompt = json.dumps([request.get("system"), request["messages"]], ensure_ascii=False)
    return {
        "id": f"msg_{_digest(body, 'message')}",
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(1, len(prompt) // 4),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": max(1, len(output) // 4),
            "service_tier": "standard",
        },
    }


class ModelApp:
    """The stand-in's only memory: which request bodies a flaky model has already failed once."""

    def __init__(self, *, fetch_per_turn: int = 0, batch_settings: BatchSettings | None = None,
                 thinking: bool = True, cut_off: frozenset[str] = frozenset(), noise: ModelNoise | None = None) -> None:
        self.fetch_per_turn = fetch_per_turn
        self.noise = noise
        """Simulated model noise on close calls (None: the deterministic policy throughout)."""
        self.thinking = thinking
        self.cut_off = cut_off
        """Claims files whose conversation's final answer stops with `model_context_window_exceeded`."""
        self.batches = BatchApp(batch_settings or BatchSettings(), answer=self.answer_entry)
        self.cache = CacheLedger()
        self._lock = threading.Lock()
        self._failed_once: set[str] = set()
        self.requests: list[str] = []

    def answer_entry(self, params: dict[str, Any]) -> dict[str, Any]:
        """A batch entry's message: its params checked and answered as a direct call's (the same cache)."""
        request = check_message_request(params, batch=True)
        body = json.dumps(params, ensure_ascii=False, sort_keys=True).encode()
        message = respond(request, body, fetch_per_turn=self.fetch_per_turn, thinking=self.thinking,
                          cut_off=self.cut_off, noise=self.noise)
        self.cache.account(request, message["usage"])
        return message

    def first_attempt(self, body: bytes) -> bool:
        key = hashlib.sha256(body).hexdigest()
        with self._lock:
            if key in self._failed_once:
                return False
            self._failed_once.add(key)
            return True


class ModelHandler(StandInHandler):
    """`POST /v1/messages`; any other path is the API's 404."""

    stand_in = "model"

    @property
    def app(self) -> ModelApp:
        return self.server.app  # type: ignore[no-any-return]

    def _error(self, err: ApiError, request_id: str, headers: dict[str, str] | None = None) -> None:
        self.reply(err.status, err.body(request_id), "application/json",
                   {"request-id": request_id, **err.headers, **(headers or {})})

    def _not_found(self) -> None:
        body = self.read_body()
        self._error(ApiError(404, "not_found_error", f"Not found: {self.command} {urlsplit(self.path).path}"),
                    f"req_{_digest(body, 'request ' + self.path)}")

    do_PUT = do_DELETE = do_PATCH = _not_found

    def do_GET(self) -> None:
        if urlsplit(self.path).path.startswith(BATCHES_PATH):
            return serve_batches(self, self.app.batches)
        return self._not_found()

    def do_POST(self) -> None:
        if urlsplit(self.path).path.startswith(BATCHES_PATH):
            return serve_batches(self, self.app.batches)
        if urlsplit(self.path).path == COUNT_TOKENS_PATH:
            return self._count_tokens()
        if urlsplit(self.path).path != MESSAGES_PATH:
            return self._not_found()
        body = self.read_body()
        request_id = f"req_{_digest(body, 'request')}"
        self.app.requests.append(request_id)
        try:
            try:
                request = check_message_request(json.loads(body))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise invalid(f"The request body is not valid JSON: {exc}") from exc
            if self.app.batches._count("call messages", self.app.batches.settings.rate_limited):
                raise ApiError(429, "rate_limit_error", "Number of requests has exceeded your rate limit "
                               "(judge-replay model stand-in: on purpose)",
                               {"retry-after": str(self.app.batches.settings.retry_after)})
            if FLAKY_MARKER in request["model"] and self.app.first_attempt(body):
                raise ApiError(529, "overloaded_error", "Overloaded (judge-replay model stand-in: flaky model, "
                               "first attempt of this request)")
            response = respond(request, body, fetch_per_turn=self.app.fetch_per_turn, thinking=self.app.thinking,
                               cut_off=self.app.cut_off, noise=self.app.noise)
            self.app.cache.account(request, response["usage"])
        except ApiError as err:
            retry = {"retry-after": "0", "retry-after-ms": "1"} if err.status == 529 else None
            return self._error(err, request_id, retry)
        self.reply(200, json.dumps(response, ensure_ascii=False), "application/json", {"request-id": request_id})


    def _count_tokens(self) -> None:
        """`POST /v1/messages/count_tokens` (free, as the real one): the input tokens the stand-in would
        count for these messages; a retired model gets the same 404 as on `/v1/messages`."""
        body = self.read_body()
        request_id = f"req_{_digest(body, 'count')}"
        try:
            try:
                request = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ApiError(400, "invalid_request_error", f"The request body is not valid JSON: {exc}") from exc
            if not isinstance(request, dict) or not isinstance(request.get("model"), str) or not request["model"]:
                raise ApiError(400, "invalid_request_error", "model: Field required")
            if not isinstance(request.get("messages"), list) or not request["messages"]:
                raise ApiError(400, "invalid_request_error", "messages: Input should be a non-empty list of messages")
            _check_model(request["model"])
        except ApiError as err:
            return self._error(err, request_id, None)
        prompt = json.dumps([request.get("system"), request["messages"]], ensure_ascii=False)
        note = {STAND_IN_NOTE_HEADER: self.app.noise.note} if self.app.noise is not None else {}
        self.reply(200, json.dumps({"input_tokens": max(1, len(prompt) // 4)}), "application/json",
                   {"request-id": request_id, **note})


class ModelStandIn(StandIn):
    """A running model stand-in; `url` is the base URL for `anthropic.Anthropic(base_url=...)`."""

    def __init__(self, server: StandInServer, url: str) -> None:
        super().__init__(server, url)
        self.app: ModelApp = server.app

    @property
    def requests(self) -> list[str]:
        """The `request-id` of every `POST /v1/messages` served, in order (retries included)."""
        return self.app.requests


def start_model(port: int = 0, *, log: Log | None = None, fetch_per_turn: int = 0,
                batch_settings: BatchSettings | None = None, thinking: bool = True,
                cut_off: frozenset[str] = frozenset(), noise: ModelNoise | None = None) -> ModelStandIn:
    """Serve the Messages API stand-in on 127.0.0.1:`port` (0: any free port) in a daemon thread.
    `fetch_per_turn` > 0: at most that many tool calls per turn (longer conversations, as real agents
    make); `batch_settings`: how its Message Batches endpoints behave (`sim.batches`); `thinking=False`:
    answer in the older models' shape, without thinking blocks; `cut_off`: claims files (as the prompt
    names them) whose conversation outgrows the context window on purpose; `noise`: simulated model noise
    on close calls (`ModelNoise`)."""
    server = StandInServer(port, ModelHandler, ModelApp(fetch_per_turn=fetch_per_turn, batch_settings=batch_settings,
                                                        thinking=thinking, cut_off=cut_off, noise=noise), log)
    return ModelStandIn(server, f"http://127.0.0.1:{server.server_address[1]}")
