"""Showing an answer while the model writes it, within a chat platform's limits.

Platforms rate-limit edits per chat and cap a message's length, so a streamed answer is shown by
*throttled* edits of one message (two replies streaming into one chat share the budget), as
plain text with a cursor, and rolls over to a new message before the cap, up to the reply's
message cap (``limits.max_reply_messages``): then the last message stops growing until the final
text replaces it. Adapters supply how a message is shown (:class:`Preview`) and format the final
text themselves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Protocol

from cachetools import TLRUCache

log = logging.getLogger(__name__)

CURSOR = " …"


MAX_THROTTLED_CHATS = 10_000  # chats whose next edit time is remembered


class EditThrottle:
    """At most one edit per interval in each chat (``private`` chats may go faster).

    A chat is remembered only until its next edit is allowed, and at most
    ``MAX_THROTTLED_CHATS`` at once (past that the least recently edited one is forgotten early:
    it may edit a little sooner, which the platform's own flood control absorbs).
    """

    def __init__(
        self,
        private: float,
        group: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_chats: int = MAX_THROTTLED_CHATS,
    ) -> None:
        self.private = private
        self.group = group
        self.clock = clock
        self._next: TLRUCache[Hashable, float] = TLRUCache(
            max_chats, lambda _chat, next_edit, _now: next_edit, timer=clock
        )

    def __len__(self) -> int:
        return len(self._next)

    def ready(self, chat: Hashable, private: bool) -> bool:
        if chat in self._next:  # not yet expired: its next edit is still ahead
            return False
        self._next[chat] = self.clock() + (self.private if private else self.group)
        return True


class Preview(Protocol):
    async def show(self, index: int, text: str) -> None:
        """Show ``text`` as message ``index`` of the reply: the next new message, or an edit."""
        ...


class LivePreview:
    """Accumulates deltas; shows them by throttled edits, rolling over before ``rollover``.

    ``utf16`` measures like Telegram (an emoji outside the BMP counts two), else like Discord
    (code points). ``max_messages``: never more messages than this, whatever streams in. A
    failed show is the caller's to handle; set ``paused`` to stop trying.
    """

    def __init__(
        self,
        preview: Preview,
        throttle: EditThrottle,
        chat: Hashable,
        *,
        private: bool,
        rollover: int,
        utf16: bool = False,
        max_messages: int | None = None,
    ) -> None:
        self.preview = preview
        self.throttle = throttle
        self.chat = chat
        self.private = private
        self.rollover = rollover
        self.utf16 = utf16
        self.max_messages = max_messages
        self.text = ""
        self.paused = False
        self.shown = ""  # what the current message shows, cursor included
        self.index = 0  # which message of the reply shows the current segment
        self.messages = 0  # how many messages the preview has created
        self._segment_start = 0  # where the current message's text begins in ``text``
        self._full = False  # the last message allowed is full: nothing more to show

    async def feed(self, delta: str) -> None:
        self.text += delta
        if not self.paused and self.throttle.ready(self.chat, self.private):
            await self._show()

    def cut_off(self, note: str) -> str | None:
        """The current message's words marked as cut off, or None when nothing is shown."""
        if not self.shown or self.index >= self.messages:
            return None
        return f"{self.shown.removesuffix(CURSOR)} [{note}]"

    async def _show(self) -> None:
        if self._full:
            return
        segment = self.text[self._segment_start :]
        while self._length(segment) > self.rollover:
            cut = cut_point(segment, self.rollover, utf16=self.utf16)
            if self.max_messages is not None and self.index + 1 >= self.max_messages:
                await self._display(segment[:cut].rstrip() + CURSOR)
                self._full = True  # no rollover past the cap: the final text comes cut to fit
                return
            await self._display(segment[:cut].rstrip())
            self._segment_start += cut
            self.index += 1
            segment = self.text[self._segment_start :]
        if segment.strip():
            await self._display(segment.rstrip() + CURSOR)

    async def _display(self, text: str) -> None:
        if text == self.shown and self.index < self.messages:
            return
        await self.preview.show(self.index, text)
        self.messages = max(self.messages, self.index + 1)
        self.shown = text

    def _length(self, text: str) -> int:
        return len(text.encode("utf-16-le")) // 2 if self.utf16 else len(text)


def cut_point(text: str, limit: int, *, utf16: bool = False) -> int:
    """A str index at most ``limit`` units in, preferring a paragraph, a newline, a space."""
    index = 0
    units = 0
    for index, char in enumerate(text):  # noqa: B007 - the index is used after the loop
        units += 2 if utf16 and ord(char) > 0xFFFF else 1
        if units > limit:
            break
    head = text[:index]
    for separator in ("\n\n", "\n", " "):
        position = head.rfind(separator)
        if position > len(head) // 2:
            return position + len(separator)
    return max(index, 1)


class Repeating:
    """Runs ``action`` now and every ``every`` seconds until stopped: typing indicators.

    A task, so starting it never delays the turn; a failing action ends the loop quietly
    (an indicator is a nicety, never worth an error).
    """

    def __init__(self, action: Callable[[], Awaitable[object]], every: float, what: str) -> None:
        self.action = action
        self.every = every
        self.what = what
        self._task: asyncio.Task[None] | None = None
        self._stopped = False  # for good: a start that comes late (see ChatService) does nothing

    def start(self) -> None:
        if self._task is None and not self._stopped:
            self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        self._stopped = True
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if not task.cancelled():  # we were cancelled ourselves, not the task
                raise

    async def _loop(self) -> None:
        while True:
            try:
                await self.action()
            except Exception as exc:
                log.info("%s failed, giving up on it: %s", self.what, exc)
                return
            await asyncio.sleep(self.every)
