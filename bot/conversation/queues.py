"""Where a message waits: its conversation's lock (arrival order) and an LLM call slot.

Both waits are what a user feels as "the bot is slow" before the model even starts, so each is
timed into ``parlour_queue_wait_seconds`` (:mod:`bot.metrics`) under ``conversation`` and
``llm_slot``.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from types import TracebackType

from bot.conversation.admission import LLMSlots
from bot.conversation.locks import KeyedLocks
from bot.metrics import Metrics

__all__ = ["Queues"]


class Queues:
    def __init__(self, locks: KeyedLocks, slots: LLMSlots, metrics: Metrics | None) -> None:
        self.locks = locks
        self._slots = slots
        self._metrics = metrics

    def conversation(self, key: str) -> AbstractAsyncContextManager[None]:
        """The conversation's lock: one turn at a time, in the order they arrived."""
        return _Timed(self, "conversation", self.locks.hold(key))

    def llm_slot(self) -> AbstractAsyncContextManager[None]:
        """An LLM slot (``limits.max_concurrent_llm_calls``)."""
        return _Timed(self, "llm_slot", self._slots.slot())

    def _waited(self, queue: str, started: float) -> None:
        if self._metrics is not None:
            self._metrics.queue_wait(queue, asyncio.get_running_loop().time() - started)


class _Timed:
    """``inner`` entered, the wait timed (a class, not a generator: every message takes two)."""

    __slots__ = ("_inner", "_queue", "_queues")

    def __init__(
        self, queues: Queues, queue: str, inner: AbstractAsyncContextManager[None]
    ) -> None:
        self._queues, self._queue, self._inner = queues, queue, inner

    async def __aenter__(self) -> None:
        started = asyncio.get_running_loop().time()
        await self._inner.__aenter__()
        self._queues._waited(self._queue, started)

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(kind, exc, tb)
