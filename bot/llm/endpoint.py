"""One configured provider: its SDK client (made on first use), model, window and breaker; the
request body it is sent, fitted to its window."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from bot.config import EndpointSettings, safe_url
from bot.llm.breaker import CircuitBreaker
from bot.llm.cache_hints import cache_hint
from bot.llm.tokens import get_counter
from bot.llm.trim import trim_history
from bot.storage.coordination import SharedLimits
from bot.text import clean_json

__all__ = ["Endpoint"]

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
