"""Where a message waits: its conversation's lock (arrival order) and an LLM call slot.

Both waits are what a user feels as "the bot is slow" before the model even starts, so each is
timed into ``parlour_queue_wait_seconds`` (:mod:`bot.metrics`) under ``conversation`` and
``llm_slot``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.conversation.admission import LLMSlots
from bot.conversation.locks import KeyedLocks
from bot.metrics import Metrics

__all__ = ["Queues"]


class Queues:
    def __init__(self, locks: KeyedLocks, slots: LLMSlots, metrics: Metrics | None) -> None:
        self.locks = locks
        self._slots = slots
        self._metrics = metrics

    @asynccontextmanager
    async def conversation(self, key: str) -> AsyncIterator[None]:
        """The conversation's lock: one turn at a time, in the order they arrived."""
        started = asyncio.get_running_loop().time()
        async with self.locks.hold(key):
            self._waited("conversation", started)
            yield

    @asynccontextmanager
    async def llm_slot(self) -> AsyncIterator[None]:
        """An LLM slot (``limits.max_concurrent_llm_calls``)."""
        started = asyncio.get_running_loop().time()
        async with self._slots.slot():
            self._waited("llm_slot", started)
            yield

    def _waited(self, queue: str, started: float) -> None:
        if self._metrics is not None:
            self._metrics.queue_wait(queue, asyncio.get_running_loop().time() - started)
