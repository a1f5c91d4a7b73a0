"""Several Discord bots in one deployment (``discord.bots``), and what they tell each other.

Each bot application runs its own :class:`~adapters.discord.adapter.DiscordAdapter` under a
platform name of its own: ``discord`` for ``discord.token``, ``discord.NAME`` for each entry of
``discord.bots``. So each has its own chats (``discord.quiz:<channel id>``), history, usage and
buckets, and ``chats:`` presets matching ``discord.quiz:*`` give it its own persona, model,
plugins and knowledge bases; access lists and bot admins written for ``discord`` cover it too
(:func:`bot.context.platform_family`). All of them share ``discord.api_base`` and
``gateway_url`` (discord.py's endpoints are process-wide: :mod:`adapters.discord.endpoints`).

Discord does deliver one bot's messages to the others, but every adapter ignores messages from
bots (``Incoming.from_bot``: never answered, never kept), third-party bots' and its siblings'
alike. Instead, when one of our bots answers in a server, the others are *told*
(:mod:`bot.platform.siblings`, as on Telegram): the final answer is kept as overheard context in
each sibling's conversation of that channel, under the answering bot's name, through the shared
database. So two of our bots never loop, a streamed answer is told once complete (the gateway
would carry its first preview, then edits), and it works whichever replica runs which bot.
"""

from __future__ import annotations

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.normalise import PLATFORM
from adapters.discord.settings import DiscordSettings
from bot.platform.seam import Platform
from bot.platform.siblings import SiblingAdapters, accounts

__all__ = ["DiscordBots", "adapters_for"]


def adapters_for(platform: Platform, config: DiscordSettings) -> list[DiscordAdapter]:
    """One adapter per bot application: ``discord.token``'s, then each of ``discord.bots``."""
    return [
        DiscordAdapter(platform, settings=one.settings, name=one.name, siblings=one.siblings)
        for one in accounts(PLATFORM, config, config.bots, config.for_bot)
    ]


class DiscordBots(SiblingAdapters[DiscordAdapter]):
    """Several bot applications run as one adapter (``SiblingAdapters``)."""

    def __init__(self, adapters: list[DiscordAdapter]) -> None:
        super().__init__(PLATFORM, adapters)
