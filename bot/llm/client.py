"""The LLM client: any OpenAI-compatible endpoint through the real openai SDK, plus fallbacks.

Requests go through ``AsyncOpenAI.post("/chat/completions", ...)`` with a plain JSON body: the
SDK's transport, auth, typed parsing and exceptions, without ``chat.completions.create``'s
per-call parameter transformation (about 0.35 ms a message, bench/). Retries: bot.llm.retry.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from typing import Any

from openai import AsyncStream
from openai.types.chat import ChatCompletion

from bot.config import LLMSettings
from bot.errors import ContextTooLongError, LLMBadRequestError, LLMError, LLMUnavailableError
from bot.llm.breaker import CircuitBreaker
from bot.llm.cache_hints import usage_of
from bot.llm.completion import Completion, StreamItem, TextDelta, ToolCall
from bot.llm.endpoint import Endpoint
from bot.llm.retry import RetryPolicy, Sleep, call_with_retry
from bot.llm.streaming import assemble_stream
from bot.metrics import Metrics
from bot.storage.coordination import SharedLimits

__all__ = ["Completion", "Endpoint", "LLMClient", "StreamItem", "TextDelta", "ToolCall"]

log = logging.getLogger(__name__)


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

    def check_available(self) -> Awaitable[None] | None:
        """To await: raises ``LLMUnavailableError`` at once when every endpoint is known to be
        down (by any replica); None when this process knows, without a read, that one is up.
        Shared state: a closed breaker's read at most once a second, an open one's on every
        call (a probe another replica saw answer closes it here at once)."""
        breakers = [each.breaker for each in self.endpoints]
        if all(b.current(force=not b.admits()) for b in breakers) and any(
            b.admits() for b in breakers
        ):
            return None
        return self._checked(breakers)

    async def _checked(self, breakers: list[CircuitBreaker]) -> None:
        for each in breakers:
            await each.refresh(force=not each.admits())
        if not any(b.admits() for b in breakers):
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
