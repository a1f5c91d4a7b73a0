"""A fake OpenAI-compatible chat server, so bots can be tested offline and deterministically.

It speaks the real wire protocol (status codes, error bodies, headers, SSE streaming) well
enough that the official ``openai`` SDK is the client in tests::

    async with FakeLLM() as fake:
        fake.script(reply("Hi!"), rate_limited(retry_after=2))
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="sk-test")

Run standalone with ``python -m bot.testing.fake_llm --port 8765``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import signal
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot.testing.fake_llm_embeddings import (
    embeddings_body,
    fake_embedding,
    validate_embeddings_request,
)
from bot.testing.fake_llm_model import context_failure, generate, last_user_text
from bot.testing.fake_llm_script import (
    Script,
    ScriptedToolCall,
    delay,
    error,
    hang,
    quota_exhausted,
    rate_limited,
    reply,
    tool_calls,
)
from bot.testing.fake_llm_validation import invalid_json, validate_chat_request
from bot.testing.fake_llm_wire import (
    ApiError,
    JSONDict,
    completion_body,
    completion_id,
    mask_key,
    model_object,
    request_id,
    sse_event,
    stream_chunks,
    usage_body,
)
from bot.testing.service import FakeService

if TYPE_CHECKING:
    from bot.llm.tokens import TokenCounter

__all__ = [
    "FakeLLM",
    "RecordedRequest",
    "Script",
    "ScriptedToolCall",
    "delay",
    "error",
    "fake_embedding",
    "hang",
    "main",
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
_NO_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization header "
    "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with "
    "blank username) if you're accessing the API from your browser and are prompted for a "
    "username and password. You can obtain an API key from "
    "https://platform.openai.com/account/api-keys."
)
_WRONG_KEY = (
    "Incorrect API key provided: {masked}. You can find your API key at "
    "https://platform.openai.com/account/api-keys."
)
_SHUTTING_DOWN = ApiError(503, "The server is shutting down.", type="server_error")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Route = Callable[[web.Request, "RecordedRequest"], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class RecordedRequest:
    """One request as received: header names lower-cased, ``json`` None when not JSON.

    ``received_at`` is ``time.monotonic()`` on arrival, before any latency is applied;
    ``disconnected`` is True when a streamed answer did not reach its end (the client hung up;
    also while it is still being written).
    """

    method: str
    path: str
    headers: dict[str, str]
    json: Any
    body: bytes = b""
    received_at: float = field(default_factory=time.monotonic)
    disconnected: bool = False


class FakeLLM(FakeService):
    """The fake server. Every constructor argument is also a plain attribute, settable live.

    A chat request is checked in the real API's order: key, JSON, validation, context window.
    Only a request that passes takes the next scripted answer (else the default reply), so a
    rejected request never eats a script. ``latency`` is the model's time, counted from arrival,
    for generated answers; scripted errors come back at once unless given their own ``delay``.
    ``fail_every`` injects a failure into every n-th valid request (a 429 storm).
    ``ignore_max_tokens`` plays a server that disregards ``max_tokens`` (some self-hosted and
    proxied ones do): the whole answer comes back, finishing "stop", however long it is.
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
    ) -> None:
        self.model_context_window = model_context_window
        self.api_key = api_key
        self.latency = latency
        self.stream_interval = stream_interval  # seconds between streamed chunks (a slow model)
        self.default_reply = default_reply
        self.ignore_max_tokens = ignore_max_tokens
        self.report_usage = True  # False: like servers that send no ``usage`` at all
        self.models: list[str] = list(DEFAULT_MODELS)
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Script] = deque()
        self._fault: Script | None = None
        self._fault_every = 0
        self._fault_count = 0
        self._embedding_queue: deque[Script] = deque()
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
            app.router.add_get(f"{prefix}/models", self._route(self._list_models))
            app.router.add_get(f"{prefix}/models/{{model}}", self._route(self._get_model))
        app.router.add_route("*", "/{tail:.*}", self._route(self._invalid_url))
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_TIMEOUT)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port, backlog=_BACKLOG).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
        shown = f"[{shown}]" if ":" in shown else shown
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

    # ------------------------------------------------------------------ scripting

    def script(self, *items: Script) -> None:
        """Queue answers; valid chat requests take them in order, then get default replies."""
        self._queue.extend(items)

    @property
    def pending_scripts(self) -> int:
        """How many scripted answers are still unused."""
        return len(self._queue)

    def fail_every(self, n: int, failure: Script | None = None) -> None:
        """From now on answer every ``n``-th valid chat request with ``failure``; 0 stops it.

        A fault storm under concurrency ("half the calls get a 429"), which a script queue
        cannot express: concurrent requests and their retries take scripts in arrival order, so
        which user meets which one is luck, and scripted replies all carry one fixed text.
        Counting starts at this call; an injected failure takes no script from the queue, so the
        other requests still get scripts, then default (echo) replies.
        ``failure`` (an ``error``/``rate_limited``/``hang``, optionally delayed) defaults to
        ``rate_limited(retry_after=1)``: a 429 with ``retry-after`` and OpenAI's error body.
        """
        if n < 0:
            raise ValueError("n must be >= 0")
        failure = rate_limited(retry_after=1) if failure is None else failure
        if failure.error is None and not failure.hang:
            raise ValueError("fail_every needs a failure: error(), rate_limited() or hang()")
        self._fault, self._fault_every, self._fault_count = failure, n, 0

    def script_embeddings(self, *items: Script) -> None:
        """Queue answers for valid ``/embeddings`` requests: ``error``, ``delay``, ``hang``.

        A queue of its own, so a memory embedded mid-turn never eats a chat script. Vectors
        are always :func:`fake_embedding`'s, so only failures and timing can be scripted.
        """
        for item in items:
            if item.text is not None or item.tool_calls or item.usage is not None:
                raise ValueError("embeddings scripts can only fail, hang or delay")
        self._embedding_queue.extend(items)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded chat-completion requests only."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        """The recorded ``/embeddings`` requests only."""
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    # ------------------------------------------------------------------- routing

    def _route(self, inner: Route) -> Handler:
        """Record the request, check the key, and turn crashes into OpenAI-style 500s."""

        async def handle(request: web.Request) -> web.StreamResponse:
            record = await self._record(request)
            failure = self._auth_failure(request)
            if failure is not None:
                return self._error(failure)
            try:
                return await inner(request, record)
            except ConnectionError:
                raise
            except Exception as exc:
                log.exception("fake LLM handler failed")
                return self._error(
                    ApiError(500, f"The fake server failed: {exc!r}", type="server_error")
                )

        return handle

    async def _record(self, request: web.Request) -> RecordedRequest:
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            raw = b""
        try:
            parsed: Any = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        headers = {k.lower(): v for k, v in request.headers.items()}
        record = RecordedRequest(request.method, request.path, headers, parsed, raw)
        self.requests.append(record)
        return record

    def _auth_failure(self, request: web.Request) -> ApiError | None:
        if self.api_key is None:
            return None
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            return ApiError(401, _NO_KEY)
        if key != self.api_key:
            message = _WRONG_KEY.format(masked=mask_key(key))
            return ApiError(401, message, code="invalid_api_key")
        return None

    # ------------------------------------------------------------------ handlers

    async def _chat(self, request: web.Request, record: RecordedRequest) -> web.StreamResponse:
        body = record.json
        if body is None:
            return self._error(invalid_json())
        failure = validate_chat_request(body)
        if failure is not None:
            return self._error(failure)
        counter = await self._counter(body["model"])
        prompt_tokens = counter.count_messages(body["messages"])
        limit = body.get("max_completion_tokens")
        limit = body.get("max_tokens") if limit is None else limit
        if self.ignore_max_tokens:
            limit = None  # neither reserved in the context window nor a cut of the answer
        failure = context_failure(self.model_context_window, prompt_tokens, limit)
        if failure is not None:
            return self._error(failure)

        script = self._injected_fault()
        if script is None and self._queue:
            script = self._queue.popleft()
        wait = script.delay if script else 0.0
        if script is None or (script.error is None and not script.hang):
            wait += self.latency  # model time counts from arrival, like a real round trip
        if not await self._pause(record.received_at + wait - time.monotonic()):
            return self._error(_SHUTTING_DOWN)
        if script is not None and script.hang:
            await self._stopping.wait()
            return self._error(_SHUTTING_DOWN)
        if script is not None and script.error is not None:
            return self._error(script.error)

        text, calls = (
            (self._default_text(body), ()) if script is None else (script.text, script.tool_calls)
        )
        gen = generate(counter, text, calls, limit, self._next_call_id)
        n: int = body.get("n") or 1
        override = script.usage if script is not None else None
        usage = usage_body(prompt_tokens, gen.completion_tokens * n, override)
        reported = usage if self.report_usage else None
        ident, created, model = completion_id(), int(time.time()), body["model"]
        headers = self._headers(record.received_at)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = stream_chunks(
                id=ident,
                created=created,
                model=model,
                choices=[gen] * n,
                usage=reported if include_usage else None,
            )
            return await self._stream(request, record, chunks, headers)
        payload = completion_body(
            id=ident, created=created, model=model, choices=[gen] * n, usage=reported
        )
        return self._json(payload, headers=headers)

    async def _embeddings(self, request: web.Request, record: RecordedRequest) -> web.Response:
        """Deterministic vectors (see :mod:`bot.testing.fake_llm_embeddings`)."""
        body = record.json
        if body is None:
            return self._error(invalid_json())
        failure = validate_embeddings_request(body)
        if failure is not None:
            return self._error(failure)
        script = self._embedding_queue.popleft() if self._embedding_queue else None
        wait = script.delay if script else 0.0
        if script is None or (script.error is None and not script.hang):
            wait += self.latency
        if not await self._pause(record.received_at + wait - time.monotonic()):
            return self._error(_SHUTTING_DOWN)
        if script is not None and script.hang:
            await self._stopping.wait()
            return self._error(_SHUTTING_DOWN)
        if script is not None and script.error is not None:
            return self._error(script.error)
        return self._json(embeddings_body(body), headers=self._headers(record.received_at))

    async def _stream(
        self,
        request: web.Request,
        record: RecordedRequest,
        chunks: Iterable[JSONDict],
        headers: dict[str, str],
    ) -> web.StreamResponse:
        """Send chunks as server-sent events, one write each, then ``data: [DONE]``."""
        response = web.StreamResponse(headers=headers)
        response.content_type = "text/event-stream"
        response.charset = "utf-8"
        response.headers["Cache-Control"] = "no-cache"
        record.disconnected = True  # until the last byte is out: a cancelled handler counts
        try:
            await response.prepare(request)
            for index, chunk in enumerate(chunks):
                if index and self.stream_interval:
                    await asyncio.sleep(self.stream_interval)
                await response.write(sse_event(chunk))
            await response.write(sse_event("[DONE]"))
            await response.write_eof()
            record.disconnected = False
        except ConnectionError:
            pass  # the client went away mid-stream, as clients do
        return response

    async def _list_models(self, request: web.Request, record: RecordedRequest) -> web.Response:
        return self._json({"object": "list", "data": [model_object(m) for m in self._known()]})

    async def _get_model(self, request: web.Request, record: RecordedRequest) -> web.Response:
        model = request.match_info["model"]
        if model not in self._known():
            message = f"The model '{model}' does not exist or you do not have access to it."
            return self._error(ApiError(404, message, code="model_not_found"))
        return self._json(model_object(model))

    async def _invalid_url(self, request: web.Request, record: RecordedRequest) -> web.Response:
        return self._error(ApiError(404, f"Invalid URL ({request.method} {request.path})"))

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

    def _injected_fault(self) -> Script | None:
        """The ``fail_every`` failure if this valid chat request is an ``n``-th one."""
        if not self._fault_every:
            return None
        self._fault_count += 1
        return self._fault if self._fault_count % self._fault_every == 0 else None

    def _next_call_id(self) -> str:
        return f"call_{next(self._call_ids)}"

    def _default_text(self, body: dict[str, Any]) -> str:
        if self.default_reply is not None:
            return self.default_reply(body)
        return f"echo: {last_user_text(body['messages'])}"

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

    @staticmethod
    def _headers(started: float | None = None) -> dict[str, str]:
        headers = {"x-request-id": request_id(), "openai-version": "2020-10-01"}
        if started is not None:
            headers["openai-processing-ms"] = str(int((time.monotonic() - started) * 1000))
        return headers

    def _json(self, payload: JSONDict, *, headers: dict[str, str] | None = None) -> web.Response:
        return web.Response(
            body=json.dumps(payload).encode(),
            content_type="application/json",
            headers=headers if headers is not None else self._headers(),
        )

    def _error(self, failure: ApiError) -> web.Response:
        headers = {**self._headers(), **failure.headers}
        return web.Response(
            status=failure.status,
            body=json.dumps(failure.body()).encode(),
            content_type="application/json",
            headers=headers,
        )


# ------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bot.testing.fake_llm``: serve until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="python -m bot.testing.fake_llm",
        description="Fake OpenAI-compatible chat server (echoes the last user message).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per completion")
    parser.add_argument("--context-window", type=int, default=128_000, metavar="N")
    parser.add_argument("--api-key", default=None, help="require this key (default: any)")
    parser.add_argument(
        "--ignore-max-tokens", action="store_true", help="answer in full, past max_tokens"
    )
    args = parser.parse_args(argv)
    fake = FakeLLM(
        model_context_window=args.context_window,
        api_key=args.api_key,
        latency=args.latency,
        ignore_max_tokens=args.ignore_max_tokens,
    )
    asyncio.run(_serve(fake, args.host, args.port))
    return 0


async def _serve(fake: FakeLLM, host: str, port: int) -> None:
    done = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await fake.start(host, port)
    try:
        sys.stdout.write(f"OPENAI_BASE_URL={fake.base_url}\n")
        sys.stdout.flush()
        await done.wait()
    finally:
        await fake.stop()


if __name__ == "__main__":
    raise SystemExit(main())
