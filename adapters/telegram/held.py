"""Webhook mode's share of bursts: the next messages of a burst wait in the inbox, unhandled,
while its first is answered (a chat's updates run one at a time, ``webhook_mode``), so the
first offers them to its turn (:mod:`bot.platform.held_messages`).

While the burst gathers, :class:`InboxFollowers` reads the unfinished updates of the chat's
lane behind the one running. A plain text message of the same person, in the same chat and
topic, is offered; another person's message is left for its turn; the person's photo, voice
note or command ends the offer (the burst keeps their order). An offered message the turn takes
is finished in the inbox as answered with the running update, once the turn holding it is on its
way to the store, so a crash before that leaves it to run on its own (at least once, as every
update). One the turn leaves runs as usual.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from contextvars import ContextVar

from aiogram import Bot
from aiogram.types import Message, Update, User

from adapters.telegram.normalise import normalise
from bot.context import ChatContext
from bot.platform.held_messages import Later
from bot.storage import Storage
from bot.values import InboxItem

__all__ = ["RUNNING", "InboxFollowers"]

log = logging.getLogger(__name__)

RUNNING: ContextVar[InboxItem | None] = ContextVar("telegram_inbox_item", default=None)
"""The inbox item whose update this task handles (webhook mode; None when polling)."""

_PAGE = 10  # updates read behind the running one per look


class InboxFollowers:
    """``more`` for one answer in webhook mode: the same person's later messages, in order."""

    def __init__(
        self, store: Storage, bot: Bot, me: User, name: str, item: InboxItem, ctx: ChatContext
    ) -> None:
        self.store, self.bot, self.me, self.name = store, bot, me, name
        self.item, self.ctx = item, ctx
        self._after = item.update_id
        self._ended = False
        self._folds: list[asyncio.Task[bool]] = []

    async def __call__(self) -> list[Later]:
        if self._ended:
            return []
        found: list[Later] = []
        waiting = await self.store.inbox_following(
            self.item.source, self.item.lane, self._after, _PAGE
        )
        for item in waiting:
            self._after = item.update_id
            message = self._message(item)
            if message is None or not self._same_sender(message):
                continue  # someone else's, or not a message: its own turn
            text = self._plain_text(message)
            if text is None:  # a photo, a voice note, a command, words to someone else:
                self._ended = True  # the burst ends before it
                break
            if not text:  # a bare @mention: nothing to add
                continue
            found.append(Later(text, str(message.message_id), self._taker(item)))
        return found

    async def finished(self) -> None:
        """Wait for the inbox to record the messages the turn took (before the running
        update is finished: the worker must not run them)."""
        if self._folds:
            await asyncio.gather(*self._folds, return_exceptions=True)

    def _taker(self, item: InboxItem) -> Callable[[bool], object]:
        def taken(yes: bool) -> None:
            if yes:
                self._folds.append(asyncio.ensure_future(self._fold(item)))

        return taken

    async def _fold(self, item: InboxItem) -> bool:
        try:
            return await self.store.inbox_fold(item.id, self.item.id)
        except Exception:  # it then runs on its own: answered twice rather than lost
            log.warning("telegram: inbox item %d not folded into %d", item.id, self.item.id)
            return False

    def _message(self, item: InboxItem) -> Message | None:
        try:
            update = Update.model_validate(json.loads(item.payload), context={"bot": self.bot})
        except ValueError:
            return None
        return update.message  # an edit, a member change ...: not a message of the burst

    def _same_sender(self, message: Message) -> bool:
        ctx = self.ctx
        thread = message.message_thread_id if message.is_topic_message else None
        return (
            message.sender_chat is None
            and message.from_user is not None
            and str(message.from_user.id) == ctx.user_id
            and str(message.chat.id) == ctx.chat_id
            and (str(thread) if thread is not None else None) == ctx.thread_id
        )

    def _plain_text(self, message: Message) -> str | None:
        """Its words (the bot's @mention removed), or None when it is more than text or
        @mentions someone else (theirs, not a follow-up)."""
        if message.text is None or message.text.startswith("/"):
            return None
        incoming = normalise(message, self.me, self.name)
        return None if incoming.to_others else incoming.text
