"""Admission: whether a message (or a command) gets an answer, checked before anything is spent.

In order: access, then the user's message rate (first, so that a flood of anything, too long or
over budget, meets the rate and is told once), the text itself (not empty, not too long), one
request in flight per user per conversation, then in the conversation's lock the daily budgets.
A chat without access is told once a day ("ignored politely"), a spent budget once in ten
minutes per user and reason, never with every message. Each model call then waits for one of
``limits.max_concurrent_llm_calls`` (:class:`LLMSlots`).

The rules themselves live in ``bot.guardrails``; this module applies them to a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager

from bot.config import LimitSettings, Settings
from bot.context import ChatContext
from bot.errors import UserFacingError
from bot.guardrails.access import AccessDeniedError, AccessPolicy
from bot.guardrails.admins import AdminPolicy
from bot.guardrails.budgets import Budgets, BudgetSpentError
from bot.guardrails.rate_limit import InFlight, MessageRateLimiter, Once
from bot.guardrails.sanitise import clean_text
from bot.history.store import HistoryStore

__all__ = ["Admission", "LLMSlots", "input_limit", "rate_key"]


class Admission:
    def __init__(self, settings: Settings, store: HistoryStore, admins: AdminPolicy) -> None:
        limits = settings.limits
        self.access = AccessPolicy(settings, admins)
        self.budgets = Budgets(limits, store, self.access)
        self.max_input_chars = input_limit(settings)
        self._rate = MessageRateLimiter(limits.messages_per_minute, limits.burst)
        self._in_flight = InFlight(limits.one_in_flight)
        self._refused_chats = Once(every=86400)
        self._told_spent = Once(every=600)

    def admit(self, ctx: ChatContext) -> None:
        """Access, then the message rate; raises ``AccessDeniedError`` or ``RateLimitedError``."""
        try:
            self.access.check(ctx)
        except AccessDeniedError as exc:
            exc.notify = self._refused_chats.first(ctx.chat_key)
            raise
        if not self.access.exempt(ctx):
            self._rate.take(rate_key(ctx))

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

    def in_flight(self, ctx: ChatContext, key: str) -> AbstractContextManager[None]:
        """One request in flight per user per conversation (admins are exempt); entering it
        raises ``StillAnsweringError`` while another is."""
        if self.access.exempt(ctx):
            return contextlib.nullcontext()
        return self._in_flight.hold(f"{key}|{ctx.user_id}")

    async def check_budgets(self, ctx: ChatContext) -> None:
        """In the conversation's lock, so the turn before has counted its own tokens."""
        try:
            await self.budgets.check(ctx)
        except BudgetSpentError as exc:  # said once in a while, not to every message
            exc.notify = self._told_spent.first(f"{rate_key(ctx)}|{exc.chat_text}")
            raise


class LLMSlots:
    """At most ``limits.max_concurrent_llm_calls`` model calls at once (none: no cap); a call
    that waits longer than ``limits.queue_timeout`` for one is told to try again."""

    def __init__(self, limits: LimitSettings) -> None:
        cap = limits.max_concurrent_llm_calls
        self._slots = asyncio.Semaphore(cap) if cap else None
        self._timeout = limits.queue_timeout

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        slots = self._slots
        if slots is None:
            yield
            return
        try:
            await asyncio.wait_for(slots.acquire(), self._timeout)
        except TimeoutError:
            raise UserFacingError(
                "LLM queue wait over limits.queue_timeout",
                chat_text="I'm answering a lot of people right now; please try again in a minute.",
            ) from None
        try:
            yield
        finally:
            slots.release()


def input_limit(settings: Settings) -> int:
    """The longest message answered or overheard, in characters."""
    return settings.limits.max_input_chars or settings.chat.max_input_chars


def rate_key(ctx: ChatContext) -> str:
    """The message rate is per user per chat: topics, threads (a Discord thread counts as its
    channel) and scope changes share it."""
    parent = dict(ctx.extra).get("parent") if ctx.extra else None
    chat = f"{ctx.platform}:{parent}" if parent else ctx.chat_key
    return f"{chat}|{ctx.user_id}"
