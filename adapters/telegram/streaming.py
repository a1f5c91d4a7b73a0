"""Streaming a reply by editing one message, within Telegram's limits.

Telegram allows about one message per second per chat and 20 per minute in a group, and every
edit counts: ``bot.streaming`` throttles edits per chat and rolls over before 4096 UTF-16 units.
The preview is plain text (half-written Markdown would not parse) and formatted once at the end.
A typing action is kept alive until the first words appear.
"""

from __future__ import annotations

import contextlib
import logging

from aiogram import Bot
from aiogram.enums import ChatAction
from aiogram.exceptions import AiogramError

from adapters.telegram.output import Outbox, Undeliverable
from adapters.telegram.render import defuse_mentions
from bot.streaming import EditThrottle, LivePreview, Repeating

log = logging.getLogger(__name__)

ROLLOVER = 3900  # UTF-16 units: leave room for the "…" marker and the final formatting
TYPING_EVERY = 4.5  # a chat action shows for five seconds


def typing_indicator(bot: Bot, chat_id: int, thread_id: int | None) -> Repeating:
    """Keeps "typing…" visible while the model works; stop it when words appear."""

    async def action() -> None:
        await bot.send_chat_action(
            chat_id=chat_id, action=ChatAction.TYPING, message_thread_id=thread_id
        )

    return Repeating(action, TYPING_EVERY, f"typing action chat={chat_id}")


class StreamingReply:
    """A Telegram reply shown while it is written; ``finish`` formats it."""

    def __init__(
        self,
        outbox: Outbox,
        throttle: EditThrottle,
        *,
        private: bool,
        typing: Repeating,
        max_messages: int | None = None,
    ) -> None:
        self.outbox = outbox
        self.typing = typing
        self.live = LivePreview(
            self,
            throttle,
            outbox.target.chat_id,
            private=private,
            rollover=ROLLOVER,
            utf16=True,
            max_messages=max_messages,
        )

    @property
    def text(self) -> str:
        return self.live.text

    async def feed(self, delta: str) -> None:
        try:
            await self.live.feed(delta)
        except Undeliverable:
            raise
        except AiogramError as exc:
            # The live preview is a nicety: keep the answer coming, deliver it at the end.
            log.warning("streaming edits paused chat=%s: %s", self.outbox.target.chat_id, exc)
            self.live.paused = True

    async def show(self, index: int, text: str) -> None:
        await self.typing.stop()
        await self.outbox.stream_text(index, defuse_mentions(text))

    async def abandon(self, note: str) -> None:
        """The answer failed mid-stream: leave the words shown, marked as cut off."""
        await self.typing.stop()
        cut = self.live.cut_off(note)
        if cut is not None and self.live.index < len(self.outbox.messages):
            with contextlib.suppress(AiogramError, Undeliverable):
                await self.outbox.edit(self.live.index, defuse_mentions(cut), html=False)

    async def finish(self, final_text: str) -> None:
        await self.typing.stop()
        await self.outbox.finish(final_text)
