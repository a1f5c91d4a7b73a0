"""Per-chat barriers: while a chat's migration or admin lookup runs, that chat's later
messages wait for it, so "/clear" then "@bot ..." stays in that order.

A barrier is registered before the first await (``async with`` enters without suspending), so
a message that arrived later but runs concurrently always finds it; ``wait`` returns at once
(without suspending) when the chat has none, which keeps arrival order for everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class ChatBarriers:
    def __init__(self) -> None:
        self._barriers: dict[int, asyncio.Future[None]] = {}

    async def wait(self, chat_id: int) -> None:
        """Wait for the barrier ``chat_id`` has now, if any."""
        waiting = self._barriers.get(chat_id)
        if waiting is not None:
            await asyncio.shield(waiting)

    @contextlib.asynccontextmanager
    async def hold(self, chat_id: int) -> AsyncIterator[None]:
        """Messages of ``chat_id`` that arrive while the body runs wait until it is done."""
        previous = self._barriers.get(chat_id)
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._barriers[chat_id] = mine
        try:
            if previous is not None:
                await asyncio.shield(previous)
            yield
        finally:
            mine.set_result(None)
            if self._barriers.get(chat_id) is mine:
                del self._barriers[chat_id]
