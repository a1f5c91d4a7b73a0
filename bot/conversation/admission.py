"""Admission: whether a message (or a command) gets an answer, checked before anything is spent.

In order: access, then the user's message rate (first, so that a flood of anything, too long or
over budget, meets the rate and is told once), the text itself (not empty, not too long), one
request in flight per user per conversation (``limits.max_queued`` more may wait behind it), then
in the conversation's lock the daily budgets.
A chat without access is told once a day ("ignored politely"), a spent budget once in ten
minutes per user and reason, never with every message. Each model call then waits for one of
``limits.max_concurrent_llm_calls`` (:class:`LLMSlots`).

The rules themselves live in ``bot.guardrails``; this module applies them to a turn. With
replicas (``store.replicas``) the rate, the flights and the budgets are read from the database
every time (:mod:`bot.guardrails.shared_limits`); those checks await, so each message holds its
place in its conversation's line meanwhile (:mod:`bot.conversation.arrivals`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import TracebackType

from bot.config import LimitSettings, Settings
from bot.context import ChatContext
from bot.conversation.arrivals import ArrivalOrder
from bot.conversation.presets import ChatPresets
from bot.conversation.store import HistoryStore
from bot.errors import UserFacingError
from bot.guardrails.access import AccessDeniedError, AccessPolicy
from bot.guardrails.admins import AdminPolicy
from bot.guardrails.budgets import REREAD, Budgets, BudgetSpentError
from bot.guardrails.rate_limit import InFlight, MessageRateLimiter, Once, Place
from bot.guardrails.shared_limits import (
    FLIGHT_MARGIN,
    LocalUserLimits,
    SharedUserLimits,
    UserLimits,
)
from bot.storage.coordination import SharedLimits
from bot.text import clean_text

__all__ = ["Admission", "Admitted", "LLMSlots", "input_limit", "rate_key"]


class Admission:
    """``shared``: the database's limits, when replicas share it (None: this process's memory)."""

    def __init__(
        self,
        settings: Settings,
        store: HistoryStore,
        admins: AdminPolicy,
        *,
        shared: SharedLimits | None = None,
        presets: ChatPresets | None = None,
    ) -> None:
        limits = settings.limits
        self.access = AccessPolicy(settings, admins)
        # Other replicas book tokens too: a figure this process remembers would miss theirs.
        self.budgets = Budgets(  # a chats: preset may give a chat (a bot) budgets of its own
            limits,
            store,
            self.access,
            reread=REREAD if shared is None else 0,
            overrides=presets.budgets if presets is not None else None,
        )
        self.max_input_chars = input_limit(settings)
        self.user_limits: UserLimits
        if shared is None:
            self.user_limits = LocalUserLimits(
                MessageRateLimiter(limits.messages_per_minute, limits.burst),
                InFlight(limits.one_in_flight, limits.max_queued),
            )
        else:
            self.user_limits = SharedUserLimits(
                shared,
                limits.messages_per_minute,
                limits.burst,
                one_in_flight=limits.one_in_flight,
                flight_seconds=settings.llm.deadline + FLIGHT_MARGIN,
                max_queued=limits.max_queued,
            )
        self._arrivals = ArrivalOrder()
        self._refused_chats = Once(every=86400)
        self._told_spent = Once(every=600)

    async def admit(self, ctx: ChatContext) -> None:
        """Access, then the message rate; raises ``AccessDeniedError`` or ``RateLimitedError``."""
        try:
            self.access.check(ctx)
        except AccessDeniedError as exc:
            exc.notify = self._refused_chats.first(ctx.chat_key)
            raise
        if not self.access.exempt(ctx):
            await self.user_limits.take(rate_key(ctx))

    @contextlib.asynccontextmanager
    async def admitted(
        self,
        ctx: ChatContext,
        key: str,
        text: str,
        *,
        attachments: bool = False,
        joins_burst: bool = False,
    ) -> AsyncIterator[Admitted]:
        """A message to conversation ``key`` through access, rate, text and one in flight, in
        arrival order; yields the text to answer and its place while the request counts as in
        flight.

        Enter the conversation's lock right inside it, with no await in between: that keeps the
        messages of one conversation in the order they arrived. ``attachments``: the message
        has some, so its text may be empty. ``joins_burst``: its sender's burst is being
        gathered, with room for it: it takes no place (it will be answered with that turn).
        """
        ticket = self._arrivals.join(key)  # no await before: this is its place in line
        async with contextlib.AsyncExitStack() as flight:
            place = Place(None)
            try:
                await self.admit(ctx)  # first: a flood of anything meets the rate
                text = self.message_text(text) if text.strip() or not attachments else ""
                if not self.access.exempt(ctx) and not joins_burst:  # admins: exempt
                    hold = self.user_limits.hold(f"{key}|{ctx.user_id}")
                    place = await flight.enter_async_context(hold)
                await ticket.turn()
            finally:
                ticket.leave()  # passed or refused: out of the line either way
            yield Admitted(text, place)

    async def arrive(self, key: str) -> None:
        """Wait for the messages of ``key`` that arrived earlier to pass :meth:`admitted`."""
        ticket = self._arrivals.join(key)
        try:
            await ticket.turn()
        finally:
            ticket.leave()

    def message_text(self, text: str) -> str:
        """The message to answer, cleaned; a ``UserFacingError`` if empty or too long."""
        text = clean_text(text.strip())  # adapters clean it; a plugin's adapter may not
        if not text:
            raise UserFacingError("empty message", chat_text="Send me some text to answer.")
        limit = self.max_input_chars
        if len(text) > limit:
            raise UserFacingError(
                f"message of {len(text)} characters over the limit",
                chat_text=f"That message is too long ({len(text)} characters; the limit is "
                f"{limit}). Please send something shorter.",
            )
        return text

    async def check_budgets(self, ctx: ChatContext) -> None:
        """In the conversation's lock, so the turn before has counted its own tokens."""
        try:
            await self.budgets.check(ctx)
        except BudgetSpentError as exc:  # said once in a while, not to every message
            exc.notify = self._told_spent.first(f"{rate_key(ctx)}|{exc.chat_text}")
            raise


@dataclass(frozen=True, slots=True)
class Admitted:
    """A message let through: the text to answer, and its place among its sender's requests
    in flight (a burst gives it back early when it takes the message into another's turn)."""

    text: str
    place: Place


class LLMSlots:
    """At most ``limits.max_concurrent_llm_calls`` model calls at once (none: no cap); a call
    that waits longer than ``limits.queue_timeout`` for one is told to try again."""

    def __init__(self, limits: LimitSettings) -> None:
        cap = limits.max_concurrent_llm_calls
        self._slots = asyncio.Semaphore(cap) if cap else None
        self._timeout = limits.queue_timeout

    def slot(self) -> AbstractAsyncContextManager[None]:
        return _Slot(self._slots, self._timeout)


class _Slot:
    """One model call's slot (a class, not a generator: every message takes one)."""

    __slots__ = ("_slots", "_timeout")

    def __init__(self, slots: asyncio.Semaphore | None, timeout: float) -> None:
        self._slots, self._timeout = slots, timeout

    async def __aenter__(self) -> None:
        slots = self._slots
        if slots is None:
            return
        if not slots.locked():  # free: taken at once, without a timer
            await slots.acquire()
            return
        try:
            await asyncio.wait_for(slots.acquire(), self._timeout)
        except TimeoutError:
            raise UserFacingError(
                "LLM queue wait over limits.queue_timeout",
                chat_text="I'm answering a lot of people right now; please try again in a minute.",
            ) from None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._slots is not None:
            self._slots.release()


def input_limit(settings: Settings) -> int:
    """The longest message answered or overheard, in characters."""
    return settings.limits.max_input_chars or settings.chat.max_input_chars


def rate_key(ctx: ChatContext) -> str:
    """The message rate is per user per chat: topics, threads (a Discord thread counts as its
    channel) and scope changes share it."""
    parent = dict(ctx.extra).get("parent") if ctx.extra else None
    chat = f"{ctx.platform}:{parent}" if parent else ctx.chat_key
    return f"{chat}|{ctx.user_id}"
