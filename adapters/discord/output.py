"""Putting one reply into Discord: a message (replying to the trigger) or an interaction's
response, then more messages when the text needs them.

Discord renders Markdown itself, so the text is only split (2000 characters, code fences closed
and reopened across chunks). Every message carries ``AllowedMentions.none()``: whatever the
model writes, it cannot ping @everyone, a role or a user. A message deleted under us is sent
anew; missing permissions are logged, never raised into the event loop.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from typing import Protocol

import discord

from adapters.discord.split import split_message
from bot.conversation.preview import Repeating

log = logging.getLogger(__name__)

NO_PINGS = discord.AllowedMentions.none()
LIMIT = 2000
TYPING_EVERY = 8.0  # Discord shows "typing" for about ten seconds


class ReplyMessages(Protocol):
    """Where the messages of one reply go, and how they are changed."""

    @property
    def count(self) -> int:
        """How many messages the reply has now."""
        ...

    async def put(self, index: int, text: str) -> None:
        """Send message ``index`` (the next new one) or edit it."""
        ...

    async def drop_from(self, index: int) -> None:
        """Delete the messages from ``index`` on (the final text needed fewer)."""
        ...


class ChannelReply:
    """A reply in a channel: the first message references the trigger, without pinging."""

    def __init__(
        self, channel: discord.abc.Messageable, reference: discord.MessageReference | None = None
    ) -> None:
        self.channel = channel
        self.reference = reference
        self.messages: list[discord.Message] = []

    @property
    def count(self) -> int:
        return len(self.messages)

    async def put(self, index: int, text: str) -> None:
        if index < len(self.messages):
            try:
                self.messages[index] = await self.messages[index].edit(
                    content=text, allowed_mentions=NO_PINGS
                )
                return
            except discord.NotFound:
                log.info("message %s was deleted, sending anew", self.messages[index].id)
        if self.reference is not None and not self.messages:
            message = await self.channel.send(
                text, reference=self.reference, mention_author=False, allowed_mentions=NO_PINGS
            )
        else:
            message = await self.channel.send(text, allowed_mentions=NO_PINGS)
        if index < len(self.messages):
            self.messages[index] = message
        else:
            self.messages.append(message)

    async def drop_from(self, index: int) -> None:
        for message in self.messages[index:]:
            with contextlib.suppress(discord.HTTPException):
                await message.delete()
        del self.messages[index:]


class InteractionReply:
    """A reply to a deferred slash command: the original response, then followups."""

    def __init__(self, interaction: discord.Interaction, *, ephemeral: bool = False) -> None:
        self.interaction = interaction
        self.ephemeral = ephemeral
        self.followups: list[discord.WebhookMessage] = []
        self.shown = 0

    @property
    def count(self) -> int:
        return self.shown

    async def put(self, index: int, text: str) -> None:
        if index == 0:
            await self.interaction.edit_original_response(content=text, allowed_mentions=NO_PINGS)
        elif index - 1 < len(self.followups):
            self.followups[index - 1] = await self.followups[index - 1].edit(
                content=text, allowed_mentions=NO_PINGS
            )
        else:
            message = await self.interaction.followup.send(
                text, wait=True, ephemeral=self.ephemeral, allowed_mentions=NO_PINGS
            )
            self.followups.append(message)
        self.shown = max(self.shown, index + 1)

    async def drop_from(self, index: int) -> None:
        for message in self.followups[max(index - 1, 0) :]:
            with contextlib.suppress(discord.HTTPException):
                await message.delete()
        del self.followups[max(index - 1, 0) :]
        self.shown = min(self.shown, max(index, 1))


async def deliver(messages: ReplyMessages, text: str, chunks: Sequence[str] | None = None) -> None:
    """The final text: split (unless ``chunks`` is its split already, as the core measured
    it), then written over whatever the preview showed."""
    if chunks is None:
        chunks = split_message(text, LIMIT) or ["…"]
    for index, chunk in enumerate(chunks):
        await messages.put(index, chunk)
    if messages.count > len(chunks):
        await messages.drop_from(len(chunks))


def typing_indicator(channel: discord.abc.Messageable) -> Repeating:
    """Keeps "typing…" visible while the model works."""

    async def action() -> None:
        await channel.typing()

    return Repeating(action, TYPING_EVERY, "discord typing indicator")
