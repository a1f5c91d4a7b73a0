"""Slash commands as they run: what each does once a user invokes it.

``/ask prompt:`` is answered like a message, streamed into the interaction's response
(``reply.py``); every other command asks the core's ``Commands`` and answers the caller alone
(ephemeral), except ``/catchup``, public and pinging its asker only (``catchup.py``);
``/knowledge text: add NAME file:`` hands the document to ``uploads.py``. Each interaction
becomes a ``ChatContext`` here, the caller's admin status Discord's own (Manage Messages in the
channel). ``commands.py`` builds the tree that calls these; the adapter runs each as a task it
waits for at shutdown, and once it is stopping they only say so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord

from adapters.discord.catchup import answer_catchup
from adapters.discord.normalise import channel_title, context_for, is_chat_admin
from adapters.discord.output import LIMIT, NO_PINGS, InteractionReply, ReplyMessages
from adapters.discord.reply import FAILED
from adapters.discord.uploads import DiscordUploads
from bot.context import ChatContext
from bot.conversation.catchup import CATCHUP_COMMAND
from bot.conversation.preview import Repeating
from bot.platform.seam import Platform
from bot.text import clean_text

__all__ = ["Answer", "Interactions"]

log = logging.getLogger(__name__)

Answer = Callable[[ChatContext, str, ReplyMessages, Repeating | None, int], Awaitable[None]]
"""Stream the model's answer to ``text`` into ``messages`` (the adapter's ``answer``)."""


class Interactions:
    """The callables ``commands.py``'s tree is given: ``ask``, ``command`` and ``upload``."""

    def __init__(
        self,
        platform: Platform,
        *,
        name: str,
        answer: Answer,
        uploads: DiscordUploads | None,
        stopping: asyncio.Event,
        tracked: Callable[[Any], Awaitable[None]],
    ) -> None:
        """``name``: the platform its chats are keyed under; ``stopping``: set once the adapter
        takes no more events; ``tracked``: run an interaction's work as a task shutdown waits
        for."""
        self.platform = platform
        self.name = name
        self._answer = answer
        self.uploads = uploads
        self._stopping = stopping
        self._tracked = tracked

    async def ask(self, interaction: discord.Interaction, prompt: str) -> None:
        if not await self._accepting(interaction):
            return
        await self._tracked(self._ask(interaction, prompt))

    async def _ask(self, interaction: discord.Interaction, prompt: str) -> None:
        await interaction.response.defer(thinking=True)
        ctx = self.context(interaction)
        channel_id = interaction.channel_id or interaction.user.id
        prompt = clean_text(prompt)
        await self._answer(ctx, prompt, InteractionReply(interaction), None, channel_id)

    async def command(self, interaction: discord.Interaction, name: str, args: str = "") -> None:
        """Built-in and plugin commands. Their answers are only for the caller (ephemeral)."""
        if not await self._accepting(interaction):
            return
        if name == CATCHUP_COMMAND.name:  # public, pinging its asker only: catchup.py
            ctx = self.context(interaction)
            commands = self.platform.commands
            await self._tracked(answer_catchup(interaction, commands, ctx, clean_text(args)))
            return
        await self._tracked(self._command(interaction, name, args))

    async def _command(self, interaction: discord.Interaction, name: str, args: str) -> None:
        ctx = self.context(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            result = await self.platform.commands.handle(ctx, name, clean_text(args))
            text = result.text.strip() or "Done."
        except Exception:
            log.exception("%s: /%s failed channel=%s", self.name, name, interaction.channel_id)
            text = FAILED
        if len(text) > LIMIT:
            text = text[: LIMIT - 1] + "…"
        await interaction.edit_original_response(content=text, allowed_mentions=NO_PINGS)

    async def upload(
        self, interaction: discord.Interaction, args: str, file: discord.Attachment | None
    ) -> None:
        """``/knowledge text: add NAME file:`` (uploads.py), the caller's rights Discord's."""
        if self.uploads is None or not await self._accepting(interaction):
            return
        ctx = self.context(interaction)
        await self._tracked(self.uploads.slash(interaction, ctx, clean_text(args), file))

    async def _accepting(self, interaction: discord.Interaction) -> bool:
        if not self._stopping.is_set():
            return True
        await interaction.response.send_message(
            "I'm restarting; please try again in a minute.", ephemeral=True
        )
        return False

    def context(self, interaction: discord.Interaction) -> ChatContext:
        """The interaction as the core's neutral event: its channel, caller and admin status."""
        admin = interaction.guild_id is not None and is_chat_admin(interaction.permissions)
        return context_for(
            interaction.channel_id or interaction.user.id,
            interaction.guild_id is None,
            interaction.user,
            message_id=interaction.id,
            is_admin=admin,
            guild_id=interaction.guild_id,
            parent_id=(
                interaction.channel.parent_id
                if isinstance(interaction.channel, discord.Thread)
                else None
            ),
            title=channel_title(interaction.guild, interaction.channel),
            platform=self.name,
        )
