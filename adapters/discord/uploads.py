"""Documents added to a knowledge base from Discord, by ``platform.knowledge.upload``
(:class:`bot.platform.seam.KnowledgeUploads`).

The way in is the slash command: ``/knowledge text: add NAME file: <document>`` (``file`` is an
attachment option, offered only when knowledge bases are declared: ``commands.py``). Discord
uploads the file with the command, hides ``/knowledge`` from members (Manage Messages by
default), needs no Message Content intent, and resolves the caller's permissions in the channel
for us; the answer is ephemeral, like every command's. A message carrying one document whose
text is ``/knowledge add NAME`` (after an @mention of the bot, which is what lets Discord deliver
a server message's text and files without that intent) is taken too, so the Telegram habit
works; its answer is a reply in the channel.

Either way the sender's admin status is Discord's own (Manage Messages or Administrator in the
channel, as for admin-only commands), and the core decides who may add to which base and checks
the declared size before the file is read: a member's document, or one over
``knowledge.max_file_bytes``, is never downloaded. The bytes come through discord.py
(``Attachment.read()``: the CDN, no token); the CDN link is a bearer link to the user's file and
is never logged.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re

import aiohttp
import discord

from adapters.discord.normalise import Incoming
from adapters.discord.output import LIMIT, NO_PINGS, ChannelReply, deliver
from bot.context import ChatContext
from bot.conversation.knowledge_command import document_source
from bot.knowledge.formats import DocumentError
from bot.platform.seam import KnowledgeUploads

__all__ = ["DiscordUploads", "caption_base"]

log = logging.getLogger(__name__)

FETCH_TIMEOUT = 60.0  # seconds to read one document from the CDN
_FETCH_ERRORS = (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError)
_CAPTION = re.compile(r"/knowledge(?:@\S+)?\s+add\b\s*(\S*)", re.IGNORECASE)
ATTACH = "Attach the document: /knowledge text: add NAME file: (the document)."
NAME_IT = "Name the base to add it to: /knowledge text: add NAME, with the document as file."
NAME_IT_HERE = "Name the base to add it to: /knowledge add NAME, with the document attached."
ONE_FILE = "Attach one document per message: /knowledge add NAME."
FAILED = "Sorry, that document could not be added. The bot's admins can find why in the log."


def caption_base(text: str) -> str | None:
    """The base a message's ``/knowledge add NAME`` names ("" when it names none); None when
    the text is something else."""
    found = _CAPTION.match(text.strip())
    return None if found is None else found.group(1)


def _slash_base(args: str) -> str:
    """``add NAME`` (the slash command's text) -> NAME, else ""."""
    words = args.split()
    return words[1] if len(words) >= 2 and words[0].lower() == "add" else ""


class DiscordUploads:
    """Adds a document sent with ``/knowledge add NAME`` and answers with the outcome."""

    def __init__(self, knowledge: KnowledgeUploads) -> None:
        self.knowledge = knowledge

    def requested(self, message: discord.Message, incoming: Incoming) -> str | None:
        """The base a message with files asks its document to be added to (see
        :func:`caption_base`); None for every other message, which is handled as before."""
        if incoming.from_bot or not message.attachments:
            return None
        return caption_base(incoming.text)

    async def slash(
        self,
        interaction: discord.Interaction,
        ctx: ChatContext,
        args: str,
        file: discord.Attachment | None,
    ) -> None:
        """``/knowledge text: add NAME file:``; acknowledged at once (Discord allows three
        seconds), answered when the document is stored or refused."""
        await interaction.response.defer(ephemeral=True, thinking=True)
        base = _slash_base(args)
        if file is None:
            text = ATTACH
        elif not base:
            text = NAME_IT
        else:
            text = await self._add(ctx, base, file)
        if len(text) > LIMIT:
            text = text[: LIMIT - 1] + "…"
        await interaction.edit_original_response(content=text, allowed_mentions=NO_PINGS)

    async def message(self, message: discord.Message, ctx: ChatContext, base: str) -> None:
        """A message's one document, named base; the answer replies to it."""
        if len(message.attachments) != 1:
            text = ONE_FILE
        elif not base:
            text = NAME_IT_HERE
        else:
            text = await self._add(ctx, base, message.attachments[0])
        reference = message.to_reference(fail_if_not_exists=False)
        await deliver(ChannelReply(message.channel, reference=reference), text)

    async def _add(self, ctx: ChatContext, base: str, file: discord.Attachment) -> str:
        fetch = functools.partial(_read, file)
        try:
            result = await self.knowledge.upload(ctx, base, file.filename, file.size, fetch)
        except Exception:
            log.exception("discord: knowledge upload failed chat=%s", ctx.chat_key)
            return FAILED
        return result.text.strip() or "Done."


async def _read(file: discord.Attachment) -> bytes:
    try:
        async with asyncio.timeout(FETCH_TIMEOUT):
            return await file.read()
    except _FETCH_ERRORS as exc:  # by its type only: the message may carry the CDN link
        log.warning("discord: document download failed: %s", type(exc).__name__)
        name = document_source(file.filename)
        raise DocumentError(
            f"{name}: I couldn't fetch it from Discord; please send it again"
        ) from None
