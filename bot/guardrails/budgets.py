"""Daily token budgets: per user (every chat together), per chat, and for the whole bot.

The usage ledger (:class:`bot.storage.usage.UsageLedger`) is the truth. Reading it before every
turn would cost three queries, so what was spent today is read once per key and then kept
current in memory as this process's turns complete; a re-read every ``REREAD`` seconds, made
beside the turn that finds the figure old (never before it), picks up other processes sharing
the database (the console next to the bot). The whole bot's figure is read at start, so a
burst of new chats does not read it once each. Replicas (a shared
PostgreSQL database) book each other's turns all the time: there every check reads the ledger
(the three figures in one statement when the whole bot's is needed).
Budgets are checked before a turn against what earlier turns booked: turns already running
when one runs out still finish.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from bot.config import LimitSettings
from bot.context import ChatContext
from bot.errors import UserFacingError
from bot.guardrails.access import AccessPolicy
from bot.storage.usage import UsageLedger
from bot.values import Usage

log = logging.getLogger(__name__)

REREAD = 30.0  # seconds a figure read from the ledger is trusted (plus what this process booked)
_SWEEP = 4096  # figures kept before stale ones are swept
_TOTAL = "total"
_Reader = Callable[[str], Awaitable[int]]  # reads a figure of the given day from the ledger
_UNSURE = -math.inf  # "read at" of a figure read while a turn was booked: read it again first


def utc_day(at: float | None = None) -> str:
    """``YYYY-MM-DD`` in UTC: the day usage is booked on and budgets reset at."""
    return time.strftime("%Y-%m-%d", time.gmtime(at))


class BudgetSpentError(UserFacingError):
    """A daily budget is used up; ``chat_text`` says whose and when it resets."""


class Budgets:
    def __init__(
        self,
        limits: LimitSettings,
        store: UsageLedger,
        access: AccessPolicy,
        *,
        reread: float = REREAD,
        overrides: Callable[[ChatContext], tuple[int | None, int | None]] | None = None,
    ) -> None:
        """``reread``: seconds a figure read from the ledger is trusted (0 with replicas);
        ``overrides(ctx)``: a chat's own per-chat and per-user budgets (a ``chats:`` preset),
        None where ``limits`` hold."""
        self.limits = limits
        self.overrides = overrides
        self.store = store
        self.access = access
        self.reread = reread
        self._spent: dict[str, tuple[str, float, int]] = {}  # key -> (day, read at, tokens)
        self._sweep_at = _SWEEP
        self._booking = 0  # ledger writes in progress in this process
        self._booked = 0  # ledger writes done: a read that overlaps either is not trusted
        self._refreshing: dict[str, asyncio.Future[int]] = {}  # old figures being re-read

    async def check(self, ctx: ChatContext) -> None:
        """Raise :class:`BudgetSpentError` if today's whole-bot, chat or user budget is used."""
        limits = self.limits
        if self.access.exempt(ctx):
            return  # whoever pays the bill is never locked out by it
        per_chat, per_user = self.overrides(ctx) if self.overrides else (None, None)
        per_chat = per_chat or limits.daily_tokens_per_chat
        per_user = per_user or limits.daily_tokens_per_user
        chat_on = per_chat is not None
        user_on = per_user is not None
        if not self.reread and limits.daily_tokens_total is not None and (chat_on or user_on):
            # Replicas read every figure each turn: the whole bot's sum is read anyway, so the
            # other two come in the same statement.
            total, chat, mine = await self.store.budget_figures(
                utc_day(), ctx.chat_key, ctx.platform, ctx.user_id
            )
        else:
            total, chat, mine = await self._figures(
                (_TOTAL, self._total_reader) if limits.daily_tokens_total is not None else None,
                (_chat_key(ctx), self._chat_reader(ctx)) if chat_on else None,
                (_user_key(ctx), self._user_reader(ctx)) if user_on else None,
            )
        if limits.daily_tokens_total is not None and total >= limits.daily_tokens_total:
            log.warning("daily token budget of the whole bot spent: %d tokens", total)
            raise BudgetSpentError(
                f"daily total budget spent tokens={total}",
                chat_text="I've used today's budget for everyone. I'll be back after "
                "midnight (UTC).",
            )
        if per_chat is not None and chat >= per_chat:
            raise BudgetSpentError(
                f"daily chat budget spent chat={ctx.chat_key} tokens={chat}",
                chat_text="This chat has used today's budget for me. I'll be back after "
                "midnight (UTC).",
            )
        if per_user is not None and mine >= per_user:
            raise BudgetSpentError(
                f"daily user budget spent user={ctx.platform}:{ctx.user_id} tokens={mine}",
                chat_text="You have used today's budget for me. It resets at midnight (UTC).",
            )

    @contextmanager
    def booking(self, ctx: ChatContext, usage: Usage) -> Iterator[None]:
        """Around the store's write of a turn with ``usage``: figures read before it get the
        tokens added; a figure read while it runs may or may not hold them, so it is re-read."""
        self._booking += 1
        try:
            yield
        finally:
            self._booking -= 1
            self._booked += 1
            today = utc_day()
            for key in (_user_key(ctx), _chat_key(ctx), _TOTAL):
                known = self._spent.get(key)
                if known is not None and known[0] == today:
                    self._spent[key] = (today, known[1], known[2] + usage.total_tokens)

    async def usage_today(self, ctx: ChatContext) -> tuple[int, int]:
        """Tokens used today (UTC) by this user (every chat of the platform) and by this chat,
        read from the ledger."""
        return await self._user_today(ctx, fresh=True), await self._chat_today(ctx, fresh=True)

    async def total_today(self, *, fresh: bool = False) -> int:
        return await self._figure(_TOTAL, self._total_reader, fresh)

    async def _user_today(self, ctx: ChatContext, *, fresh: bool = False) -> int:
        return await self._figure(_user_key(ctx), self._user_reader(ctx), fresh)

    async def _chat_today(self, ctx: ChatContext, *, fresh: bool = False) -> int:
        return await self._figure(_chat_key(ctx), self._chat_reader(ctx), fresh)

    def _total_reader(self, day: str) -> Awaitable[int]:
        return self.store.tokens_on(day)

    def _user_reader(self, ctx: ChatContext) -> Callable[[str], Awaitable[int]]:
        return lambda day: self.store.user_tokens_on(day, ctx.platform, ctx.user_id)

    def _chat_reader(self, ctx: ChatContext) -> Callable[[str], Awaitable[int]]:
        return lambda day: self.store.tokens_on(day, ctx.chat_key)

    async def _figures(self, *wanted: tuple[str, _Reader] | None) -> list[int]:
        """Each wanted figure (None: that budget is off, 0): those known answered at once,
        the others read from the ledger together (one wait; no task for a figure in memory)."""
        figures = [0 if each is None else self._known(*each) for each in wanted]
        missing = [
            (n, each) for n, each in enumerate(wanted) if each is not None and figures[n] is None
        ]
        if missing:
            today, now = utc_day(), time.monotonic()
            reads = [self._read(key, read, today, now) for _, (key, read) in missing]
            read = [await reads[0]] if len(reads) == 1 else await asyncio.gather(*reads)
            for (n, _), tokens in zip(missing, read, strict=True):
                figures[n] = tokens
        return [figure or 0 for figure in figures]

    async def _figure(self, key: str, read: _Reader, fresh: bool) -> int:
        known = None if fresh else self._known(key, read)
        if known is not None:
            return known
        return await self._read(key, read, utc_day(), time.monotonic())

    def _known(self, key: str, read: _Reader) -> int | None:
        """The figure kept in memory, if it may answer (None: read the ledger now)."""
        today, now = utc_day(), time.monotonic()
        known = self._spent.get(key)
        if not self.reread or known is None or known[0] != today or known[1] == _UNSURE:
            return None  # replicas: always the ledger's
        if now - known[1] >= self.reread and key not in self._refreshing:
            # Known, but old: answer with it now (it holds every turn this process booked
            # since) and read the ledger again beside the turn, for other processes' turns.
            refresh = asyncio.ensure_future(self._read(key, read, today, now))
            self._refreshing[key] = refresh
            refresh.add_done_callback(functools.partial(self._refreshed, key))
        return known[2]

    def _refreshed(self, key: str, refresh: asyncio.Future[int]) -> None:
        del self._refreshing[key]
        if not refresh.cancelled() and (exc := refresh.exception()) is not None:
            log.warning("budget figure not re-read key=%s error=%r", key, exc)

    async def _read(
        self, key: str, read: Callable[[str], Awaitable[int]], today: str, now: float
    ) -> int:
        booked, busy = self._booked, self._booking
        tokens = await read(today)
        read_at = now
        if busy or self._booking or booked != self._booked:
            # A turn was written while the ledger was read: the figure may or may not hold
            # it. Use it this once (off by one turn at most); the next check reads again.
            read_at = _UNSURE  # a booking added to it could count that turn twice
        if len(self._spent) >= self._sweep_at:
            self._spent = {
                k: v for k, v in self._spent.items() if v[0] == today and now - v[1] < self.reread
            }
            self._sweep_at = max(_SWEEP, 2 * len(self._spent))
        self._spent[key] = (today, read_at, tokens)
        return tokens


def _user_key(ctx: ChatContext) -> str:
    return f"u|{ctx.platform}|{ctx.user_id}"


def _chat_key(ctx: ChatContext) -> str:
    return f"c|{ctx.chat_key}"
