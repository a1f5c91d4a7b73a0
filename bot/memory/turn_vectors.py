"""Vectors for old messages, filled in the background so recall can find them by meaning.

With ``memory.embeddings`` on, every turn's user message gets a unit vector
(``turn_vectors``), which :meth:`bot.memory.store.MemoryStore.search_turns` fuses with
full-text relevance. Nobody waits for these vectors: recall asks for them
(:meth:`TurnVectorFiller.schedule`) and a task per conversation fills the turns that have none,
newest first (the ones recall reaches first), a batch at a time. With a symmetric model most
cost nothing: a turn's message was its own recall's query, whose vector the store remembers
(:meth:`~bot.memory.store.MemoryStore.query_vector`), so only a message whose query vector was
lost (a restart, a failed embedding, history from before embeddings were on) is embedded again.
An asymmetric model (E5: ``query:`` / ``passage:``) embeds every message once more, as a
passage: a question's vector is not the vector of the same words stored to be found.
A failing endpoint stops the task; the next recall starts another. After a pass, later passes of
the conversation look only at turns above the newest one it filled; a turn another replica
commits out of id order may be left without a vector until the next start (it is still found
by its words).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, MutableMapping, Sequence

from cachetools import LRUCache

from bot.errors import LLMError, StoreError
from bot.llm.embeddings import TextEmbedder
from bot.storage.memories import MemoryVectors

__all__ = ["FILL_BATCH", "MAX_FILLED", "TurnVectorFiller"]

log = logging.getLogger(__name__)

FILL_BATCH = 64  # turns looked up (and at most embedded) per round
MAX_FILLED = 5000  # per task: the newest vectors a search scores (store.MAX_VECTOR_CANDIDATES)
WATERMARKS_KEPT = 10_000  # conversations whose filled-up-to turn is remembered


class TurnVectorFiller:
    """One background task per conversation that gives its turns their vectors."""

    def __init__(
        self,
        store: MemoryVectors,
        embedder: TextEmbedder | None,
        known: MutableMapping[str, Sequence[float]],
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.known = known  # text -> vector of recent queries (the store's cache)
        self._tasks: dict[str, asyncio.Task[int]] = {}
        self._again: set[str] = set()
        # conversation -> the newest turn a finished pass gave a vector: later passes look only
        # above it (an index range), not through the whole conversation again
        self._done: LRUCache[str, int] = LRUCache(WATERMARKS_KEPT)

    def schedule(self, conversation_key: str) -> None:
        """Fill the conversation's missing vectors soon; a running task goes round once more."""
        if self.embedder is None:
            return
        if conversation_key in self._tasks:
            self._again.add(conversation_key)
            return
        task = asyncio.ensure_future(self._run(conversation_key))
        self._tasks[conversation_key] = task
        task.add_done_callback(lambda _: self._tasks.pop(conversation_key, None))

    async def fill_now(
        self, conversation_key: str, on_rows: Callable[[int], None] | None = None
    ) -> int:
        """:meth:`fill` as the conversation's one task (after any running one), so a recall
        meanwhile does not start a second; ``on_rows`` is told each batch's size."""
        running = self._tasks.get(conversation_key)
        if running is not None:
            await asyncio.gather(running, return_exceptions=True)
        task = asyncio.ensure_future(self.fill(conversation_key, on_rows))
        self._tasks[conversation_key] = task
        task.add_done_callback(lambda _: self._tasks.pop(conversation_key, None))
        return await task

    async def fill(
        self, conversation_key: str, on_rows: Callable[[int], None] | None = None
    ) -> int:
        """Give the conversation's turns (after its last reset) a vector of the current model,
        newest first, up to :data:`MAX_FILLED`; returns how many. Raises the endpoint's
        ``LLMError`` (what was filled until then stays)."""
        if self.embedder is None:
            return 0
        model, filled = self.embedder.model, 0
        after = self._done.get(conversation_key, 0)
        newest = after
        while filled < MAX_FILLED:
            rows = await self.store.unembedded_turns(
                conversation_key, model, after_turn_id=after, limit=FILL_BATCH
            )
            if not rows:
                break
            newest = max(newest, rows[0][0])
            reuse = not self.embedder.settings.asymmetric
            vectors: dict[int, Sequence[float]] = {
                i: self.known[text] for i, text in rows if reuse and text in self.known
            }
            missing = [(i, text) for i, text in rows if i not in vectors]
            if missing:
                made = await self.embedder.embed([text for _, text in missing], role="passage")
                vectors.update((i, v) for (i, _), v in zip(missing, made, strict=True))
            await self.store.put_turn_vectors(model, list(vectors.items()))
            filled += len(rows)
            if on_rows is not None:
                on_rows(len(rows))
            if len(rows) < FILL_BATCH:
                break
        self._done[conversation_key] = newest
        return filled

    async def _run(self, conversation_key: str) -> int:
        filled = 0
        while True:
            self._again.discard(conversation_key)
            try:
                filled += await self.fill(conversation_key)
            except (LLMError, StoreError) as exc:
                log.warning(
                    "old messages not embedded this time conv=%s: %r", conversation_key, exc
                )
                return filled
            if conversation_key not in self._again:
                return filled

    async def wait(self) -> None:
        """Until every scheduled task is done (tests and benchmarks; the bot never waits)."""
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def aclose(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
