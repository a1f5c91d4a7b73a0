"""Group chatter: messages the bot saw without being addressed, kept as context for its next
answer in that conversation.

Only in groups, only while ``history.context_messages`` is above zero, at most that many per
conversation waiting for a prompt and none older than ``history.context_max_age``; older ones
stay stored *passed* (never prompted again) up to ``catchup.max_messages``, for ``/catchup``. An
empty message, or one longer than a message would be answered, is not kept. The service writes
them under the conversation's lock, in arrival order with its turns. Edits of messages kept
as context the same way (:mod:`bot.conversation.edits`) are the one kind kept in private chats.
"""

from __future__ import annotations

import time

from bot.config import HistorySettings
from bot.context import ChatContext
from bot.storage.overheard import OverheardStore
from bot.text import clean_text
from bot.values import NewTurn, Overheard

__all__ = ["Overhearing"]


class Overhearing:
    def __init__(
        self, store: OverheardStore, history: HistorySettings, max_chars: int, *, retain: int = 0
    ) -> None:
        """``retain``: how many of a conversation's messages stay readable for ``/catchup``
        (older than the ``keep`` newest that give context, they are stored *passed*)."""
        self.store = store
        self.keep = history.context_messages
        self.retain = retain
        self.max_age = history.context_max_age
        self.max_chars = max_chars

    def worth_keeping(self, ctx: ChatContext, text: str, *, edit: bool = False) -> str | None:
        """The message's text, cleaned, if it is kept; None if not."""
        if (ctx.is_private and not edit) or self.keep == 0:
            return None
        text = clean_text(text.strip())  # adapters clean it; a plugin's adapter may not
        if not text or len(text) > self.max_chars:
            return None
        return text

    async def record(self, ctx: ChatContext, key: str, text: str) -> None:
        message = NewTurn(key, ctx.chat_key, ctx.user_id, ctx.user_name, text, ctx.message_id)
        await self.store.record_overheard(message, self.keep, self.retain)

    def since(self) -> float | None:
        """How far back chatter still counts (a ``time.time()``); None when none is kept."""
        return None if self.keep == 0 else time.time() - self.max_age

    def latest(self, rows: list[Overheard]) -> list[Overheard]:
        """The newest of ``rows`` (oldest first) that a prompt shows."""
        return rows[-self.keep :] if self.keep else []
