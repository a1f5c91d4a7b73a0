"""Streaming a reply by editing one message, within Telegram's limits.

Telegram allows about one message per second per chat and 20 per minute in a group, and every
edit counts. So edits are throttled per *chat* (two replies streaming into one group share the
budget), shown as plain text while the model writes (half-written Markdown would not parse), and
formatted once at the end. Before a message reaches 4096 characters the stream rolls over to a
new one. A typing action is kept alive until the first words appear.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from aiogram import Bot
from aiogram.enums import ChatAction
from aiogram.exceptions import AiogramError

from adapters.telegram.output import Outbox, Undeliverable
from adapters.telegram.render import defuse_mentions
from adapters.telegram.split import utf16_len

log = logging.getLogger(__name__)

ROLLOVER = 3900  # UTF-16 units: leave room for the "…" marker and the final formatting
TYPING_EVERY = 4.5  # a chat action shows for five seconds
_CURSOR = " …"


class EditThrottle:
    """At most one edit per ``interval`` seconds in each chat."""

    def __init__(
        self, private: float, group: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.private = private
        self.group = group
        self.clock = clock
        self._next: dict[int, float] = {}

    def ready(self, chat_id: int, private: bool) -> bool:
        now = self.clock()
        if now < self._next.get(chat_id, 0.0):
            return False
        self._next[chat_id] = now + (self.private if private else self.group)
        if len(self._next) > 10_000:
            self._next = {k: v for k, v in self._next.items() if v > now}
        return True


class Typing:
    """Keeps "typing…" visible while the model works; stop it when words appear."""

    def __init__(self, bot: Bot, chat_id: int, thread_id: int | None) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.thread_id = thread_id
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():  # we were cancelled ourselves, not the typing task
                raise
        except Exception:  # its failure was logged or is harmless: typing is a nicety
            log.debug("typing task ended with an error", exc_info=True)

    async def _loop(self) -> None:
        while True:
            try:
                await self.bot.send_chat_action(
                    chat_id=self.chat_id,
                    action=ChatAction.TYPING,
                    message_thread_id=self.thread_id,
                )
            except AiogramError as exc:
                log.info("typing action failed chat=%s: %s", self.chat_id, exc)
                return
            await asyncio.sleep(TYPING_EVERY)


class StreamingReply:
    """Accumulates text deltas and shows them by throttled edits; ``finish`` formats."""

    def __init__(
        self, outbox: Outbox, throttle: EditThrottle, *, private: bool, typing: Typing
    ) -> None:
        self.outbox = outbox
        self.throttle = throttle
        self.private = private
        self.typing = typing
        self.text = ""
        self._segment_start = 0  # where the current message's text begins in ``text``
        self._index = 0  # which message of the outbox shows the current segment
        self._shown = ""
        self._paused = False

    async def feed(self, delta: str) -> None:
        self.text += delta
        if self._paused or not self.throttle.ready(self.outbox.target.chat_id, self.private):
            return
        try:
            await self._show()
        except Undeliverable:
            raise
        except AiogramError as exc:
            # The live preview is a nicety: keep the answer coming, deliver it at the end.
            log.warning("streaming edits paused chat=%s: %s", self.outbox.target.chat_id, exc)
            self._paused = True

    async def _show(self) -> None:
        segment = self.text[self._segment_start :]
        while utf16_len(segment) > ROLLOVER:
            cut = _cut_point(segment, ROLLOVER)
            await self._display(segment[:cut].rstrip())
            self._segment_start += cut
            self._index += 1
            segment = self.text[self._segment_start :]
        if segment.strip():
            await self._display(segment.rstrip() + _CURSOR)

    async def _display(self, text: str) -> None:
        if text == self._shown and self._index < len(self.outbox.messages):
            return
        await self.typing.stop()
        await self.outbox.stream_text(self._index, defuse_mentions(text))
        self._shown = text

    async def abandon(self, note: str) -> None:
        """The answer failed mid-stream: leave the words shown, marked as cut off."""
        await self.typing.stop()
        if self._shown and self._index < len(self.outbox.messages):
            shown = self._shown.removesuffix(_CURSOR)
            with contextlib.suppress(AiogramError, Undeliverable):
                await self.outbox.edit(
                    self._index, defuse_mentions(f"{shown} [{note}]"), html=False
                )

    async def finish(self, final_text: str) -> None:
        await self.typing.stop()
        await self.outbox.finish(final_text)


def _cut_point(text: str, limit: int) -> int:
    """A str index at most ``limit`` UTF-16 units in, preferring a newline, then a space."""
    index = 0
    units = 0
    for index, char in enumerate(text):  # noqa: B007 - the index is used after the loop
        units += 2 if ord(char) > 0xFFFF else 1
        if units > limit:
            break
    head = text[:index]
    for separator in ("\n\n", "\n", " "):
        position = head.rfind(separator)
        if position > len(head) // 2:
            return position + len(separator)
    return max(index, 1)
