"""``FakeLLM``: the fake OpenAI-compatible server's routes, checks and answers.

The guide (what it speaks, how tests script it) is :mod:`bot.testing.fake_llm`, the public
path; the pieces live beside this module: ``http_layer`` (requests, key, responses, SSE),
``answers`` (script queues, ``fail_every``), ``validation`` / ``message_checks`` / ``errors``
(the real API's 400s), ``model`` (context window, token budget), ``markers`` (the unscripted
answer: echo, ``[[tool:...]]``, ``[[context]]``), ``script``, ``wire``, ``embeddings``, ``cli``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot.testing.llm.answers import ScriptedAnswers
from bot.testing.llm.embeddings import (
    embeddings_body,
    fake_embedding,
    validate_embeddings_request,
)
from bot.testing.llm.http_layer import (
    SHUTTING_DOWN,
    RecordedRequest,
    api_headers,
    auth_failure,
    error_response,
    json_response,
    record_request,
    stream_response,
)
from bot.testing.llm.markers import unscripted_answer
from bot.testing.llm.model import context_failure, generate
from bot.testing.llm.prompt_cache import PromptCache
from bot.testing.llm.script import (
    Script,
    ScriptedToolCall,
    delay,
    error,
    hang,
    held,
    quota_exhausted,
    rate_limited,
    reply,
    tool_calls,
)
from bot.testing.llm.transcriptions import (
    default_transcript,
    transcription_body,
    validate_transcription,
)
from bot.testing.llm.validation import invalid_json, validate_chat_request
from bot.testing.llm.wire import (
    ApiError,
    completion_body,
    completion_id,
    model_object,
    stream_chunks,
    usage_body,
)
from bot.testing.service import FakeService, serve

if TYPE_CHECKING:
    from bot.llm.tokens import TokenCounter

__all__ = [
    "FakeLLM",
    "RecordedRequest",
    "Script",
    "ScriptedToolCall",
    "default_transcript",
    "delay",
    "error",
    "fake_embedding",
    "hang",
    "held",
    "quota_exhausted",
    "rate_limited",
    "reply",
    "tool_calls",
]

log = logging.getLogger(__name__)

DEFAULT_MODELS = ("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini", "gpt-4.1")
_MAX_BODY = 64 * 1024 * 1024
_BACKLOG = 4096  # a benchmark opens ~1000 connections at once; the default 128 drops SYNs
_SHUTDOWN_TIMEOUT = 5.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Route = Callable[[web.Request, "RecordedRequest"], Awaitable[web.StreamResponse]]


class FakeLLM(ScriptedAnswers, FakeService):
    """The fake server. Every constructor argument is also a plain attribute, settable live.

    A chat request is checked in the real API's order: key, JSON, validation, context window.
    Only a request that passes takes the next scripted answer (else the default reply), so a
    rejected request never eats a script. ``latency`` is the model's time, counted from arrival,
    for generated answers; scripted errors come back at once unless given their own ``delay``.
    ``fail_every`` injects a failure into every n-th valid request (a 429 storm).
    ``ignore_max_tokens`` plays a server that disregards ``max_tokens`` (some self-hosted and
    proxied ones do): the whole answer comes back, finishing "stop", however long it is.
    ``prompt_cache`` (on by default) reports ``cached_tokens`` like OpenAI's prefix cache;
    ``prompt_cache_store`` holds its recent prompts (``max_entries``, ``ttl`` are settable).
    Unscripted answers echo the newest user message unless it holds a marker:
    ``[[tool:NAME {...}]]`` calls a tool, ``[[context]]`` (or ``reveal``) shows what was sent.
    """

    def __init__(
        self,
        *,
        model_context_window: int = 128_000,
        api_key: str | None = None,
        latency: float = 0.0,
        stream_interval: float = 0.0,
        default_reply: Callable[[dict[str, Any]], str] | None = None,
        ignore_max_tokens: bool = False,
        reveal: bool = False,
    ) -> None:
        super().__init__()
        self.model_context_window = model_context_window
        self.api_key = api_key
        self.latency = latency
        self.stream_interval = stream_interval  # seconds between streamed chunks (a slow model)
        self.default_reply = default_reply
        self.ignore_max_tokens = ignore_max_tokens
        self.reveal = reveal  # unscripted answers show what was sent (as ``[[context]]`` does)
        self.report_usage = True  # False: like servers that send no ``usage`` at all
        self.prompt_cache = True  # False: every answer reports cached_tokens 0
        # True: /v1/embeddings reads input_type (query/passage), as asymmetric models' servers
        # do; False: it is an unknown argument there, as at OpenAI (400)
        self.embedding_roles = False
        self.prompt_cache_store = PromptCache()
        self.models: list[str] = list(DEFAULT_MODELS)
        self.requests: list[RecordedRequest] = []
        self._call_ids = itertools.count(1)
        self._warm_models: set[str] = set()
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self._base_url: str | None = None
        self._port = 0

    # ----------------------------------------------------------------- lifecycle

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on ``host:port`` (port 0 picks a free one); ``base_url`` is valid after."""
        if self._runner is not None:
            raise RuntimeError("FakeLLM is already running")
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=_MAX_BODY)
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/chat/completions", self._route(self._chat))
            app.router.add_post(f"{prefix}/embeddings", self._route(self._embeddings))
            transcriptions = self._route(self._transcription)
            app.router.add_post(f"{prefix}/audio/transcriptions", transcriptions)
            app.router.add_get(f"{prefix}/models", self._route(self._list_models))
            app.router.add_get(f"{prefix}/models/{{model}}", self._route(self._get_model))
        app.router.add_route("*", "/{tail:.*}", self._route(self._invalid_url))
        self._runner, self._port, shown = await serve(
            app, host, port, shutdown_timeout=_SHUTDOWN_TIMEOUT, backlog=_BACKLOG
        )
        self._base_url = f"http://{shown}:{self._port}/v1"

    async def stop(self) -> None:
        """Stop serving; hanging and sleeping requests are answered 503 and end cleanly."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._stopping.set()
        await runner.cleanup()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: pass it as the SDK's ``base_url``."""
        if self._base_url is None:
            raise RuntimeError("FakeLLM is not started; call start() or use 'async with'")
        return self._base_url

    @property
    def port(self) -> int:
        return self._port

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded chat-completion requests only."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def transcription_requests(self) -> list[RecordedRequest]:
        """The recorded ``/audio/transcriptions`` requests only (``files["file"]`` is the
        audio, ``form`` the other fields)."""
        return [r for r in self.requests if r.path.endswith("/audio/transcriptions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        """The recorded ``/embeddings`` requests only."""
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    # ------------------------------------------------------------------- routing

    def _route(self, inner: Route) -> Handler:
        """Record the request, check the key, and turn crashes into OpenAI-style 500s."""

        async def handle(request: web.Request) -> web.StreamResponse:
            record = await record_request(request)
            self.requests.append(record)
            failure = auth_failure(self.api_key, request)
            if failure is not None:
                return error_response(failure)
            try:
                return await inner(request, record)
            except ConnectionError:
                raise
            except Exception as exc:
                log.exception("fake LLM handler failed")
                return error_response(
                    ApiError(500, f"The fake server failed: {exc!r}", type="server_error")
                )

        return handle

    # ------------------------------------------------------------------ handlers

    async def _chat(self, request: web.Request, record: RecordedRequest) -> web.StreamResponse:
        body = record.json
        if body is None:
            return error_response(invalid_json())
        failure = validate_chat_request(body)
        if failure is not None:
            return error_response(failure)
        counter = await self._counter(body["model"])
        prompt_tokens = counter.count_messages(body["messages"])
        limit = body.get("max_completion_tokens")
        limit = body.get("max_tokens") if limit is None else limit
        if self.ignore_max_tokens:
            limit = None  # neither reserved in the context window nor a cut of the answer
        failure = context_failure(self.model_context_window, prompt_tokens, limit)
        if failure is not None:
            return error_response(failure)

        script = self._next_chat_script()
        failed = await self._wait_for(record, script)
        if failed is not None:
            return failed

        text, calls = (
            self._default_answer(body, prompt_tokens)
            if script is None
            else (script.text, script.tool_calls)
        )
        gen = generate(counter, text, calls, limit, self._next_call_id)
        n: int = body.get("n") or 1
        override = script.usage if script is not None else None
        cached = (
            self.prompt_cache_store.cached_tokens(body, prompt_tokens, counter)
            if self.prompt_cache
            else 0
        )
        usage = usage_body(prompt_tokens, gen.completion_tokens * n, override, cached_tokens=cached)
        reported = usage if self.report_usage else None
        record.usage = reported
        ident, created, model = completion_id(), int(time.time()), body["model"]
        headers = api_headers(record.received_at)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = stream_chunks(
                id=ident,
                created=created,
                model=model,
                choices=[gen] * n,
                usage=reported if include_usage else None,
            )
            return await stream_response(request, record, chunks, headers, self.stream_interval)
        payload = completion_body(
            id=ident, created=created, model=model, choices=[gen] * n, usage=reported
        )
        return json_response(payload, headers=headers)

    async def _embeddings(self, request: web.Request, record: RecordedRequest) -> web.Response:
        """Deterministic vectors (see :mod:`bot.testing.llm.embeddings`)."""
        body = record.json
        if body is None:
            return error_response(invalid_json())
        failure = validate_embeddings_request(body, roles=self.embedding_roles)
        if failure is not None:
            return error_response(failure)
        script = self._next_embedding_script()
        failed = await self._wait_for(record, script)
        if failed is not None:
            return failed
        return json_response(embeddings_body(body), headers=api_headers(record.received_at))

    async def _transcription(self, request: web.Request, record: RecordedRequest) -> web.Response:
        """The scripted transcript, else :func:`default_transcript` of the audio."""
        failure = validate_transcription(record.form, record.files, len(record.body))
        if failure is not None:
            return error_response(failure)
        script = self._next_transcription_script()
        failed = await self._wait_for(record, script)
        if failed is not None:
            return failed
        audio = record.files["file"].data
        text = script.text if script is not None and script.text is not None else None
        content_type, payload = transcription_body(
            default_transcript(audio) if text is None else text, record.form
        )
        headers = api_headers(record.received_at)
        if isinstance(payload, str):
            return web.Response(text=payload, content_type=content_type, headers=headers)
        return json_response(payload, headers=headers)

    async def _list_models(self, request: web.Request, record: RecordedRequest) -> web.Response:
        return json_response({"object": "list", "data": [model_object(m) for m in self._known()]})

    async def _get_model(self, request: web.Request, record: RecordedRequest) -> web.Response:
        model = request.match_info["model"]
        if model not in self._known():
            message = f"The model '{model}' does not exist or you do not have access to it."
            return error_response(ApiError(404, message, code="model_not_found"))
        return json_response(model_object(model))

    async def _invalid_url(self, request: web.Request, record: RecordedRequest) -> web.Response:
        return error_response(ApiError(404, f"Invalid URL ({request.method} {request.path})"))

    # ------------------------------------------------------------------- helpers

    async def _counter(self, model: str) -> TokenCounter:
        """The shared counter; its first use per model (tokenizer load) runs off the loop."""
        from bot.llm.tokens import get_counter  # lazy: the kit must import without the core

        if model in self._warm_models:
            return get_counter(model)
        counter = await asyncio.to_thread(get_counter, model)
        self._warm_models.add(model)
        return counter

    def _known(self) -> list[str]:
        seen = dict.fromkeys(self.models)
        for record in self.requests:
            if isinstance(record.json, dict) and isinstance(record.json.get("model"), str):
                seen.setdefault(record.json["model"])
        return list(seen)

    def _next_call_id(self) -> str:
        return f"call_{next(self._call_ids)}"

    def _default_answer(
        self, body: dict[str, Any], prompt_tokens: int
    ) -> tuple[str | None, tuple[ScriptedToolCall, ...]]:
        """``default_reply``'s text, else the markers' answer or the echo (``markers``)."""
        if self.default_reply is not None:
            return self.default_reply(body), ()
        return unscripted_answer(body, prompt_tokens, reveal=self.reveal)

    async def _wait_for(
        self, record: RecordedRequest, script: Script | None
    ) -> web.Response | None:
        """Take the model's time; the scripted failure's response, or None for an answer."""
        wait = script.delay if script else 0.0
        if script is None or (script.error is None and not script.hang):
            wait += self.latency  # model time counts from arrival, like a real round trip
        if not await self._pause(record.received_at + wait - time.monotonic()):
            return error_response(SHUTTING_DOWN)
        if script is not None and script.gate is not None and not await self._gate(script.gate):
            return error_response(SHUTTING_DOWN)
        if script is not None and script.hang:
            await self._stopping.wait()
            return error_response(SHUTTING_DOWN)
        if script is not None and script.error is not None:
            return error_response(script.error)
        return None

    async def _gate(self, gate: asyncio.Event) -> bool:
        """Wait until ``gate`` is set; False if the server began stopping first."""
        opened = asyncio.ensure_future(gate.wait())
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({opened, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            opened.cancel()
            stopping.cancel()
        return gate.is_set()

    async def _pause(self, seconds: float) -> bool:
        """Sleep without holding anything; False if the server began stopping meanwhile."""
        if self._stopping.is_set():
            return False
        if seconds <= 0:
            return True
        try:
            async with asyncio.timeout(seconds):
                await self._stopping.wait()
        except TimeoutError:
            return True
        return False
