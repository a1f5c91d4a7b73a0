"""A turn on its way to the store: the user's message first, then the answer or the failure.

The user's message is written while the request is on its way: the write takes well under a
millisecond, the model at least tens of them (bench/). The answer completes the turn; a failure
(the model's, a cancellation, anything) marks it *unanswered*, once its user message is stored.
Either way the tokens the rounds that did run were billed are booked on the usage ledger.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bot.context import ChatContext
from bot.conversation.store import HistoryStore
from bot.guardrails.budgets import Budgets
from bot.values import BurstMessage, NewTurn, Overheard, Usage

log = logging.getLogger(__name__)

__all__ = ["PendingTurn"]


class PendingTurn:
    __slots__ = ("_begin", "budgets", "ctx", "key", "store")

    def __init__(
        self,
        store: HistoryStore,
        budgets: Budgets,
        ctx: ChatContext,
        key: str,
        text: str,
        overheard: Sequence[Overheard] = (),
        *,
        burst: tuple[BurstMessage, ...] = (),
    ) -> None:
        """Start writing ``text``, the user's message in conversation ``key``, with the
        ``overheard`` messages that were its context and the sender's ``burst`` messages
        before it that it answers too."""
        self.store = store
        self.budgets = budgets
        self.ctx = ctx
        self.key = key
        ids = tuple(o.overheard_id for o in overheard)
        turn = NewTurn(
            key, ctx.chat_key, ctx.user_id, ctx.user_name, text, ctx.message_id, ids, burst
        )
        self._begin = asyncio.ensure_future(_after_a_step(store.begin_turn(turn)))

    def when_stored(self, told: Callable[[bool], object]) -> None:
        """``told(True)`` once the user's message (and the burst before it) is stored,
        ``told(False)`` if that write failed: what waits on it (a held message the inbox
        may finish) waits for the database, not for the write's start."""

        def done(begin: asyncio.Future[int]) -> None:
            told(not begin.cancelled() and begin.exception() is None)

        self._begin.add_done_callback(done)

    async def complete(self, answer: list[dict[str, Any]], usage: Usage, model: str) -> int:
        """Store the answer with the turn's usage; returns the turn's id."""
        turn_id = await asyncio.shield(self._begin)
        with self.budgets.booking(self.ctx, usage):
            await self.store.complete_turn(turn_id, answer, usage, model)
        return turn_id

    async def fail(self, exc: BaseException, usage: Usage) -> None:
        """Mark the turn unanswered (even when cancelled); never raises for the store."""
        with self.budgets.booking(self.ctx, usage):
            try:
                turn_id = await asyncio.shield(self._begin)
                await asyncio.shield(self.store.fail_turn(turn_id, type(exc).__name__, usage))
            except BaseException:  # the store itself failed, or we are cancelled again
                log.exception("could not record the failed turn conv=%s", self.key)
                return
            log.warning("turn failed conv=%s turn=%d error=%s", self.key, turn_id, exc)


async def _after_a_step(write: Awaitable[int]) -> int:
    """``write``, one loop step on: the model request, whose task starts in this step, goes
    out first (a statement run on the loop's own thread would otherwise hold it up)."""
    await asyncio.sleep(0)
    return await write
