"""Chunks' vectors, made in the background: at start (what was added while embeddings were off,
or under another model) and after each document a chat or the API adds, so an upload's reply
never waits on an embedding endpoint. One run at a time; asked again while running, it runs
once more. A failing endpoint leaves the rest for the next run: full-text search still finds
every chunk meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from bot.errors import LLMError, StoreError
from bot.llm.embeddings import TextEmbedder
from bot.storage.knowledge import KnowledgeVectors

__all__ = ["ChunkEmbedding"]

log = logging.getLogger(__name__)


class ChunkEmbedding:
    def __init__(self, store: KnowledgeVectors, embedder: TextEmbedder, batch: int = 64) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = batch
        self._task: asyncio.Task[None] | None = None
        self._again = False

    async def fill(self, on_rows: Callable[[int], None] | None = None) -> int:
        """Embed every chunk without a vector of the current model; returns how many. Raises
        the endpoint's ``LLMError`` (what was filled until then stays)."""
        model, after, filled = self.embedder.model, 0, 0
        while True:
            rows = await self.store.unembedded_chunks(model, after, self.batch)
            if not rows:
                return filled
            pairs = await self._embedded(rows)
            await self.store.put_chunk_vectors(model, pairs)
            filled += len(pairs)
            after = rows[-1][0]
            if on_rows is not None:
                on_rows(len(rows))

    async def _embedded(self, rows: list[tuple[int, str]]) -> list[tuple[int, list[float]]]:
        """Vectors for a batch; when the endpoint refuses the batch, one text at a time, so a
        chunk it will never take (too long for the model) does not hold back those after it.
        Raises when not one of them could be embedded (the endpoint is down)."""
        try:
            vectors = await self.embedder.embed([text for _, text in rows], role="passage")
            return [(i, v) for (i, _), v in zip(rows, vectors, strict=True)]
        except LLMError:
            if len(rows) == 1:
                raise
        pairs: list[tuple[int, list[float]]] = []
        failed: LLMError | None = None
        for chunk_id, text in rows:
            try:
                [vector] = await self.embedder.embed([text], role="passage")
            except LLMError as exc:
                log.warning("knowledge chunk %d not embedded (full-text only): %s", chunk_id, exc)
                failed = exc
                continue
            pairs.append((chunk_id, vector))
        if not pairs and failed is not None:
            raise failed
        return pairs

    def later(self) -> None:
        """Fill in the background (now, or again once the running fill ends)."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            self._again = False
            try:
                filled = await self.fill()
            except (LLMError, StoreError) as exc:
                log.warning("knowledge chunks not embedded yet (full-text only): %s", exc)
                return
            if filled:
                log.info("knowledge chunks embedded: %d", filled)
            if not self._again:
                return

    async def idle(self) -> None:
        """Wait for the background fill (tests, and the CLI before it exits)."""
        while self._task is not None and not self._task.done():
            await asyncio.gather(self._task, return_exceptions=True)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
