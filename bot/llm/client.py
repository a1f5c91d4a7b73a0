"""The LLM client: any OpenAI-compatible endpoint through the real openai SDK, plus fallbacks.

Requests go through ``AsyncOpenAI.post("/chat/completions", ...)`` with a plain JSON body: the
SDK's transport, auth, typed parsing and exceptions, without ``chat.completions.create``'s
per-call parameter transformation (about 0.35 ms a message, bench/). Retries: bot.llm.retry.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletion

from bot.config import EndpointSettings, LLMSettings, safe_url
from bot.errors import ContextTooLongError, LLMBadRequestError, LLMError, LLMUnavailableError
from bot.llm.breaker import CircuitBreaker
from bot.llm.cache_hints import cache_hint, usage_of
from bot.llm.completion import Completion, StreamItem, TextDelta, ToolCall
from bot.llm.retry import RetryPolicy, Sleep, call_with_retry
from bot.llm.streaming import assemble_stream
from bot.llm.tokens import get_counter
from bot.llm.trim import trim_history
from bot.metrics import Metrics
from bot.storage.coordination import SharedLimits
from bot.text import clean_json

__all__ = ["Completion", "Endpoint", "LLMClient", "StreamItem", "TextDelta", "ToolCall"]

log = logging.getLogger(__name__)

_NO_KEY = "no-key-needed"  # the SDK insists on a key; local servers ignore it


class Endpoint:
    """One configured provider: its SDK client, model and limits.

    ``is_fallback``: requests are checked against this endpoint's own window before they are
    sent (the primary's prompts were already trimmed to its window by the caller)."""

    def __init__(
        self,
        settings: EndpointSettings,
        *,
        timeout: float,
        cooldown: float = 0.0,
        shared: SharedLimits | None = None,
        context_window: int = 128_000,
        max_output_tokens: int = 1024,
        is_fallback: bool = False,
    ) -> None:
        key = settings.api_key.get_secret_value() if settings.api_key else None
        self.model = settings.model
        self.context_window = context_window
        self.max_output_tokens = max_output_tokens
        self.is_fallback = is_fallback
        self.base_url = settings.effective_base_url
        self.name = f"{safe_url(self.base_url)} ({self.model})"
        self.breaker = CircuitBreaker(cooldown, self.name, shared=shared)
        self.uses_completion_tokens = "api.openai.com" in self.base_url
        self.sends_cache_key = settings.sends_cache_key
        self._hint_secret = key  # keys the prompt_cache_key hash (bot.llm.cache_hints)
        self._timeout = timeout
        self._client: openai.AsyncOpenAI | None = None

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client, made on first use: it costs a TLS context and tens of milliseconds
        that a start, and a bot nobody has written to yet, need not spend (issue 31)."""
        if self._client is None:  # aiohttp: half the CPU a request of httpx's (bench/)
            self._client = openai.AsyncOpenAI(
                api_key=self._hint_secret or _NO_KEY, base_url=self.base_url, max_retries=0,
                timeout=self._timeout,
                http_client=openai.DefaultAioHttpClient(timeout=self._timeout),
            )  # fmt: skip
        return self._client

    async def close(self) -> None:
        """Close the SDK client if one was made (a later request makes a new one)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        max_tokens: int,
        temperature: float | None,
        tools: Sequence[Mapping[str, Any]] | None,
        stream: bool,
        tool_choice: str | None = None,
        conversation_key: str | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model or self.model, "messages": list(messages)}
        # OpenAI's newer models want max_completion_tokens; most compatible servers know only
        # max_tokens.
        body["max_completion_tokens" if self.uses_completion_tokens else "max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if tools:
            body["tools"] = list(tools)
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if conversation_key is not None and self.sends_cache_key:
            body["prompt_cache_key"] = cache_hint(conversation_key, self._hint_secret)
        return body

    def fit(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        max_tokens: int,
    ) -> tuple[Sequence[Mapping[str, Any]], int]:
        """``(messages, max_tokens)`` this endpoint accepts. A fallback's reply is capped at its
        reserve and the messages re-trimmed to what is left of its window (whole turns go,
        oldest first; the system block and the newest turn stay), counted with its model's
        tokenizer; ``ContextTooLongError`` when even that does not fit."""
        if not self.is_fallback:
            return messages, max_tokens
        max_tokens = min(max_tokens, self.max_output_tokens)
        counter = get_counter(self.model)
        budget = self.context_window - max_tokens
        if tools:
            budget -= counter.count_text(json.dumps(list(tools)))
        if counter.count_messages(messages) <= budget:
            return messages, max_tokens
        fitted = trim_history(
            messages, max_tokens=max(0, budget), count_tokens=counter.count_messages
        )
        log.info("%s: request re-trimmed to its %d-token window", self.name, self.context_window)
        return fitted, max_tokens

    async def post(self, path: str, body: dict[str, Any], **sdk: Any) -> Any:
        """The SDK's ``post`` with bearer auth. A body with text that has no UTF-8 form (a lone
        surrogate that got past the adapters) fails while the SDK encodes it, before anything
        is sent: it is sent again with those replaced, so it costs nothing on every other call.
        """
        auth: Any = {"security": {"bearer_auth": True}}
        try:
            return await self.client.post(path, body=body, options=auth, **sdk)
        except UnicodeEncodeError:
            log.warning("%s: request had lone surrogates; sending them as U+FFFD", self.name)
            return await self.client.post(path, body=clean_json(body), options=auth, **sdk)


class LLMClient:
    """Primary endpoint plus ordered fallbacks, each behind the one retry layer.

    ``shared``: where replicas share the endpoints' circuit breakers (None: in this process).
    ``metrics``: where each request's latency, tokens and failure kind are counted."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        sleep: Sleep | None = None,
        shared: SharedLimits | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.policy = RetryPolicy(**settings.retry.model_dump())
        timeout, cooldown = settings.timeout, settings.circuit_breaker
        self.endpoints = [
            Endpoint(
                each,
                timeout=timeout,
                cooldown=cooldown,
                shared=shared,
                context_window=settings.limits_of(each)[0],
                max_output_tokens=settings.limits_of(each)[1],
                is_fallback=index > 0,
            )
            for index, each in enumerate((settings, *settings.fallbacks))
        ]
        self._sleep: Sleep = asyncio.sleep if sleep is None else sleep

    @property
    def model(self) -> str:
        return self.endpoints[0].model

    @property
    def sleep(self) -> Sleep:
        """How the retry layer waits (tests pass one that does not sleep for real)."""
        return self._sleep

    async def close(self) -> None:
        for endpoint in self.endpoints:
            await endpoint.close()

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
        tool_choice: str | None = None,
        conversation_key: str | None = None,
        model: str | None = None,
    ) -> Completion:
        """``tool_choice="none"``: the tools stay declared (the history has tool calls; some
        gateways reject that without ``tools``) but the model must answer in text.
        ``conversation_key``: whose prompt this is, hashed into ``prompt_cache_key`` where the
        endpoint takes one (``llm.prompt_cache_key``). ``model``: asked of the primary endpoint
        instead of its own (a chat's preset); fallbacks keep theirs."""
        started = asyncio.get_running_loop().time()
        try:
            endpoint, result = await self._send(
                messages,
                tools,
                max_tokens,
                stream=False,
                tool_choice=tool_choice,
                conversation_key=conversation_key,
                model=model,
            )
            completion = _completion(result, endpoint)
        except LLMError as exc:
            self._failed(exc)
            raise
        self._answered(
            (None if endpoint.is_fallback else model) or endpoint.model, started, completion
        )
        return completion

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_tokens: int | None = None,
        tool_choice: str | None = None,
        conversation_key: str | None = None,
        model: str | None = None,
    ) -> AsyncGenerator[StreamItem, None]:
        """Yield text deltas, then one final :class:`Completion` (tool calls assembled)."""
        started = asyncio.get_running_loop().time()
        try:
            endpoint, chunks = await self._send(
                messages,
                tools,
                max_tokens,
                stream=True,
                tool_choice=tool_choice,
                conversation_key=conversation_key,
                model=model,
            )
        except LLMError as exc:
            self._failed(exc)
            raise
        asked = (None if endpoint.is_fallback else model) or endpoint.model
        self._answered(asked, started, None)  # the latency to an open stream
        try:
            async for item in assemble_stream(
                chunks,
                endpoint=endpoint.name,
                model=asked,
                from_fallback=endpoint.is_fallback,
            ):
                if isinstance(item, Completion) and self.metrics is not None:
                    self.metrics.tokens(item.usage)
                yield item
        except LLMError as exc:
            self._failed(exc)
            await endpoint.breaker.judge(exc)  # it opened the stream, then broke off
            raise

    def _answered(self, model: str, started: float, completion: Completion | None) -> None:
        if self.metrics is not None:
            self.metrics.llm_call(model, asyncio.get_running_loop().time() - started)
            if completion is not None:
                self.metrics.tokens(completion.usage)

    def _failed(self, exc: LLMError) -> None:
        if self.metrics is not None:
            self.metrics.llm_error(exc)

    async def _send(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        max_tokens: int | None,
        *,
        stream: bool,
        tool_choice: str | None = None,
        conversation_key: str | None = None,
        model: str | None = None,
    ) -> tuple[Endpoint, Any]:
        """POST to the first endpoint that answers, each behind the retry layer, within
        ``llm.deadline`` for all of them together (each gets an even share of what is left, so
        a hanging primary leaves time for the fallbacks). Endpoints known to be down are
        skipped (``llm.circuit_breaker``); with none left the caller is told at once."""
        loop = asyncio.get_running_loop()
        end = loop.time() + self.settings.deadline
        for each in self.endpoints:
            await each.breaker.refresh()  # what other replicas saw, once per request
        candidates = [e for e in self.endpoints if e.breaker.admits()]
        if not candidates:
            raise LLMUnavailableError("every LLM endpoint is down; failing fast")
        last: LLMError | ContextTooLongError | None = None
        for index, endpoint in enumerate(candidates):
            share = max(0.0, end - loop.time()) / (len(candidates) - index)
            try:
                sent, reply_tokens = endpoint.fit(
                    messages, tools, max_tokens or self.settings.max_output_tokens
                )
            except ContextTooLongError as exc:  # it would refuse it: never send it
                log.warning(
                    "%s: the request does not fit its window; skipped: %s", endpoint.name, exc
                )
                last = last if isinstance(last, LLMError) else exc
                continue
            body = endpoint.body(
                sent,
                max_tokens=reply_tokens,
                temperature=self.settings.temperature,
                tools=tools,
                stream=stream,
                tool_choice=tool_choice,
                conversation_key=conversation_key,
                model=None if endpoint.is_fallback else model,
            )

            async def call(endpoint: Endpoint = endpoint, body: dict[str, Any] = body) -> Any:
                if not stream:
                    return await endpoint.post("/chat/completions", body, cast_to=ChatCompletion)
                # Chunks stay the JSON dicts they arrive as: the SDK's typed chunk models cost
                # about 600 Python calls per chunk, two thirds of a streamed turn (bench/floor).
                return await endpoint.post(
                    "/chat/completions",
                    body,
                    cast_to=object,
                    stream=True,
                    stream_cls=AsyncStream[object],
                )

            try:
                with endpoint.breaker.attempt():  # raises at once if another call probes it
                    try:
                        async with asyncio.timeout(share):
                            result = await call_with_retry(
                                call, self.policy, endpoint=endpoint.name, sleep=self._sleep
                            )
                    except TimeoutError:
                        await endpoint.breaker.failed()
                        raise LLMUnavailableError(
                            f"{endpoint.name}: no answer within its {share:.1f}s of "
                            f"llm.deadline={self.settings.deadline:g}s"
                        ) from None
                    except LLMError as exc:
                        await endpoint.breaker.judge(exc)  # only the provider's failures open it
                        raise
                    await endpoint.breaker.succeeded()
                    return endpoint, result
            except LLMBadRequestError:
                raise  # the request itself is wrong; another provider won't fix it
            except LLMError as exc:
                last = exc
                log.warning("LLM endpoint failed, trying the next one if any: %s", exc)
        assert last is not None
        raise last

    async def check_available(self) -> None:
        """Raise ``LLMUnavailableError`` at once when every endpoint is known to be down (by
        any replica). Shared state: a closed breaker's read at most once a second, an open
        one's on every call (a probe another replica saw answer closes it here at once)."""
        for each in self.endpoints:
            await each.breaker.refresh(force=not each.breaker.admits())
        if not any(e.breaker.admits() for e in self.endpoints):
            raise LLMUnavailableError("every LLM endpoint is down; failing fast")


def _completion(result: ChatCompletion, endpoint: Endpoint) -> Completion:
    if not result.choices:
        raise LLMUnavailableError("the provider returned no choices")
    choice = result.choices[0]
    calls = tuple(
        ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
        for c in (choice.message.tool_calls or ())
        if c.type == "function"
    )
    usage = usage_of(result.usage) if result.usage else None
    return Completion(
        text=choice.message.content or "",
        tool_calls=calls,
        finish_reason=choice.finish_reason or "stop",
        usage=usage,
        model=result.model or endpoint.model,
        from_fallback=endpoint.is_fallback,
    )
