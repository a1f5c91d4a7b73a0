"""Telling the chat directory (bot.storage.directory) where turns happen, and what the chat is
called, so the admin dashboard can list chats by name.

Noted when a turn's answer is stored (never before its model call: in a burst of new chats the
notes would queue ahead of the turns' own writes), but written only when a chat's title or type
differs from what this process last wrote (a bounded cache): a busy chat costs one write, not
one per message. The directory is a convenience: a failing write is logged and never
fails the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TypeVar

from cachetools import LRUCache

from bot.context import ChatContext
from bot.storage.directory import ChatDirectory
from bot.values import ChatEntry

__all__ = ["DirectoryNotes"]

log = logging.getLogger(__name__)

T = TypeVar("T")
NOTED_CHATS = 10_000  # chats whose last noted (title, type) this process remembers


class DirectoryNotes:
    def __init__(self, store: ChatDirectory, size: int = NOTED_CHATS) -> None:
        self._store = store
        self._noted: LRUCache[str, tuple[str, str]] = LRUCache(maxsize=size)
        self._later: set[asyncio.Future[None]] = set()  # notes of failed turns, being written

    def note_later(self, ctx: ChatContext) -> None:
        """:meth:`note` in the background: a failed turn tells its user before it is noted."""
        task = asyncio.ensure_future(self.note(ctx))
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def beside(self, ctx: ChatContext, write: Awaitable[T]) -> T:
        """``write`` (the turn's answer) and, together with it when the chat's entry is new,
        :meth:`note`: one wait, and no task when there is nothing to note."""
        if self._noted.get(ctx.chat_key) == (ctx.chat_title, ctx.chat_type.value):
            return await write
        written, _ = await asyncio.gather(write, self.note(ctx))
        return written

    async def note(self, ctx: ChatContext) -> None:
        """Write the chat's entry unless this process already wrote the same one."""
        seen = (ctx.chat_title, ctx.chat_type.value)
        if self._noted.get(ctx.chat_key) == seen:
            return
        entry = ChatEntry(ctx.platform, ctx.chat_id, ctx.chat_type.value, ctx.chat_title)
        try:
            await self._store.note_chat(entry)
        except Exception as exc:  # any storage failure: the answer matters more than the title
            log.warning("chat directory not updated chat=%s error=%r", ctx.chat_key, exc)
            return
        self._noted[ctx.chat_key] = seen
