"""Telegram on aiogram 3: groups, supergroups with forum topics, and private chats.

The entry point finds this package by name (``adapters.telegram``) and calls
:func:`create_adapter`; configuration lives under ``telegram:`` (see ``settings.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter
    from adapters.telegram.bots import TelegramBots
    from adapters.telegram.settings import TelegramSettings
    from bot.config import Settings
    from bot.doctor import Check
    from bot.platform.seam import Platform

__all__ = ["check_settings", "create_adapter", "diagnose"]


def check_settings(settings: Settings) -> TelegramSettings:
    """Validate ``telegram:`` (``check-config`` prints what this returns; start-up checks it)."""
    from adapters.telegram.settings import telegram_settings

    return telegram_settings(settings)


def create_adapter(platform: Platform) -> TelegramAdapter | TelegramBots:
    """One bot, or several run together when ``telegram.bots`` lists more."""
    from adapters.telegram.bots import TelegramBots, adapters_for
    from adapters.telegram.settings import telegram_settings

    adapters = adapters_for(platform, telegram_settings(platform.settings))
    return adapters[0] if len(adapters) == 1 else TelegramBots(adapters)


async def diagnose(settings: Settings) -> list[Check]:
    """``python -m bot doctor``'s Telegram rows (see :mod:`adapters.telegram.doctor`)."""
    from adapters.telegram.doctor import diagnose

    return await diagnose(settings)
