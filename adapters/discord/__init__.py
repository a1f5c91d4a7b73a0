"""Discord on discord.py 2: slash commands, mentions and replies in servers, threads and DMs.

The entry point finds this package by name (``adapters.discord``) and calls
:func:`create_adapter`; configuration lives under ``discord:`` (see ``settings.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.discord.adapter import DiscordAdapter
    from adapters.discord.bots import DiscordBots
    from adapters.discord.settings import DiscordSettings
    from bot.config import Settings
    from bot.doctor import Check
    from bot.platform.seam import Platform

__all__ = ["check_settings", "create_adapter", "diagnose"]


def check_settings(settings: Settings) -> DiscordSettings:
    """Validate ``discord:`` (``check-config`` prints what this returns; start-up checks it)."""
    from adapters.discord.settings import discord_settings

    return discord_settings(settings)


def create_adapter(platform: Platform) -> DiscordAdapter | DiscordBots:
    """One bot, or several run together when ``discord.bots`` lists more."""
    from adapters.discord.bots import DiscordBots, adapters_for
    from adapters.discord.settings import discord_settings

    adapters = adapters_for(platform, discord_settings(platform.settings))
    return adapters[0] if len(adapters) == 1 else DiscordBots(adapters)


async def diagnose(settings: Settings) -> list[Check]:
    """``python -m bot doctor``'s Discord rows (see :mod:`adapters.discord.doctor`)."""
    from adapters.discord.doctor import diagnose

    return await diagnose(settings)
