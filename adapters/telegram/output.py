"""Putting one reply into a Telegram chat: send, edit, and never lose it to formatting.

The model writes Markdown; Telegram takes a small HTML subset. The text is rendered first and
split *after* rendering (``split.py``: every chunk balanced, within 4096 UTF-16 units), then each
chunk is sent as HTML. If Telegram still answers "can't parse entities", the same chunk goes out
as plain text: a reply may lose its bold, never its words. If the final edit of a streamed
preview fails past the retry layer (``flood.py``), the rest of the answer is sent as new messages
and the stale previews deleted. A blocked or kicked bot raises :class:`Undeliverable`; a call
that failed for good raises aiogram's error, for the adapter to record the reply undelivered.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from aiogram import Bot
from aiogram.enums import ParseMode
from aiogram.exceptions import (
    AiogramError,
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramRetryAfter,
)
from aiogram.types import LinkPreviewOptions, Message, ReplyParameters

from adapters.telegram.flood import TRANSIENT
from adapters.telegram.render import html_to_text, markdown_to_html
from adapters.telegram.split import TELEGRAM_LIMIT, split_html, split_text, utf16_len

log = logging.getLogger(__name__)

_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)
_OFF_LOOP_CHARS = 2_000


def render_chunks(markdown: str) -> list[str]:
    """The model's Markdown as Telegram HTML messages: rendered first, then split."""
    html = markdown_to_html(markdown)
    if html.strip() and utf16_len(html) <= TELEGRAM_LIMIT:
        return [html]  # the markup itself fits, so the visible text does too
    return split_html(html) or split_text(markdown)


class Undeliverable(Exception):
    """The chat cannot receive messages from us (blocked, kicked, gone)."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reply goes: the chat, its forum topic, and the message it quotes (groups)."""

    chat_id: int
    thread_id: int | None = None
    reply_to: int | None = None


class Outbox:
    """Sends and edits the messages of one reply, in order."""

    def __init__(self, bot: Bot, target: Target) -> None:
        self.bot = bot
        self.target = target
        self.messages: list[Message] = []

    async def send_plain(self, text: str) -> None:
        """A short notice (errors, command answers), split if it must be."""
        for chunk in split_text(text):
            await self.send(chunk, html=False)

    async def send_markdown(self, text: str) -> None:
        await self.finish(text)

    async def finish(self, markdown: str, rendered: Sequence[str] | None = None) -> None:
        """The final formatted text, reusing messages already sent while streaming.

        ``rendered``: ``render_chunks(markdown)`` when the caller has it (the core measured the
        reply with it), so a reply is rendered once; else it is rendered here."""
        if rendered is not None:
            chunks = rendered
        elif len(markdown) > _OFF_LOOP_CHARS:  # ~5 ms per 1,000 characters: keep the loop free
            chunks = await asyncio.to_thread(render_chunks, markdown)
        else:
            chunks = render_chunks(markdown)
        for index, chunk in enumerate(chunks):
            if index < len(self.messages):
                try:
                    await self.edit(index, chunk, html=True)
                except (TelegramRetryAfter, *TRANSIENT) as exc:  # past every resend
                    log.warning(
                        "final edit failed, sending the answer anew chat=%s: %s",
                        self.target.chat_id,
                        exc,
                    )
                    await self._send_anew(chunks, index)
                    return
            else:
                await self.send(chunk, html=True)
        for extra in self.messages[len(chunks) :]:
            await self._delete(extra)
        del self.messages[len(chunks) :]

    async def _send_anew(self, chunks: Sequence[str], start: int) -> None:
        """Chunks from ``start`` on as new messages, then the previews they replace deleted;
        if a send fails, the previews stay as they were (the caller may mark them)."""
        stale = self.messages[start:]
        fresh = Outbox(self.bot, self.target)
        fresh.messages = self.messages[:start]  # so only a reply's first message quotes
        for chunk in chunks[start:]:
            await fresh.send(chunk, html=True)
        self.messages[start:] = fresh.messages[start:]
        self.target = fresh.target
        for message in stale:
            await self._delete(message)

    async def stream_text(self, index: int, text: str) -> None:
        """Show plain ``text`` in message ``index`` (a new message if it does not exist yet)."""
        if index < len(self.messages):
            await self.edit(index, text, html=False)
        else:
            await self.send(text, html=False)

    async def edit(self, index: int, text: str, *, html: bool) -> None:
        message = self.messages[index]
        try:
            edited = await self._edit_once(message, text, html)
        except TelegramBadRequest as exc:
            description = exc.message.lower()
            if "not modified" in description:
                return
            if html and "can't parse entities" in description:
                log.warning(
                    "HTML rejected, editing as plain text chat=%s: %s", message.chat.id, exc
                )
                edited = await self._edit_fallback(message, html_to_text(text))
            elif "not found" in description or "can't be edited" in description:
                log.info(
                    "message %s gone, sending anew chat=%s", message.message_id, message.chat.id
                )
                await self.send(text, html=html, replace=index)
                return
            else:
                raise
        if isinstance(edited, Message):
            self.messages[index] = edited

    async def _edit_once(self, message: Message, text: str, html: bool) -> Message | bool:
        return await self.bot.edit_message_text(
            text=text,
            chat_id=message.chat.id,
            message_id=message.message_id,
            parse_mode=ParseMode.HTML if html else None,
            link_preview_options=_NO_PREVIEW,
        )

    async def _edit_fallback(self, message: Message, text: str) -> Message | bool:
        try:
            return await self._edit_once(message, text, False)
        except TelegramBadRequest as exc:
            if "not modified" in exc.message.lower():
                return message
            raise

    async def send(self, text: str, *, html: bool, replace: int | None = None) -> None:
        try:
            message = await self._send_once(text, html)
        except TelegramBadRequest as exc:
            if not (html and "can't parse entities" in exc.message.lower()):
                raise
            log.warning("HTML rejected, sending plain text chat=%s: %s", self.target.chat_id, exc)
            message = await self._send_once(html_to_text(text), False)
        if replace is None:
            self.messages.append(message)
        else:
            self.messages[replace] = message

    async def _send_once(self, text: str, html: bool) -> Message:
        first = not self.messages
        reply = (
            ReplyParameters(message_id=self.target.reply_to, allow_sending_without_reply=True)
            if first and self.target.reply_to is not None
            else None
        )
        try:
            return await self.bot.send_message(
                chat_id=self.target.chat_id,
                text=text,
                message_thread_id=self.target.thread_id,
                parse_mode=ParseMode.HTML if html else None,
                reply_parameters=reply,
                link_preview_options=_NO_PREVIEW,
            )
        except TelegramForbiddenError as exc:
            raise Undeliverable(str(exc)) from exc
        except TelegramMigrateToChat as exc:
            # The group became a supergroup while we were answering: follow it there.
            log.info("chat %s moved to %s, resending", self.target.chat_id, exc.migrate_to_chat_id)
            self.target = Target(exc.migrate_to_chat_id)
            return await self._send_once(text, html)

    async def _delete(self, message: Message) -> None:
        try:
            await self.bot.delete_message(chat_id=message.chat.id, message_id=message.message_id)
        except AiogramError as exc:
            log.info("could not delete message %s: %s", message.message_id, exc)
