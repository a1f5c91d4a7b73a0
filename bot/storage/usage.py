"""The usage ledger: tokens spent per UTC day, chat and user."""

from __future__ import annotations

from typing import Protocol

from bot.values import DailyUsage, Usage

__all__ = ["UsageLedger"]


class UsageLedger(Protocol):
    """What budgets and ``parlour usage`` read. A ledger of its own, not a view of the turns.

    A backend must provide:

    - **Booked on completion**, by the turn writes themselves (:class:`~bot.storage.turns.
      Turns`): a completed turn adds its tokens and one to ``turns`` on the UTC day it
      completes; a failed pending turn adds its tokens only; an undelivered turn leaves
      ``turns`` (its tokens stay). SQLite does this in trigger ``turns_usage``, in the same
      statement as the status change.
    - **Kept by forgetting**: ``clear_chat`` and retention delete turns, never ledger rows.
    - **Moved by migration**: a migrated chat's rows are added to the new chat's (same day and
      user) and leave the old key, so a migration does not refill a budget.
    - **Cached input** (``Usage.cached_tokens``, part of the prompt tokens) is booked, kept
      and moved along with the other figures; it is not extra spending, so the ``tokens``
      sums leave it out.
    - ``book_usage`` adds tokens spent outside a turn (the bot's summaries, user
      :data:`~bot.values.BOT_USER`) to today's row, ``turns`` unchanged.
    - Chat keys start with ``platform:``; user ids are per platform.
    """

    async def tokens_on(
        self, day: str, chat_key: str | None = None, user_id: str | None = None
    ) -> int:
        """Tokens spent on ``day`` (UTC, ``YYYY-MM-DD``): by every chat, one chat, or one user
        in one chat (``user_id`` needs ``chat_key``)."""
        ...

    async def user_tokens_on(self, day: str, platform: str, user_id: str) -> int:
        """Tokens one user spent on ``day`` in every chat of ``platform`` (ids are per
        platform), so new threads or groups are not fresh budgets."""
        ...

    async def budget_figures(
        self, day: str, chat_key: str, platform: str, user_id: str
    ) -> tuple[int, int, int]:
        """:meth:`tokens_on` of the whole bot and of ``chat_key``, and :meth:`user_tokens_on`,
        in one read: what a turn's budget check needs when nothing may be cached (replicas)."""
        ...

    async def user_usage_on(self, day: str, platform: str, user_id: str) -> Usage:
        """The same user's figures as :meth:`user_tokens_on`, cached input included (what
        ``/usage`` shows)."""
        ...

    async def book_usage(self, chat_key: str, user_id: str, user_name: str, usage: Usage) -> None:
        """Add tokens spent outside a turn (the bot's own summaries) to today's ledger."""
        ...

    async def daily_usage(self, since_day: str, chat_key: str | None = None) -> list[DailyUsage]:
        """Per day, chat and user from ``since_day`` on (every chat, or one), ordered by day,
        chat and user."""
        ...
