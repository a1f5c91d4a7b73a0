"""Streaming a reply by editing one message, within Telegram's limits.

Telegram allows about one message per second per chat and 20 per minute in a group, and every
edit counts: ``bot.conversation.preview`` throttles edits per chat and rolls over before 4096
UTF-16 units.
The preview is plain text (half-written Markdown would not parse) and formatted once at the end.
A typing action is kept alive until the first words appear. ``on_show`` hears of every preview
change (the adapter records it, so a restart after a crash can mark what was left on screen).
If the final text cannot be delivered at all, the preview is marked "[interrupted]".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from aiogram import Bot
from aiogram.enums import ChatAction
from aiogram.exceptions import AiogramError
from aiogram.types import Message

from adapters.telegram.output import Outbox, Undeliverable
from adapters.telegram.render import defuse_mentions
from bot.conversation.preview import EditThrottle, LivePreview, Repeating

log = logging.getLogger(__name__)

ROLLOVER = 3900  # UTF-16 units: leave room for the "…" marker and the final formatting
TYPING_EVERY = 4.5  # a chat action shows for five seconds

OnShow = Callable[[Message, str], Awaitable[None]]


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
        on_show: OnShow | None = None,
        max_messages: int | None = None,
    ) -> None:
        self.outbox = outbox
        self.typing = typing
        self.on_show = on_show
        self.marked = False  # the preview says "[interrupted]"
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
        shown = defuse_mentions(text)
        await self.outbox.stream_text(index, shown)
        if self.on_show is not None:
            await self.on_show(self.outbox.messages[index], shown)

    async def abandon(self, note: str) -> bool:
        """The answer failed mid-stream: leave the words shown, marked as cut off. True when
        the mark is on screen."""
        await self.typing.stop()
        cut = self.live.cut_off(note)
        if cut is None or self.live.index >= len(self.outbox.messages):
            return False
        try:
            await self.outbox.edit(self.live.index, defuse_mentions(cut), html=False)
        except (AiogramError, Undeliverable) as exc:
            log.warning("could not mark the preview chat=%s: %s", self.outbox.target.chat_id, exc)
            return False
        self.marked = True
        return True

    async def finish(self, final_text: str, rendered: Sequence[str] | None = None) -> None:
        """The formatted answer over the preview (``rendered``: its chunks, if rendered
        already); if Telegram takes neither it nor the answer sent anew, the preview is marked
        "[interrupted]" and the error raised."""
        await self.typing.stop()
        try:
            await self.outbox.finish(final_text, rendered)
        except (AiogramError, Undeliverable):
            await self.abandon("interrupted")
            raise
