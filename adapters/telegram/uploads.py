"""Documents sent to a Telegram chat with ``/knowledge add BASE`` as their caption
(``/knowledge@botname add BASE`` too): added to a knowledge base by
``platform.knowledge.upload`` (:class:`bot.platform.seam.KnowledgeUploads`).

The sender's admin rights are looked up as for an admin-only command (``getChatMember``,
cached, behind the chat's barrier); the core then decides who may add to which base and checks
the declared size before it asks for the bytes, so a member's document, or one over
``knowledge.max_file_bytes``, costs no ``getFile``. The download is ``getFile`` and the file
URL, which holds the bot token: it is never logged (a failure is reported by its exception's
type alone). Telegram serves bots files of 20 MB at most; a larger one is refused with a reply
that says so, before any request. The chat's later messages wait until the document is stored,
so a question sent right after it is searched against it.

A document with any other caption, or none, is handled as before: this module only takes
messages :func:`upload_base` names a base for, and only when knowledge bases are declared.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest
from aiogram.types import Document, Message

from adapters.telegram.admins import AdminCache
from adapters.telegram.barrier import ChatBarriers
from adapters.telegram.media import MAX_DOWNLOAD_BYTES
from adapters.telegram.normalise import Incoming
from adapters.telegram.output import Outbox
from adapters.telegram.reply import notify, reply_target
from adapters.telegram.triggers import Action, Decision
from bot.conversation.knowledge_command import document_source
from bot.knowledge.formats import DocumentError
from bot.platform.media import human_size
from bot.platform.seam import KnowledgeUploads

__all__ = ["TelegramUploads", "upload_base"]

log = logging.getLogger(__name__)

COMMAND = "knowledge"
_DOWNLOAD_TIMEOUT = 120  # seconds: a document may be up to 20 MB
_FAILED = "Sorry, that document could not be added. The bot's admins can find why in the log."


def upload_base(message: Message, decision: Decision) -> str | None:
    """The base a document's ``/knowledge add BASE`` caption names; None for anything else
    (no document, another command, ``/knowledge add`` without a name)."""
    if message.document is None or decision.action is not Action.COMMAND:
        return None
    if decision.command != COMMAND:
        return None
    verb, _, rest = decision.text.strip().partition(" ")
    names = rest.split()
    if verb.lower() != "add" or not names:
        return None
    return names[0]


class TelegramUploads:
    """Adds captioned documents to knowledge bases and replies with the outcome."""

    def __init__(
        self, knowledge: KnowledgeUploads, bot: Bot, admins: AdminCache, barriers: ChatBarriers
    ) -> None:
        self.knowledge = knowledge
        self.bot = bot
        self.admins = admins
        self.barriers = barriers

    async def run(self, message: Message, incoming: Incoming, base: str) -> None:
        document = message.document
        assert document is not None, "upload_base names a base only for a document"
        ctx = incoming.ctx
        sender = message.from_user
        chat_id = message.chat.id
        fetch = self._fetcher(document, chat_id, base)
        # Later messages of this chat wait: the admin lookup, then the document stored.
        async with self.barriers.hold(chat_id):
            try:
                if (
                    not ctx.is_private
                    and not ctx.is_admin
                    and sender is not None
                    and message.sender_chat is None
                ):
                    admin = await self.admins.is_admin(chat_id, sender.id)
                    ctx = replace(ctx, is_admin=admin)
                result = await self.knowledge.upload(
                    ctx, base, document.file_name or "document", document.file_size, fetch
                )
            except Exception:
                log.exception("telegram: knowledge upload failed chat=%s", chat_id)
                text, post = _FAILED, True
            else:
                text, post = result.text, result.notify
        if post:
            await notify(Outbox(self.bot, reply_target(message)), text)

    def _fetcher(
        self, document: Document, chat_id: int, base: str
    ) -> Callable[[], Awaitable[bytes]]:
        async def fetch() -> bytes:
            return await self._download(document, chat_id, base)

        return fetch

    async def _download(self, document: Document, chat_id: int, base: str) -> bytes:
        """The document's bytes; a refusal the user should read is a ``DocumentError``."""
        name = document_source(document.file_name or "document")
        size = document.file_size
        if size is not None and size > MAX_DOWNLOAD_BYTES:
            raise DocumentError(_too_big(name, size, base))
        try:
            described = await self.bot.get_file(document.file_id)
            if described.file_path is None:
                raise DocumentError(_unfetched(name))
            buffer = await self.bot.download_file(described.file_path, timeout=_DOWNLOAD_TIMEOUT)
        except DocumentError:
            raise
        except TelegramBadRequest as exc:  # Telegram's own words: no URL, no token
            if "too big" in exc.message:
                raise DocumentError(_too_big(name, size, base)) from None
            log.warning("telegram: getFile failed chat=%s: %s", chat_id, exc.message)
            raise DocumentError(_unfetched(name)) from None
        except Exception as exc:  # aiohttp's errors print the URL, which holds the token
            log.warning(
                "telegram: document download failed chat=%s: %s", chat_id, type(exc).__name__
            )
            raise DocumentError(_unfetched(name)) from None
        data = buffer.read() if buffer is not None else b""
        log.debug("telegram: fetched a document of %d bytes chat=%s", len(data), chat_id)
        return data


def _too_big(name: str, size: int | None, base: str) -> str:
    what = f" and this one is {human_size(size)}" if size is not None else ""
    return (
        f"{name}: Telegram lets bots download files of {human_size(MAX_DOWNLOAD_BYTES)} at"
        f" most{what}; the bot's admins can add it with `parlour knowledge add {base} FILE`"
    )


def _unfetched(name: str) -> str:
    return f"{name}: I couldn't fetch it from Telegram; please send it again"
