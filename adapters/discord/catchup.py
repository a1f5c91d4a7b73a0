"""``/catchup`` on Discord: the digest in the channel, pinging its asker and nobody else.

The response is public (the channel may read what it missed too) and names people without
pinging them: its ``allowed_mentions`` lets exactly one user be mentioned, the asker, whose
mention opens it. A refusal (a bad span, a spent budget, a private chat) or "nothing was said"
is the asker's alone: the public placeholder goes and an ephemeral note says so.
"""

from __future__ import annotations

import contextlib
import logging

import discord

from adapters.discord.output import LIMIT, NO_PINGS
from adapters.discord.reply import FAILED
from adapters.discord.split import split_message
from bot.context import ChatContext
from bot.conversation.catchup import CATCHUP_COMMAND
from bot.platform.commands import CommandResult
from bot.platform.seam import ChatCommands

__all__ = ["answer_catchup", "only_the_asker"]

log = logging.getLogger(__name__)


def only_the_asker(user: discord.abc.Snowflake) -> discord.AllowedMentions:
    return discord.AllowedMentions(everyone=False, users=[user], roles=False, replied_user=False)


async def answer_catchup(
    interaction: discord.Interaction, commands: ChatCommands, ctx: ChatContext, args: str
) -> None:
    await interaction.response.defer(thinking=True)  # public: the digest takes model calls
    try:
        result = await commands.handle(ctx, CATCHUP_COMMAND.name, args)
    except Exception:
        log.exception("discord: /catchup failed channel=%s", interaction.channel_id)
        result = CommandResult(FAILED, ok=False, private=True)
    if not result.ok or result.private:  # a refusal, or nothing to catch up on
        with contextlib.suppress(discord.HTTPException):  # gone already: the note still goes
            await interaction.delete_original_response()
        await interaction.followup.send(
            result.text[:LIMIT], ephemeral=True, allowed_mentions=NO_PINGS
        )
        return
    first, *rest = split_message(f"{interaction.user.mention} {result.text}", LIMIT) or ["…"]
    await interaction.edit_original_response(
        content=first, allowed_mentions=only_the_asker(interaction.user)
    )
    for chunk in rest:
        await interaction.followup.send(chunk, allowed_mentions=NO_PINGS)
