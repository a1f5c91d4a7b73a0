"""What one of the deployment's Telegram bots tells the others (``telegram.bots``): its group
answers, which Telegram never delivers to another bot (:mod:`adapters.telegram.bots`)."""

from __future__ import annotations

import logging

from aiogram.types import User

from bot.context import ChatContext
from bot.platform.seam import Conversation

__all__ = ["Siblings"]

log = logging.getLogger(__name__)


class Siblings:
    """The other bots of the deployment that one bot's group answers are told to."""

    def __init__(self, conversation: Conversation, names: tuple[str, ...]) -> None:
        self.conversation = conversation
        self.names = names

    async def tell(self, ctx: ChatContext, me: User, text: str) -> None:
        """``me`` answered ``text`` in ``ctx``'s group: each sibling keeps it as context
        there, said by ``me`` (never in private chats; best effort: a failure is logged)."""
        if ctx.is_private or not text.strip():
            return
        speaker = me.full_name or me.username or str(me.id)
        for name in self.names:
            heard = ChatContext(
                platform=name,
                chat_id=ctx.chat_id,
                chat_type=ctx.chat_type,
                user_id=str(me.id),
                user_name=speaker,
                thread_id=ctx.thread_id,
                chat_title=ctx.chat_title,
            )
            try:
                await self.conversation.overhear(heard, text)
            except Exception:
                log.warning("telegram: %s not told of an answer chat=%s", name, ctx.chat_id)
